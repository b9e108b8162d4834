//! A canister's code: the compiled module, its instance, and running one
//! entry point with an instruction limit. Also the snapshot a trap returns
//! the instance to.

use std::collections::BTreeSet;
use std::rc::Rc;
use wasmi::{Engine, Global, Instance, Linker, Memory, Module, Nullable, Ref, Store, Table, TrapCode, Val};

use crate::module::{self, MEMORY_EXPORT, TABLE_EXPORT};
use crate::system_api::{self, CanisterTrap, SystemState};

/// A module compiled once and instantiable on any canister.
pub struct CompiledModule {
    module: Module,
    linker: Linker<SystemState>,
    mutable_globals: Vec<u32>,
    has_table: bool,
    exports: BTreeSet<String>,
}

impl CompiledModule {
    /// Rewrites the exports (see [`module`]), validates and compiles.
    pub fn compile(engine: &Engine, wasm: &[u8]) -> Result<Self, String> {
        let rewritten = module::rewrite(wasm)?;
        let module =
            Module::new(engine, &rewritten.wasm[..]).map_err(|e| format!("invalid wasm module: {e}"))?;
        let mut linker = system_api::linker(engine);
        system_api::link_unsupported(&mut linker, &module)?;
        if !rewritten.has_memory {
            return Err("the module has no memory".into());
        }
        Ok(Self {
            module,
            linker,
            mutable_globals: rewritten.mutable_globals,
            has_table: rewritten.has_table,
            exports: rewritten.function_exports.into_iter().collect(),
        })
    }

    pub fn exports(&self, name: &str) -> bool {
        self.exports.contains(name)
    }
}

/// What to run: an exported function, or a callback from the table.
#[derive(Clone, Debug)]
pub enum Entry {
    Export(String),
    Callback { fun: u32, env: u32 },
}

/// An instance of a [`CompiledModule`] in a canister's store.
pub struct Code {
    pub module: Rc<CompiledModule>,
    instance: Instance,
    memory: Memory,
    table: Option<Table>,
    globals: Vec<Global>,
}

/// The instance state a trap returns to.
pub struct Snapshot {
    memory: Vec<u8>,
    globals: Vec<Val>,
}

impl Code {
    pub fn instantiate(store: &mut Store<SystemState>, module: Rc<CompiledModule>) -> Result<Self, String> {
        let instance = module
            .linker
            .instantiate_and_start(&mut *store, &module.module)
            .map_err(|e| format!("cannot instantiate the module: {e}"))?;
        let memory = instance.get_memory(&*store, MEMORY_EXPORT).ok_or("the module has no memory")?;
        let table = if module.has_table { instance.get_table(&*store, TABLE_EXPORT) } else { None };
        let globals = module
            .mutable_globals
            .iter()
            .map(|&i| {
                instance.get_global(&*store, &module::global_export(i)).expect("exported by the rewrite")
            })
            .collect();
        store.data_mut().memory = Some(memory);
        Ok(Self { module, instance, memory, table, globals })
    }

    /// Runs `entry` with `fuel` instructions; returns the instructions used,
    /// and the trap if it trapped.
    pub fn run(
        &self,
        store: &mut Store<SystemState>,
        entry: &Entry,
        fuel: u64,
    ) -> (u64, Option<CanisterTrap>) {
        store.set_fuel(fuel).expect("fuel metering is enabled");
        let result = match entry {
            Entry::Export(name) => match self.instance.get_func(&*store, name) {
                Some(func) => func.call(&mut *store, &[], &mut []),
                None => Err(wasmi::Error::host(CanisterTrap(format!("the module does not export {name:?}")))),
            },
            Entry::Callback { fun, env } => match self.callback(store, *fun) {
                Ok(func) => func.call(&mut *store, &[Val::I32(*env as i32)], &mut []),
                Err(trap) => Err(wasmi::Error::host(trap)),
            },
        };
        let used = fuel - store.get_fuel().expect("fuel metering is enabled");
        (used, result.err().map(|e| describe_trap(e, fuel)))
    }

    fn callback(&self, store: &Store<SystemState>, index: u32) -> Result<wasmi::Func, CanisterTrap> {
        let table = self.table.ok_or_else(|| CanisterTrap("callback: the module has no table".into()))?;
        match table.get(store, u64::from(index)) {
            Some(Ref::Func(Nullable::Val(func))) => Ok(func),
            _ => Err(CanisterTrap(format!("callback: no function at table index {index}"))),
        }
    }

    pub fn snapshot(&self, store: &Store<SystemState>) -> Snapshot {
        Snapshot {
            memory: self.memory.data(store).to_vec(),
            globals: self.globals.iter().map(|g| g.get(store)).collect(),
        }
    }

    /// Returns to `snapshot`. Linear memory cannot shrink, so if it grew
    /// the instance is replaced by a fresh one holding the snapshot.
    pub fn restore(&mut self, store: &mut Store<SystemState>, snapshot: &Snapshot) {
        if self.memory.data(&*store).len() != snapshot.memory.len() {
            let mut fresh =
                Code::instantiate(store, self.module.clone()).expect("the module instantiated before");
            let pages = (snapshot.memory.len() - fresh.memory.data(&*store).len()) as u64 / 65536;
            fresh.memory.grow(&mut *store, pages).expect("the snapshot's size was reached before");
            std::mem::swap(self, &mut fresh);
        }
        self.memory.data_mut(&mut *store).copy_from_slice(&snapshot.memory);
        for (global, value) in self.globals.iter().zip(&snapshot.globals) {
            global.set(&mut *store, value.clone()).expect("same type");
        }
    }
}

fn describe_trap(error: wasmi::Error, fuel: u64) -> CanisterTrap {
    if let Some(trap) = error.downcast_ref::<CanisterTrap>() {
        return trap.clone();
    }
    match error.as_trap_code() {
        Some(TrapCode::OutOfFuel) => CanisterTrap(format!(
            "Canister exceeded the limit of {fuel} instructions for single message execution."
        )),
        Some(code) => CanisterTrap(format!("Canister trapped: {code}")),
        None => CanisterTrap(format!("Canister trapped: {error}")),
    }
}

/// The wasm engine all canisters share: fuel metering counts instructions.
/// Compilation is eager because wasmi charges lazy translation to the fuel
/// of whichever message first calls a function, which would make a
/// message's instruction count depend on what ran before it.
pub fn engine() -> Engine {
    let mut config = wasmi::Config::default();
    config.consume_fuel(true);
    config.compilation_mode(wasmi::CompilationMode::Eager);
    Engine::new(&config)
}
