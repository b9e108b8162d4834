//! What the HTTP interface needs of the engine behind it.

use candid::Principal;
use ic_model::{CertifiedState, Reject};
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

/// The engine the interface serves: it owns the canisters and runs the
/// rounds. It is driven from one thread, so it need not be `Send`.
pub trait Backend {
    /// What the engine is, in one line: `/api/v2/status` reports it as the
    /// `impl_version`, so that no one mistakes it for the replica.
    fn description(&self) -> String;

    /// The network's certified state: its subnets and keys, and the
    /// canisters' entries, which the engine stages as they change. The
    /// interface adds the ingress messages' statuses and certifies each
    /// round; it serves its certificates.
    fn certified_state(&self) -> Arc<CertifiedState>;

    /// The engine's time, in ns since the epoch.
    fn time(&self) -> u64;

    /// Moves the engine's time on to `ns` (never back).
    fn advance_time_to(&mut self, ns: u64);

    /// Submits an ingress message to `canister` (the management canister's
    /// calls are routed by `effective`, the canister the URL names). `Ok` is
    /// the ticket its outcome is read by; `Err` is a refusal before
    /// execution (the replica's non-replicated rejection).
    fn submit(
        &mut self,
        effective: Principal,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<u64, Reject>;

    /// The outcome of the message `ticket` names; `None` while it runs.
    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>>;

    /// Forgets the answered message `ticket` names: the network has pruned
    /// its status (its expiry has passed) and will not ask again.
    fn forget(&mut self, ticket: u64);

    /// Whether the next round has a message to execute or deliver. Rounds
    /// run back to back while it does; otherwise one every half second (and
    /// one after new ingress), so a call that waits only for time (a
    /// deadline, a timer) costs no rounds meanwhile.
    fn has_work(&self) -> bool;

    /// Executes one round on every subnet, and stages in the certified
    /// state the entries of every canister it (or a management call since
    /// the last round) created, changed or deleted.
    fn tick(&mut self);

    /// Executes a query on the latest state; it reads the last certified
    /// state's certificate with `ic0.data_certificate_copy`.
    fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject>;

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

    /// Its whole state, for a network that keeps one across restarts
    /// ([`Network::start_saved`](crate::Network::start_saved) rebuilds the
    /// backend from the bytes it encodes to); called between rounds.
    fn save(&self) -> Result<SavedState, String> {
        Err(format!("{} cannot save its state", self.description()))
    }
}
