//! Running an entry point within an instruction limit, and its trap as the replica words it.

use wasmi::{AsContext, Error, Nullable, Ref, Store, TrapCode, Val};

use super::Code;
use crate::message::ErrorCode;
use crate::system_api::CanisterTrap;

/// What to run: an exported function, or a callback from the table.
#[derive(Clone, Debug)]
pub enum Entry {
    Export(String),
    Callback { fun: u64, env: u64 },
}

impl Code {
    /// Runs `entry` with at most `limit` instructions; returns the
    /// instructions used (0 if the module is not metered), and the trap if
    /// it trapped.
    pub fn run<T>(&self, store: &mut Store<T>, entry: &Entry, limit: u64) -> (u64, Option<CanisterTrap>) {
        let limit = limit.min(i64::MAX as u64);
        if let Some(counter) = self.counter {
            counter.set(&mut *store, Val::I64(limit as i64)).expect("a mutable i64");
        }
        let result = match entry {
            Entry::Export(name) => match self.instance.get_func(&*store, name) {
                Some(func) => func.call(&mut *store, &[], &mut []),
                None => Err(Error::host(CanisterTrap::new(
                    ErrorCode::CanisterMethodNotFound,
                    format!("the module does not export {name:?}"),
                ))),
            },
            Entry::Callback { fun, env } => match self.callback(&*store, *fun) {
                // The callback takes its `env` as the spec's `I`.
                Ok(func) if self.module.memory64 => func.call(&mut *store, &[Val::I64(*env as i64)], &mut []),
                Ok(func) => func.call(&mut *store, &[Val::I32(*env as i32)], &mut []),
                Err(trap) => Err(Error::host(trap)),
            },
        };
        let left = self.counter.map_or(limit as i64, |counter| counter.get(&*store).i64().expect("an i64"));
        let trap = match result {
            Err(e) => Some(describe_trap(e, limit, left < 0)),
            // A message can pass its limit after the last check (see
            // `metering`); the replica then fails it as well.
            Ok(()) if left < 0 => Some(out_of_instructions(limit)),
            Ok(()) => None,
        };
        // Past the limit the message is charged the limit.
        (limit - left.clamp(0, limit as i64) as u64, trap)
    }

    fn callback(&self, store: impl AsContext, index: u64) -> Result<wasmi::Func, CanisterTrap> {
        let not_found = |message: String| CanisterTrap::new(ErrorCode::CanisterFunctionNotFound, message);
        let table = self.table.ok_or_else(|| not_found("callback: the module has no table".into()))?;
        match table.get(store, index) {
            Some(Ref::Func(Nullable::Val(func))) => Ok(func),
            _ => Err(not_found(format!("callback: no function at table index {index}"))),
        }
    }
}

/// The replica's message for growth past the subnet's memory.
pub const CANNOT_GROW: &str = "Canister cannot grow its memory usage.";

/// The replica's message for a message that ran out of instructions.
pub fn out_of_instructions(limit: u64) -> CanisterTrap {
    CanisterTrap::new(
        ErrorCode::CanisterInstructionLimitExceeded,
        format!("Canister exceeded the limit of {limit} instructions for single message execution."),
    )
}

/// `exhausted`: the counter is negative, so the `unreachable` the metering
/// check executes (see [`crate::metering`]) was hit, or a host function refused.
fn describe_trap(error: Error, limit: u64, exhausted: bool) -> CanisterTrap {
    if let Some(trap) = error.downcast_ref::<CanisterTrap>() {
        return trap.clone();
    }
    match error.as_trap_code() {
        Some(TrapCode::UnreachableCodeReached) if exhausted => out_of_instructions(limit),
        Some(code) => CanisterTrap::new(
            ErrorCode::CanisterTrapped,
            format!("Canister trapped: {}", replica_trap_code(code)),
        ),
        None => CanisterTrap::new(ErrorCode::CanisterTrapped, format!("Canister trapped: {error}")),
    }
}

/// A wasm trap as the replica names it (its `TrapCode`'s text, from
/// wasmtime's trap): the rest it calls "unknown".
fn replica_trap_code(code: TrapCode) -> &'static str {
    match code {
        TrapCode::StackOverflow => "stack overflow",
        TrapCode::MemoryOutOfBounds => "heap out of bounds",
        TrapCode::TableOutOfBounds => "table out of bounds",
        TrapCode::IntegerDivisionByZero => "integer division by 0",
        TrapCode::UnreachableCodeReached => "unreachable",
        _ => "unknown",
    }
}
