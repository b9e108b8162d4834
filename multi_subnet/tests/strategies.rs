//! What only the simulator can show of the strategies: engine-side counts,
//! fault injection, fixture callees. The goals for any engine are in goals.rs.

use caller::plan::{Plan, Report, Strategy, Wait};
use multi_subnet::engines::Engine;
use multi_subnet::engines::sim::SimEngine;
use multi_subnet::scenario::{self, Deployment, Placement, Topology, controller};

fn plan(strategy: Strategy, n: u64, k: Option<u64>) -> Plan {
    Plan { strategy, n, k, wait: None, callees: None, timeout_seconds: None }
}

fn deployed(topology: Topology, callees: usize) -> (SimEngine, Deployment) {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let mut engine = SimEngine::start(topology.subnets());
    let placement = Placement { callees, ..Placement::default() };
    let deployment = scenario::deploy_placed(&mut engine, topology, placement, &wasms).expect("deploys");
    (engine, deployment)
}

#[test]
fn spreading_over_four_callees_fills_each_queue_to_500() {
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
