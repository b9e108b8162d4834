//! What the management canister knows of a canister beyond what the engine
//! executes: its subnet, controllers, module, status, metadata, chunk
//! store and the settings the engine does not enforce.

use candid::Principal;
use ic_management_canister_types::{CanisterStatusType, DefiniteCanisterSettings};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One canister, as the management canister reports it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CanisterInfo {
    /// The subnet that hosts it.
    pub subnet: Principal,
    /// Who may manage it.
    pub controllers: Vec<Principal>,
    /// The sha256 of its module as installed; `None` while empty.
    pub module_hash: Option<Vec<u8>>,
    /// Running or stopped.
    pub status: CanisterStatusType,
    /// The module's `icp:public` and `icp:private` custom sections.
    pub metadata: Vec<Metadata>,
    /// The chunk store, by each chunk's sha256.
    pub chunks: BTreeMap<Vec<u8>, Vec<u8>>,
    /// The settings the engine does not keep (see [`super::settings`]).
    #[serde(with = "candid_bytes")]
    pub settings: DefiniteCanisterSettings,
    /// The installed module's size in bytes, as sent (maybe gzipped).
    pub module_size: u64,
    /// Its snapshots, oldest first.
    pub snapshots: Vec<SnapshotInfo>,
    /// The number its next snapshot's id carries.
    pub next_snapshot: u64,
}

/// What the model keeps of a snapshot (the engine keeps the module and
/// memories): what `list_canister_snapshots` shows, and what loading it
/// puts back of the canister's record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// Its id: the number, 8 bytes big-endian, then the canister's id.
    pub id: Vec<u8>,
    /// When it was taken, in ns since the epoch.
    pub taken_at: u64,
    /// Its size in bytes.
    pub total_size: u64,
    /// The module's hash as it was.
    pub module_hash: Option<Vec<u8>>,
    /// The module's size as it was.
    pub module_size: u64,
    /// The module's metadata as it was.
    pub metadata: Vec<Metadata>,
    /// The chunk store as it was.
    pub chunks: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl CanisterInfo {
    /// A new empty canister, running, with the replica's default settings.
    pub fn new(subnet: Principal, controllers: Vec<Principal>) -> Self {
        Self {
            subnet,
            controllers,
            module_hash: None,
            status: CanisterStatusType::Running,
            metadata: vec![],
            chunks: BTreeMap::new(),
            settings: super::settings::defaults(),
            module_size: 0,
            snapshots: vec![],
            next_snapshot: 0,
        }
    }
}

/// A custom section a module declares as metadata (`icp:public <name>` or
/// `icp:private <name>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metadata {
    /// The name after `icp:public ` or `icp:private `.
    pub name: String,
    /// Whether anyone may read it, or only controllers.
    pub public: bool,
    /// The section's bytes.
    pub content: Vec<u8>,
}

/// The module's metadata sections, as the replica reads them at install.
pub fn metadata(wasm: &[u8]) -> Vec<Metadata> {
    let sections = wasmparser::Parser::new(0).parse_all(wasm).filter_map(|payload| match payload {
        Ok(wasmparser::Payload::CustomSection(section)) => Some(section),
        _ => None,
    });
    let metadata = |section: wasmparser::CustomSectionReader<'_>| {
        let (public, name) = match section.name().split_once(' ')? {
            ("icp:public", name) => (true, name),
            ("icp:private", name) => (false, name),
            _ => return None,
        };
        Some(Metadata { name: name.to_string(), public, content: section.data().to_vec() })
    };
    sections.filter_map(metadata).collect()
}

/// A candid value as its candid bytes: some candid types (`Nat`) read only
/// from self-describing formats, and a saved state is postcard.
mod candid_bytes {
    use candid::CandidType;
    use serde::de::{DeserializeOwned, Error as _};
    use serde::ser::Error as _;
    use serde::{Deserializer, Serializer};

    pub fn serialize<T: CandidType, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes = candid::encode_one(value).map_err(S::Error::custom)?;
        serializer.serialize_bytes(&bytes)
    }

    pub fn deserialize<'de, T: CandidType + DeserializeOwned, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<T, D::Error> {
        let bytes: serde_bytes::ByteBuf = serde::Deserialize::deserialize(deserializer)?;
        candid::decode_one(&bytes).map_err(D::Error::custom)
    }
}
