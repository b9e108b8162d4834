//! What the HTTP interface needs of the network behind it.

use ic_model::management::http_outcalls::{Outcall, OutcallResponse};
use ic_model::{CertifiedState, Interface, Reject};
use ic_sim_client::api::{FaultReport, FaultSpec};
use ic_transport_types::{RejectCode, RejectResponse};
use std::sync::Arc;

/// A reject as the interface sends it. `SYS_UNKNOWN` (6) never reaches a
/// user on the IC (an ingress message's outcome is always known) and agents
/// cannot decode it: it is reported as transient.
pub(crate) fn response(reject: Reject) -> RejectResponse {
    RejectResponse {
        reject_code: RejectCode::try_from(reject.code() as u64).unwrap_or(RejectCode::SysTransient),
        reject_message: reject.message,
        error_code: Some(reject.error_code.to_string()),
    }
}

/// A backend's state, taken between rounds; encoding it, the larger part
/// of the work for canisters with large memories, runs after the rounds go
/// on, off the backend's thread.
pub type SavedState = Box<dyn FnOnce() -> Result<Vec<u8>, String> + Send>;

/// The network the interface serves: an IC its clients reach
/// ([`Interface`]), which owns the canisters and runs the rounds, with what
/// only a model of the IC can give: its certified state, its pace, a saved
/// state and a live view. It is driven from one thread, so it need not be
/// `Send`.
pub trait Backend: Interface {
    /// The network's certified state: its subnets and keys, and the
    /// canisters' entries, which the backend stages as they change (each
    /// [`tick`](Interface::tick) does). The interface adds the ingress
    /// messages' statuses and certifies each round; it serves its
    /// certificates.
    fn certified_state(&self) -> Arc<CertifiedState>;

    /// Whether the next round has a message to execute or deliver. Rounds
    /// run back to back while it does; otherwise one every half second (and
    /// one after new ingress), so a call that waits only for time (a
    /// deadline, a timer) costs no rounds meanwhile.
    fn has_work(&self) -> bool;

    /// A number that changes whenever its state changes, other than by
    /// time passing: a network writes a checkpoint only when it did. A
    /// backend that saves nothing need not keep one.
    fn state_version(&self) -> u64 {
        0
    }

    /// What a live view of the network shows (`/_/dashboard`); `None` if
    /// the backend gives none.
    fn view(&self) -> Option<ic_model::NetworkView> {
        None
    }

    /// Turns on `spec`'s faults, rounds counted from now, replacing any
    /// before (`/_/faults`); why not, if the backend injects none or the
    /// spec names what the network does not have.
    fn inject_faults(&mut self, spec: FaultSpec) -> Result<(), String> {
        let _ = spec;
        Err(format!("{} injects no faults", self.description()))
    }

    /// What the faults did and what is open; `None` if the backend injects none.
    fn fault_report(&self) -> Option<FaultReport> {
        None
    }

    /// Its whole state, for a network that keeps one across restarts
    /// ([`Network::start_saved`](crate::Network::start_saved) rebuilds the
    /// backend from the bytes it encodes to); called between rounds.
    fn save(&self) -> Result<SavedState, String> {
        Err(format!("{} cannot save its state", self.description()))
    }

    /// The HTTPS outcalls waiting for responses with an id of `from` or
    /// more (ids rise: those made since the network last asked), which a
    /// network whose policy allows makes ([`crate::OutcallPolicy`]); none
    /// if the backend makes none.
    fn pending_outcalls(&self, from: u64) -> Vec<Outcall> {
        let _ = from;
        Vec::new()
    }

    /// Answers pending outcall `id`, every node having got `response`.
    fn respond_to_outcall(&mut self, id: u64, response: OutcallResponse) -> Result<(), String> {
        let _ = response;
        Err(format!("{} has no pending outcall {id}", self.description()))
    }
}
