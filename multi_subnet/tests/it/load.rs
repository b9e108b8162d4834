//! Load that shares the queues (`sweep --plans --callers --caller-subnets`):
//! concurrent plans of one caller share its 500 slots to a callee, and many
//! callers meet the callee's round budget.

use clap::Parser;
use interface::FailureKind;
use multi_subnet::cli::{Cli, Command};
use multi_subnet::engines::EngineFactory;
use multi_subnet::sweep::{self, Row};
use std::process::Command as Process;

fn sweep(args: &str) -> Vec<Row> {
    let args = format!("multi_subnet sweep --topologies cross-subnet {args}");
    let Some(Command::Sweep(spec)) = Cli::try_parse_from(args.split_whitespace()).unwrap().command else {
        panic!("not a sweep");
    };
    sweep::run(&EngineFactory::Sim, &spec.grid(), &canister_wasm::caller_and_callee().unwrap(), || {})
        .unwrap()
}

#[test]
fn many_sequential_plans_of_one_caller_run_out_of_its_500_slots() {
    let rows = sweep("--strategies sequential --calls 10 --plans 500,600");
    let (fit, over) = (&rows[0], &rows[1]);
    assert_eq!((fit.succeeded, fit.failures.len()), (5000, 0), "500 plans, one call in flight each: {fit:?}");
    let failed: u64 = over.failures.values().sum();
    assert_eq!(over.succeeded + failed, 6000, "every ping accounted for: {over:?}");
    assert!(over.failures[&FailureKind::CallPerformFailed] >= 100, "{over:?}");
}

/// A thread's budget is about 2 B instructions a round and every execution
/// costs at least the 2 M overhead (`RoundLimits`): at most 1000 a round.
#[test]
fn many_callers_meet_the_callee_threads_budget_and_more_callees_raise_it() {
    let rows = sweep("--strategies parallel --calls 500 --callers 2,8 --caller-subnets 4");
    let peaks: Vec<u64> = rows.iter().map(|r| r.peak_pings_per_round).collect();
    assert!(rows.iter().all(|r| r.succeeded == 500 * r.load.callers), "{rows:?}");
    assert!(
        peaks.iter().all(|&p| (900..=1000).contains(&p)),
        "one callee saturates near 1000 a round: {peaks:?}"
    );
    assert!(rows[1].rounds > rows[0].rounds, "four times the pings take more rounds: {rows:?}");
    let spread = sweep("--strategies parallel --calls 500 --callers 8 --caller-subnets 4 --callees 4");
    assert!(spread[0].peak_pings_per_round > 3 * peaks[1], "four callees on four threads: {spread:?}");
}

#[test]
fn callers_on_several_subnets_need_the_cross_subnet_topology() {
    let output = Process::new(env!("CARGO_BIN_EXE_multi_subnet"))
        .args([
            "sweep",
            "--engine",
            "sim",
            "--topologies",
            "same-subnet",
            "--caller-subnets",
            "2",
            "--calls",
            "1",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("cross-subnet"), "{stderr}");
}
