//! Per-canister statistics: what the engine saw each canister do.

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

use crate::message::RejectCode;

/// How many rejects arrived, per code, in code order (a map by hand, as
/// `RejectCode` is not `Ord`).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectCounts(Vec<(RejectCode, u64)>);

impl RejectCounts {
    /// The count for `code`; `None` if none arrived.
    pub fn get(&self, code: &RejectCode) -> Option<&u64> {
        self.0.iter().find(|(c, _)| c == code).map(|(_, n)| n)
    }

    pub(crate) fn add(&mut self, code: RejectCode) {
        let at = self.0.partition_point(|&(c, _)| (c as u32) < code as u32);
        match self.0.get_mut(at) {
            Some((c, n)) if *c == code => *n += 1,
            _ => self.0.insert(at, (code, 1)),
        }
    }
}

impl fmt::Debug for RejectCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.iter().map(|(c, n)| (c, n))).finish()
    }
}

/// What the simulator saw one canister do (statistics only: nothing in
/// the model reads them back).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanisterStats {
    /// Executions per entry: a method name, `callback`, `cleanup`,
    /// `canister_global_timer`, `canister_init`, ...
    pub executed: BTreeMap<String, u64>,
    /// Executions that trapped (and were rolled back).
    pub traps: u64,
    /// Instructions of all executions, counted as the replica counts them.
    pub instructions: u64,
    /// Calls that `call_perform` accepted.
    pub calls_performed: u64,
    /// The same calls by the entry whose executions performed them (an
    /// update's method name, `callback`, `canister_global_timer`). Kept per
    /// entry, not per call, so that it stays as small after a million
    /// calls as after ten.
    pub calls_performed_in: BTreeMap<String, CallsFrom>,
    /// Calls that `call_perform` refused (returned non-zero).
    pub calls_refused: u64,
    /// Reject responses its callbacks received, by code.
    pub rejects_received: RejectCounts,
    /// The same calls and rejects per callee, for the first
    /// [`MAX_CALLEES_APART`] callees it called (the totals above count all).
    pub calls_to: BTreeMap<Principal, CallsTo>,
    /// Cycles charged for calls (the part of the prepayment not refunded).
    pub cycles_consumed: u128,
}

/// The most callees [`CanisterStats::calls_to`] keeps apart: a canister
/// that calls ids without end grows no state without end.
pub const MAX_CALLEES_APART: usize = 1_000;

/// A canister's calls to one callee.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallsTo {
    /// Calls that `call_perform` accepted.
    pub performed: u64,
    /// Calls that `call_perform` refused.
    pub refused: u64,
    /// Rejects their callbacks received, by code.
    pub rejects: RejectCounts,
}

/// The calls one entry's executions performed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallsFrom {
    /// Calls that `call_perform` accepted.
    pub calls: u64,
    /// The IC time of the first execution that performed any.
    pub first_at: u64,
    /// The IC time of the last one.
    pub last_at: u64,
}

impl CanisterStats {
    /// The counts of calls to `callee`, if it is kept apart.
    pub(crate) fn calls_to_mut(&mut self, callee: Principal) -> Option<&mut CallsTo> {
        if self.calls_to.len() >= MAX_CALLEES_APART && !self.calls_to.contains_key(&callee) {
            return None;
        }
        Some(self.calls_to.entry(callee).or_default())
    }

    /// Executions of `entry` (see [`CanisterStats::executed`]).
    pub fn executions_of(&self, entry: &str) -> u64 {
        self.executed.get(entry).copied().unwrap_or(0)
    }

    pub(crate) fn record(&mut self, entry: &str, instructions: u64, trapped: bool) {
        match self.executed.get_mut(entry) {
            Some(n) => *n += 1,
            // Allocates a name once per entry, not once per execution.
            None => _ = self.executed.insert(entry.to_string(), 1),
        }
        self.instructions += instructions;
        self.traps += u64::from(trapped);
    }

    /// `calls` calls performed by an execution of `entry` at `time`.
    pub(crate) fn record_calls(&mut self, entry: &str, calls: u64, time: u64) {
        match self.calls_performed_in.get_mut(entry) {
            Some(from) => {
                from.calls += calls;
                from.last_at = time;
            }
            None => {
                let from = CallsFrom { calls, first_at: time, last_at: time };
                self.calls_performed_in.insert(entry.to_string(), from);
            }
        }
    }
}
