//! The strategies beyond the example, measured on the simulator: what each
//! delivers, in how many rounds, at what cost.

use caller::plan::{FailureKind, Plan, Report, Strategy, Wait};
use multi_subnet::engines::Engine;
use multi_subnet::engines::sim::SimEngine;
use multi_subnet::scenario::{self, Deployment, Placement, Topology, controller};

fn plan(strategy: Strategy, n: u64, k: Option<u64>) -> Plan {
    Plan { strategy, n, k, wait: None, callees: None, retry: None, timeout_seconds: None }
}

fn deployed(topology: Topology, callees: usize) -> (SimEngine, Deployment) {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let mut engine = SimEngine::start(topology.subnets());
    let placement = Placement { callees, ..Placement::default() };
    let deployment = scenario::deploy_placed(&mut engine, topology, placement, &wasms).expect("deploys");
    (engine, deployment)
}

fn failures(report: &Report, kind: FailureKind) -> u64 {
    report.failures.iter().find(|f| f.kind == kind).map_or(0, |f| f.count)
}

#[test]
fn bounded_delivers_everything_across_subnets_in_about_one_round_per_window() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    for n in [2000, 5000] {
        for k in [100, 250, 500] {
            let run = scenario::run_plan(&mut engine, &d, &plan(Strategy::Bounded, n, Some(k))).unwrap();
            assert_eq!(run.report.succeeded, n, "bounded k = {k}, n = {n}: {:?}", run.report);
            assert_eq!(run.report.peak_in_flight, k);
            let goal = 1.25 * (n.div_ceil(k) + 1) as f64;
            assert!((run.rounds.0 as f64) <= goal, "k = {k}, n = {n}: {} rounds > {goal}", run.rounds.0);
        }
    }
}

#[test]
fn parallel_2000_still_shows_the_limit() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    let report = scenario::run_plan(&mut engine, &d, &plan(Strategy::Parallel, 2000, None)).unwrap().report;
    assert_eq!((report.succeeded, report.calls), (500, 2000));
    assert_eq!(failures(&report, FailureKind::CallPerformFailed), 1500);
    assert_eq!(report.peak_in_flight, 500);
}

#[test]
fn spreading_over_four_callees_lifts_the_limit_fourfold() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 4);
    let mut p = plan(Strategy::Parallel, 2000, None);
    p.callees = Some(d.callees.clone());
    let report = scenario::run_plan(&mut engine, &d, &p).unwrap().report;
    assert_eq!(report.succeeded, 2000, "{report:?}");
    for &callee in &d.callees {
        assert_eq!(engine.sim().stats(callee).unwrap().executions_of("ping"), 500);
    }
}

#[test]
fn batching_costs_the_caller_at_least_ten_times_fewer_instructions_per_ping() {
    // Every plan pays about 0.6 M instructions before its first call (most
    // of it decoding the candid Plan); batches of 500 spread that and the
    // ~0.3 M of encoding and decoding per batch call over many pings.
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    let k = 500;
    for n in [500, 2000] {
        let parallel =
            scenario::run_plan(&mut engine, &d, &plan(Strategy::Parallel, n, None)).unwrap().report;
        let batched =
            scenario::run_plan(&mut engine, &d, &plan(Strategy::Batched, n, Some(k))).unwrap().report;
        assert_eq!(batched.succeeded, n);
        assert_eq!(batched.calls, n.div_ceil(k));
        let per_ping = |r: &Report| r.instructions as f64 / r.requested as f64;
        assert!(
            per_ping(&parallel) >= 10.0 * per_ping(&batched),
            "n = {n}: parallel {:.0} vs batched {:.0} instructions per ping",
            per_ping(&parallel),
            per_ping(&batched)
        );
    }
}

#[test]
fn unbounded_wait_calls_deliver_the_same() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    let mut p = plan(Strategy::Bounded, 1000, Some(200));
    p.wait = Some(Wait::Unbounded);
    let report = scenario::run_plan(&mut engine, &d, &p).unwrap().report;
    assert_eq!((report.succeeded, report.peak_in_flight), (1000, 200));
}

#[test]
fn bad_plans_are_rejected_before_any_call() {
    let (mut engine, d) = deployed(Topology::SameSubnet, 1);
    for (bad, says) in [
        (plan(Strategy::Bounded, 10, Some(0)), "k = 0"),
        (plan(Strategy::Bounded, 10, None), "bounded needs k"),
        (plan(Strategy::Parallel, 10_001, None), "maximum of 10000"),
        (Plan { callees: Some(vec![]), ..plan(Strategy::Parallel, 10, None) }, "callees is empty"),
    ] {
        let err = scenario::run_plan(&mut engine, &d, &bad).unwrap_err();
        assert!(format!("{err:#}").contains(says), "{err:#}");
    }
    assert_eq!(engine.sim().stats(d.caller).unwrap().calls_performed, 0);
}

/// A callee that forwards every tenth ping to a canister on a third subnet,
/// so that pings take different numbers of rounds.
const UNEVEN_CALLEE: &str = include_str!("fixtures/uneven_callee.wat");

#[test]
fn bounded_refills_its_window_as_soon_as_any_call_answers() {
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let mut engine = SimEngine::start(3);
    let controller = controller();
    let caller = engine.create_canister(0, controller).unwrap();
    let uneven = engine.create_canister(1, controller).unwrap();
    let far = engine.create_canister(2, controller).unwrap();
    engine.install(caller, &wasms.caller, controller).unwrap();
    engine.install(uneven, &wat::parse_str(UNEVEN_CALLEE).unwrap(), controller).unwrap();
    engine.install(far, &wasms.callee, controller).unwrap();
    let sim = engine.sim_mut();
    sim.update_call(uneven, controller, "set_forward", far.as_slice().to_vec()).unwrap();
    sim.update_call(caller, controller, "setup_callee", candid::encode_one(uneven).unwrap()).unwrap();
    let d = Deployment { topology: Topology::CrossSubnet, caller, callees: vec![uneven] };

    let (n, k) = (1000, 50);
    let arg = candid::encode_one(plan(Strategy::Bounded, n, Some(k))).unwrap();
    let message = engine.submit(caller, controller, "run_plan", arg).unwrap();
    let mut in_flight_per_tick = vec![];
    while engine.ingress_status(message).is_none() {
        engine.tick();
        in_flight_per_tick.push(engine.sim().calls_in_flight(caller, uneven));
    }
    let report: Report = candid::decode_one(&engine.ingress_status(message).unwrap().unwrap()).unwrap();
    assert_eq!((report.succeeded, report.peak_in_flight), (n, k));
    // Engine-observed: after every tick but the last few the window is full.
    let full = in_flight_per_tick.iter().filter(|&&f| f == k as u32).count();
    assert!(full + 3 >= in_flight_per_tick.len(), "window not kept full: {in_flight_per_tick:?}");
    assert_eq!(in_flight_per_tick.iter().max(), Some(&(k as u32)));

    // Waiting for whole chunks would take every chunk as long as its slowest ping.
    let one_chunk = scenario::run_plan(&mut engine, &d, &plan(Strategy::Bounded, k, Some(k))).unwrap();
    let chunked = n.div_ceil(k) * one_chunk.rounds.0;
    let rounds = in_flight_per_tick.len() as u64;
    assert!(rounds < chunked, "bounded took {rounds} rounds, chunks would take {chunked}");
}
