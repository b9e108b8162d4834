//! Routing between canisters and subnets, and answers for missing canisters.

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, VecDeque};
use std::ops::RangeInclusive;

use super::outside::Host;
use super::{IngressState, Sim};
use crate::canister::Output;
use crate::message::{Message, Payload, Reject, Response};
use crate::system_api;

#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Subnet {
    pub(super) id: Principal,
    /// Derived from the canisters' subnets on restore.
    #[serde(skip)]
    pub(crate) canisters: BTreeSet<Principal>,
    /// Ingress messages submitted since the subnet's last round.
    pub(super) ingress_pool: Vec<Message>,
    /// Messages from other subnets' streams, inducted at its next round.
    pub(super) inbound: Vec<Message>,
    /// Messages from other subnets still travelling, in the order sent,
    /// with the first tick that may induct them.
    pub(super) in_transit: VecDeque<(u64, Message)>,
    /// The canister ids it holds.
    pub(super) ids: IdRanges,
    /// How many numbers of its allocation range it has assigned or skipped.
    pub(super) next_canister: u64,
}

/// The canister ids a subnet holds, by number ([`canister_id`]): the
/// ranges the routing table gives it, in one of which a canister created
/// with a specified id must lie, and the range it numbers new canisters
/// from, in order. PocketIC's NNS subnet, for one, holds mainnet's NNS
/// ranges and numbers new canisters from another range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdRanges {
    /// The routing table's ranges, inclusive.
    pub ranges: Vec<RangeInclusive<u64>>,
    /// Where new canisters' numbers come from, inclusive; within `ranges`
    /// or not.
    pub allocation: RangeInclusive<u64>,
}

impl IdRanges {
    /// One range, which new canisters are numbered from too: the `index`-th
    /// block of [`IDS_PER_SUBNET`] ids.
    pub fn block(index: u64) -> Self {
        let range = index * IDS_PER_SUBNET..=(index + 1) * IDS_PER_SUBNET - 1;
        Self { ranges: vec![range.clone()], allocation: range }
    }

    /// Whether the routing table sends `number` here: in a range, or in the
    /// allocation range.
    pub fn holds(&self, number: u64) -> bool {
        self.allocation.contains(&number) || self.ranges.iter().any(|range| range.contains(&number))
    }

    /// Every range, the allocation range too if it is not in one.
    pub fn all(&self) -> Vec<RangeInclusive<u64>> {
        let mut all = self.ranges.clone();
        if !self
            .ranges
            .iter()
            .any(|r| r.contains(self.allocation.start()) && r.contains(self.allocation.end()))
        {
            all.push(self.allocation.clone());
        }
        all
    }

    /// How many canisters it can number.
    pub(crate) fn capacity(&self) -> u64 {
        self.allocation.end() - self.allocation.start() + 1
    }
}

/// The number a canister id encodes ([`canister_id`]'s inverse); `None` for
/// a principal that is not a canister id.
pub fn canister_number(id: Principal) -> Option<u64> {
    let bytes: [u8; 10] = id.as_slice().try_into().ok()?;
    let (number, suffix) = bytes.split_at(8);
    (suffix == CANISTER_ID_SUFFIX).then(|| u64::from_be_bytes(number.try_into().expect("8 bytes")))
}

impl Subnet {
    /// Messages waiting for the subnet's next rounds: ingress, inbound, in transit.
    pub(super) fn waiting(&self) -> usize {
        self.ingress_pool.len() + self.inbound.len() + self.in_transit.len()
    }
}

impl Sim {
    /// Sends an output from a canister on `from` to where it goes.
    pub(super) fn route(&mut self, from: usize, output: Output) {
        let message = match output {
            Output::IngressCompleted(id, payload) => {
                self.ingress.insert(id, IngressState::Completed(payload));
                return;
            }
            Output::Request(request) => Message::Request(request),
            Output::Response(response) => Message::Response(self.maybe_drop(response)),
        };
        match self.hosting_subnet(message.receiver(), from) {
            Some(to) if to == from => self.deliver(from, message),
            // Stopped at the border: the reject is inducted at the caller's next round.
            Some(_) if let Some(reject) = rejected_at_the_border(&message) => {
                self.subnets[from].inbound.push(Message::Response(reject));
            }
            Some(to) if self.config.xnet_latency_rounds == 0 => self.subnets[to].inbound.push(message),
            Some(to) => {
                let arrives = self.ticks.saturating_add(self.config.xnet_latency_rounds);
                self.subnets[to].in_transit.push_back((arrives, message));
            }
            // In no subnet's range: induction on `from` answers for it.
            None => self.deliver(from, message),
        }
    }

    /// The subnet whose id range holds `id`, as the IC's routing table
    /// says: a deleted canister's id still routes there, and that subnet
    /// answers for it. One hosted on every subnet (the management
    /// canister) is on `from`, the sender's.
    fn hosting_subnet(&self, id: Principal, from: usize) -> Option<usize> {
        if let Some(canister) = self.canisters.get(&id) {
            return Some(canister.subnet());
        }
        match self.outside.host_of(&id) {
            Some(Host::Subnet(subnet)) => return Some(subnet),
            Some(Host::EverySubnet) => return Some(from),
            None => {}
        }
        let number = canister_number(id)?;
        self.subnets.iter().position(|subnet| subnet.ids.holds(number))
    }

    /// Puts a message in its receiver's queue, or answers it when the
    /// receiver does not exist.
    pub(super) fn deliver(&mut self, subnet: usize, message: Message) {
        if self.is_paused(&message.receiver()) {
            self.subnets[subnet].inbound.push(message);
            return;
        }
        if let Some(canister) = self.canisters.get_mut(&message.receiver()) {
            canister.enqueue(message);
            return;
        }
        match message {
            Message::Request(r) if self.outside.host_of(&r.receiver).is_some() => {
                self.outside.deliver(r, subnet)
            }
            Message::Request(r) => {
                let response = r.rejected(not_found(r.receiver));
                self.route(subnet, Output::Response(response));
            }
            Message::Ingress(m) => {
                self.ingress.insert(m.id, IngressState::Completed(Payload::Reject(not_found(m.receiver))));
            }
            // Nobody is left to execute the callback.
            Message::Response(_) => {}
        }
    }
}

/// How many canister ids a subnet's range holds by default: subnet `i` (an
/// index into [`Sim::subnets`]) numbers its canisters from
/// `i * IDS_PER_SUBNET` ([`IdRanges::block`]).
pub const IDS_PER_SUBNET: u64 = 1 << 20;

const CANISTER_ID_SUFFIX: [u8; 2] = [1, 1];

/// The canister id numbered `number`, encoded as the IC encodes canister
/// ids: 8 big-endian bytes, then 0x01 0x01.
pub fn canister_id(number: u64) -> Principal {
    let mut bytes = number.to_be_bytes().to_vec();
    bytes.extend(CANISTER_ID_SUFFIX);
    Principal::from_slice(&bytes)
}

/// What a message to a canister that does not exist gets.
pub(super) fn not_found(id: Principal) -> Reject {
    Reject::canister_not_found(id)
}

/// The answer to a request too large to leave its subnet, if it is one.
fn rejected_at_the_border(message: &Message) -> Option<Response> {
    let Message::Request(request) = message else { return None };
    system_api::too_large_for_another_subnet(request).map(|reject| request.rejected(reject))
}
