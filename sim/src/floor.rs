//! The benchmark's floor: the same executions, replayed from their tapes on
//! a bare instance of the same module, with no simulator around them.

use crate::code::{self, Recorded, Replayer};
use crate::sim::SimError;

/// A recorded execution that trapped when replayed: the recording does not
/// belong to the module.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the replay trapped: {0}")]
pub struct ReplayTrapped(String);

/// One canister's recorded executions, ready to replay.
pub struct FloorCanister {
    replayer: Replayer,
    trace: std::vec::IntoIter<Recorded>,
}

impl FloorCanister {
    /// `trace` is every committed execution of a canister running `wasm`,
    /// from its installation on (see [`crate::Sim::take_trace`]).
    pub fn new(wasm: &[u8], trace: Vec<Recorded>) -> Result<Self, SimError> {
        let replayer = code::compile(wasm)
            .and_then(|module| Replayer::new(&code::engine(), module))
            .map_err(SimError::from)?;
        Ok(Self { replayer, trace: trace.into_iter() })
    }

    /// Replays the next `n` executions (all that are left if fewer).
    pub fn replay(&mut self, n: usize) -> Result<(), ReplayTrapped> {
        for recorded in self.trace.by_ref().take(n) {
            self.replayer.replay(recorded).map_err(|trap| ReplayTrapped(trap.0))?;
        }
        Ok(())
    }

    pub fn remaining(&self) -> usize {
        self.trace.len()
    }
}
