//! What the engine saw, per canister: tests compare it with what the
//! canisters report.

use std::collections::BTreeMap;

use crate::message::RejectCode;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CanisterStats {
    /// Executions per entry: a method name, `callback`, `cleanup`,
    /// `canister_global_timer`, `canister_init`, ...
    pub executed: BTreeMap<String, u64>,
    /// Executions that trapped (and were rolled back).
    pub traps: u64,
    /// Instructions (the wasm engine's fuel) of all executions.
    pub instructions: u64,
    /// Calls that `call_perform` accepted.
    pub calls_performed: u64,
    /// For each of them, the entry whose execution performed it and the IC
    /// time (an update's method name, `callback`, `canister_global_timer`).
    pub calls_performed_in: Vec<(String, u64)>,
    /// Calls that `call_perform` refused (returned non-zero).
    pub calls_refused: u64,
    /// Reject responses its callbacks received, by code.
    pub rejects_received: BTreeMap<RejectCode, u64>,
    /// Cycles charged for calls (the part of the prepayment not refunded).
    pub cycles_consumed: u128,
}

impl CanisterStats {
    pub fn executions_of(&self, entry: &str) -> u64 {
        self.executed.get(entry).copied().unwrap_or(0)
    }

    pub(crate) fn record(&mut self, entry: &str, instructions: u64, trapped: bool) {
        *self.executed.entry(entry.to_string()).or_default() += 1;
        self.instructions += instructions;
        self.traps += u64::from(trapped);
    }
}
