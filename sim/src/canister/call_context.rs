//! Call contexts and callbacks: who waits for an answer, and its one answer.

use candid::Principal;
use serde::{Deserialize, Serialize};

use super::{Canister, CanisterStatus, Output};
use crate::cycles;
use crate::message::{
    CallContextId, CallbackId, ErrorCode, Message, MessageId, Payload, Reject, Request, Response,
};
use crate::system_api::PerformedCall;

/// Who is waiting for a call context's answer.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub(super) enum Origin {
    Ingress(MessageId),
    Canister {
        caller: Principal,
        callback: CallbackId,
    },
    /// The global timer: nobody waits.
    System,
}

#[derive(Clone, Serialize, Deserialize)]
pub(super) struct CallContext {
    pub(super) origin: Origin,
    pub(super) caller: Principal,
    pub(super) responded: bool,
    /// Calls made from this context whose callbacks have not run yet.
    pub(super) outstanding: u32,
    pub(super) instructions: u64,
    /// Cycles attached by the caller, and how many were accepted so far.
    pub(super) cycles_available: u128,
    pub(super) cycles_accepted: u128,
}

#[derive(Clone, Serialize, Deserialize)]
pub(super) struct Callback {
    pub(super) call_context: CallContextId,
    pub(super) callee: Principal,
    pub(super) reply: (u64, u64),
    pub(super) reject: (u64, u64),
    pub(super) cleanup: Option<(u64, u64)>,
    pub(super) prepayment: u128,
    /// Method name and argument sizes, for the call's actual cost.
    pub(super) request_bytes: (u64, u64),
    /// Bounded-wait calls: the IC time (whole seconds) after which the
    /// caller stops waiting.
    pub(super) deadline: Option<u64>,
    /// The deadline passed: a `SYS_UNKNOWN` reject is on its way, and the
    /// real response, should it come, is dropped.
    pub(super) expired: bool,
}

pub(super) const ONE_SECOND: u64 = 1_000_000_000;

impl Canister {
    /// Bounded-wait calls whose deadline `time` has passed get a
    /// `SYS_UNKNOWN` reject in place of their response. As in the replica,
    /// deadlines are whole seconds and expire once `deadline < now`.
    pub fn expire_callbacks(&mut self, time: u64) {
        let now = time / ONE_SECOND;
        for (&id, callback) in self.callbacks.iter_mut() {
            if callback.expired || callback.deadline.is_none_or(|deadline| now <= deadline) {
                continue;
            }
            // A response already inducted is not timed out.
            if self.queue.iter().any(|m| matches!(m, Message::Response(r) if r.callback == id)) {
                continue;
            }
            callback.expired = true;
            let payload = Payload::reject(ErrorCode::DeadlineExpired, "Call deadline has expired.");
            self.queue.push_back(Message::Response(Response {
                originator: self.id,
                callback: id,
                payload,
                refund: 0,
                deadline_expired: true,
            }));
        }
    }

    pub(super) fn open_call_context(
        &mut self,
        origin: Origin,
        caller: Principal,
        cycles: u128,
    ) -> CallContextId {
        let id = CallContextId(self.fresh_id());
        let context = CallContext {
            origin,
            caller,
            responded: false,
            outstanding: 0,
            instructions: 0,
            cycles_available: cycles,
            cycles_accepted: 0,
        };
        self.call_contexts.insert(id, context);
        id
    }

    /// Turns the calls a committed execution performed into callbacks and requests.
    pub(super) fn send_calls(
        &mut self,
        id: CallContextId,
        performed: Vec<PerformedCall>,
        time: u64,
    ) -> Vec<Output> {
        let mut outputs = vec![];
        for PerformedCall { call, prepayment } in performed {
            let callback = CallbackId(self.fresh_id());
            let deadline = call.timeout_seconds.map(|s| time / ONE_SECOND + u64::from(s));
            self.callbacks.insert(
                callback,
                Callback {
                    call_context: id,
                    callee: call.callee,
                    reply: call.reply,
                    reject: call.reject,
                    cleanup: call.cleanup,
                    prepayment,
                    request_bytes: (call.method.len() as u64, call.arg.len() as u64),
                    deadline,
                    expired: false,
                },
            );
            self.call_contexts.get_mut(&id).expect("open").outstanding += 1;
            self.stats.calls_performed += 1;
            if let Some(to) = self.stats.calls_to_mut(call.callee) {
                to.performed += 1;
            }
            outputs.push(Output::Request(Request {
                sender: self.id,
                receiver: call.callee,
                method: call.method,
                arg: call.arg,
                cycles: call.cycles,
                callback,
                deadline,
            }));
        }
        outputs
    }

    /// Sends the call context's one answer.
    pub(super) fn respond(&mut self, id: CallContextId, payload: Payload) -> Vec<Output> {
        let context = self.call_contexts.get_mut(&id).expect("open");
        if context.responded {
            return vec![];
        }
        context.responded = true;
        let refund = context.cycles_available - context.cycles_accepted;
        match context.origin {
            Origin::Ingress(message) => vec![Output::IngressCompleted(message, payload)],
            Origin::Canister { caller, callback } => {
                vec![Output::Response(Response {
                    originator: caller,
                    callback,
                    payload,
                    refund,
                    deadline_expired: false,
                })]
            }
            Origin::System => vec![],
        }
    }

    /// Closes a call context that has no outstanding calls. One that never
    /// answered is rejected: with the trap if the last execution trapped.
    pub(super) fn close_if_done(&mut self, id: CallContextId, trap: Option<Reject>) -> Vec<Output> {
        if self.call_contexts[&id].outstanding > 0 {
            return vec![];
        }
        let reject = trap.unwrap_or_else(|| {
            let message = format!("Canister {} did not produce a response", self.id);
            Reject::new(ErrorCode::CanisterDidNotReply, message)
        });
        let outputs = self.respond(id, Payload::Reject(reject));
        self.call_contexts.remove(&id);
        if self.status == CanisterStatus::Stopping && self.call_contexts.is_empty() {
            self.status = CanisterStatus::Stopped;
        }
        outputs
    }

    /// A consumed response frees the request slot its call held.
    pub(super) fn release_slot(&mut self, callee: Principal) {
        let in_flight = &mut self.store.data_mut().in_flight;
        if let Some(n) = in_flight.get_mut(&callee) {
            *n -= 1;
            if *n == 0 {
                in_flight.remove(&callee);
            }
        }
    }

    /// Gives back what a call did not use of its prepayment.
    pub(super) fn refund_prepayment(
        &mut self,
        callback: &Callback,
        response_bytes: u64,
        callback_instructions: u64,
    ) {
        let (method, arg) = callback.request_bytes;
        let cost = cycles::call_actual_cost(method, arg, response_bytes, callback_instructions)
            .min(callback.prepayment);
        self.store.data_mut().credit(callback.prepayment - cost);
        self.stats.cycles_consumed += cost;
    }
}
