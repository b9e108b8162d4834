//! One canister: its code and system state, its call contexts and
//! callbacks, and the execution of one message with the IC's semantics
//! (a trap rolls the message back; a call context answers exactly once).

use candid::Principal;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use wasmi::{Engine, Store};

use crate::code::{Code, CompiledModule, Entry, Recorded, Replayer, Snapshot};
use crate::cycles;
use crate::error::SimError;
use crate::message::{
    CallContextId, CallbackId, Ingress, Message, MessageId, Payload, Reject, RejectCode, Request, Response,
};
use crate::stats::CanisterStats;
use crate::system_api::{ApiLimits, CanisterTrap, EntryKind, Execution, SystemState};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CanisterStatus {
    Running,
    /// Takes no new calls; becomes `Stopped` when its call contexts close.
    Stopping,
    Stopped,
}

/// How new code arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallMode {
    /// Fresh state, `canister_init`.
    Install,
    /// `canister_pre_upgrade`, new code, stable memory kept, `canister_post_upgrade`.
    Upgrade,
}

/// Who is waiting for a call context's answer.
#[derive(Clone, Copy, Debug)]
enum Origin {
    Ingress(MessageId),
    Canister {
        caller: Principal,
        callback: CallbackId,
    },
    /// The global timer: nobody waits.
    System,
}

struct CallContext {
    origin: Origin,
    caller: Principal,
    responded: bool,
    /// Calls made from this context whose callbacks have not run yet.
    outstanding: u32,
    instructions: u64,
    /// Cycles attached by the caller, and how many were accepted so far.
    cycles_available: u128,
    cycles_accepted: u128,
}

struct Callback {
    call_context: CallContextId,
    callee: Principal,
    reply: (u32, u32),
    reject: (u32, u32),
    cleanup: Option<(u32, u32)>,
    prepayment: u128,
    /// Method name and argument sizes, for the call's actual cost.
    request_bytes: (u64, u64),
    /// Bounded-wait calls: the IC time (whole seconds) after which the
    /// caller stops waiting.
    deadline: Option<u64>,
    /// The deadline passed: a `SYS_UNKNOWN` reject is on its way, and the
    /// real response, should it come, is dropped.
    expired: bool,
}

/// Withdrawn before a message executes, for its largest possible
/// execution; what it did not use is refunded afterwards.
const ONE_SECOND: u64 = 1_000_000_000;

const MESSAGE_PREPAYMENT: u128 = cycles::execution_cost(cycles::MAX_INSTRUCTIONS_PER_MESSAGE);

/// What executing a message sends out.
#[derive(Debug)]
pub enum Output {
    Request(Request),
    Response(Response),
    IngressCompleted(MessageId, Payload),
}

/// A checkpoint is taken once the executions since the last one have run
/// this many instructions per byte of linear memory: copying the memory then
/// costs a few percent of executing, and replaying after a trap is bounded.
const CHECKPOINT_INSTRUCTIONS_PER_BYTE: u64 = 4;

/// Installed code, and what returning it to the state before any message
/// since the last checkpoint takes: the checkpoint and the log of committed
/// executions since. Rolling back a trap replays the log on the checkpoint,
/// so no message pays for a copy of the memory it might trap in.
struct Installed {
    code: Code,
    checkpoint: Snapshot,
    log: Vec<Recorded>,
    instructions_since_checkpoint: u64,
}

impl Installed {
    fn new(code: Code, store: &Store<SystemState>) -> Self {
        let checkpoint = code.snapshot(store);
        Self { code, checkpoint, log: vec![], instructions_since_checkpoint: 0 }
    }

    /// Logs a committed execution; checkpoints when the log is long enough.
    fn commit(&mut self, store: &Store<SystemState>, recorded: Recorded, instructions: u64) {
        self.log.push(recorded);
        self.instructions_since_checkpoint += instructions;
        let memory = self.code.memory_len(store) as u64;
        if self.instructions_since_checkpoint >= CHECKPOINT_INSTRUCTIONS_PER_BYTE * memory {
            self.checkpoint = self.code.snapshot(store);
            self.log.clear();
            self.instructions_since_checkpoint = 0;
        }
    }

    /// Returns the instance to its state after the last committed execution.
    fn roll_back(&mut self, store: &mut Store<SystemState>) {
        let mut replayer =
            Replayer::new(store.engine(), self.code.module.clone()).expect("the module instantiated before");
        replayer.load(&self.checkpoint);
        for recorded in self.log.drain(..) {
            replayer.replay(recorded).expect("a committed execution replays exactly");
        }
        self.checkpoint = replayer.snapshot();
        self.instructions_since_checkpoint = 0;
        self.code.restore(store, &self.checkpoint);
    }
}

/// The result of running one entry point.
struct Ran {
    exec: Execution,
    instructions: u64,
    trap: Option<CanisterTrap>,
}

pub struct Canister {
    pub id: Principal,
    /// Index of its subnet in the simulator's subnet order.
    pub subnet: usize,
    pub status: CanisterStatus,
    store: Store<SystemState>,
    code: Option<Installed>,
    call_contexts: BTreeMap<CallContextId, CallContext>,
    callbacks: BTreeMap<CallbackId, Callback>,
    next_id: u64,
    /// Messages inducted and not yet executed, in order.
    pub queue: VecDeque<Message>,
    pub stats: CanisterStats,
    /// Every committed execution, when tracing (for the benchmark's floor).
    pub trace: Option<Vec<Recorded>>,
}

impl Canister {
    pub fn new(
        engine: &Engine,
        id: Principal,
        subnet: usize,
        controllers: Vec<Principal>,
        cycles: u128,
        limits: ApiLimits,
    ) -> Self {
        Self {
            id,
            subnet,
            status: CanisterStatus::Running,
            store: Store::new(engine, SystemState::new(id, controllers, cycles, limits)),
            code: None,
            call_contexts: BTreeMap::new(),
            callbacks: BTreeMap::new(),
            next_id: 0,
            queue: VecDeque::new(),
            stats: CanisterStats::default(),
            trace: None,
        }
    }

    pub fn system_state(&self) -> &SystemState {
        self.store.data()
    }

    pub fn system_state_mut(&mut self) -> &mut SystemState {
        self.store.data_mut()
    }

    pub fn has_open_call_contexts(&self) -> bool {
        !self.call_contexts.is_empty()
    }

    /// Whether anything waits to execute at `time`.
    /// Whether anything waits to execute at `time`; the global timer only
    /// counts where `timers` (a round's first iteration).
    pub fn has_work(&self, time: u64, timers: bool) -> bool {
        !self.queue.is_empty() || (timers && self.timer_due(time))
    }

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
            let payload = Payload::reject(RejectCode::SysUnknown, "Call deadline has expired.");
            self.queue.push_back(Message::Response(Response {
                originator: self.id,
                callback: id,
                payload,
                refund: 0,
                deadline_expired: true,
            }));
        }
    }

    fn exports(&self, name: &str) -> bool {
        self.code.as_ref().is_some_and(|c| c.code.module.exports(name))
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

    // ----- Code installation -----

    /// Installs `module`, running `canister_init` or the upgrade hooks. If
    /// anything traps or fails, the canister is left as it was.
    pub fn install(
        &mut self,
        engine: &Engine,
        module: Rc<CompiledModule>,
        arg: Vec<u8>,
        sender: Principal,
        mode: InstallMode,
        time: u64,
    ) -> Result<Vec<Output>, SimError> {
        let stable_before = self.store.data().stable.clone();
        let (old_memory, old_timer) = (self.store.data().memory, self.store.data().global_timer);
        // pre_upgrade's changes are undone too if the new code fails.
        let instance_before = self.code.as_ref().map(|c| c.code.snapshot(&self.store));
        if mode == InstallMode::Upgrade {
            if self.code.is_none() {
                return Err(SimError::NoCodeToUpgrade(self.id));
            }
            if self.has_open_call_contexts() {
                return Err(SimError::OpenCallContexts(self.id));
            }
            self.run_hook(EntryKind::PreUpgrade, "canister_pre_upgrade", vec![], sender, time)?;
        }
        let mut state = self.take_state();
        state.memory = None;
        state.global_timer = 0;
        if mode == InstallMode::Install {
            state.stable = Default::default();
        }
        let old_store = std::mem::replace(&mut self.store, Store::new(engine, state));
        let old_code = self.code.take();
        let (hook, kind) = match mode {
            InstallMode::Install => ("canister_init", EntryKind::Init),
            InstallMode::Upgrade => ("canister_post_upgrade", EntryKind::PostUpgrade),
        };
        let installed = Code::instantiate(&mut self.store, module).map_err(SimError::from).and_then(|code| {
            self.code = Some(Installed::new(code, &self.store));
            self.run_hook(kind, hook, arg, sender, time)
        });
        if let Err(e) = installed {
            let mut state = self.take_state();
            state.stable = stable_before;
            state.memory = old_memory;
            state.global_timer = old_timer;
            self.store = old_store;
            *self.store.data_mut() = state;
            self.code = old_code;
            if let (Some(installed), Some(snapshot)) = (self.code.as_mut(), instance_before) {
                installed.code.restore(&mut self.store, &snapshot);
                installed.checkpoint = snapshot;
                installed.log.clear();
            }
            return Err(e);
        }
        self.store.data_mut().canister_version += 1;
        // A reinstall ends every open call context: their callers are
        // told, and the slots their calls held are free.
        let ids: Vec<CallContextId> = self.call_contexts.keys().copied().collect();
        let reinstalled = format!("Canister {} was reinstalled", self.id);
        let mut outputs = vec![];
        for id in ids {
            outputs.extend(self.respond(id, Payload::reject(RejectCode::CanisterError, reinstalled.clone())));
        }
        self.call_contexts.clear();
        self.callbacks.clear();
        self.store.data_mut().in_flight.clear();
        Ok(outputs)
    }

    fn take_state(&mut self) -> SystemState {
        let placeholder = SystemState::new(self.id, vec![], 0, self.store.data().limits);
        std::mem::replace(self.store.data_mut(), placeholder)
    }

    /// Runs an init or upgrade hook if the module exports it; a trap fails
    /// the installation.
    fn run_hook(
        &mut self,
        kind: EntryKind,
        export: &'static str,
        arg: Vec<u8>,
        caller: Principal,
        time: u64,
    ) -> Result<(), SimError> {
        if !self.exports(export) {
            return Ok(());
        }
        let ran =
            self.run(Entry::Export(export.into()), Execution::new(kind, caller, String::new(), arg, time));
        self.stats.record(export, ran.instructions, ran.trap.is_some());
        match ran.trap {
            Some(trap) => Err(SimError::InstallTrapped { hook: export, trap: trap.0 }),
            None => {
                self.commit(&ran.exec);
                Ok(())
            }
        }
    }

    /// Code and call contexts go; the canister stays (for deletion).
    pub fn uninstall(&mut self) {
        self.code = None;
        self.call_contexts.clear();
        self.callbacks.clear();
        self.queue.clear();
    }

    // ----- Running code with rollback -----

    /// Runs `entry` for `exec`. On a trap every effect is undone: linear
    /// memory and globals (by replay, see [`Installed`]), stable memory
    /// and cycles here; the calls it made and its reply are in the returned
    /// `exec`, which the caller then ignores. With `keep` false the effects
    /// are undone in any case (queries, inspection), from a copy.
    fn run_keeping(&mut self, entry: Entry, exec: Execution, keep: bool) -> Ran {
        let Some(installed) = self.code.as_mut() else {
            let trap = CanisterTrap(format!("Canister {} has no wasm module", self.id));
            return Ran { exec, instructions: 0, trap: Some(trap) };
        };
        let discard_from = (!keep).then(|| installed.code.snapshot(&self.store));
        let state = self.store.data_mut();
        let balance = state.balance;
        state.stable.checkpoint();
        state.tape = keep.then(Vec::new);
        let fuel = exec.fuel_limit;
        state.exec = Some(exec);
        let (instructions, trap) = installed.code.run(&mut self.store, &entry, fuel);
        let state = self.store.data_mut();
        let exec = state.exec.take().expect("set above");
        let tape = state.tape.take();
        if trap.is_some() || !keep {
            state.stable.rollback();
            state.balance = balance;
        }
        match (discard_from, tape) {
            (Some(snapshot), _) => installed.code.restore(&mut self.store, &snapshot),
            (None, _) if trap.is_some() => installed.roll_back(&mut self.store),
            (None, tape) => {
                let recorded = Recorded { entry, tape: tape.expect("recorded when kept") };
                if let Some(trace) = self.trace.as_mut() {
                    trace.push(recorded.clone());
                }
                installed.commit(&self.store, recorded, instructions);
            }
        }
        Ran { exec, instructions, trap }
    }

    fn run(&mut self, entry: Entry, exec: Execution) -> Ran {
        self.run_keeping(entry, exec, true)
    }

    /// Applies what a successful execution changed outside its memory.
    fn commit(&mut self, exec: &Execution) {
        let state = self.store.data_mut();
        if let Some(timer) = exec.timer {
            state.global_timer = timer;
        }
        for (callee, taken) in &exec.slots_taken {
            *state.in_flight.entry(*callee).or_default() += taken;
        }
        self.stats.calls_refused += exec.calls_refused;
    }

    // ----- Messages -----

    /// Executes the due global timer, or else the next message in the queue.
    pub fn execute_next(&mut self, time: u64, timers: bool) -> Vec<Output> {
        if timers && self.timer_due(time) {
            self.store.data_mut().global_timer = 0;
            return self.execute_timer(time);
        }
        match self.queue.pop_front() {
            Some(Message::Ingress(m)) => self.execute_ingress(m, time),
            Some(Message::Request(r)) => self.execute_request(r, time),
            Some(Message::Response(r)) => self.execute_response(r, time),
            None => vec![],
        }
    }

    /// Why a call to `method` cannot start, if it cannot.
    fn refusal(&self, method: &str) -> Option<Reject> {
        let message = match self.status {
            CanisterStatus::Stopping => format!("Canister {} is stopping", self.id),
            CanisterStatus::Stopped => format!("Canister {} is stopped", self.id),
            CanisterStatus::Running if self.code.is_none() => {
                format!("Canister {} has no wasm module", self.id)
            }
            CanisterStatus::Running if !self.exports(&format!("canister_update {method}")) => {
                format!("Canister {} has no update method '{method}'", self.id)
            }
            CanisterStatus::Running => return None,
        };
        Some(Reject { code: RejectCode::CanisterError, message })
    }

    fn execute_ingress(&mut self, m: Ingress, time: u64) -> Vec<Output> {
        if let Some(reject) = self.refusal(&m.method) {
            return vec![Output::IngressCompleted(m.id, Payload::Reject(reject))];
        }
        let id = self.open_call_context(Origin::Ingress(m.id), m.sender, 0);
        let exec = Execution::new(EntryKind::Update, m.sender, m.method.clone(), m.arg, time);
        self.execute_method(id, &m.method, exec)
    }

    fn execute_request(&mut self, r: Request, time: u64) -> Vec<Output> {
        if let Some(reject) = self.refusal(&r.method) {
            return vec![Output::Response(r.rejected(reject))];
        }
        let origin = Origin::Canister { caller: r.sender, callback: r.callback };
        let id = self.open_call_context(origin, r.sender, r.cycles);
        let exec = Execution::new(EntryKind::Update, r.sender, r.method.clone(), r.arg, time);
        self.execute_method(id, &r.method, exec)
    }

    fn execute_method(&mut self, id: CallContextId, method: &str, exec: Execution) -> Vec<Output> {
        let entry = Entry::Export(format!("canister_update {method}"));
        let (mut outputs, trap, _) = self.execute_in_context(id, entry, exec, method, false);
        outputs.extend(self.close_if_done(id, trap));
        outputs
    }

    fn execute_timer(&mut self, time: u64) -> Vec<Output> {
        let id = self.open_call_context(Origin::System, self.id, 0);
        let exec = Execution::new(EntryKind::GlobalTimer, self.id, String::new(), vec![], time);
        let entry = Entry::Export("canister_global_timer".into());
        let (mut outputs, trap, _) = self.execute_in_context(id, entry, exec, "canister_global_timer", false);
        outputs.extend(self.close_if_done(id, trap));
        outputs
    }

    /// A response: its callback runs in the call context that made the call;
    /// if the callback traps, the call's cleanup runs.
    fn execute_response(&mut self, r: Response, time: u64) -> Vec<Output> {
        match self.callbacks.get(&r.callback) {
            // Its call context is gone (the canister was reinstalled).
            None => return vec![],
            // Too late: the caller was told SYS_UNKNOWN instead.
            Some(callback) if callback.expired && !r.deadline_expired => return vec![],
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
                self.stats.rejects_received.add(reject.code);
                (EntryKind::RejectCallback, callback.reject, vec![], Some((reject.code, reject.message)))
            }
        };
        let mut exec = Execution::new(kind, caller, String::new(), arg, time);
        exec.reject = reject;
        exec.cycles_refunded = r.refund;
        exec.can_reply = may_reply;
        let (mut outputs, trap, instructions) =
            self.execute_in_context(id, Entry::Callback { fun, env }, exec, "callback", true);
        self.refund_prepayment(&callback, response_bytes, instructions);
        if let (Some(_), Some((fun, env))) = (&trap, callback.cleanup) {
            let exec = Execution::new(EntryKind::Cleanup, caller, String::new(), vec![], time);
            let ran = self.run(Entry::Callback { fun, env }, exec);
            self.stats.record("cleanup", ran.instructions, ran.trap.is_some());
            self.charge(cycles::execution_cost(ran.instructions));
            if ran.trap.is_none() {
                self.commit(&ran.exec);
            }
        }
        outputs.extend(self.close_if_done(id, trap));
        outputs
    }

    /// A consumed response frees the request slot its call held.
    fn release_slot(&mut self, callee: Principal) {
        let in_flight = &mut self.store.data_mut().in_flight;
        if let Some(n) = in_flight.get_mut(&callee) {
            *n -= 1;
            if *n == 0 {
                in_flight.remove(&callee);
            }
        }
    }

    /// Gives back what a call did not use of its prepayment.
    fn refund_prepayment(&mut self, callback: &Callback, response_bytes: u64, callback_instructions: u64) {
        let (method, arg) = callback.request_bytes;
        let cost = cycles::call_actual_cost(method, arg, response_bytes, callback_instructions)
            .min(callback.prepayment);
        self.store.data_mut().credit(callback.prepayment - cost);
        self.stats.cycles_consumed += cost;
    }

    fn open_call_context(&mut self, origin: Origin, caller: Principal, cycles: u128) -> CallContextId {
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

    /// Takes `cycles` from the balance as consumed.
    fn charge(&mut self, cycles: u128) {
        let state = self.store.data_mut();
        let charged = cycles.min(state.balance);
        state.balance -= charged;
        self.stats.cycles_consumed += charged;
    }

    /// Runs one entry point in call context `id` and applies its outcome:
    /// the calls it made and its answer, or, if it trapped, nothing. Returns
    /// the outputs, the reject a trap leaves for the call context, and the
    /// instructions used. A callback's execution was prepaid with its call
    /// (`prepaid`); anything else prepays here.
    fn execute_in_context(
        &mut self,
        id: CallContextId,
        entry: Entry,
        mut exec: Execution,
        label: &str,
        prepaid: bool,
    ) -> (Vec<Output>, Option<Reject>, u64) {
        let context = &self.call_contexts[&id];
        exec.call_context_instructions = context.instructions;
        exec.cycles_available = context.cycles_available;
        exec.cycles_accepted = context.cycles_accepted;
        let prepayment = if prepaid { 0 } else { MESSAGE_PREPAYMENT.min(self.store.data().balance) };
        self.store.data_mut().balance -= prepayment;
        let ran = self.run(entry, exec);
        if !prepaid {
            self.store.data_mut().credit(prepayment);
            self.charge(cycles::execution_cost(ran.instructions));
        }
        self.stats.record(label, ran.instructions, ran.trap.is_some());
        self.call_contexts.get_mut(&id).expect("open").instructions += ran.instructions;
        if let Some(trap) = ran.trap {
            let message = format!("Error from Canister {}: {trap}", self.id);
            return (vec![], Some(Reject { code: RejectCode::CanisterError, message }), ran.instructions);
        }
        self.call_contexts.get_mut(&id).expect("open").cycles_accepted = ran.exec.cycles_accepted;
        self.commit(&ran.exec);
        for _ in &ran.exec.performed {
            self.stats.calls_performed_in.push((label.to_string(), ran.exec.time));
        }
        let mut outputs = self.send_calls(id, &ran.exec);
        if let Some(payload) = ran.exec.response {
            outputs.extend(self.respond(id, payload));
        }
        (outputs, None, ran.instructions)
    }

    /// Turns the calls a committed execution performed into callbacks and requests.
    fn send_calls(&mut self, id: CallContextId, exec: &Execution) -> Vec<Output> {
        let mut outputs = vec![];
        for performed in &exec.performed {
            let call = &performed.call;
            let callback = CallbackId(self.fresh_id());
            self.callbacks.insert(
                callback,
                Callback {
                    call_context: id,
                    callee: call.callee,
                    reply: call.reply,
                    reject: call.reject,
                    cleanup: call.cleanup,
                    prepayment: performed.prepayment,
                    request_bytes: (call.method.len() as u64, call.arg.len() as u64),
                    deadline: call.timeout_seconds.map(|s| exec.time / ONE_SECOND + u64::from(s)),
                    expired: false,
                },
            );
            self.call_contexts.get_mut(&id).expect("open").outstanding += 1;
            self.stats.calls_performed += 1;
            outputs.push(Output::Request(Request {
                sender: self.id,
                receiver: call.callee,
                method: call.method.clone(),
                arg: call.arg.clone(),
                cycles: call.cycles,
                callback,
            }));
        }
        outputs
    }

    /// Sends the call context's one answer.
    fn respond(&mut self, id: CallContextId, payload: Payload) -> Vec<Output> {
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
    fn close_if_done(&mut self, id: CallContextId, trap: Option<Reject>) -> Vec<Output> {
        if self.call_contexts[&id].outstanding > 0 {
            return vec![];
        }
        let reject = trap.unwrap_or_else(|| Reject {
            code: RejectCode::CanisterError,
            message: format!("Canister {} did not produce a response", self.id),
        });
        let outputs = self.respond(id, Payload::Reject(reject));
        self.call_contexts.remove(&id);
        if self.status == CanisterStatus::Stopping && self.call_contexts.is_empty() {
            self.status = CanisterStatus::Stopped;
        }
        outputs
    }

    // ----- Queries and inspection: they never change state -----

    /// Runs `canister_query <method>` and discards its effects.
    pub fn query(&mut self, sender: Principal, method: &str, arg: Vec<u8>, time: u64) -> Payload {
        let export = format!("canister_query {method}");
        if !self.exports(&export) {
            let message = format!("Canister {} has no query method '{method}'", self.id);
            return Payload::reject(RejectCode::CanisterError, message);
        }
        let exec = Execution::new(EntryKind::Query, sender, method.into(), arg, time);
        let ran = self.run_keeping(Entry::Export(export), exec, false);
        match (ran.trap, ran.exec.response) {
            (Some(trap), _) => {
                Payload::reject(RejectCode::CanisterError, format!("Error from Canister {}: {trap}", self.id))
            }
            (None, Some(payload)) => payload,
            (None, None) => Payload::reject(
                RejectCode::CanisterError,
                format!("Canister {} did not produce a response", self.id),
            ),
        }
    }

    /// Whether `canister_inspect_message` accepts an ingress message; a
    /// canister without one accepts everything.
    pub fn inspect(
        &mut self,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
        time: u64,
    ) -> Result<(), Reject> {
        if !self.exports("canister_inspect_message") {
            return Ok(());
        }
        let exec = Execution::new(EntryKind::InspectMessage, sender, method.into(), arg, time);
        let ran = self.run_keeping(Entry::Export("canister_inspect_message".into()), exec, false);
        let message = match ran.trap {
            Some(trap) => format!("canister_inspect_message trapped: {trap}"),
            None if ran.exec.accepted => return Ok(()),
            None => format!("Canister {} did not accept the message", self.id),
        };
        Err(Reject { code: RejectCode::CanisterReject, message })
    }
}
