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
/// simulator's part has a number of its own). 5: the ledgers' allowances
/// and the cycles ledger's deduplicated calls.
const FORMAT: u32 = 5;

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
    use candid::{CandidType, Nat};
    use sha2::Digest;

    #[derive(CandidType, Clone)]
    struct Account {
        owner: Principal,
        subaccount: Option<Vec<u8>>,
    }

    #[derive(CandidType)]
    struct ApproveArgs {
        from_subaccount: Option<Vec<u8>>,
        spender: Account,
        amount: Nat,
        expected_allowance: Option<Nat>,
        expires_at: Option<u64>,
        fee: Option<Nat>,
        memo: Option<Vec<u8>>,
        created_at_time: Option<u64>,
    }

    #[derive(CandidType, serde::Deserialize)]
    struct Allowance {
        allowance: Nat,
        expires_at: Option<u64>,
    }

    #[derive(CandidType)]
    struct AllowanceArgs {
        account: Account,
        spender: Account,
    }

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
        // An allowance on the ICP ledger, from an approval it deduplicates.
        let ledger = ic_model::system_canisters::ICP_LEDGER;
        let spender = Account { owner: id, subaccount: None };
        let approve = ApproveArgs {
            from_subaccount: None,
            spender: spender.clone(),
            amount: Nat::from(7u8),
            expected_allowance: None,
            expires_at: None,
            fee: None,
            memo: None,
            created_at_time: Some(instance.sim.time()),
        };
        let arg = candid::encode_one(approve).unwrap();
        let approved = crate::system_canisters::update(
            &mut instance,
            ledger,
            Principal::anonymous(),
            "icrc2_approve",
            &arg,
        );
        assert!(approved.unwrap().is_ok());
        let bytes = save(&instance).unwrap()().unwrap();
        let restored = restore(&bytes).unwrap();
        assert_eq!(save(&restored).unwrap()().unwrap(), bytes, "restored as saved");
        let asked = candid::encode_one(AllowanceArgs {
            account: Account { owner: Principal::anonymous(), subaccount: None },
            spender,
        })
        .unwrap();
        let allowance = crate::system_canisters::query(&restored, ledger, "icrc2_allowance", &asked);
        let allowance: Allowance = candid::decode_one(&allowance.unwrap().unwrap()).unwrap();
        assert_eq!(
            (allowance.allowance, allowance.expires_at),
            (Nat::from(7u8), None),
            "the allowance survives"
        );
        assert_eq!(restored.certified.root_key_der(), instance.certified.root_key_der());
        let pinned = (FORMAT, hex::encode(sha2::Sha256::digest(&bytes)));
        assert_eq!(
            pinned,
            (5, "fcd63de0edf260fa0b2c25b0e3d94cb351bb0836af494268e810b648ccb7b371".to_string()),
            "a saved type changed: bump FORMAT, then this hash"
        );
    }
}
