//! Ingress messages as the model keeps them: numbered in the order they
//! were submitted, each executed in a round, by the engine or (for the
//! management canister and the system canisters) by the model; and
//! queries.
//!
//! As on the IC, a message to the management canister or a system canister
//! executes in the round after it was submitted, at that round's time: an
//! ICRC-2 approval whose `expires_at` has passed when it is sent is refused
//! as expired, whatever time the network last certified.

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

use crate::engine::Engine;
use crate::{CanisterCall, Effective, Ic, Interface, Reject};

#[derive(Clone, Debug, Serialize, Deserialize)]
enum Outcome {
    /// Executed by the engine's rounds, under the engine's id.
    InEngine(u64),
    /// For the management canister or a system canister, which the model
    /// answers: it executes in the next round.
    ForModel(ToModel),
    /// Answered by the model.
    Done(Result<Vec<u8>, Reject>),
}

/// A message the model executes, as it was submitted.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct ToModel {
    effective: Effective,
    canister: Principal,
    method: String,
    arg: Vec<u8>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Message {
    sender: Principal,
    outcome: Outcome,
}

/// The ingress messages not forgotten yet, by number.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Ingress {
    messages: BTreeMap<u64, Message>,
    /// The messages the model executes in the next round, by number: the
    /// order they were submitted in.
    for_model: BTreeSet<u64>,
    /// The number the next message gets: numbers are never reused.
    next: u64,
    /// Messages the model has executed since it was built or restored.
    #[serde(skip)]
    executed: u64,
}

impl<E: Engine> Ic<E> {
    /// Executes the messages to the management canister and the system
    /// canisters submitted since the last round, in the order they came,
    /// at the engine's time: part of a round ([`Ic::execute_round`]).
    pub(crate) fn execute_ingress_to_model(&mut self) {
        for number in std::mem::take(&mut self.state.ingress.for_model) {
            let Some(message) = self.state.ingress.messages.get(&number) else { continue };
            let Outcome::ForModel(to) = &message.outcome else { continue };
            let (sender, to) = (message.sender, to.clone());
            let result = self.answer(to.effective, to.canister, sender, &to.method, &to.arg);
            let result = result.expect("the model answers the messages it took");
            let ingress = &mut self.state.ingress;
            ingress.executed += 1;
            if let Some(message) = ingress.messages.get_mut(&number) {
                message.outcome = Outcome::Done(result);
            }
        }
    }

    /// Whether messages wait for the next round: the engine's, or those the
    /// model executes.
    pub fn busy(&self) -> bool {
        self.engine.busy() || !self.state.ingress.for_model.is_empty() || !self.state.signatures.is_empty()
    }

    /// How many ingress messages the model itself has executed (those to
    /// the management canister and the system canisters) since it was
    /// built or restored.
    pub fn model_executions(&self) -> u64 {
        self.state.ingress.executed
    }

    /// Who sent message `number`.
    pub fn sender(&self, number: u64) -> Option<Principal> {
        Some(self.state.ingress.messages.get(&number)?.sender)
    }

    /// How many ingress messages have been submitted, forgotten ones too.
    pub fn submitted(&self) -> u64 {
        self.state.ingress.next
    }
}

/// The model as its clients reach it: a message to the management canister
/// or a system canister waits for the next round, as on the IC; any other
/// goes to the engine.
impl<E: Engine> Interface for Ic<E> {
    fn description(&self) -> String {
        self.engine.description()
    }

    fn time(&self) -> u64 {
        self.engine.time()
    }

    fn advance_time_to(&mut self, ns: u64) {
        let now = self.engine.time();
        self.engine.advance_time(ns.saturating_sub(now));
    }

    fn submit(&mut self, effective: Effective, call: CanisterCall) -> Result<u64, Reject> {
        let (canister, sender) = (call.canister, call.sender);
        let outcome = if self.answers(canister) {
            Outcome::ForModel(ToModel { effective, canister, method: call.method, arg: call.arg })
        } else {
            // The effective canister id routes the call; one that names
            // another canister is refused before execution.
            routed_to(effective, canister)
                .map_err(|why| Reject::new(ic_error_types::ErrorCode::CanisterNotFound, why.to_string()))?;
            Outcome::InEngine(self.engine.submit_call(call)?)
        };
        let ingress = &mut self.state.ingress;
        let ticket = ingress.next;
        ingress.next += 1;
        if let Outcome::ForModel(_) = outcome {
            ingress.for_model.insert(ticket);
        }
        ingress.messages.insert(ticket, Message { sender, outcome });
        Ok(ticket)
    }

    fn outcome(&self, ticket: u64) -> Option<Result<Vec<u8>, Reject>> {
        match &self.state.ingress.messages.get(&ticket)?.outcome {
            Outcome::Done(result) => Some(result.clone()),
            Outcome::ForModel(_) => None,
            Outcome::InEngine(id) => self.engine.ingress_status(*id),
        }
    }

    fn forget(&mut self, ticket: u64) {
        let ingress = &mut self.state.ingress;
        let forgotten = match ingress.messages.get(&ticket).map(|m| &m.outcome) {
            Some(Outcome::Done(_)) => true,
            Some(Outcome::ForModel(_)) | None => false,
            Some(Outcome::InEngine(id)) => self.engine.forget_ingress(*id),
        };
        if forgotten {
            ingress.messages.remove(&ticket);
        }
    }

    fn query(&mut self, call: CanisterCall) -> Result<Vec<u8>, Reject> {
        if let Some(answer) = self.answer_query(call.canister, call.sender, &call.method, &call.arg) {
            return answer;
        }
        let data_certificate = self.data_certificate(call.canister);
        self.engine.query(call, data_certificate)
    }

    /// The round, then the certified state's entries of every canister it
    /// (or a management call since the last round) created, changed or
    /// deleted.
    fn tick(&mut self) {
        self.execute_round();
        self.stage_changes();
    }
}

/// Why an ingress message may not go to the canister it names: the
/// effective canister id it was routed by names something else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misrouted {
    /// A subnet: only the management canister takes such messages.
    ToSubnet {
        /// The subnet the message was routed by.
        effective: Principal,
        /// The canister it names.
        canister: Principal,
    },
    /// Another canister.
    ToOtherCanister {
        /// The canister the message was routed by.
        effective: Principal,
        /// The canister it names.
        canister: Principal,
    },
}

impl std::fmt::Display for Misrouted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ToSubnet { effective, canister } => {
                write!(f, "the effective principal {effective} is a subnet, not the canister {canister}")
            }
            Self::ToOtherCanister { effective, canister } => {
                write!(f, "the effective principal {effective} does not match the canister {canister}")
            }
        }
    }
}

/// Whether a call routed by `effective` may go to `canister`: the
/// effective canister id must be the canister itself (or absent).
pub fn routed_to(effective: Effective, canister: Principal) -> Result<(), Misrouted> {
    match effective {
        Effective::None => Ok(()),
        Effective::Canister(id) if id == canister => Ok(()),
        Effective::Subnet(effective) => Err(Misrouted::ToSubnet { effective, canister }),
        Effective::Canister(effective) => Err(Misrouted::ToOtherCanister { effective, canister }),
    }
}
