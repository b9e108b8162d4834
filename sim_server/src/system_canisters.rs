//! The system canisters of `ic_model` (the ICP ledger, the cycles ledger,
//! the cycles minting canister) on the simulator: the instance is their
//! [`Host`], and their rejects reach clients as PocketIC's.

use candid::{Nat, Principal};
use ic_management_canister_types::{CanisterSettings, ProvisionalCreateCanisterWithCyclesArgs};
use ic_model::system_canisters::{Host, Reject};
use pocket_ic::common::rest::RawEffectivePrincipal;
use pocket_ic::{ErrorCode, RejectCode, RejectResponse};

use crate::errors;
use crate::instance::{CallResult, Instance};
use crate::management;

pub use ic_model::system_canisters::{CYCLES_LEDGER, CYCLES_MINTING_CANISTER};

/// The first subnet assigns no id below this one to a user's canister:
/// those of the NNS's first canisters, the ICP ledger's and the cycles
/// minting canister's among them.
pub const RESERVED_IDS: u64 = 5;

/// A system canister's reject as PocketIC reports one.
fn reject(r: Reject) -> RejectResponse {
    let reject_code = RejectCode::try_from(r.code as u64).unwrap_or(RejectCode::CanisterError);
    let error_code = ErrorCode::try_from(r.error_code as u64).unwrap_or(ErrorCode::CanisterCalledTrap);
    errors::reject(reject_code, error_code, r.message)
}

impl Host for Instance {
    fn subnets(&self) -> Vec<Principal> {
        self.sim.subnets()
    }

    fn time(&self) -> u64 {
        self.sim.time()
    }

    /// The management canister keeps its creation fee, as when the cycles
    /// ledger creates a canister through the cycles minting canister.
    fn create_canister(
        &mut self,
        subnet: Principal,
        settings: CanisterSettings,
        cycles: u128,
    ) -> Result<Principal, String> {
        let fee = sim::CANISTER_CREATION_FEE;
        let Some(cycles) = cycles.checked_sub(fee) else {
            return Err(format!("{cycles} cycles do not pay the canister creation fee of {fee}"));
        };
        let create = ProvisionalCreateCanisterWithCyclesArgs {
            amount: Some(Nat::from(cycles)),
            settings: Some(settings),
            specified_id: None,
            sender_canister_version: None,
        };
        let effective = RawEffectivePrincipal::SubnetId(subnet.as_slice().to_vec());
        let created = management::create(self, &effective, Principal::anonymous(), create)
            .map_err(|e| e.message)?
            .map_err(|e| e.reject_message)?;
        let record = candid::decode_one::<ic_management_canister_types::CanisterIdRecord>(&created)
            .expect("the management canister's reply");
        Ok(record.canister_id)
    }

    fn deposit_cycles(&mut self, canister: Principal, cycles: u128) -> Result<(), String> {
        self.canister(canister).map_err(|e| e.reject_message)?;
        self.sim.add_cycles(canister, cycles).map(drop).map_err(|e| e.to_string())
    }
}

/// An update call to a system canister; `None` if `canister` is none of them.
pub fn update(
    instance: &mut Instance,
    canister: Principal,
    sender: Principal,
    method: &str,
    arg: &[u8],
) -> Option<CallResult> {
    // Out of the instance while the instance is their host; back in even
    // if they panic, so that a network that catches it keeps its ledgers.
    let mut system = instance.system.take()?;
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        system.update(instance, canister, sender, method, arg)
    }));
    instance.system = Some(system);
    let result = result.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    Some(result?.map_err(reject))
}

/// A query to a system canister; `None` if `canister` is none of them.
pub fn query(instance: &Instance, canister: Principal, method: &str, arg: &[u8]) -> Option<CallResult> {
    let system = instance.system.as_ref()?;
    Some(system.query(instance, canister, method, arg)?.map_err(reject))
}
