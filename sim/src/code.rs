//! A canister's code: the compiled module, its instances, running an entry point.
//!
//! An instance runs either live, against the system API, or in playback,
//! where every `ic0` import answers from a recorded tape (see
//! [`TapeEvent`]). Playback is how a trap is rolled back (re-run the
//! messages since the last checkpoint) and what the benchmark's floor runs.

use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use wasmi::{
    AsContext, AsContextMut, Caller, Engine, Error, F32, F64, Global, Instance, Linker, Memory, Module,
    Nullable, Ref, Store, Table, TrapCode, Val, ValType,
};

use crate::message::ErrorCode;
use crate::metering;
use crate::module::{self, COUNTER_EXPORT, GROW_IMPORT, MEMORY_EXPORT, TABLE_EXPORT, WasmError};
use crate::system_api::{self, CanisterTrap, SystemState, TapeEvent};
use crate::validation;

/// How a module counts its instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Metering {
    /// As the replica does ([`crate::metering`]).
    Replica,
    /// Not at all: the module as it was (the benchmark's floor).
    None,
}

/// A module compiled once and instantiable on any canister.
pub struct CompiledModule {
    /// The module as installed, to compile it again (a restored simulator).
    wasm: Rc<[u8]>,
    metering: Metering,
    module: Module,
    linker: Linker<SystemState>,
    playback_linker: Linker<Playback>,
    mutable_globals: Vec<u32>,
    has_table: bool,
    exports: BTreeSet<String>,
    /// Its memory is 64-bit (wasm64): pointers, sizes and callbacks' `env`
    /// are i64.
    memory64: bool,
}

impl CompiledModule {
    /// Validates as the replica does (see [`validation`]), instruments (see
    /// [`metering`]), rewrites the exports (see [`module`]) and compiles.
    pub fn compile(engine: &Engine, wasm: &[u8], metering: Metering) -> Result<Self, WasmError> {
        validation::validate(wasm)?;
        let rewritten = match metering {
            Metering::Replica => {
                let instrumented = metering::instrument(wasm)?;
                module::rewrite(&instrumented.wasm, Some(instrumented.counter))?
            }
            Metering::None => module::rewrite(wasm, None)?,
        };
        let module =
            Module::new(engine, &rewritten.wasm[..]).map_err(|e| WasmError::Invalid(e.to_string()))?;
        let memory64 = system_api::has_memory64(&module);
        let linker = system_api::linker(engine, &module, memory64)?;
        if !rewritten.has_memory {
            return Err(WasmError::NoMemory);
        }
        Ok(Self {
            wasm: wasm.into(),
            metering,
            playback_linker: playback_linker(engine, &module, memory64)?,
            module,
            linker,
            mutable_globals: rewritten.mutable_globals,
            has_table: rewritten.has_table,
            exports: rewritten.function_exports.into_iter().collect(),
            memory64,
        })
    }

    pub fn exports(&self, name: &str) -> bool {
        self.exports.contains(name)
    }

    pub fn wasm(&self) -> &[u8] {
        &self.wasm
    }

    pub fn metering(&self) -> Metering {
        self.metering
    }
}

/// What to run: an exported function, or a callback from the table.
#[derive(Clone, Debug)]
pub enum Entry {
    Export(String),
    Callback { fun: u64, env: u64 },
}

/// One committed message execution: enough to run it again exactly.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub(crate) entry: Entry,
    pub(crate) tape: Vec<TapeEvent>,
    /// Its place among every traced execution of the process (see
    /// [`crate::bench`]); 0 when not traced.
    pub(crate) order: u64,
}

/// An instance of a [`CompiledModule`] in some store.
pub struct Code {
    pub module: Rc<CompiledModule>,
    instance: Instance,
    memory: Memory,
    table: Option<Table>,
    globals: Vec<Global>,
    /// The instruction counter, if the module is metered.
    counter: Option<Global>,
}

/// An instance's state: linear memory and mutable globals.
#[derive(Clone, Default)]
pub struct Snapshot {
    memory: MemoryImage,
    globals: Vec<Val>,
}

/// Linear memory as a snapshot keeps it: its size, and only the pages that
/// are not all zeros, so that a checkpoint costs what the canister wrote,
/// not what it declared. (A saved stable memory too.)
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct MemoryImage {
    len: usize,
    /// The indices of the pages kept, ascending.
    pages: Vec<u32>,
    /// Their bytes, one [`IMAGE_PAGE`] after another.
    #[serde(with = "serde_bytes")]
    bytes: Vec<u8>,
}

/// An OS page: a wasm page (64 KiB) is 16 of them.
const IMAGE_PAGE: usize = 4096;

const WASM_PAGE: usize = 65536;

impl MemoryImage {
    pub fn of(memory: &[u8]) -> Self {
        // Queries snapshot every time: one scan finds the pages, and their
        // bytes are copied once, into a buffer of their size.
        let pages: Vec<u32> = memory
            .chunks(IMAGE_PAGE)
            .enumerate()
            .filter(|(_, page)| !is_zero(page))
            .map(|(i, _)| i as u32)
            .collect();
        let mut bytes = Vec::with_capacity(pages.len() * IMAGE_PAGE);
        for &i in &pages {
            let start = i as usize * IMAGE_PAGE;
            bytes.extend_from_slice(&memory[start..memory.len().min(start + IMAGE_PAGE)]);
        }
        Self { len: memory.len(), pages, bytes }
    }

    /// The size of the memory it is an image of.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether [`MemoryImage::of`] could have made it of a memory of
    /// `page`-byte pages: a restored one comes from a file.
    pub fn check(&self, page: usize) -> Result<(), String> {
        let in_range = self.pages.iter().all(|&i| (i as usize + 1) * IMAGE_PAGE <= self.len);
        let ascending = self.pages.windows(2).all(|w| w[0] < w[1]);
        if !self.len.is_multiple_of(page)
            || !in_range
            || !ascending
            || self.bytes.len() != self.pages.len() * IMAGE_PAGE
        {
            return Err(format!("its image of a memory of {} bytes is malformed", self.len));
        }
        Ok(())
    }

    /// The memory it is an image of.
    pub fn to_memory(&self) -> Vec<u8> {
        let mut memory = vec![0; self.len];
        self.write_to(&mut memory);
        memory
    }

    /// Writes the image over `memory`, which is as long.
    fn write_to(&self, memory: &mut [u8]) {
        let mut kept = self.pages.iter().zip(self.bytes.chunks(IMAGE_PAGE)).peekable();
        for (i, page) in memory.chunks_mut(IMAGE_PAGE).enumerate() {
            match kept.next_if(|(j, _)| **j as usize == i) {
                Some((_, bytes)) => page.copy_from_slice(bytes),
                None if !is_zero(page) => page.fill(0),
                None => {}
            }
        }
    }
}

/// An instance's state as a saved simulator keeps it.
#[derive(Serialize, Deserialize)]
pub struct SavedSnapshot {
    memory: MemoryImage,
    globals: Vec<SavedVal>,
}

/// A mutable global's value, floats as their bits. Validation leaves
/// numbers only: reference-typed globals and SIMD are refused.
#[derive(Serialize, Deserialize)]
enum SavedVal {
    I32(i32),
    I64(i64),
    F32(u32),
    F64(u64),
}

impl SavedVal {
    fn of(value: &Val) -> Option<Self> {
        match *value {
            Val::I32(v) => Some(Self::I32(v)),
            Val::I64(v) => Some(Self::I64(v)),
            Val::F32(v) => Some(Self::F32(v.to_bits())),
            Val::F64(v) => Some(Self::F64(v.to_bits())),
            _ => None,
        }
    }
}

impl From<SavedVal> for Val {
    fn from(value: SavedVal) -> Self {
        match value {
            SavedVal::I32(v) => Val::I32(v),
            SavedVal::I64(v) => Val::I64(v),
            SavedVal::F32(bits) => Val::F32(F32::from_bits(bits)),
            SavedVal::F64(bits) => Val::F64(F64::from_bits(bits)),
        }
    }
}

/// Folds instead of stopping at the first non-zero byte, which the
/// compiler vectorises.
fn is_zero(page: &[u8]) -> bool {
    page.iter().fold(0, |acc, &b| acc | b) == 0
}

impl Code {
    /// A live instance: its imports are the system API.
    pub fn instantiate(
        store: &mut Store<SystemState>,
        module: Rc<CompiledModule>,
    ) -> Result<Self, WasmError> {
        store.data_mut().limiter.take_refusal();
        let instance = module.linker.instantiate_and_start(&mut *store, &module.module).map_err(|e| {
            // Past the host-memory budget, say so rather than wasmi's "resource limiter denied".
            WasmError::Instantiate(store.data_mut().limiter.take_refusal().unwrap_or_else(|| e.to_string()))
        })?;
        let code = Self::from_instance(&*store, module, instance)?;
        code.bind(store.data_mut());
        Ok(code)
    }

    /// A playback instance: its imports answer from tapes.
    pub fn instantiate_playback(
        store: &mut Store<Playback>,
        module: Rc<CompiledModule>,
    ) -> Result<Self, WasmError> {
        let instance = module
            .playback_linker
            .instantiate_and_start(&mut *store, &module.module)
            .map_err(|e| WasmError::Instantiate(e.to_string()))?;
        let code = Self::from_instance(&*store, module, instance)?;
        store.data_mut().memory = Some(code.memory);
        Ok(code)
    }

    fn from_instance(
        store: impl AsContext,
        module: Rc<CompiledModule>,
        instance: Instance,
    ) -> Result<Self, WasmError> {
        let memory = instance.get_memory(&store, MEMORY_EXPORT).ok_or(WasmError::NoMemory)?;
        let table = if module.has_table { instance.get_table(&store, TABLE_EXPORT) } else { None };
        let globals = module
            .mutable_globals
            .iter()
            .map(|&i| {
                instance.get_global(&store, &module::global_export(i)).expect("exported by the rewrite")
            })
            .collect();
        let counter = instance.get_global(&store, COUNTER_EXPORT);
        Ok(Self { module, instance, memory, table, globals, counter })
    }

    /// Points the system API at this instance's memory and counter.
    pub fn bind(&self, state: &mut SystemState) {
        state.memory = Some(self.memory);
        state.counter = self.counter;
    }

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

    pub fn memory_len(&self, store: impl AsContext) -> usize {
        self.memory.data_size(store)
    }

    pub fn snapshot(&self, store: impl AsContext) -> Snapshot {
        Snapshot {
            memory: MemoryImage::of(self.memory.data(store.as_context())),
            globals: self.globals.iter().map(|g| g.get(&store)).collect(),
        }
    }

    /// Puts `snapshot` into this instance. Linear memory cannot shrink: the
    /// instance's memory must not be larger than the snapshot's.
    pub fn load(&self, mut store: impl AsContextMut, snapshot: &Snapshot) {
        let missing = snapshot.memory.len - self.memory.data_size(&store);
        if missing > 0 {
            self.memory
                .grow(&mut store, (missing / 65536) as u64)
                .expect("the snapshot's size was reached before");
        }
        snapshot.memory.write_to(self.memory.data_mut(store.as_context_mut()));
        for (global, value) in self.globals.iter().zip(&snapshot.globals) {
            global.set(&mut store, value.clone()).expect("same type");
        }
    }

    /// The instance's state, to save; refused if a mutable global holds a
    /// reference (a store handle).
    pub fn save(&self, store: impl AsContext) -> Result<SavedSnapshot, String> {
        let Snapshot { memory, globals } = self.snapshot(store);
        let globals = globals
            .iter()
            .enumerate()
            .map(|(i, value)| {
                SavedVal::of(value).ok_or_else(|| {
                    format!("its mutable global {i} holds a {:?} value, which cannot be saved", value.ty())
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(SavedSnapshot { memory, globals })
    }

    /// A live instance of `module` in `saved`'s state, built as
    /// [`Code::restore`] builds one (no code runs), and that state as a
    /// checkpoint. Unlike there, the memory may not fit the budget.
    pub fn resume(
        store: &mut Store<SystemState>,
        module: Rc<CompiledModule>,
        saved: SavedSnapshot,
    ) -> Result<(Self, Snapshot), String> {
        saved.memory.check(WASM_PAGE)?;
        let code = Code::instantiate(store, module).map_err(|e| e.to_string())?;
        let globals: Vec<Val> = saved.globals.into_iter().map(Val::from).collect();
        let types_match = globals.len() == code.globals.len()
            && code.globals.iter().zip(&globals).all(|(g, v)| g.ty(&*store).content() == v.ty());
        if !types_match {
            return Err("its saved globals do not match its module's".into());
        }
        let missing = saved
            .memory
            .len
            .checked_sub(code.memory_len(&*store))
            .ok_or("its saved memory is smaller than its module declares")?;
        if missing > 0 {
            store.data_mut().limiter.take_refusal();
            code.memory.grow(&mut *store, (missing / WASM_PAGE) as u64).map_err(|e| {
                store.data_mut().limiter.take_refusal().unwrap_or_else(|| format!("its memory: {e}"))
            })?;
        }
        let snapshot = Snapshot { memory: saved.memory, globals };
        code.load(&mut *store, &snapshot);
        Ok((code, snapshot))
    }

    /// Returns a live instance to `snapshot`. Linear memory cannot shrink:
    /// if it grew past the snapshot's, a fresh instance in a fresh store
    /// takes its place (a store frees an instance only when it is dropped).
    pub fn restore(&mut self, store: &mut Store<SystemState>, snapshot: &Snapshot) {
        if self.memory_len(&*store) > snapshot.memory.len {
            *store = system_api::move_to_new_store(store);
            // The old instance's memory is free, and the snapshot's size
            // was reached within the budget before.
            *self = Code::instantiate(store, self.module.clone()).expect("the module instantiated before");
        }
        self.load(store, snapshot);
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
/// check executes (see [`metering`]) was hit, or a host function refused.
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

thread_local! {
    /// One engine per thread, shared by every simulator on it, so that a
    /// module is compiled once however many simulators install it.
    /// wasmi's own fuel is off: the instrumented module counts.
    static ENGINE: Engine = Engine::new(&engine_config());
    static MODULES: RefCell<ModuleCache> = RefCell::new(ModuleCache::default());
}

/// Compiled modules kept for reuse, at most this many...
const MAX_CACHED_MODULES: usize = 64;
/// ...and at most this many bytes of wasm, so that a server that is sent
/// ever new modules does not grow without bound. The least recently used
/// goes first; canisters keep the modules they run.
const MAX_CACHED_WASM_BYTES: usize = 256 << 20;

/// Compiled modules by metering and wasm (the module's own copy), with
/// when each was last used.
#[derive(Default)]
struct ModuleCache {
    modules: BTreeMap<Metering, BTreeMap<Rc<[u8]>, Cached>>,
    wasm_bytes: usize,
    clock: u64,
}

struct Cached {
    module: Rc<CompiledModule>,
    used: u64,
}

impl ModuleCache {
    fn get(&mut self, wasm: &[u8], metering: Metering) -> Option<Rc<CompiledModule>> {
        self.clock += 1;
        let cached = self.modules.get_mut(&metering)?.get_mut(wasm)?;
        cached.used = self.clock;
        Some(cached.module.clone())
    }

    fn insert(&mut self, module: Rc<CompiledModule>) {
        self.clock += 1;
        self.wasm_bytes += module.wasm.len();
        let by_wasm = self.modules.entry(module.metering).or_default();
        by_wasm.insert(module.wasm.clone(), Cached { module, used: self.clock });
        while self.len() > MAX_CACHED_MODULES || self.wasm_bytes > MAX_CACHED_WASM_BYTES {
            let oldest = self
                .modules
                .iter()
                .flat_map(|(metering, by_wasm)| {
                    by_wasm.iter().map(move |(wasm, cached)| (cached.used, *metering, wasm))
                })
                .min()
                .map(|(_, metering, wasm)| (metering, wasm.clone()));
            let Some((metering, wasm)) = oldest else { break };
            self.wasm_bytes -= wasm.len();
            self.modules.get_mut(&metering).expect("listed").remove(&wasm);
        }
    }

    fn len(&self) -> usize {
        self.modules.values().map(BTreeMap::len).sum()
    }
}

/// The replica runs a message on a wasm stack of 5 MiB
/// (`MAX_WASM_STACK_SIZE`, `rs/embedders/src/lib.rs` in dfinity/ic).
pub const REPLICA_WASM_STACK_BYTES: usize = 5 << 20;

/// The fewest bytes a wasm frame takes on the replica's native stack, as
/// the replica compiles it: a return address and a frame pointer, and the
/// state its instrumentation's entry check keeps across its call (measured
/// by `examples/stack_depth.rs`: 32 bytes on x86-64). So no call chain
/// deeper than the stack over this fits there, whatever its frames.
pub const SMALLEST_NATIVE_FRAME_BYTES: usize = 32;

/// wasmi keeps a frame's locals and temporaries on a value stack of its
/// own, and its frames on another: each is bounded as the replica's
/// native stack bounds both together, so that what fits in the replica's
/// stack runs here, and recursion past it traps as it does there (wasmi's
/// defaults, 1,000 frames, are far below the replica's).
fn engine_config() -> wasmi::Config {
    let mut config = wasmi::Config::default();
    config
        .set_max_recursion_depth(REPLICA_WASM_STACK_BYTES / SMALLEST_NATIVE_FRAME_BYTES)
        .set_max_stack_height(REPLICA_WASM_STACK_BYTES);
    config
}

/// The wasm engine.
pub fn engine() -> Engine {
    ENGINE.with(Engine::clone)
}

/// `wasm`, compiled by [`engine`] once per thread and metering (while it
/// stays among the recently used).
pub fn compile(wasm: &[u8], metering: Metering) -> Result<Rc<CompiledModule>, WasmError> {
    if let Some(module) = MODULES.with(|m| m.borrow_mut().get(wasm, metering)) {
        return Ok(module);
    }
    let module = Rc::new(CompiledModule::compile(&engine(), wasm, metering)?);
    MODULES.with(|m| m.borrow_mut().insert(module.clone()));
    Ok(module)
}

// ----- Playback -----

/// The store data of a playback instance: the tape being played.
#[derive(Default)]
pub struct Playback {
    memory: Option<Memory>,
    tape: Vec<TapeEvent>,
    next: usize,
}

/// A store with a playback instance of one module.
pub struct Replayer {
    store: Store<Playback>,
    code: Code,
}

impl Replayer {
    /// A fresh instance of `module`, as a canister has it before `canister_init`.
    pub fn new(engine: &Engine, module: Rc<CompiledModule>) -> Result<Self, WasmError> {
        let mut store = Store::new(engine, Playback::default());
        let code = Code::instantiate_playback(&mut store, module)?;
        Ok(Self { store, code })
    }

    pub fn load(&mut self, snapshot: &Snapshot) {
        self.code.load(&mut self.store, snapshot);
    }

    /// Runs a recorded execution again; it does exactly what it did then.
    pub fn replay(&mut self, recorded: Recorded) -> Result<(), CanisterTrap> {
        let data = self.store.data_mut();
        data.tape = recorded.tape;
        data.next = 0;
        // It passed its limit when it ran; host functions charge nothing here.
        let (_, trap) = self.code.run(&mut self.store, &recorded.entry, u64::MAX);
        trap.map_or(Ok(()), Err)
    }

    pub fn snapshot(&self) -> Snapshot {
        self.code.snapshot(&self.store)
    }
}

/// A linker whose every `ic0` function plays the tape: it applies the
/// recorded memory writes and returns the recorded value.
fn playback_linker(engine: &Engine, module: &Module, memory64: bool) -> Result<Linker<Playback>, WasmError> {
    let mut linker = Linker::new(engine);
    for import in module.imports() {
        if (import.module(), import.name()) == GROW_IMPORT {
            // Not a system call: it grows the memory, as the instruction did.
            let defined = if memory64 {
                linker.func_wrap(GROW_IMPORT.0, GROW_IMPORT.1, replay_grow::<i64>)
            } else {
                linker.func_wrap(GROW_IMPORT.0, GROW_IMPORT.1, replay_grow::<i32>)
            };
            defined.map_err(|e| WasmError::Link(e.to_string()))?;
            continue;
        }
        let wasmi::ExternType::Func(ty) = import.ty() else {
            return Err(WasmError::NotAFunction {
                module: import.module().into(),
                name: import.name().into(),
            });
        };
        let result_type = ty.results().first().copied();
        linker
            .func_new(import.module(), import.name(), ty.clone(), move |caller, _params, results| {
                play_host_call(caller, result_type, results)
            })
            .map_err(|e| WasmError::Link(e.to_string()))?;
    }
    Ok(linker)
}

/// `memory.grow` as it went live: the tape holds no event for it, as it is
/// no system call, and growing again from the same size does the same.
fn replay_grow<I: system_api::Word>(mut caller: Caller<'_, Playback>, delta: I) -> Result<I, Error> {
    let memory = caller.data().memory.ok_or_else(|| Error::new("playback: no memory"))?;
    Ok(memory.grow(&mut caller, delta.to_u64()).map_or(I::MINUS_ONE, |old| I::of_len(old as usize)))
}

fn play_host_call(
    mut caller: Caller<'_, Playback>,
    result: Option<ValType>,
    results: &mut [Val],
) -> Result<(), Error> {
    let memory = caller.data().memory.expect("set at instantiation");
    let (data, playback) = memory.data_and_store_mut(&mut caller);
    loop {
        let Some(event) = playback.tape.get(playback.next) else {
            return Err(Error::new("playback: the tape ended before the message did"));
        };
        playback.next += 1;
        match event {
            TapeEvent::Write { dst, bytes } => {
                let at = *dst as usize;
                data[at..at + bytes.len()].copy_from_slice(bytes);
            }
            TapeEvent::Return(value) => {
                if let (Some(slot), Some(ty)) = (results.first_mut(), result) {
                    *slot = if ty == ValType::I32 { Val::I32(*value as i32) } else { Val::I64(*value) };
                }
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(n: usize) -> Vec<u8> {
        wat::parse_str(format!("(module (memory 1) (func (export \"canister_update f{n}\")))")).unwrap()
    }

    #[test]
    fn the_module_cache_keeps_the_most_recently_used() {
        let mut cache = ModuleCache::default();
        let first = module(0);
        let compiled =
            |wasm: &[u8]| Rc::new(CompiledModule::compile(&engine(), wasm, Metering::None).unwrap());
        cache.insert(compiled(&first));
        for n in 1..=2 * MAX_CACHED_MODULES {
            assert!(cache.get(&first, Metering::None).is_some(), "used all along, so kept");
            let wasm = module(n);
            cache.insert(compiled(&wasm));
            assert!(cache.len() <= MAX_CACHED_MODULES);
        }
        assert_eq!(cache.len(), MAX_CACHED_MODULES);
        assert!(cache.get(&module(1), Metering::None).is_none(), "the least recently used went");
        let kept: usize = cache.modules.values().flat_map(BTreeMap::keys).map(|wasm| wasm.len()).sum();
        assert_eq!(cache.wasm_bytes, kept);
    }
}
