//! The IC saved with its engine, for a network that keeps its state across
//! restarts: the engine's state, what the model keeps beside it (canisters'
//! records, the ledgers, the ingress messages), and the seed of its keys.
//! The certified state is rebuilt from them.

use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::{Ic, IcState, Keys};

/// Bumped whenever [`IcState`] or what it holds changes (the engine's part
/// has a number of its own).
const FORMAT: u32 = 10;

#[derive(Serialize, Deserialize)]
struct SavedIc<S> {
    engine: S,
    seed: u64,
    state: IcState,
}

/// The IC's state, taken between rounds, to be encoded later (on another
/// thread: encoding large memories is most of the work).
pub type Encode = Box<dyn FnOnce() -> Result<Vec<u8>, String> + Send>;

impl<E: Engine> Ic<E> {
    /// The format of what [`Ic::save`] writes: a state saved under another
    /// is refused.
    pub fn saved_format() -> String {
        format!("ic_model {FORMAT}, {}", E::saved_format())
    }

    /// The IC's whole state, between rounds.
    pub fn save(&self) -> Result<Encode, String> {
        let saved =
            SavedIc { engine: self.engine.save()?, seed: self.keys().seed(), state: self.state().clone() };
        Ok(Box::new(move || {
            // Sized first: growing a buffer of many MiB copies it again and again.
            let size = postcard::experimental::serialized_size(&saved);
            size.and_then(|size| postcard::to_extend(&saved, Vec::with_capacity(size)))
                .map_err(|e| format!("cannot serialize the IC's state: {e}"))
        }))
    }

    /// The IC [`Ic::save`] saved, signed again with the same keys.
    pub fn restore(bytes: &[u8]) -> Result<Self, String> {
        let saved: SavedIc<E::Saved> =
            postcard::from_bytes(bytes).map_err(|e| format!("cannot read the saved IC: {e}"))?;
        Ok(Self::resume(E::restore(saved.engine)?, Keys::from_seed(saved.seed), saved.state))
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests {
    use super::*;
    use crate::{CanisterCall, Effective, Interface};
    use candid::{CandidType, Encode, Nat, Principal};
    use ic_management_canister_types::{
        CanisterIdRecord, CanisterInstallMode, InstallCodeArgs, ProvisionalCreateCanisterWithCyclesArgs,
        UploadChunkArgs,
    };
    use sha2::Digest;

    /// The smallest module the simulator loads, with one metadata section.
    fn module_with_metadata() -> Vec<u8> {
        let name = b"icp:public candid:service";
        let content = b"service {}";
        let mut custom = vec![name.len() as u8];
        custom.extend_from_slice(name);
        custom.extend_from_slice(content);
        let mut wasm = b"\0asm\x01\0\0\0".to_vec();
        wasm.extend_from_slice(&[5, 3, 1, 0, 1]); // one memory of one page
        wasm.extend_from_slice(&[0, custom.len() as u8]);
        wasm.extend_from_slice(&custom);
        wasm
    }

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
        let sim = sim::Sim::builder().with_subnet().build();
        let mut instance = Ic::new(sim, Keys::from_seed(3), true);
        let me = Principal::anonymous();
        let now = instance.engine.time();
        let mut call_to = |canister: Principal, method: &str, arg: Vec<u8>| {
            let index =
                instance.submit(Effective::None, CanisterCall::new(canister, me, method, arg)).unwrap();
            assert!(instance.outcome(index).is_none(), "it executes in the next round");
            instance.execute_round();
            instance.outcome(index).unwrap()
        };
        let mut call = |method: &str, arg: Vec<u8>| call_to(Principal::management_canister(), method, arg);
        let create = ProvisionalCreateCanisterWithCyclesArgs {
            amount: None,
            settings: None,
            specified_id: None,
            sender_canister_version: None,
        };
        let created = call("provisional_create_canister_with_cycles", Encode!(&create).unwrap()).unwrap();
        let canister_id = candid::decode_one::<CanisterIdRecord>(&created).unwrap().canister_id;
        let chunk = UploadChunkArgs { canister_id, chunk: vec![3; 4] };
        call("upload_chunk", Encode!(&chunk).unwrap()).unwrap();
        let install = InstallCodeArgs {
            mode: CanisterInstallMode::Install,
            canister_id,
            wasm_module: module_with_metadata(),
            arg: vec![],
            sender_canister_version: None,
        };
        call("install_code", Encode!(&install).unwrap()).unwrap();
        let refused = call("install_code", Encode!(&install).unwrap());
        assert!(refused.unwrap_err().message.contains("not empty"));
        // An allowance on the ICP ledger, from an approval it deduplicates.
        let ledger = crate::system_canisters::ICP_LEDGER;
        let spender = Account { owner: canister_id, subaccount: None };
        let approve = ApproveArgs {
            from_subaccount: None,
            spender: spender.clone(),
            amount: Nat::from(7u8),
            expected_allowance: None,
            expires_at: None,
            fee: None,
            memo: None,
            created_at_time: Some(now),
        };
        call_to(ledger, "icrc2_approve", Encode!(&approve).unwrap()).unwrap();
        // A message to the model waiting for the next round.
        let (management, status) = (Principal::management_canister(), CanisterIdRecord { canister_id });
        let waiting = instance.submit(
            Effective::None,
            CanisterCall::new(management, me, "canister_status", Encode!(&status).unwrap()),
        );
        let waiting = waiting.unwrap();
        // Staged, as a network stages after every round: a restored
        // instance stages everything, which clears what was pending.
        instance.stage_changes();

        let bytes = instance.save().unwrap()().unwrap();
        let restored = Ic::<sim::Sim>::restore(&bytes).unwrap();
        assert_eq!(restored.save().unwrap()().unwrap(), bytes, "restored as saved");
        let mut restored = restored;
        assert!(restored.outcome(waiting).is_none());
        restored.execute_round();
        assert!(restored.outcome(waiting).unwrap().is_ok(), "the waiting message executes after a restart");
        assert_eq!(restored.certified().root_key_der(), instance.certified().root_key_der());
        assert_eq!(restored.canister(canister_id).unwrap().metadata[0].name, "candid:service");
        let asked = AllowanceArgs { account: Account { owner: me, subaccount: None }, spender };
        let allowance =
            restored.query(CanisterCall::new(ledger, me, "icrc2_allowance", Encode!(&asked).unwrap()));
        let allowance: Allowance = candid::decode_one(&allowance.unwrap()).unwrap();
        assert_eq!(
            (allowance.allowance, allowance.expires_at),
            (Nat::from(7u8), None),
            "the allowance survives"
        );
        let pinned = (FORMAT, hex::encode(sha2::Sha256::digest(&bytes)));
        assert_eq!(
            pinned,
            (10, "2ad647d5803bac9495cb91e805920af70839d7d5978c7345838812a436e3dba8".to_string()),
            "a saved type changed: bump FORMAT, then this hash"
        );
    }
}
