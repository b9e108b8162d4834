//! Plumbing for the overhead benchmark (`sim/benches/overhead.rs`).
//!
//! A simulator that keeps every committed execution, and the floor that
//! replays them on a bare instance of the original module (not
//! instrumented for metering), with no simulator around them: each
//! canister's executions back to back, or every canister's in the order
//! the simulator ran them.

use candid::Principal;

pub use crate::code::Recorded;
use crate::code::{self, Replayer};
use crate::error::SimError;

/// A [`crate::SimBuilder`] that can make its simulator keep traces.
pub trait Tracing {
    /// Keeps every committed execution of every canister, for
    /// [`Traced::take_trace`].
    fn with_tracing(self) -> Self;
}

/// A [`crate::Sim`] built [`Tracing::with_tracing`].
pub trait Traced {
    /// The committed executions of a canister since it was created (or
    /// since the last call).
    fn take_trace(&mut self, id: Principal) -> Result<Vec<Recorded>, SimError>;
}

/// A recorded execution that trapped when replayed: the recording does not
/// belong to the module.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the replay trapped: {0}")]
pub struct ReplayTrapped(String);

/// One canister's recorded executions, ready to replay.
pub struct FloorCanister {
    replayer: Replayer,
    trace: std::iter::Peekable<std::vec::IntoIter<Recorded>>,
}

impl FloorCanister {
    /// `trace` is every committed execution of a canister running `wasm`,
    /// from its installation on (see [`Traced::take_trace`]).
    pub fn new(wasm: &[u8], trace: Vec<Recorded>) -> Result<Self, SimError> {
        let replayer = code::compile(wasm, code::Metering::None)
            .and_then(|module| Replayer::new(&code::engine(), module))
            .map_err(SimError::from)?;
        Ok(Self { replayer, trace: trace.into_iter().peekable() })
    }

    /// Replays the next `n` executions (all that are left if fewer).
    pub fn replay(&mut self, n: usize) -> Result<(), ReplayTrapped> {
        for recorded in self.trace.by_ref().take(n) {
            self.replayer.replay(recorded).map_err(|trap| ReplayTrapped(trap.message))?;
        }
        Ok(())
    }

    /// Executions not replayed yet.
    pub fn remaining(&self) -> usize {
        self.trace.len()
    }
}

/// Replays what is left of every canister's executions in the order the
/// simulator ran them, alternating between canisters as it did.
pub fn replay_in_order(floors: &mut [FloorCanister]) -> Result<(), ReplayTrapped> {
    while let Some(next) = floors
        .iter_mut()
        .enumerate()
        .filter_map(|(i, f)| f.trace.peek().map(|r| (i, r.order)))
        .min_by_key(|&(_, order)| order)
        .map(|(i, _)| i)
    {
        floors[next].replay(1)?;
    }
    Ok(())
}
