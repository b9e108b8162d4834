//! An instance's whole state as bytes, for a network that keeps its state
//! across restarts: the simulator's, what PocketIC's API keeps beside it,
//! and the seed of its keys. The certified state is rebuilt from them.

use candid::Principal;
use ic_model::{CertifiedState, Keys};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::instance::{CanisterInfo, Instance, Message, subnet_ranges};

/// Bumped whenever [`SavedInstance`] or what it holds changes (the
/// simulator's part has a number of its own).
const FORMAT: u32 = 4;

/// The format of what [`save`] writes: a state saved under another is
/// refused.
pub fn format() -> String {
    format!("sim_server instance {FORMAT}, sim {}", sim::SavedSim::FORMAT)
}

#[derive(Serialize, Deserialize)]
struct SavedInstance {
    sim: sim::SavedSim,
    seed: u64,
    canisters: BTreeMap<Principal, CanisterInfo>,
    messages: BTreeMap<u64, Message>,
    next_message: u64,
    system: Option<ic_model::system_canisters::SystemCanisters>,
}

/// The instance's state, between rounds, to encode later (on another thread).
pub fn save(instance: &Instance) -> Result<ic_http::SavedState, String> {
    let saved = SavedInstance {
        sim: instance.sim.save().map_err(|e| e.to_string())?,
        seed: instance.certified.keys().seed(),
        canisters: instance.canisters.iter().map(|(id, info)| (*id, info.clone())).collect(),
        messages: instance.messages.iter().map(|(index, m)| (*index, m.clone())).collect(),
        next_message: instance.next_message,
        system: instance.system.clone(),
    };
    Ok(Box::new(move || {
        // Sized first: growing a buffer of many MiB copies it again and again.
        let size = postcard::experimental::serialized_size(&saved);
        size.and_then(|size| postcard::to_extend(&saved, Vec::with_capacity(size)))
            .map_err(|e| format!("cannot serialize the instance: {e}"))
    }))
}

/// The instance [`save`] saved, its canisters staged in a new certified
/// state signed with the same keys.
pub fn restore(bytes: &[u8]) -> Result<Instance, String> {
    let saved: SavedInstance =
        postcard::from_bytes(bytes).map_err(|e| format!("cannot read the saved instance: {e}"))?;
    let sim = sim::Sim::builder().restore(saved.sim).map_err(|e| e.to_string())?;
    let keys = Keys::from_seed(saved.seed);
    let certified = CertifiedState::new(keys, &subnet_ranges(&sim, saved.system.is_some()), sim.time());
    let mut instance = Instance {
        changed: saved.canisters.keys().copied().collect(),
        sim,
        canisters: saved.canisters,
        messages: saved.messages,
        next_message: saved.next_message,
        certified: Arc::new(certified),
        system: saved.system,
    };
    instance.stage_changes();
    Ok(instance)
}

/// A candid value as its candid bytes: some candid types (`Nat`) read only
/// from self-describing formats.
pub mod candid_bytes {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors;
    use crate::instance::Metadata;
    use sha2::Digest;

    /// An instance with something of every type it saves beside the
    /// simulator's, saved and restored.
    #[test]
    fn the_saved_layout_is_pinned_by_its_format_number() {
        let mut instance =
            Instance::with_keys(sim::Sim::builder().with_subnet().build(), Keys::from_seed(3), true);
        let (subnet, id) = (instance.sim.subnets()[0], Principal::from_slice(&[9; 10]));
        let mut info = CanisterInfo::new(subnet, vec![Principal::anonymous()]);
        info.module_hash = Some(vec![1; 32]);
        info.metadata.push(Metadata {
            name: "candid:service".into(),
            public: true,
            content: b"service {}".to_vec(),
        });
        info.chunks.insert(vec![2; 32], vec![3; 4]);
        instance.canisters.insert(id, info);
        instance.answered(Principal::anonymous(), Ok(vec![4, 5]));
        instance.answered(Principal::anonymous(), Err(errors::canister_not_found(id)));
        let bytes = save(&instance).unwrap()().unwrap();
        let restored = restore(&bytes).unwrap();
        assert_eq!(save(&restored).unwrap()().unwrap(), bytes, "restored as saved");
        assert_eq!(restored.certified.root_key_der(), instance.certified.root_key_der());
        let pinned = (FORMAT, hex::encode(sha2::Sha256::digest(&bytes)));
        assert_eq!(
            pinned,
            (4, "04fe4aa4033588a46a9eec985e7236ae091b0abba611c9669d6e3045353d95ed".to_string()),
            "a saved type changed: bump FORMAT, then this hash"
        );
    }
}
