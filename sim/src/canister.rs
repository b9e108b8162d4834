//! One canister: its code and system state, its call contexts and
//! callbacks, and the execution of one message with the IC's semantics
//! (a trap rolls the message back; a call context answers exactly once).

use candid::Principal;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use wasmi::{Engine, Memory, Store};

use crate::code::{Code, CompiledModule, Entry, Recorded, Replayer, Snapshot};
use crate::cycles;
use crate::error::SimError;
use crate::message::{
    CallContextId, CallbackId, Ingress, Message, MessageId, Payload, Reject, RejectCode, Request, Response,
};
use crate::stable::StableMemory;
use crate::stats::CanisterStats;
use crate::system_api::{
    ApiLimits, CanisterTrap, Effects, EntryKind, Execution, MessageContext, PerformedCall, SystemState,
};

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

/// The result of running one entry point: what it did, or why it trapped
/// (and then it did nothing).
struct Ran {
    outcome: Result<Effects, CanisterTrap>,
    instructions: u64,
}

/// What executing one message sent out, and the instructions it used (the
/// round's budget pays them).
#[derive(Default)]
pub struct Executed {
    pub outputs: Vec<Output>,
    pub instructions: u64,
}

/// What an installation may change, to give back if it fails.
struct InstallCheckpoint {
    instance: Option<Snapshot>,
    stable: StableMemory,
    memory: Option<Memory>,
    global_timer: u64,
    /// The store and code that the new code replaced, once it has.
    replaced: Option<(Store<SystemState>, Option<Installed>)>,
}

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
}

impl Canister {
    pub fn new(
        engine: &Engine,
        id: Principal,
        subnet: usize,
        controllers: Vec<Principal>,
        cycles: u128,
        limits: ApiLimits,
        tracing: bool,
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
            trace: tracing.then(Vec::new),
        }
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
        if mode == InstallMode::Upgrade {
            if self.code.is_none() {
                return Err(SimError::NoCodeToUpgrade(self.id));
            }
            if !self.call_contexts.is_empty() {
                return Err(SimError::OpenCallContexts(self.id));
            }
        }
        let mut checkpoint = self.install_checkpoint();
        if let Err(e) = self.replace_code(&mut checkpoint, engine, module, arg, sender, mode, time) {
            self.restore(checkpoint);
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

    /// Taken before `canister_pre_upgrade`, whose changes are undone too if
    /// the new code fails.
    fn install_checkpoint(&self) -> InstallCheckpoint {
        let state = self.store.data();
        InstallCheckpoint {
            instance: self.code.as_ref().map(|c| c.code.snapshot(&self.store)),
            stable: state.stable.clone(),
            memory: state.memory,
            global_timer: state.global_timer,
            replaced: None,
        }
    }

    /// Runs the old code's `canister_pre_upgrade`, puts the new code in a
    /// fresh store and runs its `canister_init` or `canister_post_upgrade`.
    #[allow(clippy::too_many_arguments)]
    fn replace_code(
        &mut self,
        checkpoint: &mut InstallCheckpoint,
        engine: &Engine,
        module: Rc<CompiledModule>,
        arg: Vec<u8>,
        sender: Principal,
        mode: InstallMode,
        time: u64,
    ) -> Result<(), SimError> {
        if mode == InstallMode::Upgrade {
            self.run_hook(EntryKind::PreUpgrade, "canister_pre_upgrade", vec![], sender, time)?;
        }
        let mut state = self.take_state();
        state.memory = None;
        state.global_timer = 0;
        if mode == InstallMode::Install {
            state.stable = Default::default();
        }
        let old_store = std::mem::replace(&mut self.store, Store::new(engine, state));
        checkpoint.replaced = Some((old_store, self.code.take()));
        let code = Code::instantiate(&mut self.store, module)?;
        self.code = Some(Installed::new(code, &self.store));
        match mode {
            InstallMode::Install => self.run_hook(EntryKind::Init, "canister_init", arg, sender, time),
            InstallMode::Upgrade => {
                self.run_hook(EntryKind::PostUpgrade, "canister_post_upgrade", arg, sender, time)
            }
        }
    }

    fn restore(&mut self, checkpoint: InstallCheckpoint) {
        let InstallCheckpoint { instance, stable, memory, global_timer, replaced } = checkpoint;
        if let Some((store, code)) = replaced {
            let state = self.take_state();
            self.store = store;
            *self.store.data_mut() = state;
            self.code = code;
        }
        let state = self.store.data_mut();
        state.stable = stable;
        state.memory = memory;
        state.global_timer = global_timer;
        if let (Some(installed), Some(snapshot)) = (self.code.as_mut(), instance) {
            installed.code.restore(&mut self.store, &snapshot);
            installed.checkpoint = snapshot;
            installed.log.clear();
        }
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
        let context = MessageContext::new(kind, caller, String::new(), arg, time);
        let ran = self.run(Entry::Export(export.into()), context);
        self.stats.record(export, ran.instructions, ran.outcome.is_err());
        let effects = ran.outcome.map_err(|trap| SimError::InstallTrapped { hook: export, trap: trap.0 })?;
        self.commit(effects, None, export, time);
        Ok(())
    }

    /// Code and call contexts go; the canister stays (for deletion). Returns
    /// the messages it had not executed.
    pub fn uninstall(&mut self) -> VecDeque<Message> {
        self.code = None;
        self.call_contexts.clear();
        self.callbacks.clear();
        std::mem::take(&mut self.queue)
    }

    // ----- Running code with rollback -----

    /// Runs `entry` in `context`. On a trap its effects are dropped, linear
    /// memory and globals replayed (see [`Installed`]) and stable memory
    /// undone. With `keep` false everything is undone in any case (queries,
    /// inspection), from a copy; the effects are returned to be read.
    fn run_keeping(&mut self, entry: Entry, context: MessageContext, keep: bool) -> Ran {
        let Some(installed) = self.code.as_mut() else {
            let trap = CanisterTrap(format!("Canister {} has no wasm module", self.id));
            return Ran { outcome: Err(trap), instructions: 0 };
        };
        let discard_from = (!keep).then(|| installed.code.snapshot(&self.store));
        let state = self.store.data_mut();
        state.stable.checkpoint();
        state.tape = keep.then(Vec::new);
        let fuel = context.fuel_limit;
        state.exec = Some(Execution { context, effects: Effects::default() });
        let (instructions, trap) = installed.code.run(&mut self.store, &entry, fuel);
        let state = self.store.data_mut();
        let effects = state.exec.take().expect("set above").effects;
        let tape = state.tape.take();
        if trap.is_some() || !keep {
            state.stable.rollback();
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
        Ran { outcome: trap.map_or(Ok(effects), Err), instructions }
    }

    fn run(&mut self, entry: Entry, context: MessageContext) -> Ran {
        self.run_keeping(entry, context, true)
    }

    /// Applies everything a successful execution did outside its memories.
    /// In call context `id` (a method or callback; hooks and cleanup have
    /// none and can neither call nor answer) its calls become callbacks and
    /// requests, and its answer is sent; `label` names the entry in the
    /// statistics.
    fn commit(&mut self, effects: Effects, id: Option<CallContextId>, label: &str, time: u64) -> Vec<Output> {
        let state = self.store.data_mut();
        state.balance = state.balance.saturating_add(effects.cycles_accepted) - effects.cycles_withdrawn;
        if let Some(timer) = effects.timer {
            state.global_timer = timer;
        }
        for (callee, taken) in &effects.slots_taken {
            *state.in_flight.entry(*callee).or_default() += taken;
        }
        self.stats.calls_refused += effects.calls_refused;
        let Some(id) = id else {
            return vec![];
        };
        self.call_contexts.get_mut(&id).expect("open").cycles_accepted += effects.cycles_accepted;
        for _ in &effects.performed {
            self.stats.calls_performed_in.push((label.to_string(), time));
        }
        let mut outputs = self.send_calls(id, effects.performed, time);
        if let Some(payload) = effects.response {
            outputs.extend(self.respond(id, payload));
        }
        outputs
    }

    // ----- Messages -----

    /// Executes the due global timer, or else the next message in the queue.
    pub fn execute_next(&mut self, time: u64, timers: bool) -> Executed {
        if timers && self.timer_due(time) {
            self.store.data_mut().global_timer = 0;
            return self.execute_timer(time);
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
        let context = MessageContext::new(EntryKind::Update, r.sender, r.method.clone(), r.arg, time);
        self.execute_method(id, &r.method, context)
    }

    fn execute_method(&mut self, id: CallContextId, method: &str, context: MessageContext) -> Executed {
        let entry = Entry::Export(format!("canister_update {method}"));
        let (mut outputs, trap, instructions) = self.execute_in_context(id, entry, context, method, false);
        outputs.extend(self.close_if_done(id, trap));
        Executed { outputs, instructions }
    }

    fn execute_timer(&mut self, time: u64) -> Executed {
        let id = self.open_call_context(Origin::System, self.id, 0);
        let context = MessageContext::new(EntryKind::GlobalTimer, self.id, String::new(), vec![], time);
        let entry = Entry::Export("canister_global_timer".into());
        let (mut outputs, trap, instructions) =
            self.execute_in_context(id, entry, context, "canister_global_timer", false);
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
                self.stats.rejects_received.add(reject.code);
                (EntryKind::RejectCallback, callback.reject, vec![], Some((reject.code, reject.message)))
            }
        };
        let mut context = MessageContext::new(kind, caller, String::new(), arg, time);
        context.reject = reject;
        context.cycles_refunded = r.refund;
        context.may_reply = may_reply;
        let (mut outputs, trap, mut instructions) =
            self.execute_in_context(id, Entry::Callback { fun, env }, context, "callback", true);
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

    /// Runs one entry point in call context `id` and commits it, unless it
    /// trapped. Returns the outputs, the reject a trap leaves for the call
    /// context, and the instructions used. A callback's execution was
    /// prepaid with its call (`prepaid`); anything else prepays here.
    fn execute_in_context(
        &mut self,
        id: CallContextId,
        entry: Entry,
        mut context: MessageContext,
        label: &str,
        prepaid: bool,
    ) -> (Vec<Output>, Option<Reject>, u64) {
        let call_context = &self.call_contexts[&id];
        context.call_context_instructions = call_context.instructions;
        context.cycles_available = call_context.cycles_available - call_context.cycles_accepted;
        if !prepaid {
            context.prepayment = MESSAGE_PREPAYMENT.min(self.store.data().balance);
        }
        let time = context.time;
        let ran = self.run(entry, context);
        self.stats.record(label, ran.instructions, ran.outcome.is_err());
        self.call_contexts.get_mut(&id).expect("open").instructions += ran.instructions;
        let (outputs, trap) = match ran.outcome {
            Ok(effects) => (self.commit(effects, Some(id), label, time), None),
            Err(trap) => {
                let message = format!("Error from Canister {}: {trap}", self.id);
                (vec![], Some(Reject { code: RejectCode::CanisterError, message }))
            }
        };
        if !prepaid {
            self.charge(cycles::execution_cost(ran.instructions));
        }
        (outputs, trap, ran.instructions)
    }

    /// Turns the calls a committed execution performed into callbacks and requests.
    fn send_calls(&mut self, id: CallContextId, performed: Vec<PerformedCall>, time: u64) -> Vec<Output> {
        let mut outputs = vec![];
        for PerformedCall { call, prepayment } in performed {
            let callback = CallbackId(self.fresh_id());
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
                    deadline: call.timeout_seconds.map(|s| time / ONE_SECOND + u64::from(s)),
                    expired: false,
                },
            );
            self.call_contexts.get_mut(&id).expect("open").outstanding += 1;
            self.stats.calls_performed += 1;
            outputs.push(Output::Request(Request {
                sender: self.id,
                receiver: call.callee,
                method: call.method,
                arg: call.arg,
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
        let context = MessageContext::new(EntryKind::Query, sender, method.into(), arg, time);
        match self.run_keeping(Entry::Export(export), context, false).outcome {
            Err(trap) => {
                Payload::reject(RejectCode::CanisterError, format!("Error from Canister {}: {trap}", self.id))
            }
            Ok(Effects { response: Some(payload), .. }) => payload,
            Ok(_) => Payload::reject(
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
        let context = MessageContext::new(EntryKind::InspectMessage, sender, method.into(), arg, time);
        let message = match self
            .run_keeping(Entry::Export("canister_inspect_message".into()), context, false)
            .outcome
        {
            Err(trap) => format!("canister_inspect_message trapped: {trap}"),
            Ok(effects) if effects.accepted => return Ok(()),
            Ok(_) => format!("Canister {} did not accept the message", self.id),
        };
        Err(Reject { code: RejectCode::CanisterReject, message })
    }
}
