//! Ingress messages and queries: submitted, inducted at the next round,
//! their statuses read and forgotten; `update_call` and `query_call` as PocketIC's.

use candid::Principal;
use serde::{Deserialize, Serialize};

use super::routing::not_found;
use super::{Sim, UPDATE_CALL_ROUND_LIMIT};
use crate::message::{ErrorCode, Ingress, Message, MessageId, Payload, Reject};

/// Where an ingress message is: being processed, or answered.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) enum IngressState {
    Processing,
    Completed(Payload),
}

impl Sim {
    /// Submits an update call. It is inducted in the next round of the
    /// canister's subnet. `canister_inspect_message` may refuse it here.
    pub fn submit_call(
        &mut self,
        id: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<MessageId, Reject> {
        let time = self.time;
        let canister = self.canisters.get_mut(&id).ok_or_else(|| not_found(id))?;
        canister.inspect(sender, method, arg.clone(), time)?;
        let message_id = MessageId(self.next_message);
        self.next_message += 1;
        let subnet = canister.subnet();
        let ingress = Ingress { id: message_id, sender, receiver: id, method: method.into(), arg };
        self.subnets[subnet].ingress_pool.push(Message::Ingress(ingress));
        self.ingress.insert(message_id, IngressState::Processing);
        Ok(message_id)
    }

    /// `None` while the message is being processed.
    pub fn ingress_status(&self, id: MessageId) -> Option<Result<Vec<u8>, Reject>> {
        match self.ingress.get(&id)? {
            IngressState::Processing => None,
            IngressState::Completed(Payload::Reply(data)) => Some(Ok(data.clone())),
            IngressState::Completed(Payload::Reject(reject)) => Some(Err(reject.clone())),
        }
    }

    /// Forgets an answered ingress message, as the replica prunes the
    /// statuses of expired ones (a network that runs for long must). `false`
    /// if it is unknown or still being processed: it is kept.
    pub fn forget_ingress(&mut self, id: MessageId) -> bool {
        match self.ingress.get(&id) {
            Some(IngressState::Completed(_)) => self.ingress.remove(&id).is_some(),
            _ => false,
        }
    }

    /// Submits and ticks until the answer, like PocketIC's `update_call`
    /// (which gives up after [`UPDATE_CALL_ROUND_LIMIT`] rounds).
    pub fn update_call(
        &mut self,
        id: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject> {
        let message = self.submit_call(id, sender, method, arg)?;
        for _ in 0..UPDATE_CALL_ROUND_LIMIT {
            self.tick();
            if let Some(outcome) = self.ingress_status(message) {
                return outcome;
            }
        }
        let message = format!("no answer to {method} after {UPDATE_CALL_ROUND_LIMIT} rounds");
        Err(Reject::new(ErrorCode::IngressMessageTimeout, message))
    }

    /// Runs a query; nothing it does is kept. It reads no certificate
    /// (`data_certificate_present` is 0): the simulator signs nothing; a
    /// network that certifies its state uses [`Sim::query_call_certified`].
    pub fn query_call(
        &mut self,
        id: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject> {
        self.query_call_certified(id, sender, method, arg, None)
    }
}
