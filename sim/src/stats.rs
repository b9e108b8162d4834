//! Per-canister statistics: what the engine saw each canister do.

use std::collections::BTreeMap;
use std::fmt;

use crate::message::RejectCode;

/// How many rejects arrived, per code, in code order (a map by hand, as
/// `RejectCode` is not `Ord`).
#[derive(Clone, Default, PartialEq, Eq)]
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    /// For each of them, the entry whose execution performed it and the IC
    /// time (an update's method name, `callback`, `canister_global_timer`).
    pub calls_performed_in: Vec<(String, u64)>,
    /// Calls that `call_perform` refused (returned non-zero).
    pub calls_refused: u64,
    /// Reject responses its callbacks received, by code.
    pub rejects_received: RejectCounts,
    /// Cycles charged for calls (the part of the prepayment not refunded).
    pub cycles_consumed: u128,
}

impl CanisterStats {
    /// Executions of `entry` (see [`CanisterStats::executed`]).
    pub fn executions_of(&self, entry: &str) -> u64 {
        self.executed.get(entry).copied().unwrap_or(0)
    }

    pub(crate) fn record(&mut self, entry: &str, instructions: u64, trapped: bool) {
        *self.executed.entry(entry.to_string()).or_default() += 1;
        self.instructions += instructions;
        self.traps += u64::from(trapped);
    }
}
