//! Running an entry point: commit its effects, or drop them and roll back.

use std::sync::atomic::{AtomicU64, Ordering};
use wasmi::Store;

use super::{Canister, Output};
use crate::code::{Code, Entry, Recorded, Replayer, Snapshot};
use crate::message::{CallContextId, ErrorCode};
use crate::system_api::{CanisterTrap, Effects, Execution, MessageContext, SystemState};

/// A checkpoint is taken once the executions since the last one have run
/// this many instructions per byte of linear memory: copying the memory then
/// costs a few percent of executing, and replaying after a trap is bounded.
pub(super) const CHECKPOINT_INSTRUCTIONS_PER_BYTE: u64 = 4;

/// Installed code, and what returning it to the state before any message
/// since the last checkpoint takes: the checkpoint and the log of committed
/// executions since. Rolling back a trap replays the log on the checkpoint,
/// so no message pays for a copy of the memory it might trap in.
pub(super) struct Installed {
    pub(super) code: Code,
    pub(super) checkpoint: Snapshot,
    pub(super) log: Vec<Recorded>,
    pub(super) instructions_since_checkpoint: u64,
}

impl Installed {
    pub(super) fn new(code: Code, store: &Store<SystemState>) -> Self {
        let checkpoint = code.snapshot(store);
        Self { code, checkpoint, log: vec![], instructions_since_checkpoint: 0 }
    }

    /// Logs a committed execution; checkpoints when the log is long enough.
    pub(super) fn commit(&mut self, store: &Store<SystemState>, recorded: Recorded, instructions: u64) {
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
    pub(super) fn roll_back(&mut self, store: &mut Store<SystemState>) {
        let mut replayer =
            Replayer::new(store.engine(), self.code.module.clone()).expect("the module instantiated before");
        replayer.load(&self.checkpoint);
        // At most three copies of the memory at once (see `host_memory`):
        // the live one, the replayer's, and one checkpoint.
        self.checkpoint = Snapshot::default();
        for recorded in self.log.drain(..) {
            replayer.replay(recorded).expect("a committed execution replays exactly");
        }
        self.checkpoint = replayer.snapshot();
        drop(replayer);
        self.instructions_since_checkpoint = 0;
        self.code.restore(store, &self.checkpoint);
    }
}

/// The result of running one entry point: what it did, or why it trapped
/// (and then it did nothing).
pub(super) struct Ran {
    pub(super) outcome: Result<Effects, CanisterTrap>,
    pub(super) instructions: u64,
}

/// What becomes of what an execution did to its canister's memories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Keeping {
    /// Kept, unless it trapped: updates, callbacks, hooks.
    Commit,
    /// Undone in any case (queries, inspection); its effects are returned
    /// to be read.
    Discard,
    /// Kept, unless it trapped, until the composite query evaluation it
    /// belongs to ends and undoes them all (see `composite`).
    UntilEvaluationEnds,
}

impl Canister {
    /// Runs `entry` in `context`. On a trap its effects are dropped, linear
    /// memory and globals replayed (see [`Installed`]) or put back from a
    /// copy, and stable memory undone; otherwise `keeping` says what stays.
    pub(super) fn run_keeping(&mut self, entry: Entry, mut context: MessageContext, keeping: Keeping) -> Ran {
        let Some(installed) = self.code.as_mut() else {
            let trap = CanisterTrap::new(
                ErrorCode::CanisterWasmModuleNotFound,
                format!("Canister {} has no wasm module", self.id),
            );
            return Ran { outcome: Err(trap), instructions: 0 };
        };
        let copy = (keeping != Keeping::Commit).then(|| installed.code.snapshot(&self.store));
        let bumps_version = context.kind.bumps_canister_version();
        let state = self.store.data_mut();
        let mark = match keeping {
            Keeping::UntilEvaluationEnds => Some(state.stable.mark()),
            Keeping::Commit | Keeping::Discard => {
                state.stable.checkpoint();
                None
            }
        };
        state.tape = (keeping == Keeping::Commit).then(Vec::new);
        let limit = state.limits.max_instructions_per_message.min(context.instruction_limit);
        context.instruction_limit = limit;
        state.exec = Some(Execution { context, effects: Effects::default() });
        let (instructions, trap) = installed.code.run(&mut self.store, &entry, limit);
        let state = self.store.data_mut();
        let effects = state.exec.take().expect("set above").effects;
        let tape = state.tape.take();
        let undo = trap.is_some() || keeping == Keeping::Discard;
        if undo {
            match mark {
                Some(mark) => state.stable.rollback_to(mark),
                None => state.stable.rollback(),
            }
            state.settle_stable();
        }
        match (copy, tape) {
            (Some(copy), _) if undo => installed.code.restore(&mut self.store, &copy),
            (Some(_), _) => {}
            (None, _) if trap.is_some() => installed.roll_back(&mut self.store),
            (None, tape) => {
                let recorded = Recorded { entry, tape: tape.expect("recorded when kept"), order: 0 };
                if let Some(trace) = self.trace.as_mut() {
                    trace.push(Recorded { order: next_order(), ..recorded.clone() });
                }
                installed.commit(&self.store, recorded, instructions);
                if bumps_version {
                    self.store.data_mut().canister_version += 1;
                }
            }
        }
        Ran { outcome: trap.map_or(Ok(effects), Err), instructions }
    }

    pub(super) fn run(&mut self, entry: Entry, context: MessageContext) -> Ran {
        self.run_keeping(entry, context, Keeping::Commit)
    }

    /// Applies everything a successful execution did outside its memories.
    /// In call context `id` (a method or callback; hooks and cleanup have
    /// none and can neither call nor answer) its calls become callbacks and
    /// requests, and its answer is sent; `label` names the entry in the
    /// statistics.
    pub(super) fn commit(
        &mut self,
        effects: Effects,
        id: Option<CallContextId>,
        label: &str,
        time: u64,
    ) -> Vec<Output> {
        let state = self.store.data_mut();
        state.balance =
            state.balance.saturating_add(effects.cycles_accepted).saturating_add(effects.cycles_minted)
                - effects.cycles_withdrawn;
        if let Some(timer) = effects.timer {
            state.global_timer = timer;
        }
        for (callee, taken) in &effects.slots_taken {
            let in_flight = state.in_flight.entry(*callee).or_default();
            *in_flight += taken;
            let peak = state.round_peak.entry(*callee).or_default();
            *peak = (*peak).max(*in_flight);
        }
        if let Some(data) = effects.certified_data {
            state.certified_data = data;
            self.certified_data_changed = true;
        }
        for (callee, refused) in effects.calls_refused {
            self.stats.calls_refused += refused;
            if let Some(to) = self.stats.calls_to_mut(callee) {
                to.refused += refused;
            }
        }
        let Some(id) = id else {
            return vec![];
        };
        self.call_contexts.get_mut(&id).expect("open").cycles_accepted += effects.cycles_accepted;
        if !effects.performed.is_empty() {
            self.stats.record_calls(label, effects.performed.len() as u64, time);
        }
        let mut outputs = self.send_calls(id, effects.performed, time);
        if let Some(payload) = effects.response {
            outputs.extend(self.respond(id, payload));
        }
        outputs
    }

    /// Takes `cycles` from the balance as consumed.
    pub(super) fn charge(&mut self, cycles: u128) {
        let state = self.store.data_mut();
        let charged = cycles.min(state.balance);
        state.balance -= charged;
        self.stats.cycles_consumed += charged;
    }
}

/// The next place in the order of traced executions (see [`crate::bench`]).
fn next_order() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
