//! The example's scenarios, written once for any engine. On PocketIC they
//! need a server, so they are ignored unless run with `--include-ignored`
//! (scripts/test.sh does that when POCKET_IC_BIN is set).

use multi_subnet::engines::Engine;
use multi_subnet::engines::pocket_ic::PocketIcEngine;
use multi_subnet::engines::pocket_ic_server;
use multi_subnet::scenario::{self, Deployment, Strategy, Topology};

fn succeeded(engine: &mut dyn Engine, deployment: &Deployment, strategy: Strategy, calls: u64) -> u64 {
    let run = scenario::run(engine, deployment, strategy, calls).expect("the run completes");
    assert_eq!(run.calls, calls);
    run.succeeded
}

/// The example's "100 vs 2000" on one subnet: all succeed but parallel
/// 2000, which hits the 500-slot queue to the callee.
fn one_subnet_suite(engine: &mut dyn Engine) {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let d = scenario::deploy(engine, Topology::SameSubnet, &wasms).expect("deploys");
    assert_eq!(succeeded(engine, &d, Strategy::Sequential, 100), 100);
    assert_eq!(succeeded(engine, &d, Strategy::Parallel, 100), 100);
    assert_eq!(succeeded(engine, &d, Strategy::Sequential, 2000), 2000);
    assert_eq!(succeeded(engine, &d, Strategy::Parallel, 2000), 500);
}

/// The example's multi-subnet run: 90 calls each way all succeed, and
/// parallel needs fewer rounds than sequential.
fn two_subnet_suite(engine: &mut dyn Engine) {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let d = scenario::deploy(engine, Topology::CrossSubnet, &wasms).expect("deploys");
    let sequential = scenario::run(engine, &d, Strategy::Sequential, 90).unwrap();
    let parallel = scenario::run(engine, &d, Strategy::Parallel, 90).unwrap();
    assert_eq!((sequential.succeeded, parallel.succeeded), (90, 90));
    assert!(parallel.rounds < sequential.rounds, "{parallel:?} vs {sequential:?}");
}

fn pocket_ic(subnets: usize) -> PocketIcEngine {
    let server = pocket_ic_server::find().unwrap_or_else(|e| panic!("{e}"));
    PocketIcEngine::start(server, subnets)
}

#[test]
#[ignore = "needs POCKET_IC_BIN"]
fn pocket_ic_one_subnet() {
    one_subnet_suite(&mut pocket_ic(1));
}

#[test]
#[ignore = "needs POCKET_IC_BIN"]
fn pocket_ic_two_subnets() {
    two_subnet_suite(&mut pocket_ic(2));
}
