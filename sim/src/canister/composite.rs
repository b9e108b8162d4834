//! Composite queries on one canister: a query that calls other canisters'
//! query methods and answers from its callbacks. What its executions do to
//! the canister's memories stays until its evaluation ends, and then all of
//! it is undone, as the replica runs a query call graph on a copy of the
//! state (`rs/execution_environment/src/query_handler/query_context.rs`).
//! The graph itself is walked by `Sim` (`sim/query_graph.rs`).

use candid::Principal;
use std::collections::BTreeMap;

use super::rollback::{Keeping, Ran};
use super::{Canister, Entry};
use crate::code::Snapshot;
use crate::message::{CallbackId, ErrorCode, Payload, Reject};
use crate::system_api::{CanisterTrap, Effects, EntryKind, MessageContext, PerformedCall};

/// A call a composite query made, to be answered in the same evaluation.
#[derive(Debug)]
pub struct QueryCall {
    pub sender: Principal,
    pub receiver: Principal,
    pub method: String,
    pub arg: Vec<u8>,
    /// The caller's callback that runs with the answer.
    pub callback: CallbackId,
}

/// What an execution in a query's evaluation came to.
#[derive(Debug)]
pub enum QueryStep {
    /// The call context's one answer: this canister's part is over.
    Answer(Payload),
    /// No answer yet: calls to make (none while others are outstanding).
    Calls(Vec<QueryCall>),
}

/// A composite query's open call context, and what undoes it.
pub(super) struct Evaluation {
    /// The instance as it was before the evaluation.
    copy: Snapshot,
    /// Its callback ids are the evaluation's: the counter is put back.
    next_id: u64,
    caller: Principal,
    callbacks: BTreeMap<CallbackId, QueryCallback>,
    instructions: u64,
}

struct QueryCallback {
    reply: (u64, u64),
    reject: (u64, u64),
    cleanup: Option<(u64, u64)>,
}

impl Canister {
    /// Runs `canister_composite_query <method>`: its first execution. The
    /// canister's state is kept until [`Canister::end_query_evaluation`].
    pub(super) fn start_composite_query(
        &mut self,
        export: String,
        mut context: MessageContext,
    ) -> (QueryStep, u64) {
        let installed = self.code.as_ref().expect("it exports the method");
        debug_assert!(self.evaluation.is_none(), "the graph refuses re-entrant calls");
        let copy = installed.code.snapshot(&self.store);
        self.store.data_mut().stable.checkpoint();
        self.evaluation = Some(Evaluation {
            copy,
            next_id: self.next_id,
            caller: context.caller,
            callbacks: BTreeMap::new(),
            instructions: 0,
        });
        context.kind = EntryKind::CompositeQuery;
        let ran = self.run_keeping(Entry::Export(export), context, Keeping::UntilEvaluationEnds);
        let instructions = ran.instructions;
        (self.evaluation_step(ran.outcome, instructions), instructions)
    }

    /// Runs the callback of a call the composite query made, with its
    /// answer, and the cleanup if the callback traps.
    pub fn query_response(
        &mut self,
        callback: CallbackId,
        payload: Payload,
        time: u64,
        instruction_limit: u64,
    ) -> (QueryStep, u64) {
        let evaluation = self.evaluation.as_mut().expect("a response to a call of an open evaluation");
        let callback = evaluation.callbacks.remove(&callback).expect("the call was made and not answered");
        let (kind, (fun, env), arg, reject) = match payload {
            Payload::Reply(data) => (EntryKind::CompositeReplyCallback, callback.reply, data, None),
            Payload::Reject(reject) => (
                EntryKind::CompositeRejectCallback,
                callback.reject,
                vec![],
                Some((reject.code(), reject.message)),
            ),
        };
        let (caller, call_context_instructions) = (evaluation.caller, evaluation.instructions);
        let new_context = |kind, arg| {
            let mut context = MessageContext::new(kind, caller, String::new(), arg, time);
            context.call_context_instructions = call_context_instructions;
            context.instruction_limit = instruction_limit;
            context
        };
        let mut context = new_context(kind, arg);
        context.reject = reject;
        let Ran { outcome, mut instructions } =
            self.run_keeping(Entry::Callback { fun, env }, context, Keeping::UntilEvaluationEnds);
        if let (Err(_), Some((fun, env))) = (&outcome, callback.cleanup) {
            let mut context = new_context(EntryKind::CompositeCleanup, vec![]);
            context.instruction_limit = instruction_limit.saturating_sub(instructions);
            let cleanup = Entry::Callback { fun, env };
            instructions += self.run_keeping(cleanup, context, Keeping::UntilEvaluationEnds).instructions;
        }
        (self.evaluation_step(outcome, instructions), instructions)
    }

    /// Undoes everything the evaluation did to this canister; nothing if
    /// it has none open.
    pub fn end_query_evaluation(&mut self) {
        let Some(evaluation) = self.evaluation.take() else {
            return;
        };
        self.next_id = evaluation.next_id;
        let state = self.store.data_mut();
        state.stable.rollback();
        state.settle_stable();
        let installed = self.code.as_mut().expect("an evaluation runs installed code");
        installed.code.restore(&mut self.store, &evaluation.copy);
    }

    /// The answer or the calls an execution left: its reply or reject, a
    /// reject when nothing is outstanding any more (the trap's, or "did not
    /// produce a response"), else the calls it made.
    fn evaluation_step(&mut self, outcome: Result<Effects, CanisterTrap>, instructions: u64) -> QueryStep {
        let id = self.id;
        let mut next_id = self.next_id;
        let evaluation = self.evaluation.as_mut().expect("open");
        evaluation.instructions += instructions;
        let effects = match outcome {
            Ok(effects) => effects,
            Err(_) if !evaluation.callbacks.is_empty() => return QueryStep::Calls(vec![]),
            Err(trap) => {
                let reject = Reject::new(trap.code, format!("Error from Canister {id}: {trap}"));
                return QueryStep::Answer(Payload::Reject(reject));
            }
        };
        if let Some(payload) = effects.response {
            return QueryStep::Answer(payload);
        }
        let calls: Vec<_> = effects
            .performed
            .into_iter()
            .map(|PerformedCall { call, .. }| {
                next_id += 1;
                let callback = CallbackId(next_id);
                let (reply, reject, cleanup) = (call.reply, call.reject, call.cleanup);
                evaluation.callbacks.insert(callback, QueryCallback { reply, reject, cleanup });
                QueryCall { sender: id, receiver: call.callee, method: call.method, arg: call.arg, callback }
            })
            .collect();
        let no_calls = evaluation.callbacks.is_empty();
        self.next_id = next_id;
        if no_calls {
            let message = format!("Canister {id} did not produce a response");
            return QueryStep::Answer(Payload::reject(ErrorCode::CanisterDidNotReply, message));
        }
        QueryStep::Calls(calls)
    }
}
