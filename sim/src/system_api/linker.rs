//! The `ic0` import module: host functions registered with their contexts.

use std::collections::BTreeSet;
use wasmi::{Engine, Error, IntoFunc, Linker, Module, WasmTy};

use super::tape::TapeValue;
use super::{
    Ctx, EntryKind, SystemState, calls, canister, certified, cost, debug, msg, outside_a_message, stable,
    time, trap, trap_with,
};
use crate::code::CANNOT_GROW;
use crate::message::ErrorCode;
use crate::module::{GROW_IMPORT, MEMORY_EXPORT, WasmError};

/// Which entry kinds may call a host function.
#[derive(Clone, Copy, Debug)]
pub struct Contexts {
    /// One bit per [`EntryKind`].
    kinds: u32,
    /// What a call from another kind traps with, if not the usual message.
    refusal: Option<&'static str>,
}

impl Contexts {
    /// Any entry kind, and outside a message too: nothing to check.
    pub const ANY: Self = Self { kinds: u32::MAX, refusal: None };

    pub const fn only(kinds: &[EntryKind]) -> Self {
        let mut bits = 0;
        let mut i = 0;
        while i < kinds.len() {
            bits |= 1 << kinds[i] as u32;
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
            _ if self.kinds & (1 << kind as u32) != 0 => Ok(()),
            Some(message) => trap(message),
            None => wrong_mode(name, kind),
        }
    }
}

/// The replica's trap for a system call made where it may not be
/// (`SystemApiImpl::error_for`).
pub fn wrong_mode<T>(name: &str, kind: EntryKind) -> Result<T, Error> {
    let separator = if NAMED_WITH_A_DOT.contains(&name) { "." } else { "_" };
    trap(format!(
        "Canister violated contract: \"ic0{separator}{name}\" cannot be executed in {} mode",
        kind.mode()
    ))
}

/// What `canister_start` may call (the replica's `ApiType::Start`): the
/// functions that check no context.
const ALLOWED_IN_START: [&str; 20] = [
    "debug_print",
    "trap",
    "performance_counter",
    "is_controller",
    "in_replicated_execution",
    "cost_call",
    "cost_create_canister",
    "cost_http_request",
    "cost_http_request_v2",
    "cost_sign_with_ecdsa",
    "cost_sign_with_schnorr",
    "cost_vetkd_derive_key",
    "stable64_size",
    "stable64_grow",
    "stable64_read",
    "stable64_write",
    "stable_size",
    "stable_grow",
    "stable_read",
    "stable_write",
];

/// The functions whose wrong-mode trap the replica spells `ic0.<name>`,
/// not `ic0_<name>`.
const NAMED_WITH_A_DOT: [&str; 2] = ["root_key_copy", "subnet_self_copy"];

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

/// The interface specification's `I`, the type of a pointer or size in
/// canister memory: `i32` in a module with 32-bit memory, `i64` in one
/// with 64-bit memory (wasm64). Host functions generic over it are linked
/// with the width the module's memory has.
pub trait Word: Count + TapeValue + WasmTy + Copy + Send + Sync + 'static {
    /// The value as an unsigned address or size.
    fn to_u64(self) -> u64;
    /// A length or count the simulator hands out, which fits either width.
    fn of_len(len: usize) -> Self;
    /// What `memory.grow` returns when it does not grow.
    const MINUS_ONE: Self;
}

impl Word for i32 {
    fn to_u64(self) -> u64 {
        self as u32 as u64
    }
    fn of_len(len: usize) -> Self {
        len as i32
    }
    const MINUS_ONE: Self = -1;
}

impl Word for i64 {
    fn to_u64(self) -> u64 {
        self as u64
    }
    fn of_len(len: usize) -> Self {
        len as i64
    }
    const MINUS_ONE: Self = -1;
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

/// Whether the module (as rewritten, see [`crate::module`]) has 64-bit memory.
pub fn has_memory64(module: &Module) -> bool {
    module.exports().any(|export| {
        export.name() == MEMORY_EXPORT && matches!(export.ty(), wasmi::ExternType::Memory(m) if m.is_64())
    })
}

/// Every `ic0` function (see [`super::ic0::IC0`]) with the widths of
/// `module`'s memory (64-bit or not: [`has_memory64`]), and the `memory.grow` its instrumentation calls.
/// Validation has refused any other import.
pub fn linker(engine: &Engine, module: &Module, memory64: bool) -> Result<Linker<SystemState>, WasmError> {
    let mut r = Registry { linker: Linker::new(engine), supported: BTreeSet::new() };
    if memory64 {
        register::<i64>(&mut r);
    } else {
        register::<i32>(&mut r);
        canister::register_wasm32_only(&mut r);
        stable::register_wasm32_only(&mut r);
    }
    let Registry { mut linker, supported } = r;
    for import in module.imports() {
        if (import.module(), import.name()) == GROW_IMPORT {
            let defined = if memory64 {
                linker.func_wrap(GROW_IMPORT.0, GROW_IMPORT.1, memory_grow::<i64>)
            } else {
                linker.func_wrap(GROW_IMPORT.0, GROW_IMPORT.1, memory_grow::<i32>)
            };
            defined.map_err(|e| WasmError::Link(e.to_string()))?;
            continue;
        }
        let (module, name) = (import.module().to_string(), import.name().to_string());
        if module != "ic0" {
            return Err(WasmError::ForeignImport { module, name });
        }
        if !supported.contains(name.as_str()) {
            return Err(WasmError::Link(format!("ic0.{name} is not linked for this module's memory")));
        }
    }
    Ok(linker)
}

fn register<I: Word>(r: &mut Registry) {
    msg::register::<I>(r);
    canister::register::<I>(r);
    certified::register::<I>(r);
    calls::register::<I>(r);
    cost::register::<I>(r);
    stable::register(r);
    time::register(r);
    debug::register::<I>(r);
}

/// The replica's trap for growth past the `wasm_memory_limit` setting.
fn wasm_memory_limit_exceeded(limit: u64, bytes: u64) -> String {
    format!(
        "Canister exceeded its current Wasm memory limit of {limit} bytes. The peak Wasm memory usage was {bytes} bytes. If the canister reaches 4GiB, then it may stop functioning and may become unrecoverable. Please reach out to the canister owner to investigate the reason for the increased memory usage. It might be necessary to move data from the Wasm memory to the stable memory. If such high Wasm memory usage is expected and safe, then the developer can increase the Wasm memory limit in the canister settings."
    )
}

/// `memory.grow` in an instrumented module (see [`GROW_IMPORT`]): -1 past
/// the memory's maximum, as the instruction (a wasm64 memory's is capped
/// at 6 GiB, see [`crate::module::MAX_WASM64_MEMORY_BYTES`]); past the
/// host-memory budget a trap, as growth past a full subnet's memory (see
/// `crate::host_memory`).
fn memory_grow<I: Word>(mut c: Ctx<'_>, delta: I) -> Result<I, Error> {
    let Some(memory) = c.data().memory else {
        return outside_a_message();
    };
    c.data_mut().limiter.take_refusal();
    match memory.grow(&mut c, delta.to_u64()) {
        Ok(old) => {
            let bytes = memory.data_size(&c) as u64;
            let limit = c.data().wasm_memory_limit;
            let kind = c.data().exec.as_ref().map(|exec| exec.context.kind);
            if limit != 0 && bytes > limit && kind.is_some_and(EntryKind::within_wasm_memory_limit) {
                return trap_with(
                    ErrorCode::CanisterWasmMemoryLimitExceeded,
                    wasm_memory_limit_exceeded(limit, bytes),
                );
            }
            Ok(I::of_len(old as usize))
        }
        Err(_) => match c.data_mut().limiter.take_refusal() {
            Some(why) => trap_with(ErrorCode::CanisterOutOfMemory, format!("{CANNOT_GROW} {why}")),
            None => Ok(I::MINUS_ONE),
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
        result.unwrap_err().downcast_ref::<CanisterTrap>().expect("a trap").message.clone()
    }

    /// A module that imports every function of the system API its memory
    /// allows, with the spec's signatures: validation accepts it, and every
    /// import is linked (none traps as missing).
    #[test]
    fn every_function_of_the_system_api_is_linked_for_wasm32_and_wasm64() {
        use crate::system_api::ic0::IC0;
        let types = |tys: Vec<wasmparser::ValType>| {
            tys.iter()
                .map(|t| if *t == wasmparser::ValType::I64 { " i64" } else { " i32" })
                .collect::<String>()
        };
        for memory64 in [false, true] {
            let mut wat = String::from("(module\n");
            let linked: Vec<_> = IC0.iter().filter(|f| !(f.wasm32_only && memory64)).collect();
            for f in &linked {
                let (params, results) = f.signature(memory64);
                wat += &format!(
                    "(import \"ic0\" \"{}\" (func (param{}) (result{})))\n",
                    f.name,
                    types(params),
                    types(results)
                );
            }
            wat += if memory64 { "(memory i64 1))" } else { "(memory 1))" };
            let wasm = wat::parse_str(&wat).unwrap();
            let module = crate::code::compile(&wasm, crate::code::Metering::Replica).unwrap();
            let budget = crate::host_memory::HostMemory::new(1 << 30);
            let limits = ApiLimits { queue_capacity: 1, max_instructions_per_message: 0 };
            let state = SystemState::new(Principal::anonymous(), vec![], 0, limits, &budget);
            let mut store = crate::system_api::new_store(&crate::code::engine(), state);
            crate::code::Code::instantiate(&mut store, module).expect("every import is linked");
            assert_eq!(linked.len(), if memory64 { 69 } else { 78 }, "memory64 {memory64}");
        }
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
