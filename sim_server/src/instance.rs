//! One instance: the IC model over a simulator, and the ingress messages
//! PocketIC's client and the IC's HTTP interface submit to it.

use candid::Principal;
use ic_model::sim_engine::reject_of;
use ic_model::{Effective, Ic, Keys, Reject};
use pocket_ic::RejectResponse;
use pocket_ic::common::rest::{RawEffectivePrincipal, RawMessageId, Topology};
use serde::{Deserialize, Serialize};
use sim::Sim;
use std::collections::BTreeMap;

use crate::errors::{self, ApiError};
use crate::topology;

/// PocketIC's `await_ingress_message` executes at most this many rounds.
pub const AWAIT_ROUNDS: u64 = sim::UPDATE_CALL_ROUND_LIMIT;

pub type CallResult = Result<Vec<u8>, Reject>;

#[derive(Clone, Serialize, Deserialize)]
pub(crate) enum Outcome {
    /// Executed by the simulator's rounds.
    InSim(sim::MessageId),
    /// A call to the management canister or a system canister: answered
    /// when it was submitted.
    Done(CallResult),
}

#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Message {
    sender: Principal,
    outcome: Outcome,
}

pub struct Instance {
    /// The IC: the management canister and, on a network, the system
    /// canisters, over the simulator, and the certified state.
    pub ic: Ic<Sim>,
    /// By index, the id PocketIC's client is given; a network forgets them.
    pub(crate) messages: BTreeMap<u64, Message>,
    /// The index the next message gets: indices are never reused.
    pub(crate) next_message: u64,
}

fn principal(bytes: &[u8], what: &str) -> Result<Principal, ApiError> {
    Principal::try_from_slice(bytes).map_err(|e| ApiError::bad_request(format!("{what}: {e}")))
}

/// PocketIC's effective principal in the IC model's terms.
fn effective(raw: &RawEffectivePrincipal) -> Result<Effective, ApiError> {
    Ok(match raw {
        RawEffectivePrincipal::None => Effective::None,
        RawEffectivePrincipal::SubnetId(id) => Effective::Subnet(principal(id, "subnet id")?),
        RawEffectivePrincipal::CanisterId(id) => Effective::Canister(principal(id, "canister id")?),
    })
}

impl Instance {
    /// A PocketIC instance: keys from seed 0, no system canisters.
    pub fn new(sim: Sim) -> Self {
        Self::over(Ic::new(sim, Keys::from_seed(0), false))
    }

    /// An instance of `ic`, with no ingress messages yet.
    pub fn over(ic: Ic<Sim>) -> Self {
        Self { ic, messages: BTreeMap::new(), next_message: 0 }
    }

    pub fn topology(&self) -> Topology {
        topology::of(&self.ic.engine.subnets())
    }

    /// The canister, for an endpoint that PocketIC refuses for a missing one.
    pub fn existing(&self, id: &[u8]) -> Result<Principal, ApiError> {
        let id = principal(id, "canister id")?;
        if self.ic.canister(id).is_err() {
            return Err(ApiError::bad_request(format!("CanisterNotFound({id})")));
        }
        Ok(id)
    }

    /// `update/submit_ingress_message`: `Ok(Err)` when the IC refuses it.
    pub fn submit(
        &mut self,
        call: pocket_ic::common::rest::RawCanisterCall,
    ) -> Result<Result<RawMessageId, RejectResponse>, ApiError> {
        let sender = principal(&call.sender, "sender")?;
        let canister = principal(&call.canister_id, "canister id")?;
        let routed = effective(&call.effective_principal)?;
        if canister == Principal::management_canister() {
            if call.method == "provisional_create_canister_with_cycles" {
                // PocketIC refuses a creation routed nowhere before execution.
                self.ic.subnet_for(routed).map_err(ApiError::bad_request)?;
            }
        } else {
            check_effective(routed, canister).map_err(ApiError::bad_request)?;
        }
        let index = match self.submit_as(routed, canister, sender, &call.method, call.payload) {
            Ok(index) => index,
            Err(reject) => return Ok(Err(errors::pocket_ic_reject(reject))),
        };
        let message_id = index.to_be_bytes().to_vec();
        Ok(Ok(RawMessageId { effective_principal: call.effective_principal, message_id }))
    }

    /// An ingress message from `sender`: its index, which
    /// [`outcome`](Self::outcome) takes, or the reject when the IC refuses it.
    pub fn submit_as(
        &mut self,
        effective: Effective,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<u64, Reject> {
        let outcome = match self.ic.answer(effective, canister, sender, method, &arg) {
            Some(result) => Outcome::Done(result),
            None => {
                // The effective canister id routes the call; one that names
                // another canister is refused before execution.
                check_effective(effective, canister)
                    .map_err(|why| Reject::new(ic_error_types::ErrorCode::CanisterNotFound, why))?;
                Outcome::InSim(self.ic.engine.submit_call(canister, sender, method, arg).map_err(reject_of)?)
            }
        };
        Ok(self.push(Message { sender, outcome }))
    }

    fn push(&mut self, message: Message) -> u64 {
        let index = self.next_message;
        self.next_message += 1;
        self.messages.insert(index, message);
        index
    }

    /// Forgets an answered message (the IC HTTP interface prunes them after
    /// their expiry). One still running is kept.
    pub fn forget(&mut self, index: u64) {
        let forgotten = match self.messages.get(&index).map(|m| &m.outcome) {
            Some(Outcome::Done(_)) => true,
            Some(Outcome::InSim(id)) => self.ic.engine.forget_ingress(*id),
            None => false,
        };
        if forgotten {
            self.messages.remove(&index);
        }
    }

    fn index(id: &RawMessageId) -> Option<u64> {
        Some(u64::from_be_bytes(id.message_id.as_slice().try_into().ok()?))
    }

    fn message(&self, index: u64) -> Option<&Message> {
        self.messages.get(&index)
    }

    /// The outcome of the message at `index`; `None` while it runs (or if
    /// there is none).
    pub fn outcome(&self, index: u64) -> Option<CallResult> {
        match &self.message(index)?.outcome {
            Outcome::Done(result) => Some(result.clone()),
            Outcome::InSim(id) => {
                self.ic.engine.ingress_status(*id).map(|outcome| outcome.map_err(reject_of))
            }
        }
    }

    /// `None` while the message is being processed (or is unknown, as PocketIC says).
    /// `Err(sender)` when `caller` is not who sent it.
    pub fn status(
        &self,
        id: &RawMessageId,
        caller: Option<Principal>,
    ) -> Result<Option<CallResult>, Principal> {
        let Some(index) = Self::index(id) else { return Ok(None) };
        let Some(message) = self.message(index) else { return Ok(None) };
        if caller.is_some_and(|caller| caller != message.sender) {
            return Err(message.sender);
        }
        Ok(self.outcome(index))
    }

    /// `update/await_ingress_message`: rounds until the answer, at most [`AWAIT_ROUNDS`].
    pub fn await_message(&mut self, id: &RawMessageId) -> Result<CallResult, ApiError> {
        if Self::index(id).and_then(|index| self.message(index)).is_none() {
            return Err(ApiError::bad_request(format!("BadIngressMessage(unknown message id {id:?})")));
        }
        for round in 0..=AWAIT_ROUNDS {
            if let Ok(Some(result)) = self.status(id, None) {
                return Ok(result);
            }
            if round < AWAIT_ROUNDS {
                self.ic.execute_round();
            }
        }
        Err(ApiError::bad_request(format!(
            "BadIngressMessage(Failed to answer to ingress {id:?} after {AWAIT_ROUNDS} rounds.)"
        )))
    }

    /// `read/query`.
    pub fn query(&mut self, call: pocket_ic::common::rest::RawCanisterCall) -> Result<CallResult, ApiError> {
        let sender = principal(&call.sender, "sender")?;
        let canister = principal(&call.canister_id, "canister id")?;
        if canister != Principal::management_canister() {
            check_effective(effective(&call.effective_principal)?, canister)
                .map_err(ApiError::bad_request)?;
        }
        Ok(self.query_as(canister, sender, &call.method, call.payload))
    }

    /// A query from `sender`, on the latest state, with the certificate of
    /// the canister's certified data.
    pub fn query_as(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> CallResult {
        if let Some(answer) = self.ic.answer_query(canister, method, &arg) {
            return answer;
        }
        let data_certificate = self.ic.data_certificate(canister);
        self.ic
            .engine
            .query_call_certified(canister, sender, method, arg, data_certificate)
            .map_err(reject_of)
    }

    /// `update/set_time`: the simulator's time only moves forward.
    pub fn set_time(&mut self, ns: u64) -> Result<(), ApiError> {
        let now = self.ic.engine.time();
        if ns < now {
            return Err(ApiError::bad_request(format!(
                "the simulator's time cannot go back: it is {now} ns, {ns} ns was asked"
            )));
        }
        self.ic.engine.advance_time(ns - now);
        Ok(())
    }
}

/// A call to a canister is routed by its effective principal: it must be
/// the canister itself (or absent).
fn check_effective(effective: Effective, canister: Principal) -> Result<(), String> {
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
