//! The benchmark's floor: the same executions, replayed from their tapes on
//! a bare instance of the same module, with no simulator around them.

use std::rc::Rc;

use crate::code::{self, CompiledModule, Recorded, Replayer};

/// One canister's recorded executions, ready to replay.
pub struct FloorCanister {
    replayer: Replayer,
    trace: std::vec::IntoIter<Recorded>,
}

impl FloorCanister {
    /// `trace` is every committed execution of a canister running `wasm`,
    /// from its installation on (see [`crate::Sim::take_trace`]).
    pub fn new(wasm: &[u8], trace: Vec<Recorded>) -> Result<Self, String> {
        let engine = code::engine();
        let module = Rc::new(CompiledModule::compile(&engine, wasm)?);
        Ok(Self { replayer: Replayer::new(&engine, module)?, trace: trace.into_iter() })
    }

    /// Replays the next `n` executions (all that are left if fewer).
    pub fn replay(&mut self, n: usize) -> Result<(), String> {
        for recorded in self.trace.by_ref().take(n) {
            self.replayer.replay(recorded).map_err(|trap| format!("the replay trapped: {trap}"))?;
        }
        Ok(())
    }

    pub fn remaining(&self) -> usize {
        self.trace.len()
    }
}
