//! Canisters hosted outside the simulator: calls from its canisters are
//! routed to them like any other, and another layer (the IC model's system
//! canisters and management canister) answers them. Their answers travel
//! back as responses do. One is hosted by a subnet (a system canister), or
//! by every subnet (the management canister, `aaaaa-aa`): a call to it
//! stays on the caller's subnet, and its answer comes back from there.

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::Sim;
use crate::canister::Output;
use crate::error::SimError;
use crate::message::{Payload, Reject, Request, Response};

/// A call from a canister to one hosted outside, waiting for its answer
/// ([`Sim::answer_outside`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutsideCall {
    /// Names the call for its answer.
    pub id: u64,
    /// The canister that called.
    pub caller: Principal,
    /// The canister hosted outside.
    pub callee: Principal,
    /// The method called.
    pub method: String,
    /// The candid argument.
    pub arg: Vec<u8>,
    /// The cycles attached: what is not accepted is refunded.
    pub cycles: u128,
    /// The subnet (an index into [`Sim::subnets`]) the call was delivered
    /// on, and its answer leaves from: the callee's, or the caller's for a
    /// canister hosted on every subnet.
    pub subnet: usize,
}

/// Which subnet routes calls to a canister hosted outside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum Host {
    /// This one (an index into [`Sim::subnets`]).
    Subnet(usize),
    /// Every one: a call stays on its caller's subnet.
    EverySubnet,
}

/// A call delivered to a canister hosted outside, not answered yet.
#[derive(Clone, Serialize, Deserialize)]
struct Waiting {
    request: Request,
    /// The subnet it was delivered on (an index), which its answer leaves from.
    subnet: usize,
    /// Whether [`Sim::outside_calls`] handed it out.
    handed_out: bool,
}

#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct Outside {
    /// Each canister hosted outside, with the subnet that routes it.
    hosts: BTreeMap<Principal, Host>,
    /// Calls delivered and not answered yet.
    waiting: BTreeMap<u64, Waiting>,
    next_id: u64,
}

impl Outside {
    pub(super) fn host_of(&self, id: &Principal) -> Option<Host> {
        self.hosts.get(id).copied()
    }

    /// Delivers a call on subnet `subnet` (an index).
    pub(super) fn deliver(&mut self, request: Request, subnet: usize) {
        self.waiting.insert(self.next_id, Waiting { request, subnet, handed_out: false });
        self.next_id += 1;
    }

    /// Calls delivered and not handed out yet.
    pub(super) fn new_calls(&self) -> usize {
        self.waiting.values().filter(|call| !call.handed_out).count()
    }
}

impl Sim {
    /// From now on calls to `id` are routed through subnet `subnet` (an
    /// index into [`Sim::subnets`]) to be answered from outside
    /// ([`Sim::outside_calls`]). Refused if a canister of the simulator's
    /// has that id.
    pub fn host_outside(&mut self, id: Principal, subnet: usize) -> Result<(), SimError> {
        if subnet >= self.subnets.len() {
            return Err(SimError::NoSuchSubnet { index: subnet, subnets: self.subnets.len() });
        }
        self.host(id, Host::Subnet(subnet))
    }

    /// From now on calls to `id` are answered from outside
    /// ([`Sim::outside_calls`]) on every subnet, as the IC's management
    /// canister is: a call to it is delivered on its caller's subnet, with
    /// no latency between subnets, and its answer comes back from there.
    /// Refused if a canister of the simulator's has that id.
    pub fn host_on_every_subnet(&mut self, id: Principal) -> Result<(), SimError> {
        self.host(id, Host::EverySubnet)
    }

    fn host(&mut self, id: Principal, host: Host) -> Result<(), SimError> {
        if self.canisters.contains_key(&id) {
            return Err(SimError::IdTaken(id));
        }
        self.outside.hosts.insert(id, host);
        Ok(())
    }

    /// The calls to canisters hosted outside delivered since the last time,
    /// oldest first. Each waits for its answer.
    pub fn outside_calls(&mut self) -> Vec<OutsideCall> {
        let new = self.outside.waiting.iter_mut().filter(|(_, call)| !call.handed_out);
        new.map(|(&id, call)| {
            call.handed_out = true;
            let request = &call.request;
            OutsideCall {
                id,
                caller: request.sender,
                callee: request.receiver,
                method: request.method.clone(),
                arg: request.arg.clone(),
                cycles: request.cycles,
                subnet: call.subnet,
            }
        })
        .collect()
    }

    /// Answers the outside call `id`: its reply or reject goes back to the
    /// caller with the cycles it did not accept (at most those attached).
    /// `false` if no such call waits.
    pub fn answer_outside(
        &mut self,
        id: u64,
        result: Result<Vec<u8>, Reject>,
        accepted_cycles: u128,
    ) -> bool {
        if !self.outside.waiting.get(&id).is_some_and(|call| call.handed_out) {
            return false;
        }
        let Waiting { request, subnet, .. } = self.outside.waiting.remove(&id).expect("checked");
        let payload = match result {
            Ok(reply) => Payload::Reply(reply),
            Err(reject) => Payload::Reject(reject),
        };
        let response = Response {
            originator: request.sender,
            callback: request.callback,
            payload,
            refund: request.cycles.saturating_sub(accepted_cycles),
            deadline_expired: false,
        };
        self.route(subnet, Output::Response(response));
        true
    }
}
