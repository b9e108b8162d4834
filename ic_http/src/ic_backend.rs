//! The IC model over any engine as the interface's backend: what a network
//! serves is `ic_model::Ic`, whatever executes its canisters.

use candid::Principal;
use ic_model::{CertifiedState, Effective, Engine, Ic};
use std::sync::Arc;

use crate::{Backend, Reject, SavedState};

impl<E: Engine> Backend for Ic<E> {
    fn description(&self) -> String {
        self.engine.description()
    }

    fn certified_state(&self) -> Arc<CertifiedState> {
        self.certified().clone()
    }

    fn time(&self) -> u64 {
        Ic::time(self)
    }

    fn advance_time_to(&mut self, ns: u64) {
        Ic::advance_time_to(self, ns);
    }

    fn submit(
        &mut self,
        effective: Principal,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<u64, Reject> {
        Ic::submit(self, Effective::Canister(effective), canister, sender, method, arg)
    }

    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>> {
        Ic::outcome(self, ticket)
    }

    fn forget(&mut self, ticket: u64) {
        Ic::forget(self, ticket);
    }

    fn has_work(&self) -> bool {
        self.busy()
    }

    fn tick(&mut self) {
        self.execute_round();
        self.stage_changes();
    }

    fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject> {
        Ic::query(self, canister, sender, method, arg)
    }

    fn state_version(&self) -> u64 {
        // Every execution: the engine's, and the model's (a call to the
        // management canister or a system canister executes in the round
        // after it was submitted); and every ingress message, which the
        // state holds once submitted.
        self.engine.executions() + self.model_executions() + self.submitted()
    }

    fn save(&self) -> Result<SavedState, String> {
        Ic::save(self)
    }

    fn view(&self) -> Option<ic_model::NetworkView> {
        Some(Ic::view(self))
    }
}
