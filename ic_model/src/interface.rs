//! An IC as its clients reach it ([`Interface`]): what the IC's HTTP
//! interface serves, what PocketIC's client drives, what the harness
//! measures.

use candid::Principal;

use crate::{Effective, Reject};

/// A call as a client makes it: to `canister`, from `sender`, `method`
/// with its candid argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CanisterCall {
    /// The canister called.
    pub canister: Principal,
    /// Who calls: a user's principal, or the anonymous one.
    pub sender: Principal,
    /// The method's name.
    pub method: String,
    /// The candid argument.
    pub arg: Vec<u8>,
}

impl CanisterCall {
    /// `method(arg)` on `canister`, from `sender`.
    pub fn new(canister: Principal, sender: Principal, method: impl Into<String>, arg: Vec<u8>) -> Self {
        Self { canister, sender, method: method.into(), arg }
    }
}

/// An IC as a client reaches it: ingress messages routed by their effective
/// principal, their outcomes, queries, rounds and time. [`Ic`](crate::Ic)
/// is one, whatever engine executes its canisters; so is a handle on an
/// `Ic` that another thread owns, and a PocketIC instance through its
/// client.
pub trait Interface {
    /// What it is, in one line, for every report and server to say (so
    /// that no one mistakes a simulator for the replica).
    fn description(&self) -> String;

    /// Its time, in ns since the epoch.
    fn time(&self) -> u64;

    /// Moves its time on to `ns` (never back).
    fn advance_time_to(&mut self, ns: u64);

    /// Submits `call` as an ingress message, routed by `effective` (the management canister's calls go to the subnet it
    /// names). `Ok` is the ticket [`outcome`](Self::outcome) takes; `Err`
    /// is a refusal before execution (the replica's non-replicated
    /// rejection).
    fn submit(&mut self, effective: Effective, call: CanisterCall) -> Result<u64, Reject>;

    /// The outcome of the message `ticket` names; `None` while it runs.
    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>>;

    /// Forgets the answered message `ticket` names, as the IC does once its
    /// expiry has passed; one still running is kept.
    fn forget(&mut self, ticket: u64);

    /// Executes one round on every subnet.
    fn tick(&mut self);

    /// `call` as a query, on the latest state; it reads the latest
    /// certificate with `ic0.data_certificate_copy`.
    fn query(&mut self, call: CanisterCall) -> Result<Vec<u8>, Reject>;
}
