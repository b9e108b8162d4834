//! The `ic0` import module: host functions registered with their contexts.

use std::collections::BTreeSet;
use wasmi::{Engine, Error, IntoFunc, Linker, Module, Val};

use super::{
    Ctx, EntryKind, SystemState, calls, canister, certified, debug, msg, outside_a_message, stable, time,
    trap,
};
use crate::code::CANNOT_GROW;
use crate::module::{GROW_IMPORT, WasmError};

/// Which entry kinds may call a host function.
#[derive(Clone, Copy, Debug)]
pub struct Contexts {
    /// One bit per [`EntryKind`].
    kinds: u16,
    /// What a call from another kind traps with, if not the usual message.
    refusal: Option<&'static str>,
}

impl Contexts {
    /// Any entry kind, and outside a message too: nothing to check.
    pub const ANY: Self = Self { kinds: u16::MAX, refusal: None };

    pub const fn only(kinds: &[EntryKind]) -> Self {
        let mut bits = 0;
        let mut i = 0;
        while i < kinds.len() {
            bits |= 1 << kinds[i] as u16;
            i += 1;
        }
        Self { kinds: bits, refusal: None }
    }

    pub const fn refusing_with(self, message: &'static str) -> Self {
        Self { refusal: Some(message), ..self }
    }

    /// Traps unless the running message may call `name`.
    pub fn check(self, state: &SystemState, name: &str) -> Result<(), Error> {
        if self.kinds == Self::ANY.kinds {
            return Ok(());
        }
        let Some(exec) = state.exec.as_ref() else {
            return outside_a_message();
        };
        let kind = exec.context.kind;
        match self.refusal {
            _ if self.kinds & (1 << kind as u16) != 0 => Ok(()),
            Some(message) => trap(message),
            None => wrong_mode(name, kind),
        }
    }
}

/// The replica's trap for a system call made where it may not be
/// (`SystemApiImpl::error_for`).
pub fn wrong_mode<T>(name: &str, kind: EntryKind) -> Result<T, Error> {
    trap(format!("Canister violated contract: \"ic0_{name}\" cannot be executed in {} mode", kind.mode()))
}

/// What `canister_start` may call of what the simulator implements (the
/// replica's `ApiType::Start`).
const ALLOWED_IN_START: [&str; 10] = [
    "debug_print",
    "trap",
    "performance_counter",
    "is_controller",
    "in_replicated_execution",
    "cost_call",
    "stable64_size",
    "stable64_grow",
    "stable64_read",
    "stable64_write",
];

/// Traps if the running message is `canister_start` and may not call `name`,
/// with the replica's message.
pub fn check_start(state: &SystemState, name: &str) -> Result<(), Error> {
    match &state.exec {
        Some(exec) if exec.context.kind == EntryKind::Start && !ALLOWED_IN_START.contains(&name) => {
            wrong_mode(name, EntryKind::Start)
        }
        _ => Ok(()),
    }
}

/// The linker being filled, and the names defined in it so far.
pub struct Registry {
    linker: Linker<SystemState>,
    supported: BTreeSet<&'static str>,
}

impl Registry {
    pub fn define<Params, Results>(
        &mut self,
        name: &'static str,
        func: impl IntoFunc<SystemState, Params, Results>,
    ) {
        self.linker.func_wrap("ic0", name, func).unwrap_or_else(|e| panic!("defining ic0.{name}: {e}"));
        self.supported.insert(name);
    }
}

/// A system call's parameter as the unsigned number the cost table reads.
pub trait Count {
    fn count(self) -> u64;
}
impl Count for i32 {
    fn count(self) -> u64 {
        self as u32 as u64
    }
}
impl Count for i64 {
    fn count(self) -> u64 {
        self as u64
    }
}

/// `def!(r, "name" [in contexts], |c: Ctx<'_>, params..| -> T { body })`
/// defines `ic0.name` in `r`: it charges the replica's cost of the call
/// (from [`crate::metering::costs::SYSTEM_API`]), traps outside `contexts`
/// (none given: any), and records its outcome on the tape.
macro_rules! def {
    (@contexts) => { $crate::system_api::linker::Contexts::ANY };
    (@contexts $contexts:expr) => { $contexts };
    ($r:ident, $name:literal $(in $contexts:expr)?, |$c:ident : Ctx<'_> $(, $p:ident : $t:ty)* $(,)?| -> $ret:ty $body:block) => {
        let contexts = def!(@contexts $($contexts)?);
        let cost = $crate::metering::costs::system_api($name)
            .unwrap_or_else(|| panic!("ic0.{} has no cost in metering::costs::SYSTEM_API", $name));
        $r.define(
            $name,
            move |mut $c: $crate::system_api::Ctx<'_> $(, $p: $t)*|
             -> Result<<$ret as $crate::system_api::tape::HostResult>::Value, wasmi::Error> {
                let args: &[u64] = &[$($crate::system_api::linker::Count::count($p)),*];
                $crate::system_api::charge(&mut $c, cost.charge(args))?;
                contexts.check($c.data(), $name)?;
                $crate::system_api::linker::check_start($c.data(), $name)?;
                #[allow(clippy::redundant_closure_call)]
                let result: $ret = (|| $body)();
                $crate::system_api::tape::HostResult::recorded(result, $c.data_mut())
            },
        );
    };
}
pub(super) use def;

/// A linker for `module`: the `ic0` functions this model provides, and for
/// any other function it imports from `ic0` one that traps with
/// `ic0.<name> is not supported by the simulator`, so that it still loads.
pub fn linker(engine: &Engine, module: &Module) -> Result<Linker<SystemState>, WasmError> {
    let mut r = Registry { linker: Linker::new(engine), supported: BTreeSet::new() };
    msg::register(&mut r);
    canister::register(&mut r);
    certified::register(&mut r);
    calls::register(&mut r);
    stable::register(&mut r);
    time::register(&mut r);
    debug::register(&mut r);
    let Registry { mut linker, supported } = r;
    for import in module.imports() {
        if (import.module(), import.name()) == GROW_IMPORT {
            linker
                .func_wrap(GROW_IMPORT.0, GROW_IMPORT.1, memory_grow)
                .map_err(|e| WasmError::Link(e.to_string()))?;
            continue;
        }
        let (module, name) = (import.module().to_string(), import.name().to_string());
        if module != "ic0" {
            return Err(WasmError::ForeignImport { module, name });
        }
        let wasmi::ExternType::Func(ty) = import.ty() else {
            return Err(WasmError::NotAFunction { module, name });
        };
        if supported.contains(name.as_str()) {
            continue;
        }
        linker
            .func_new("ic0", import.name(), ty.clone(), move |_c, _params: &[Val], _results: &mut [Val]| {
                trap(format!("ic0.{name} is not supported by the simulator"))
            })
            .map_err(|e| WasmError::Link(e.to_string()))?;
    }
    Ok(linker)
}

/// `memory.grow` in an instrumented module (see [`GROW_IMPORT`]): -1 past
/// the memory's maximum, as the instruction; past the host-memory budget a
/// trap, as growth past a full subnet's memory (see `crate::host_memory`).
fn memory_grow(mut c: Ctx<'_>, delta: i32) -> Result<i32, Error> {
    let Some(memory) = c.data().memory else {
        return outside_a_message();
    };
    c.data_mut().limiter.take_refusal();
    match memory.grow(&mut c, u64::from(delta as u32)) {
        Ok(old) => Ok(old as i32),
        Err(_) => match c.data_mut().limiter.take_refusal() {
            Some(why) => trap(format!("{CANNOT_GROW} {why}")),
            None => Ok(-1),
        },
    }
}

#[cfg(test)]
mod tests {
    use candid::Principal;

    use super::*;
    use crate::system_api::{ApiLimits, CanisterTrap, Effects, Execution, MessageContext};

    fn running(kind: EntryKind) -> SystemState {
        let id = Principal::anonymous();
        let budget = crate::host_memory::HostMemory::new(0);
        let mut state = SystemState::new(
            id,
            vec![],
            0,
            ApiLimits { queue_capacity: 1, max_instructions_per_message: 0 },
            &budget,
        );
        let context = MessageContext::new(kind, id, String::new(), vec![], 0);
        state.exec = Some(Execution { context, effects: Effects::default() });
        state
    }

    fn trap_message(result: Result<(), Error>) -> String {
        result.unwrap_err().downcast_ref::<CanisterTrap>().expect("a trap").0.clone()
    }

    #[test]
    fn a_function_traps_outside_its_contexts() {
        let updates = Contexts::only(&[EntryKind::Update]);
        assert!(updates.check(&running(EntryKind::Update), "call_new").is_ok());
        let refused = updates.check(&running(EntryKind::Init), "call_new");
        let expected = "Canister violated contract: \"ic0_call_new\" cannot be executed in init mode";
        assert_eq!(trap_message(refused), expected);
        let refused = updates.check(&running(EntryKind::Query), "call_new");
        assert!(trap_message(refused).ends_with("in non replicated query mode"));
        let refused = updates.refusing_with("not here").check(&running(EntryKind::Query), "f");
        assert_eq!(trap_message(refused), "not here");
        assert!(Contexts::ANY.check(&running(EntryKind::Init), "time").is_ok());
    }
}
