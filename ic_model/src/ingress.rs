//! Ingress messages as the model keeps them: numbered in the order they
//! were submitted, each answered when submitted (by the management
//! canister or a system canister) or executed by the engine; and queries.

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::engine::Engine;
use crate::{Effective, Ic, Reject};

#[derive(Clone, Debug, Serialize, Deserialize)]
enum Outcome {
    /// Executed by the engine's rounds, under the engine's id.
    InEngine(u64),
    /// Answered when it was submitted.
    Done(Result<Vec<u8>, Reject>),
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
    /// The number the next message gets: numbers are never reused.
    next: u64,
}

impl<E: Engine> Ic<E> {
    /// An ingress message from `sender`, routed by `effective`: its number,
    /// which [`outcome`](Self::outcome) takes, or the reject when the IC
    /// refuses it before execution.
    pub fn submit(
        &mut self,
        effective: Effective,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<u64, Reject> {
        let outcome = match self.answer(effective, canister, sender, method, &arg) {
            Some(result) => Outcome::Done(result),
            None => {
                // The effective canister id routes the call; one that names
                // another canister is refused before execution.
                routed_to(effective, canister)
                    .map_err(|why| Reject::new(ic_error_types::ErrorCode::CanisterNotFound, why))?;
                Outcome::InEngine(self.engine.submit_call(canister, sender, method, arg)?)
            }
        };
        let ingress = &mut self.state.ingress;
        let number = ingress.next;
        ingress.next += 1;
        ingress.messages.insert(number, Message { sender, outcome });
        Ok(number)
    }

    /// The outcome of message `number`; `None` while it runs (or if there is
    /// none).
    pub fn outcome(&self, number: u64) -> Option<Result<Vec<u8>, Reject>> {
        match &self.state.ingress.messages.get(&number)?.outcome {
            Outcome::Done(result) => Some(result.clone()),
            Outcome::InEngine(id) => self.engine.ingress_status(*id),
        }
    }

    /// Who sent message `number`.
    pub fn sender(&self, number: u64) -> Option<Principal> {
        Some(self.state.ingress.messages.get(&number)?.sender)
    }

    /// How many ingress messages have been submitted, forgotten ones too.
    pub fn submitted(&self) -> u64 {
        self.state.ingress.next
    }

    /// Forgets an answered message (the IC forgets them after their expiry).
    /// One still running is kept.
    pub fn forget(&mut self, number: u64) {
        let ingress = &mut self.state.ingress;
        let forgotten = match ingress.messages.get(&number).map(|m| &m.outcome) {
            Some(Outcome::Done(_)) => true,
            Some(Outcome::InEngine(id)) => self.engine.forget_ingress(*id),
            None => false,
        };
        if forgotten {
            ingress.messages.remove(&number);
        }
    }

    /// A query from `sender`, on the latest state, with the certificate of
    /// the canister's certified data.
    pub fn query(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject> {
        if let Some(answer) = self.answer_query(canister, sender, method, &arg) {
            return answer;
        }
        let data_certificate = self.data_certificate(canister);
        self.engine.query(canister, sender, method, arg, data_certificate)
    }
}

/// Whether a call routed by `effective` may go to `canister`: the effective
/// canister id must be the canister itself (or absent); why not, if not.
pub fn routed_to(effective: Effective, canister: Principal) -> Result<(), String> {
    match effective {
        Effective::None => Ok(()),
        Effective::Canister(id) if id == canister => Ok(()),
        Effective::Subnet(id) => Err(format!(
            "RequestRoutingError(the effective principal {id} is a subnet, not the canister {canister})"
        )),
        Effective::Canister(id) => Err(format!(
            "RequestRoutingError(the effective principal {id} does not match the canister {canister})"
        )),
    }
}
