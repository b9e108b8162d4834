//! The wasm engine, one per thread, and the modules it compiled, kept for reuse.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use wasmi::Engine;

use super::{CompiledModule, Metering};
use crate::module::WasmError;

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
