//! How deep a recursion runs on the replica's wasm stack, and in the
//! simulator, for a few shapes of frame.
//!
//! ```sh
//! cargo run -p sim --release --features replica-stack --example stack_depth
//! ```
//!
//! The replica's side is wasmtime configured as the replica configures it
//! (`wasmtime_validation_config` in `rs/embedders/src/wasm_utils/validation.rs`
//! of dfinity/ic, which `wasmtime_execution_config` extends with multi-memory
//! and memory64): a 5 MiB `max_wasm_stack`, Cranelift without optimisation,
//! NaN canonicalisation, the replica's proposals. Each shape runs twice
//! there: as written, and with the code the replica's instrumentation adds
//! (see `tests/it/common/stack_shapes.rs`), which is what the replica compiles.
//! The simulator's side installs the module as written in a [`sim::Sim`],
//! which instruments it itself, and calls it.
//!
//! Each column is the deepest recursion that completes: one frame deeper
//! traps with a stack overflow. The binary search assumes that what runs
//! at some depth runs at every smaller one.

use std::num::NonZeroUsize;

use candid::Principal;
use wasmtime::{Caller, Config, Engine, Linker, Module, OptLevel, Store, Trap, WasmBacktraceDetails};

#[path = "../tests/it/common/stack_shapes.rs"]
mod stack_shapes;
use stack_shapes::{Metering, SHAPES, canister};

/// `MAX_WASM_STACK_SIZE` in `rs/embedders/src/lib.rs` of dfinity/ic.
const MAX_WASM_STACK_SIZE: usize = 5 << 20;

/// wasmtime runs wasm on the calling thread's stack: this one is far larger
/// than `max_wasm_stack`, so that only the latter binds.
const HOST_THREAD_STACK: usize = 64 << 20;

/// No recursion here is this deep: the search stops and says so.
const SEARCH_CEILING: u32 = 1 << 26;

/// The replica's wasmtime configuration, as far as it bears on code and
/// stack: every option it sets but those that place linear memory
/// (`static_memory_maximum_size`/reservation, guard regions, its memory
/// creator), which change no frame.
fn replica_config() -> Config {
    let mut config = Config::new();
    config.cranelift_nan_canonicalization(true);
    config.cranelift_opt_level(OptLevel::None);
    config.generate_address_map(false);
    config.macos_use_mach_ports(false);
    config.wasm_backtrace_max_frames(NonZeroUsize::new(20));
    config.wasm_backtrace_details(WasmBacktraceDetails::Disable);
    config.wasm_bulk_memory(true);
    config.wasm_function_references(false);
    config.wasm_gc(false);
    config.wasm_memory64(true);
    // Off for validation, on for execution (`wasmtime_execution_config`).
    config.wasm_multi_memory(true);
    config.wasm_reference_types(true);
    config.wasm_relaxed_simd(false);
    config.wasm_tail_call(true);
    config.wasm_extended_const(false);
    config.max_wasm_stack(MAX_WASM_STACK_SIZE);
    config
}

/// A host for the canister's three system calls: the argument is the
/// depth, the reply is kept.
#[derive(Default)]
struct Host {
    arg: Vec<u8>,
    reply: Vec<u8>,
}

fn memory(caller: &mut Caller<'_, Host>) -> wasmtime::Memory {
    caller.get_export("memory").and_then(|e| e.into_memory()).expect("the canister exports its memory")
}

fn replica_linker(engine: &Engine) -> Linker<Host> {
    let mut linker = Linker::new(engine);
    linker
        .func_wrap(
            "ic0",
            "msg_arg_data_copy",
            |mut caller: Caller<'_, Host>, dst: u32, offset: u32, size: u32| {
                let (dst, offset, size) = (dst as usize, offset as usize, size as usize);
                let bytes = caller.data().arg[offset..offset + size].to_vec();
                memory(&mut caller).write(&mut caller, dst, &bytes).expect("in bounds");
            },
        )
        .unwrap()
        .func_wrap("ic0", "msg_reply_data_append", |mut caller: Caller<'_, Host>, src: u32, size: u32| {
            let mut bytes = vec![0; size as usize];
            memory(&mut caller).read(&caller, src as usize, &mut bytes).expect("in bounds");
            caller.data_mut().reply.extend(bytes);
        })
        .unwrap()
        .func_wrap("ic0", "msg_reply", || {})
        .unwrap()
        .func_wrap("__", "out_of_instructions", || -> wasmtime::Result<()> {
            Err(wasmtime::format_err!("out of instructions"))
        })
        .unwrap();
    linker
}

/// The reply of `recurse` at `depth` on the replica's engine, or `None` if
/// it overflowed the stack. Any other failure panics.
fn replica_run(engine: &Engine, linker: &Linker<Host>, module: &Module, depth: u32) -> Option<Vec<u8>> {
    let mut store = Store::new(engine, Host { arg: depth.to_le_bytes().to_vec(), reply: vec![] });
    let instance = linker.instantiate(&mut store, module).expect("instantiates");
    let recurse = instance.get_typed_func::<(), ()>(&mut store, "canister_update recurse").unwrap();
    match recurse.call(&mut store, ()) {
        Ok(()) => Some(store.into_data().reply),
        Err(e) if e.downcast_ref::<Trap>() == Some(&Trap::StackOverflow) => None,
        Err(e) => panic!("depth {depth}: {e:?}"),
    }
}

/// The simulator's reply to `recurse` at `depth`, or `None` if it trapped
/// with a stack overflow. Any other failure panics.
fn sim_run(sim: &mut sim::Sim, canister: Principal, depth: u32) -> Option<Vec<u8>> {
    match sim.update_call(canister, Principal::anonymous(), "recurse", depth.to_le_bytes().to_vec()) {
        Ok(reply) => Some(reply),
        Err(reject) if reject.message.ends_with("Canister trapped: stack overflow") => None,
        Err(reject) => panic!("depth {depth}: {reject}"),
    }
}

/// The deepest recursion that `runs`, by doubling then bisection.
fn deepest(mut runs: impl FnMut(u32) -> bool) -> u32 {
    let (mut ok, mut fails) = (0, 1024);
    while runs(fails) {
        ok = fails;
        fails *= 2;
        assert!(fails <= SEARCH_CEILING, "no stack overflow up to {SEARCH_CEILING} frames");
    }
    while fails - ok > 1 {
        let mid = ok + (fails - ok) / 2;
        if runs(mid) { ok = mid } else { fails = mid }
    }
    ok
}

/// A shape's deepest recursions on the replica's engine, and its reply
/// at a check depth.
struct Replica {
    as_written: u32,
    instrumented: u32,
    reply: Vec<u8>,
}

/// Both engines are asked for this depth's reply, which must agree.
const CHECK_DEPTH: u32 = 1000;

fn measure_replica() -> Vec<Replica> {
    let engine = Engine::new(&replica_config()).expect("the replica's configuration builds an engine");
    let linker = replica_linker(&engine);
    SHAPES
        .iter()
        .map(|shape| {
            let module =
                |metering| Module::new(&engine, wat::parse_str(canister(shape, metering)).unwrap()).unwrap();
            let (as_written, instrumented) = (module(Metering::None), module(Metering::Replica));
            let reply = replica_run(&engine, &linker, &as_written, CHECK_DEPTH).unwrap();
            assert_eq!(replica_run(&engine, &linker, &instrumented, CHECK_DEPTH), Some(reply.clone()));
            Replica {
                as_written: deepest(|depth| replica_run(&engine, &linker, &as_written, depth).is_some()),
                instrumented: deepest(|depth| replica_run(&engine, &linker, &instrumented, depth).is_some()),
                reply,
            }
        })
        .collect()
}

fn main() {
    // The replica's engine, on a thread whose own stack is not the limit.
    let replica = std::thread::Builder::new()
        .stack_size(HOST_THREAD_STACK)
        .spawn(measure_replica)
        .unwrap()
        .join()
        .unwrap();

    println!("Deepest recursion that completes (one frame more overflows the stack):");
    println!();
    println!(
        "| {:<26} | {:>14} | {:>14} | {:>9} | {:>9} | {:>13} |",
        "shape", "replica", "replica", "bytes per", "simulator", "simulator /"
    );
    println!(
        "| {:<26} | {:>14} | {:>14} | {:>9} | {:>9} | {:>13} |",
        "", "(as written)", "(instrumented)", "frame", "", "replica"
    );
    println!("|{:-<28}|{:->16}|{:->16}|{:->11}|{:->11}|{:->15}|", "", ":", ":", ":", ":", ":");
    for (shape, replica) in SHAPES.iter().zip(&replica) {
        let mut sim = sim::Sim::builder().with_subnet().build();
        let controller = Principal::anonymous();
        let id = sim.create_canister(0, vec![controller]).unwrap();
        let wasm = wat::parse_str(canister(shape, Metering::None)).unwrap();
        sim.install_canister(id, &wasm, vec![], controller).unwrap();
        assert_eq!(sim_run(&mut sim, id, CHECK_DEPTH).as_ref(), Some(&replica.reply), "{}", shape.name);
        let simulator = deepest(|depth| sim_run(&mut sim, id, depth).is_some());
        // What the replica compiles is the instrumented module.
        let ratio = f64::from(simulator) / f64::from(replica.instrumented);
        let bytes_per_frame = MAX_WASM_STACK_SIZE as f64 / f64::from(replica.instrumented);
        println!(
            "| {:<26} | {:>14} | {:>14} | {:>9.0} | {:>9} | {:>13.2} |",
            shape.name, replica.as_written, replica.instrumented, bytes_per_frame, simulator, ratio
        );
    }
    let instrumented: Vec<u32> = replica.iter().map(|r| r.instrumented).collect();
    println!();
    println!("REPLICA_DEPTHS in tests/it/system_api.rs: {instrumented:?}");
}
