//! What the simulator costs beyond the wasm it runs.
//!
//! Runs cross-subnet `sequential_calls(2000)` and `parallel_calls(2000)` on
//! the simulator, recording every execution, then replays the same
//! executions through the bare wasm engine (the floor: the original
//! modules, not instrumented for metering, every `ic0` call answered from
//! the recording, nothing else), twice: each canister's executions back to
//! back, and all of them in the order the simulator ran them (what the
//! workload itself costs when two canisters take turns). Reports the wall
//! times from the same run and the ratios, the simulator's overhead.
//!
//!     cargo bench -p sim --bench overhead

use candid::{Principal, decode_one, encode_one};
use sim::Sim;
use sim::bench::{FloorCanister, Traced, Tracing, replay_in_order};
use std::time::{Duration, Instant};

/// Each figure is the fastest of this many runs: on a shared machine other
/// load only ever adds time, to either side.
const REPEAT: usize = 9;

struct Measured {
    rounds: u64,
    executions: usize,
    simulator: Duration,
    /// Each canister's executions back to back.
    floor: Duration,
    /// Every execution in the order the simulator ran them.
    floor_in_order: Duration,
}

fn measure(method: &str, n: u64, succeeded: u64, wasms: &canister_wasm::CanisterWasms) -> Measured {
    let controller = Principal::self_authenticating(b"overhead bench");
    let mut sim = Sim::builder().with_subnet().with_subnet().with_tracing().build();
    let caller = sim.create_canister(0, vec![controller]).unwrap();
    let callee = sim.create_canister(1, vec![controller]).unwrap();
    let no_arg = candid::encode_args(()).unwrap();
    sim.install_canister(caller, &wasms.caller, no_arg.clone(), controller).unwrap();
    sim.install_canister(callee, &wasms.callee, no_arg, controller).unwrap();
    sim.update_call(caller, controller, "setup_callee", encode_one(callee).unwrap()).unwrap();
    // Executions so far are set-up: replayed, but not timed, on the floor.
    let setup = [caller, callee].map(|c| sim.take_trace(c).unwrap());

    let started = Instant::now();
    let ticks_before = sim.ticks();
    let message = sim.submit_call(caller, controller, method, encode_one(n).unwrap()).unwrap();
    let reply = loop {
        sim.tick();
        if let Some(reply) = sim.ingress_status(message) {
            break reply.unwrap();
        }
    };
    let simulator = started.elapsed();
    assert_eq!(decode_one::<u64>(&reply).unwrap(), succeeded, "{method}({n})");
    let rounds = sim.ticks() - ticks_before;

    let runs = [caller, callee].map(|c| sim.take_trace(c).unwrap());
    let executions = runs.iter().map(Vec::len).sum();
    let floors = || -> Vec<FloorCanister> {
        [&wasms.caller, &wasms.callee]
            .into_iter()
            .zip(setup.iter().zip(&runs))
            .map(|(wasm, (setup, run))| {
                let mut floor = FloorCanister::new(wasm, [setup.clone(), run.clone()].concat()).unwrap();
                floor.replay(setup.len()).unwrap();
                floor
            })
            .collect()
    };
    let mut each = floors();
    let started = Instant::now();
    for floor in &mut each {
        floor.replay(floor.remaining()).unwrap();
    }
    let floor = started.elapsed();
    let mut all = floors();
    let started = Instant::now();
    replay_in_order(&mut all).unwrap();
    let floor_in_order = started.elapsed();
    Measured { rounds, executions, simulator, floor, floor_in_order }
}

fn fastest(values: impl Iterator<Item = Duration>) -> Duration {
    values.min().expect("at least one run")
}

fn main() {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    println!("engine: sim; cross-subnet; fastest of {REPEAT} runs; wall times measured in this run");
    println!(
        "| run | rounds | executions | simulator | floor: each canister's back to back | overhead | floor: in the simulator's order | overhead |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    // The 500-slot queue lets 500 of the 2000 parallel calls through.
    for (method, n, succeeded) in [("sequential_calls", 2000, 2000), ("parallel_calls", 2000, 500)] {
        let runs: Vec<Measured> = (0..REPEAT).map(|_| measure(method, n, succeeded, &wasms)).collect();
        let simulator = fastest(runs.iter().map(|m| m.simulator));
        let floor = fastest(runs.iter().map(|m| m.floor));
        let in_order = fastest(runs.iter().map(|m| m.floor_in_order));
        let (rounds, executions) = (runs[0].rounds, runs[0].executions);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "| {method}({n}) | {rounds} | {executions} | {:.1} ms | {:.1} ms | {:.2}x | {:.1} ms | {:.2}x |",
            ms(simulator),
            ms(floor),
            ms(simulator) / ms(floor),
            ms(in_order),
            ms(simulator) / ms(in_order)
        );
    }
}
