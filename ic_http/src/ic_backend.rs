//! The IC model over any engine as the interface's backend: what a network
//! serves is `ic_model::Ic`, whatever executes its canisters.

use ic_model::management::http_outcalls::{Outcall, OutcallResponse};
use ic_model::{CertifiedState, Engine, Ic};
use ic_sim_client::api::{FaultReport, FaultSpec};
use std::sync::Arc;

use crate::{Backend, SavedState};

impl<E: Engine> Backend for Ic<E> {
    fn certified_state(&self) -> Arc<CertifiedState> {
        self.certified().clone()
    }

    fn has_work(&self) -> bool {
        self.busy()
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

    fn inject_faults(&mut self, spec: FaultSpec) -> Result<(), String> {
        self.engine.inject_faults(spec)
    }

    fn fault_report(&self) -> Option<FaultReport> {
        Some(self.engine.fault_report())
    }

    fn pending_outcalls(&self, from: u64) -> Vec<Outcall> {
        Ic::pending_outcalls_from(self, from)
    }

    fn respond_to_outcall(&mut self, id: u64, response: OutcallResponse) -> Result<(), String> {
        Ic::respond_to_outcall(self, id, response, vec![])
    }
}
