//! The simulator is deterministic: the same scenario gives the same
//! replies, rounds, counts and instructions, also in another process.

use interface::Strategy;
use multi_subnet::engines::sim::sim_engine;
use multi_subnet::scenario::{self, Topology};
use sim::Sim;
use std::process::Command;

const CHILD: &str = "MULTI_SUBNET_DETERMINISM_CHILD";

/// A scenario's every observable figure, as text.
fn trace() -> String {
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let mut out = String::new();
    for topology in [Topology::SameSubnet, Topology::CrossSubnet] {
        let mut engine = sim_engine(Sim::builder().with_subnets(topology.subnets()).build());
        let d = scenario::deploy(&mut engine, topology, &wasms).unwrap();
        for (strategy, calls) in [(Strategy::Sequential, 300), (Strategy::Parallel, 700)] {
            let run = scenario::run(&mut engine, &d, strategy, calls).unwrap();
            out +=
                &format!("{topology:?} {strategy:?} {calls}: {} in {} rounds\n", run.succeeded, run.rounds.0);
        }
        for canister in [d.caller, d.callee()] {
            let sim = &engine.engine;
            out += &format!("{:?} {}\n", sim.stats(canister).unwrap(), sim.cycle_balance(canister).unwrap());
        }
    }
    out
}

/// Runs this test binary again, printing the trace.
fn trace_in_another_process() -> String {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "determinism::same_figures_in_two_processes", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let start = stdout.find("<trace>").expect("child printed a trace") + "<trace>".len();
    let end = stdout.find("</trace>").unwrap();
    stdout[start..end].to_string()
}

#[test]
fn same_figures_in_two_processes() {
    if std::env::var_os(CHILD).is_some() {
        println!("<trace>{}</trace>", trace());
        return;
    }
    let here = trace();
    assert!(here.contains("instructions"), "{here}");
    assert_eq!(trace_in_another_process(), here);
    assert_eq!(trace_in_another_process(), here);
}

/// The harness's JSON, minus the wall times.
fn harness_json(args: &[&str]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_multi_subnet"))
        .args(args)
        .args(["--engine", "sim", "--format", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for run in json["runs"].as_array_mut().unwrap() {
        assert!(run["wall_ms"].as_f64().unwrap() > 0.0);
        let run = run.as_object_mut().unwrap();
        run.retain(|field, _| !field.starts_with("wall_"));
    }
    json
}

#[test]
fn a_sweep_differs_between_two_runs_only_in_wall_times() {
    let args = ["sweep", "--calls", "10,600", "--k", "50", "--repeat", "2", "--retry"];
    let first = harness_json(&args);
    let runs = first["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 4 * 2, "one row per combination");
    for field in ["k", "wait", "retry", "callees", "caller_instructions", "instructions_per_ping", "cycles"] {
        assert!(runs.iter().all(|r| r.get(field).is_some()), "every row has {field}");
    }
    assert_eq!(harness_json(&args), first);
}

#[test]
fn the_harness_prints_the_same_json_twice_but_for_wall_time() {
    for args in [&["--subnets", "1", "--calls", "100,2000"][..], &["--subnets", "2", "--calls", "90"][..]] {
        let first = harness_json(args);
        assert_eq!(first["engine"], "sim");
        assert_eq!(harness_json(args), first, "{args:?}");
    }
}
