//! The simulator as the backend of the IC's HTTP interface (`ic_http`).

use candid::Principal;
use ic_http::{Backend, Reject, SubnetRanges};
use ic_transport_types::RejectCode;
use pocket_ic::RejectResponse;
use pocket_ic::common::rest::RawEffectivePrincipal;

use crate::instance::Instance;
use crate::topology;

/// What `/api/v2/status` says answers.
pub const DESCRIPTION: &str = "this project's simulator (a model of IC message routing running the real canister wasm) behind the IC's HTTP interface; not the replica";

/// A reject as the HTTP interface reports it. The simulator's `SYS_UNKNOWN`
/// (6) never reaches a user on the IC (an ingress message's outcome is
/// always known) and agents cannot decode it: it is reported as transient.
fn reject(r: RejectResponse) -> Reject {
    let code = RejectCode::try_from(r.reject_code as u64).unwrap_or(RejectCode::SysTransient);
    Reject { code, message: r.reject_message, error_code: r.error_code.to_string() }
}

/// The simulator `sim` as the backend of an `ic_http::Network`.
pub fn backend(sim: sim::Sim) -> Box<dyn Backend> {
    Box::new(Instance::new(sim))
}

impl Backend for Instance {
    fn description(&self) -> String {
        DESCRIPTION.into()
    }

    fn subnets(&self) -> Vec<SubnetRanges> {
        let ranges = |index| {
            let range = topology::canister_range(index);
            (Principal::from(range.start), Principal::from(range.end))
        };
        let subnets = self.sim.subnets().into_iter().enumerate();
        subnets.map(|(index, id)| SubnetRanges { id, ranges: vec![ranges(index)] }).collect()
    }

    fn time(&self) -> u64 {
        self.sim.time()
    }

    fn advance_time_to(&mut self, ns: u64) {
        let now = self.sim.time();
        self.sim.advance_time(ns.saturating_sub(now));
    }

    fn submit(
        &mut self,
        effective: Principal,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<u64, Reject> {
        let effective = RawEffectivePrincipal::CanisterId(effective.as_slice().to_vec());
        match self.submit_as(&effective, canister, sender, method, arg) {
            Ok(submitted) => submitted.map_err(reject),
            // The URL's effective canister id routes the call; one that
            // names no canister is refused before execution.
            Err(error) => Err(Reject {
                code: RejectCode::DestinationInvalid,
                message: error.message,
                error_code: "IC0301".into(),
            }),
        }
    }

    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>> {
        Instance::outcome(self, ticket).map(|result| result.map_err(reject))
    }

    fn has_work(&self) -> bool {
        let outstanding = self.sim.outstanding();
        outstanding.ingress > 0 || outstanding.messages > 0 || outstanding.calls_in_flight > 0
    }

    fn tick(&mut self) {
        self.sim.tick();
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
