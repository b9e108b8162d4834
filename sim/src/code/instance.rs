//! The compiled module and its instances, live or for playback.

use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::rc::Rc;
use wasmi::{AsContext, Engine, Global, Instance, Linker, Memory, Module, Store, Table};

use super::replay::{Playback, playback_linker};
use crate::metering;
use crate::module::{self, COUNTER_EXPORT, MEMORY_EXPORT, TABLE_EXPORT, WasmError};
use crate::system_api::{self, SystemState};
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
    pub(super) wasm: Rc<[u8]>,
    pub(super) metering: Metering,
    module: Module,
    linker: Linker<SystemState>,
    playback_linker: Linker<Playback>,
    mutable_globals: Vec<u32>,
    has_table: bool,
    exports: BTreeSet<String>,
    /// Its memory is 64-bit (wasm64): pointers, sizes and callbacks' `env`
    /// are i64.
    pub(super) memory64: bool,
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

/// An instance of a [`CompiledModule`] in some store.
pub struct Code {
    pub module: Rc<CompiledModule>,
    pub(super) instance: Instance,
    pub(super) memory: Memory,
    pub(super) table: Option<Table>,
    pub(super) globals: Vec<Global>,
    /// The instruction counter, if the module is metered.
    pub(super) counter: Option<Global>,
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

    pub fn memory_len(&self, store: impl AsContext) -> usize {
        self.memory.data_size(store)
    }
}
