//! Ingress messages by request id: each executes once however often it is
//! submitted, its outcome goes into its subnet's certified tree, and both
//! are forgotten once its expiry has passed (the replica prunes them too).

use candid::Principal;
use ic_transport_types::RequestId;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::backend::Reject;
use crate::certification::{Path, Tree};

/// Changes to a tree: a value to write, or `None` to delete the subtree.
pub(crate) type Edits = Vec<(Path, Option<Vec<u8>>)>;

/// What the network keeps of one ingress message.
pub(crate) struct Request {
    /// Who sent it: only they may read its status.
    pub sender: Principal,
    /// The canister it was sent to.
    pub canister: Principal,
    /// The subnet (index) whose tree certifies its status.
    pub subnet: usize,
    pub expiry: u64,
    ticket: u64,
    done: bool,
}

/// The ingress messages the network has accepted and not yet forgotten.
#[derive(Default)]
pub(crate) struct Requests {
    by_id: HashMap<RequestId, Request>,
    /// The messages still running, by the ticket the backend gave them.
    running: BTreeMap<u64, RequestId>,
    /// The messages with an outcome, by expiry: the order they are forgotten in.
    done: BTreeSet<(u64, RequestId)>,
    /// Whether a message came after the last round.
    fresh: bool,
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
        self.fresh = true;
        self.by_id.insert(id, Request { sender, canister, subnet, expiry, ticket, done: false });
    }

    /// Whether the message has an outcome.
    pub fn is_done(&self, id: &RequestId) -> bool {
        self.by_id.get(id).is_some_and(|r| r.done)
    }

    /// Whether a message came after the last round: the next round
    /// certifies what it did (a management call is done when submitted).
    pub fn fresh(&self) -> bool {
        self.fresh
    }

    /// How many messages the network remembers.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// The outcomes `outcome` now knows, as edits of each of `subnets`
    /// trees, and the messages whose expiry is before `now`, deleted; the
    /// latter's tickets are passed to `forget`.
    pub fn round(
        &mut self,
        subnets: usize,
        now: u64,
        outcome: impl Fn(u64) -> Option<Result<Vec<u8>, Reject>>,
        mut forget: impl FnMut(u64),
    ) -> Vec<Edits> {
        self.fresh = false;
        let mut edits = vec![Edits::new(); subnets];
        let finished: Vec<(u64, Result<Vec<u8>, Reject>)> =
            self.running.keys().filter_map(|&ticket| outcome(ticket).map(|o| (ticket, o))).collect();
        for (ticket, result) in finished {
            let id = self.running.remove(&ticket).expect("listed as running");
            let request = self.by_id.get_mut(&id).expect("a running message is known");
            request.done = true;
            self.done.insert((request.expiry, id));
            edits[request.subnet]
                .extend(status_entries(&id, result).into_iter().map(|(path, value)| (path, Some(value))));
        }
        while let Some(&(expiry, id)) = self.done.first()
            && expiry < now
        {
            self.done.pop_first();
            let request = self.by_id.remove(&id).expect("a message with an outcome is known");
            forget(request.ticket);
            edits[request.subnet].push((vec![b"request_status".to_vec(), id.as_slice().to_vec()], None));
        }
        edits
    }
}

fn leb128(n: u64) -> Vec<u8> {
    let mut bytes = vec![];
    leb128::write::unsigned(&mut bytes, n).expect("writing to a Vec");
    bytes
}

/// `/request_status/<id>/...` as the interface specification lays it out.
fn status_entries(id: &RequestId, result: Result<Vec<u8>, Reject>) -> Vec<(Path, Vec<u8>)> {
    let at =
        |label: &str| vec![b"request_status".to_vec(), id.as_slice().to_vec(), label.as_bytes().to_vec()];
    match result {
        Ok(reply) => vec![(at("status"), b"replied".to_vec()), (at("reply"), reply)],
        Err(reject) => vec![
            (at("status"), b"rejected".to_vec()),
            (at("reject_code"), leb128(reject.code as u64)),
            (at("reject_message"), reject.message.into_bytes()),
            (at("error_code"), reject.error_code.into_bytes()),
        ],
    }
}

/// Applies a round's edits to a subnet's tree.
pub(crate) fn apply(tree: &mut Tree, edits: Edits) {
    for (path, value) in edits {
        match value {
            Some(value) => tree.insert(&path, value),
            None => tree.delete(&path),
        }
    }
}
