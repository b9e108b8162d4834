//! One canister: its state, its queue, and the execution of its messages.
//!
//! A trap rolls the message back; a call context answers exactly once.

mod call_context;
mod composite;
mod install;
mod persist;
mod query;
mod rollback;
mod snapshot;
mod traps;

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use wasmi::{Engine, Store};

use crate::code::{Entry, Recorded};
use crate::cycles;
use crate::message::{
    CallContextId, CallbackId, ErrorCode, Ingress, Message, MessageId, Payload, Reject, Request, Response,
};
use crate::stats::CanisterStats;
use crate::system_api::{self, EntryKind, MessageContext, SystemState};
use call_context::{CallContext, Callback, Origin};
use composite::Evaluation;
pub use composite::{QueryCall, QueryStep};
pub use install::{InstallMode, Installation};
pub use persist::SavedCanister;
use rollback::{Installed, Keeping};
pub use snapshot::{CanisterSnapshot, SavedCanisterSnapshot};
pub use traps::TrapRate;
pub(crate) use traps::{TrapInjector, chance};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CanisterStatus {
    Running,
    /// Takes no new calls; becomes `Stopped` when its call contexts close.
    Stopping,
    Stopped,
}

/// What executing a message sends out.
#[derive(Debug)]
pub enum Output {
    Request(Request),
    Response(Response),
    IngressCompleted(MessageId, Payload),
}

/// What executing one message sent out, and the instructions it used (the
/// round's budget pays them).
#[derive(Default)]
pub struct Executed {
    pub outputs: Vec<Output>,
    pub instructions: u64,
}

/// Withdrawn before a message executes, for its largest possible
/// execution; what it did not use is refunded afterwards.
const MESSAGE_PREPAYMENT: u128 = cycles::execution_cost(cycles::MAX_INSTRUCTIONS_PER_MESSAGE);

pub struct Canister {
    id: Principal,
    /// Index of its subnet in the simulator's subnet order.
    subnet: usize,
    status: CanisterStatus,
    store: Store<SystemState>,
    code: Option<Installed>,
    call_contexts: BTreeMap<CallContextId, CallContext>,
    callbacks: BTreeMap<CallbackId, Callback>,
    next_id: u64,
    /// Messages inducted and not yet executed, in order.
    queue: VecDeque<Message>,
    stats: CanisterStats,
    /// Every committed execution, when tracing (for the benchmark's floor).
    trace: Option<Vec<Recorded>>,
    /// Fault injection: which update executions trap.
    traps: Option<TrapInjector>,
    /// Its certified data changed since [`Canister::take_certified_data_change`].
    certified_data_changed: bool,
    /// The time of the round whose heartbeat ran last: once a round.
    last_heartbeat: Option<u64>,
    /// A composite query's call context, while its evaluation runs.
    evaluation: Option<Evaluation>,
}

impl Canister {
    /// A canister with no code on subnet `subnet` (an index), in `state`.
    pub fn new(engine: &Engine, subnet: usize, state: SystemState, tracing: bool) -> Self {
        Self {
            id: state.id,
            subnet,
            status: CanisterStatus::Running,
            store: system_api::new_store(engine, state),
            code: None,
            call_contexts: BTreeMap::new(),
            callbacks: BTreeMap::new(),
            next_id: 0,
            queue: VecDeque::new(),
            stats: CanisterStats::default(),
            trace: tracing.then(Vec::new),
            traps: None,
            certified_data_changed: false,
            last_heartbeat: None,
            evaluation: None,
        }
    }

    /// Whether its certified data changed since the last call.
    pub fn take_certified_data_change(&mut self) -> bool {
        std::mem::take(&mut self.certified_data_changed)
    }

    pub fn subnet(&self) -> usize {
        self.subnet
    }

    pub fn status(&self) -> CanisterStatus {
        self.status
    }

    pub fn stats(&self) -> &CanisterStats {
        &self.stats
    }

    pub fn system_state(&self) -> &SystemState {
        self.store.data()
    }

    pub fn system_state_mut(&mut self) -> &mut SystemState {
        self.store.data_mut()
    }

    /// The committed executions since the last call; `None` without tracing.
    pub fn take_trace(&mut self) -> Option<Vec<Recorded>> {
        self.trace.as_mut().map(std::mem::take)
    }

    /// Inducts a message: it executes after those before it.
    pub fn enqueue(&mut self, message: Message) {
        self.queue.push_back(message);
    }

    /// Messages inducted and not yet executed.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    pub fn open_call_contexts(&self) -> usize {
        self.call_contexts.len()
    }

    /// Whether the call that `callback` waits for is bounded-wait.
    pub fn is_best_effort(&self, callback: CallbackId) -> bool {
        self.callbacks.get(&callback).is_some_and(|c| c.deadline.is_some())
    }

    /// From now on, `injector` decides which update executions trap.
    pub(crate) fn inject_traps(&mut self, injector: TrapInjector) {
        self.traps = Some(injector);
    }

    /// From now on none of its executions trap by injection.
    pub(crate) fn clear_traps(&mut self) {
        self.traps = None;
    }

    /// It takes no new calls; it is stopped once its call contexts have closed.
    pub fn stop(&mut self) {
        self.status =
            if self.call_contexts.is_empty() { CanisterStatus::Stopped } else { CanisterStatus::Stopping };
    }

    pub fn start(&mut self) {
        self.status = CanisterStatus::Running;
    }

    /// Whether anything waits to execute at `time`; the global timer only
    /// counts where `timers` (a round's first iteration).
    /// Executions a turn runs: the queued messages, plus a due timer when
    /// `timers` are looked at.
    pub fn pending(&self, time: u64, timers: bool) -> usize {
        let system_tasks = || usize::from(self.heartbeat_due(time)) + usize::from(self.timer_due(time));
        self.queue.len() + if timers { system_tasks() } else { 0 }
    }

    /// Its wasm memory's size in bytes; 0 without code.
    pub fn wasm_memory_size(&self) -> u64 {
        self.code.as_ref().map_or(0, |c| c.code.memory_len(&self.store) as u64)
    }

    /// The module it runs, if any.
    pub fn wasm_module(&self) -> Option<&[u8]> {
        self.code.as_ref().map(|c| c.code.module.wasm())
    }

    fn exports(&self, name: &str) -> bool {
        self.code.as_ref().is_some_and(|c| c.code.module.exports(name))
    }

    /// A running canister that exports `canister_heartbeat` runs it once
    /// every round, as the replica schedules it.
    fn heartbeat_due(&self, time: u64) -> bool {
        self.status == CanisterStatus::Running
            && self.last_heartbeat != Some(time)
            && self.exports("canister_heartbeat")
    }

    fn timer_due(&self, time: u64) -> bool {
        let timer = self.store.data().global_timer;
        self.status == CanisterStatus::Running
            && timer != 0
            && time >= timer
            && self.exports("canister_global_timer")
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Executes the round's heartbeat, or else the due global timer, or
    /// else the next message in the queue.
    pub fn execute_next(&mut self, time: u64, timers: bool) -> Executed {
        if timers && self.heartbeat_due(time) {
            self.last_heartbeat = Some(time);
            return self.execute_system_task(EntryKind::Heartbeat, "canister_heartbeat", time);
        }
        if timers && self.timer_due(time) {
            self.store.data_mut().global_timer = 0;
            return self.execute_system_task(EntryKind::GlobalTimer, "canister_global_timer", time);
        }
        match self.queue.pop_front() {
            Some(Message::Ingress(m)) => self.execute_ingress(m, time),
            Some(Message::Request(r)) => self.execute_request(r, time),
            Some(Message::Response(r)) => self.execute_response(r, time),
            None => Executed::default(),
        }
    }

    /// Why a call to `method` cannot start, if it cannot.
    fn refusal(&self, method: &str) -> Option<Reject> {
        let (error_code, message) = match self.status {
            CanisterStatus::Stopping => {
                (ErrorCode::CanisterStopping, format!("Canister {} is stopping", self.id))
            }
            CanisterStatus::Stopped => {
                (ErrorCode::CanisterStopped, format!("Canister {} is stopped", self.id))
            }
            CanisterStatus::Running if self.code.is_none() => {
                (ErrorCode::CanisterWasmModuleNotFound, format!("Canister {} has no wasm module", self.id))
            }
            CanisterStatus::Running
                if !self.exports(&format!("canister_update {method}"))
                    && !self.exports(&format!("canister_query {method}")) =>
            {
                // Looked for only here: a call that runs pays no extra lookup.
                if self.exports(&format!("canister_composite_query {method}")) {
                    (
                        ErrorCode::CompositeQueryCalledInReplicatedMode,
                        "Composite query cannot be called in replicated mode".into(),
                    )
                } else {
                    (
                        ErrorCode::CanisterMethodNotFound,
                        format!("Canister {} has no update method '{method}'", self.id),
                    )
                }
            }
            CanisterStatus::Running => return None,
        };
        Some(Reject::new(error_code, message))
    }

    fn execute_ingress(&mut self, m: Ingress, time: u64) -> Executed {
        if let Some(reject) = self.refusal(&m.method) {
            return Executed {
                outputs: vec![Output::IngressCompleted(m.id, Payload::Reject(reject))],
                instructions: 0,
            };
        }
        let id = self.open_call_context(Origin::Ingress(m.id), m.sender, 0);
        let context = MessageContext::new(EntryKind::Update, m.sender, m.method.clone(), m.arg, time);
        self.execute_method(id, &m.method, context)
    }

    fn execute_request(&mut self, r: Request, time: u64) -> Executed {
        if let Some(reject) = self.refusal(&r.method) {
            return Executed { outputs: vec![Output::Response(r.rejected(reject))], instructions: 0 };
        }
        let origin = Origin::Canister { caller: r.sender, callback: r.callback };
        let id = self.open_call_context(origin, r.sender, r.cycles);
        let mut context = MessageContext::new(EntryKind::Update, r.sender, r.method.clone(), r.arg, time);
        context.deadline = deadline_ns(r.deadline);
        self.execute_method(id, &r.method, context)
    }

    fn execute_method(&mut self, id: CallContextId, method: &str, mut context: MessageContext) -> Executed {
        if self.traps.as_mut().is_some_and(TrapInjector::fires) {
            // As if it trapped on its first instruction: nothing to roll back.
            self.stats.record(method, 0, true);
            let message = format!("Error from Canister {}: Canister trapped: injected fault", self.id);
            let trap = Reject::new(ErrorCode::CanisterTrapped, message);
            return Executed { outputs: self.close_if_done(id, Some(trap)), instructions: 0 };
        }
        let update = format!("canister_update {method}");
        let (entry, keeping) = if self.exports(&update) {
            (Entry::Export(update), Keeping::Commit)
        } else {
            // A query method, run in replicated mode: it answers, and
            // nothing else it did is kept.
            context.kind = EntryKind::ReplicatedQuery;
            (Entry::Export(format!("canister_query {method}")), Keeping::Discard)
        };
        let (mut outputs, trap, instructions) =
            self.execute_in_context(id, entry, context, method, false, keeping);
        outputs.extend(self.close_if_done(id, trap));
        Executed { outputs, instructions }
    }

    /// A heartbeat or a global timer: a call context of the system's, which
    /// expects no reply.
    fn execute_system_task(&mut self, kind: EntryKind, export: &str, time: u64) -> Executed {
        let id = self.open_call_context(Origin::System, self.id, 0);
        let context = MessageContext::new(kind, self.id, String::new(), vec![], time);
        let entry = Entry::Export(export.into());
        let (mut outputs, trap, instructions) =
            self.execute_in_context(id, entry, context, export, false, Keeping::Commit);
        outputs.extend(self.close_if_done(id, trap));
        Executed { outputs, instructions }
    }

    /// A response: its callback runs in the call context that made the call;
    /// if the callback traps, the call's cleanup runs.
    fn execute_response(&mut self, r: Response, time: u64) -> Executed {
        match self.callbacks.get(&r.callback) {
            // Its call context is gone (the canister was reinstalled).
            None => return Executed::default(),
            // Too late: the caller was told SYS_UNKNOWN instead.
            Some(callback) if callback.expired && !r.deadline_expired => return Executed::default(),
            Some(_) => {}
        }
        let callback = self.callbacks.remove(&r.callback).expect("checked");
        self.release_slot(callback.callee);
        self.store.data_mut().credit(r.refund);
        let id = callback.call_context;
        let context = self.call_contexts.get_mut(&id).expect("a callback's call context is open");
        context.outstanding -= 1;
        let (caller, responded) = (context.caller, context.responded);
        let may_reply = !responded && !matches!(context.origin, Origin::System);
        let response_bytes = r.payload.size() as u64;
        let (kind, (fun, env), arg, reject) = match r.payload {
            Payload::Reply(data) => (EntryKind::ReplyCallback, callback.reply, data, None),
            Payload::Reject(reject) => {
                self.stats.rejects_received.add(reject.code());
                if let Some(to) = self.stats.calls_to_mut(callback.callee) {
                    to.rejects.add(reject.code());
                }
                (EntryKind::RejectCallback, callback.reject, vec![], Some((reject.code(), reject.message)))
            }
        };
        let mut context = MessageContext::new(kind, caller, String::new(), arg, time);
        context.reject = reject;
        context.cycles_refunded = r.refund;
        context.may_reply = may_reply;
        context.deadline = deadline_ns(callback.deadline);
        let (mut outputs, trap, mut instructions) = self.execute_in_context(
            id,
            Entry::Callback { fun, env },
            context,
            "callback",
            true,
            Keeping::Commit,
        );
        self.refund_prepayment(&callback, response_bytes, instructions);
        if let (Some(_), Some((fun, env))) = (&trap, callback.cleanup) {
            let context = MessageContext::new(EntryKind::Cleanup, caller, String::new(), vec![], time);
            let ran = self.run(Entry::Callback { fun, env }, context);
            self.stats.record("cleanup", ran.instructions, ran.outcome.is_err());
            if let Ok(effects) = ran.outcome {
                self.commit(effects, None, "cleanup", time);
            }
            self.charge(cycles::execution_cost(ran.instructions));
            instructions += ran.instructions;
        }
        outputs.extend(self.close_if_done(id, trap));
        Executed { outputs, instructions }
    }

    /// Runs one entry point in call context `id` and commits it, unless it
    /// trapped. Returns the outputs, the reject a trap leaves for the call
    /// context, and the instructions used. A callback's execution was
    /// prepaid with its call (`prepaid`); anything else prepays here.
    /// `keeping` says whether its memories keep what it did (its answer
    /// goes in any case).
    fn execute_in_context(
        &mut self,
        id: CallContextId,
        entry: Entry,
        mut context: MessageContext,
        label: &str,
        prepaid: bool,
        keeping: Keeping,
    ) -> (Vec<Output>, Option<Reject>, u64) {
        let call_context = &self.call_contexts[&id];
        context.call_context_instructions = call_context.instructions;
        context.cycles_available = call_context.cycles_available - call_context.cycles_accepted;
        if !prepaid {
            context.prepayment = MESSAGE_PREPAYMENT.min(self.store.data().balance);
        }
        let time = context.time;
        let ran = self.run_keeping(entry, context, keeping);
        self.stats.record(label, ran.instructions, ran.outcome.is_err());
        self.call_contexts.get_mut(&id).expect("open").instructions += ran.instructions;
        let (outputs, trap) = match ran.outcome {
            Ok(effects) => (self.commit(effects, Some(id), label, time), None),
            Err(trap) => {
                let message = format!("Error from Canister {}: {trap}", self.id);
                (vec![], Some(Reject::new(trap.code, message)))
            }
        };
        if !prepaid {
            self.charge(cycles::execution_cost(ran.instructions));
        }
        (outputs, trap, ran.instructions)
    }
}

/// What `ic0.msg_deadline` returns for a call with this deadline (whole
/// seconds): its nanoseconds, or 0 for an unbounded-wait call.
fn deadline_ns(deadline: Option<u64>) -> u64 {
    deadline.map_or(0, |seconds| seconds.saturating_mul(call_context::ONE_SECOND))
}
