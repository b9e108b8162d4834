//! What the HTTP interface needs of the engine behind it.

use candid::Principal;
use ic_transport_types::RejectCode;

/// A subnet and the canister ids it hosts (inclusive ranges).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubnetRanges {
    /// The subnet's id.
    pub id: Principal,
    /// The canister-id ranges it hosts, ascending.
    pub ranges: Vec<(Principal, Principal)>,
}

/// A call the engine refused or a canister rejected, as the IC reports it
/// to a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reject {
    /// The interface specification's reject code (1 to 5).
    pub code: RejectCode,
    /// Why, for people.
    pub message: String,
    /// The replica's error code, such as `IC0406`.
    pub error_code: String,
}

/// What the state tree shows of a canister (`/canister/<id>/...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanisterState {
    /// Its controllers.
    pub controllers: Vec<Principal>,
    /// The sha256 of its module, once installed.
    pub module_hash: Option<Vec<u8>>,
    /// Its metadata sections: `(name, public, content)`. Only controllers
    /// may read a private one.
    pub metadata: Vec<(String, bool, Vec<u8>)>,
    /// What it certified (`ic0.certified_data_set`), at most 32 bytes.
    pub certified_data: Vec<u8>,
}

/// The engine the interface serves: it owns the canisters and runs the
/// rounds. It is driven from one thread, so it need not be `Send`.
pub trait Backend {
    /// What the engine is, in one line: `/api/v2/status` reports it as the
    /// `impl_version`, so that no one mistakes it for the replica.
    fn description(&self) -> String;

    /// The subnets, and the canister ids each hosts.
    fn subnets(&self) -> Vec<SubnetRanges>;

    /// The network's root key (DER), which its certificates verify
    /// against: the engine gives it to canisters (`ic0.root_key_copy`).
    fn set_root_key(&mut self, der: Vec<u8>);

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

    /// The canisters created, installed, changed or deleted since the last
    /// call: their entries in the state tree are written anew.
    fn take_changed_canisters(&mut self) -> Vec<Principal>;

    /// Every canister there is: a network certifies them all when it starts.
    fn canister_ids(&self) -> Vec<Principal>;

    /// What the state tree shows of `canister`; `None` if there is none.
    fn canister(&self, canister: Principal) -> Option<CanisterState>;

    /// Executes one round on every subnet.
    fn tick(&mut self);

    /// Executes a query on the latest state. `data_certificate` is the
    /// certificate (CBOR) of the canister's certified data as of the last
    /// certified state, which the query reads with `ic0.data_certificate_copy`.
    fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
        data_certificate: Vec<u8>,
    ) -> Result<Vec<u8>, Reject>;
}
