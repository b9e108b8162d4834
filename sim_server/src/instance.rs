//! One instance: the IC model over a simulator, and what PocketIC's REST
//! API adds to it (its message ids, effective principals, topology).

use candid::Principal;
use ic_model::{
    CanisterCall, Effective, Ic, Interface, Keys, Misrouted, NoSubnet, Reject, SubnetRanges, routed_to,
};
use pocket_ic::RejectResponse;
use pocket_ic::common::rest::{RawCanisterCall, RawEffectivePrincipal, RawMessageId, Topology};
use sim::Sim;

use crate::errors::{self, ApiError};
use crate::topology;

/// An instance is the IC model over the simulator.
pub type Instance = Ic<Sim>;

/// PocketIC's `await_ingress_message` executes at most this many rounds.
pub const AWAIT_ROUNDS: u64 = sim::UPDATE_CALL_ROUND_LIMIT;

pub type CallResult = Result<Vec<u8>, Reject>;

/// A PocketIC instance: keys from seed 0, no system canisters (PocketIC
/// without its ICP features).
pub fn new(sim: Sim) -> Instance {
    Ic::new(sim, Keys::from_seed(0), false)
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

pub fn topology(instance: &Instance) -> Topology {
    let subnets = instance.certified().subnets();
    let ranges: Vec<_> =
        subnets.iter().map(|s| SubnetRanges { id: s.id, ranges: s.ranges.clone() }).collect();
    topology::of(&ranges)
}

/// The canister, for an endpoint that PocketIC refuses for a missing one.
pub fn existing(instance: &Instance, id: &[u8]) -> Result<Principal, ApiError> {
    let id = principal(id, "canister id")?;
    if instance.canister(id).is_err() {
        return Err(ApiError::bad_request(format!("CanisterNotFound({id})")));
    }
    Ok(id)
}

/// `update/submit_ingress_message`: `Ok(Err)` when the IC refuses it.
pub fn submit(
    instance: &mut Instance,
    call: RawCanisterCall,
) -> Result<Result<RawMessageId, RejectResponse>, ApiError> {
    let sender = principal(&call.sender, "sender")?;
    let canister = principal(&call.canister_id, "canister id")?;
    let routed = effective(&call.effective_principal)?;
    // PocketIC refuses a call routed nowhere before execution.
    if canister == Principal::management_canister() {
        if call.method == "provisional_create_canister_with_cycles" {
            instance.subnet_for(routed).map_err(no_subnet)?;
        }
    } else {
        routed_to(routed, canister).map_err(misrouted)?;
    }
    let number = match instance.submit(routed, CanisterCall::new(canister, sender, call.method, call.payload))
    {
        Ok(number) => number,
        Err(reject) => return Ok(Err(errors::pocket_ic_reject(reject))),
    };
    let message_id = number.to_be_bytes().to_vec();
    Ok(Ok(RawMessageId { effective_principal: call.effective_principal, message_id }))
}

fn number(id: &RawMessageId) -> Option<u64> {
    Some(u64::from_be_bytes(id.message_id.as_slice().try_into().ok()?))
}

/// `None` while the message is being processed (or is unknown, as PocketIC
/// says). `Err(sender)` when `caller` is not who sent it.
pub fn status(
    instance: &Instance,
    id: &RawMessageId,
    caller: Option<Principal>,
) -> Result<Option<CallResult>, Principal> {
    let Some(number) = number(id) else { return Ok(None) };
    let Some(sender) = instance.sender(number) else { return Ok(None) };
    if caller.is_some_and(|caller| caller != sender) {
        return Err(sender);
    }
    Ok(instance.outcome(number))
}

/// `update/await_ingress_message`: rounds until the answer, at most [`AWAIT_ROUNDS`].
pub fn await_message(instance: &mut Instance, id: &RawMessageId) -> Result<CallResult, ApiError> {
    if number(id).and_then(|number| instance.sender(number)).is_none() {
        return Err(ApiError::bad_request(format!("BadIngressMessage(unknown message id {id:?})")));
    }
    for round in 0..=AWAIT_ROUNDS {
        if let Ok(Some(result)) = status(instance, id, None) {
            return Ok(result);
        }
        if round < AWAIT_ROUNDS {
            instance.execute_round();
        }
    }
    Err(ApiError::bad_request(format!(
        "BadIngressMessage(Failed to answer to ingress {id:?} after {AWAIT_ROUNDS} rounds.)"
    )))
}

/// PocketIC's answer to a creation routed to no subnet, in its words.
fn no_subnet(why: NoSubnet) -> ApiError {
    ApiError::bad_request(match why {
        NoSubnet::InTheNetwork => "no subnet".to_string(),
        NoSubnet::WithId(id) => format!("SubnetNotFound({id})"),
        NoSubnet::Hosting(id) => format!("CanisterNotFound({id})"),
    })
}

/// PocketIC's answer to a message its effective principal misroutes.
fn misrouted(why: Misrouted) -> ApiError {
    ApiError::bad_request(format!("RequestRoutingError({why})"))
}

/// `read/query`.
pub fn query(instance: &mut Instance, call: RawCanisterCall) -> Result<CallResult, ApiError> {
    let sender = principal(&call.sender, "sender")?;
    let canister = principal(&call.canister_id, "canister id")?;
    if canister != Principal::management_canister() {
        routed_to(effective(&call.effective_principal)?, canister).map_err(misrouted)?;
    }
    Ok(instance.query(CanisterCall::new(canister, sender, call.method, call.payload)))
}

/// `update/set_time`: the simulator's time only moves forward.
pub fn set_time(instance: &mut Instance, ns: u64) -> Result<(), ApiError> {
    let now = instance.time();
    if ns < now {
        return Err(ApiError::bad_request(format!(
            "the simulator's time cannot go back: it is {now} ns, {ns} ns was asked"
        )));
    }
    instance.advance_time_to(ns);
    Ok(())
}
