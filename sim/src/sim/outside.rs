//! Canisters hosted outside the simulator: calls from its canisters are
//! routed to them like any other, and another layer (the IC model's system
//! canisters) answers them. Their answers travel back as responses do.

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
}

#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct Outside {
    /// Each canister hosted outside, with the subnet (an index) that routes it.
    hosts: BTreeMap<Principal, usize>,
    /// Calls delivered and not answered yet, with whether they were handed out.
    waiting: BTreeMap<u64, (Request, bool)>,
    next_id: u64,
}

impl Outside {
    pub(super) fn subnet_of(&self, id: &Principal) -> Option<usize> {
        self.hosts.get(id).copied()
    }

    pub(super) fn deliver(&mut self, request: Request) {
        self.waiting.insert(self.next_id, (request, false));
        self.next_id += 1;
    }

    /// Calls delivered and not handed out yet.
    pub(super) fn new_calls(&self) -> usize {
        self.waiting.values().filter(|(_, handed_out)| !handed_out).count()
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
        if self.canisters.contains_key(&id) {
            return Err(SimError::IdTaken(id));
        }
        self.outside.hosts.insert(id, subnet);
        Ok(())
    }

    /// The calls to canisters hosted outside delivered since the last time,
    /// oldest first. Each waits for its answer.
    pub fn outside_calls(&mut self) -> Vec<OutsideCall> {
        let new = self.outside.waiting.iter_mut().filter(|(_, (_, handed_out))| !*handed_out);
        new.map(|(&id, (request, handed_out))| {
            *handed_out = true;
            OutsideCall {
                id,
                caller: request.sender,
                callee: request.receiver,
                method: request.method.clone(),
                arg: request.arg.clone(),
                cycles: request.cycles,
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
        let Some((request, true)) = self.outside.waiting.remove(&id) else { return false };
        let subnet = self.outside.hosts[&request.receiver];
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
