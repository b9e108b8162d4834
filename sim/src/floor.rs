//! The benchmark's floor: the same executions, replayed from their tapes on
//! a bare instance of the same module, with no simulator around them.

use crate::code::{self, Recorded, Replayer};

/// One canister's recorded executions, ready to replay.
pub struct FloorCanister {
    replayer: Replayer,
    trace: std::vec::IntoIter<Recorded>,
}

impl FloorCanister {
    /// `trace` is every committed execution of a canister running `wasm`,
    /// from its installation on (see [`crate::Sim::take_trace`]).
    pub fn new(wasm: &[u8], trace: Vec<Recorded>) -> Result<Self, String> {
        Ok(Self { replayer: Replayer::new(&code::engine(), code::compile(wasm)?)?, trace: trace.into_iter() })
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
