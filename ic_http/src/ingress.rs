//! Ingress messages by request id: each executes once however often it is
//! submitted, its status goes into its subnet's certified tree, and both
//! are forgotten once its expiry has passed (the replica prunes them too).
//!
//! A round works in two phases, so that what handlers read here never runs
//! ahead of the certified trees: [`Requests::round`] turns the outcomes the
//! backend reports into tree edits, and once the trees are certified,
//! [`Requests::settle`] marks those messages done and forgets the expired.

use candid::Principal;
use ic_transport_types::RequestId;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

use ic_model::{Edits, Path, leb128};

use crate::Reject;

/// What the network keeps of one ingress message.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Request {
    /// Who sent it: only they may read its status.
    pub sender: Principal,
    /// The canister it was sent to.
    pub canister: Principal,
    /// The subnet (index) whose tree certifies its status.
    subnet: usize,
    expiry: u64,
    ticket: u64,
    done: bool,
}

/// What a round decided, to settle once the trees are certified.
#[derive(Default)]
pub(crate) struct Decided {
    /// Edits of each subnet's tree.
    pub edits: Vec<Edits>,
    /// The messages with an outcome now.
    done: Vec<RequestId>,
    /// The messages to forget, and their tickets for the backend.
    pub expired: Vec<(RequestId, u64)>,
}

/// The ingress messages the network has accepted and not yet forgotten.
#[derive(Default)]
pub(crate) struct Requests {
    by_id: HashMap<RequestId, Request>,
    /// The messages still running, by the ticket the backend gave them.
    running: BTreeMap<u64, RequestId>,
    /// The messages with an outcome, by expiry: the order they are forgotten in.
    done: BTreeSet<(u64, RequestId)>,
    /// Messages that came after the last round: it marks them `processing`.
    fresh: Vec<RequestId>,
}

impl Requests {
    pub fn get(&self, id: &RequestId) -> Option<&Request> {
        self.by_id.get(id)
    }

    pub fn insert(
        &mut self,
        id: RequestId,
        sender: Principal,
        canister: Principal,
        subnet: usize,
        expiry: u64,
        ticket: u64,
    ) {
        self.running.insert(ticket, id);
        self.fresh.push(id);
        self.by_id.insert(id, Request { sender, canister, subnet, expiry, ticket, done: false });
    }

    /// Whether the message's outcome is certified.
    pub fn is_done(&self, id: &RequestId) -> bool {
        self.by_id.get(id).is_some_and(|r| r.done)
    }

    /// Whether a message came after the last round: the next round
    /// executes it (or starts to) and certifies its status.
    pub fn fresh(&self) -> bool {
        !self.fresh.is_empty()
    }

    /// How many messages the network remembers.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The tickets of the messages still running, for the backend to report on.
    pub fn running(&self) -> Vec<u64> {
        self.running.keys().copied().collect()
    }

    /// A round's decisions: the statuses of the new messages (`processing`)
    /// and of those with an `outcome` now, as edits of each of `subnets`
    /// trees, and the answered messages whose expiry is before `now`, to
    /// delete. Nothing handlers read changes until [`Requests::settle`].
    pub fn round(
        &mut self,
        subnets: usize,
        now: u64,
        outcomes: Vec<(u64, Result<Vec<u8>, Reject>)>,
    ) -> Decided {
        let mut decided = Decided { edits: vec![Edits::new(); subnets], ..Decided::default() };
        let mut answered = BTreeSet::new();
        for (ticket, result) in outcomes {
            let Some(id) = self.running.remove(&ticket) else { continue };
            let request = &self.by_id[&id];
            let entries =
                status_entries(&id, Some(result)).into_iter().map(|(path, value)| (path, Some(value)));
            decided.edits[request.subnet].extend(entries);
            decided.done.push(id);
            answered.insert(id);
        }
        for id in std::mem::take(&mut self.fresh) {
            if let Some(request) = self.by_id.get(&id).filter(|_| !answered.contains(&id)) {
                let entries = status_entries(&id, None).into_iter().map(|(path, value)| (path, Some(value)));
                decided.edits[request.subnet].extend(entries);
            }
        }
        let expired = self.done.iter().take_while(|(expiry, _)| *expiry < now).map(|&(_, id)| id);
        for id in expired.collect::<Vec<_>>() {
            let request = &self.by_id[&id];
            decided.edits[request.subnet]
                .push((vec![b"request_status".to_vec(), id.as_slice().to_vec()], None));
            decided.expired.push((id, request.ticket));
        }
        decided
    }

    /// Once the trees hold a round's decisions: its messages are done, and
    /// the expired ones forgotten.
    pub fn settle(&mut self, decided: &Decided) {
        for (id, _) in &decided.expired {
            if let Some(request) = self.by_id.remove(id) {
                self.done.remove(&(request.expiry, *id));
            }
        }
        for id in &decided.done {
            if let Some(request) = self.by_id.get_mut(id) {
                request.done = true;
                self.done.insert((request.expiry, *id));
            }
        }
    }
}

/// The messages as a network saves them: by request id.
pub(crate) type SavedRequests = Vec<([u8; 32], Request)>;

impl Requests {
    pub fn save(&self) -> SavedRequests {
        let mut saved: SavedRequests = self.by_id.iter().map(|(id, r)| (**id, r.clone())).collect();
        saved.sort_by_key(|(_, r)| r.ticket);
        saved
    }

    /// The messages `saved` holds, and each subnet's tree entries for their
    /// statuses (`processing` while they run, else what `outcome` says of
    /// their tickets), for a network resumed from a state.
    pub fn restore(
        saved: SavedRequests,
        subnets: usize,
        outcome: impl Fn(u64) -> Option<Result<Vec<u8>, Reject>>,
    ) -> Result<(Self, Vec<Edits>), String> {
        let mut requests = Self::default();
        let mut edits = vec![Edits::new(); subnets];
        for (id, mut request) in saved {
            let id = RequestId::new(&id);
            let Some(subnet_edits) = edits.get_mut(request.subnet) else {
                return Err(format!(
                    "the saved state has a request on subnet {}, of {subnets}",
                    request.subnet
                ));
            };
            // An outcome the backend no longer has is read again once it does.
            let status = outcome(request.ticket).filter(|_| request.done);
            request.done = status.is_some();
            let entries = status_entries(&id, status).into_iter().map(|(path, value)| (path, Some(value)));
            subnet_edits.extend(entries);
            if request.done {
                requests.done.insert((request.expiry, id));
            } else {
                requests.running.insert(request.ticket, id);
            }
            requests.by_id.insert(id, request);
        }
        Ok((requests, edits))
    }
}

/// `/request_status/<id>/...` as the interface specification lays it out;
/// `None`: still `processing`.
fn status_entries(id: &RequestId, result: Option<Result<Vec<u8>, Reject>>) -> Vec<(Path, Vec<u8>)> {
    let at =
        |label: &str| vec![b"request_status".to_vec(), id.as_slice().to_vec(), label.as_bytes().to_vec()];
    match result {
        None => vec![(at("status"), b"processing".to_vec())],
        Some(Ok(reply)) => vec![(at("status"), b"replied".to_vec()), (at("reply"), reply)],
        Some(Err(reject)) => {
            let reject = crate::backend::response(reject);
            vec![
                (at("status"), b"rejected".to_vec()),
                (at("reject_code"), leb128(reject.reject_code as u64)),
                (at("reject_message"), reject.reject_message.into_bytes()),
                (at("error_code"), reject.error_code.unwrap_or_default().into_bytes()),
            ]
        }
    }
}
