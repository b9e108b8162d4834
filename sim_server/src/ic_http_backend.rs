//! The simulator as the backend of the IC's HTTP interface (`ic_http`).

use candid::Principal;
use ic_http::{Backend, Reject};
use ic_model::system_canisters::CYCLES_MINTING_CANISTER;
use ic_model::{CertifiedState, Effective, Ic, Keys};
use ic_transport_types::RejectCode;
use std::sync::Arc;

use crate::instance::Instance;

/// What `/api/v2/status` says answers.
pub const DESCRIPTION: &str = "this project's simulator (a model of IC message routing running the real canister wasm) behind the IC's HTTP interface; not the replica";

/// A reject as the HTTP interface reports it. The simulator's `SYS_UNKNOWN`
/// (6) never reaches a user on the IC (an ingress message's outcome is
/// always known) and agents cannot decode it: it is reported as transient.
fn reject(r: ic_model::Reject) -> Reject {
    let code = RejectCode::try_from(r.code as u64).unwrap_or(RejectCode::SysTransient);
    Reject { code, message: r.message, error_code: r.error_code.to_string() }
}

/// The first subnet assigns no id below this one to a user's canister:
/// those of the NNS's first canisters, the ICP ledger's and the cycles
/// minting canister's among them.
const RESERVED_IDS: u64 = 5;

/// The simulator `sim` as the backend of an `ic_http::Network`, its state
/// signed with the keys `keys` derive, with the stand-ins for the system
/// canisters icp-cli calls. Their ids are the IC's: the cycles minting
/// canister's lies in the first subnet's range, so `sim` must not have
/// assigned it to a canister of its own.
pub fn backend(mut sim: sim::Sim, keys: Keys) -> Result<Box<dyn Backend>, String> {
    if sim.cycle_balance(CYCLES_MINTING_CANISTER).is_ok() {
        return Err(format!(
            "the simulator has a canister with the cycles minting canister's id {CYCLES_MINTING_CANISTER}: create the network's simulator with no canisters, or fewer than {RESERVED_IDS} on its first subnet"
        ));
    }
    sim.reserve_canister_ids(0, RESERVED_IDS).map_err(|e| e.to_string())?;
    Ok(Box::new(Instance::over(Ic::new(sim, keys, true))))
}

/// The backend [`Backend::save`] saved, resumed where it stood: same
/// canisters, messages, keys and time, if `accept` takes its simulator and
/// keys (a network refuses a state made with other settings than its own).
pub fn resume(
    saved: &[u8],
    accept: impl FnOnce(&sim::Sim, Keys) -> Result<(), String>,
) -> Result<Box<dyn Backend>, String> {
    let instance = crate::saved::restore(saved)?;
    accept(&instance.ic.engine, instance.ic.keys())?;
    Ok(Box::new(instance))
}

impl Backend for Instance {
    fn description(&self) -> String {
        DESCRIPTION.into()
    }

    fn certified_state(&self) -> Arc<CertifiedState> {
        self.ic.certified().clone()
    }

    fn time(&self) -> u64 {
        self.ic.engine.time()
    }

    fn advance_time_to(&mut self, ns: u64) {
        let now = self.ic.engine.time();
        self.ic.engine.advance_time(ns.saturating_sub(now));
    }

    fn submit(
        &mut self,
        effective: Principal,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<u64, Reject> {
        self.submit_as(Effective::Canister(effective), canister, sender, method, arg).map_err(reject)
    }

    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>> {
        Instance::outcome(self, ticket).map(|result| result.map_err(reject))
    }

    fn forget(&mut self, ticket: u64) {
        Instance::forget(self, ticket);
    }

    fn has_work(&self) -> bool {
        self.ic.engine.busy()
    }

    fn state_version(&self) -> u64 {
        // Every execution, and every ingress message (a management call
        // executes when it is submitted).
        self.ic.engine.executions() + self.next_message
    }

    fn save(&self) -> Result<ic_http::SavedState, String> {
        crate::saved::save(self)
    }

    fn tick(&mut self) {
        self.ic.execute_round();
        self.ic.stage_changes();
    }

    fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject> {
        self.query_as(canister, sender, method, arg).map_err(reject)
    }
}
