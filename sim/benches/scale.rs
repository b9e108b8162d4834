//! How the simulator scales: 40 subnets, 400 canisters, up to a million pings.
//!
//! 200 callers, 5 on each subnet, each fanning out to its own callee on the
//! next subnet (200 callees, 5 on each subnet), so every ping crosses
//! subnets and every subnet both calls and is called. Each caller runs one
//! `run_plan`: bounded, at most [`WINDOW`] calls in flight, one `ping` per
//! call. Real per-ping messages are the honest scale test (a batched plan
//! would carry a thousand pings in one call); the window keeps each caller
//! well below its 500 queue slots and its cycles reserve, so no call is
//! refused and every ping is a `ping` execution on its callee (checked).
//!
//! Per run: rounds and executions (deterministic), wall time, the CPU time
//! of the thread that ran it (on a shared machine, wall time above CPU time
//! is time other processes took) and peak RSS (measured; the peak is reset
//! before each run). Sizes are pings in total:
//!
//!     cargo bench -p sim --bench scale             # 10^4, 10^5, 10^6
//!     cargo bench -p sim --bench scale -- 100000   # just these

use candid::{Principal, decode_one, encode_one};
use interface::{Plan, Report, Strategy};
use sim::{MessageId, Sim};
use std::time::{Duration, Instant};

const SUBNETS: usize = 40;
const CALLERS: usize = 200;
/// Calls in flight per caller.
const WINDOW: u64 = 100;
const SIZES: [u64; 3] = [10_000, 100_000, 1_000_000];

/// Every caller with its callee.
struct Network {
    sim: Sim,
    pairs: Vec<(Principal, Principal)>,
}

fn controller() -> Principal {
    Principal::self_authenticating(b"scale bench")
}

fn deploy(wasms: &canister_wasm::CanisterWasms) -> Network {
    let mut builder = Sim::builder();
    for _ in 0..SUBNETS {
        builder = builder.with_subnet();
    }
    let mut sim = builder.build();
    let no_arg = candid::encode_args(()).unwrap();
    let mut install = |subnet: usize, wasm: &[u8]| {
        let id = sim.create_canister(subnet, vec![controller()]).unwrap();
        sim.install_canister(id, wasm, no_arg.clone(), controller()).unwrap();
        id
    };
    let pairs = (0..CALLERS)
        .map(|i| (install(i % SUBNETS, &wasms.caller), install((i + 1) % SUBNETS, &wasms.callee)))
        .collect();
    Network { sim, pairs }
}

/// Executions of every canister so far.
fn executions(network: &Network) -> u64 {
    let ids = network.pairs.iter().flat_map(|&(caller, callee)| [caller, callee]);
    ids.map(|id| network.sim.stats(id).unwrap().executed.values().sum::<u64>()).sum()
}

struct Row {
    pings: u64,
    rounds: u64,
    executions: u64,
    deploy: Duration,
    wall: Duration,
    cpu: Duration,
    peak_rss_kib: u64,
}

fn run(pings: u64, wasms: &canister_wasm::CanisterWasms) -> Row {
    let started = Instant::now();
    let mut network = deploy(wasms);
    let deploy = started.elapsed();
    let per_caller = pings / CALLERS as u64;
    assert_eq!(per_caller * CALLERS as u64, pings, "pings must split evenly over {CALLERS} callers");
    let executions_before = executions(&network);
    reset_peak_rss();

    let started = Instant::now();
    let cpu_before = cpu_time();
    let ticks_before = network.sim.ticks();
    let messages: Vec<MessageId> = network
        .pairs
        .iter()
        .map(|&(caller, callee)| {
            let plan = Plan {
                callees: Some(vec![callee]),
                ..Plan::new(Strategy::Bounded, per_caller).with_k(WINDOW)
            };
            network.sim.submit_call(caller, controller(), "run_plan", encode_one(plan).unwrap()).unwrap()
        })
        .collect();
    let mut reports = vec![None; messages.len()];
    while reports.iter().any(Option::is_none) {
        network.sim.tick();
        for (report, &message) in reports.iter_mut().zip(&messages) {
            if report.is_none() {
                *report =
                    network.sim.ingress_status(message).map(|r| decode_one::<Report>(&r.unwrap()).unwrap());
            }
        }
    }
    let wall = started.elapsed();
    let cpu = cpu_time() - cpu_before;
    let peak_rss_kib = peak_rss_kib();

    for (report, &(_, callee)) in reports.into_iter().zip(&network.pairs) {
        let report = report.expect("answered");
        assert_eq!((report.requested, report.succeeded), (per_caller, per_caller), "{report:?}");
        assert_eq!(network.sim.stats(callee).unwrap().executions_of("ping"), per_caller, "real pings");
    }
    let rounds = network.sim.ticks() - ticks_before;
    let executions = executions(&network) - executions_before;
    Row { pings, rounds, executions, deploy, wall, cpu, peak_rss_kib }
}

/// The CPU time this thread has run (the first field of its `schedstat`, in ns).
fn cpu_time() -> Duration {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux");
    let ns = schedstat.split_whitespace().next().and_then(|ns| ns.parse().ok()).expect("ns on the CPU");
    Duration::from_nanos(ns)
}

/// The process's peak resident set since the last reset (`VmHWM`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("Linux");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmHWM in kB")
}

/// Sets the peak to the current resident set (Linux's `clear_refs` 5).
fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("Linux");
}

fn main() {
    let sizes: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { SIZES.to_vec() } else { sizes };
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    println!(
        "engine: sim; {SUBNETS} subnets, {CALLERS} callers and {CALLERS} callees; bounded, k = {WINDOW}; \
         wall time, CPU time and peak RSS measured in this run"
    );
    println!(
        "| pings | rounds | executions | wall time | CPU time | executions/s | peak RSS | wall time x per 10x pings |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut previous: Option<Row> = None;
    for pings in sizes {
        let row = run(pings, &wasms);
        let growth = previous.as_ref().map_or("".to_string(), |p| {
            // Per 10x of pings, whatever the step between the two rows.
            let steps = (row.pings as f64 / p.pings as f64).log10();
            format!("{:.1}x", (row.wall.as_secs_f64() / p.wall.as_secs_f64()).powf(1.0 / steps))
        });
        println!(
            "| {} | {} | {} | {:.2} s | {:.2} s | {:.0} | {} MiB | {growth} |",
            row.pings,
            row.rounds,
            row.executions,
            row.wall.as_secs_f64(),
            row.cpu.as_secs_f64(),
            row.executions as f64 / row.wall.as_secs_f64(),
            row.peak_rss_kib / 1024,
        );
        eprintln!("({} pings: deploying took {:.2} s, not counted)", row.pings, row.deploy.as_secs_f64());
        previous = Some(row);
    }
}
