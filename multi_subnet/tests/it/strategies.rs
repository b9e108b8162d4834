//! What only the simulator can show of the strategies: engine-side counts,
//! fault injection, fixture callees. The goals for any engine are in goals.rs.

use candid::{decode_one, encode_one};
use interface::{FailureKind, Plan, Report, RetryPolicy, Strategy, Wait};
use multi_subnet::engines::Interface;
use multi_subnet::engines::sim::{SimEngine, sim_engine};
use multi_subnet::engines::{Engine, IngressId, TimeStep};
use multi_subnet::scenario::{self, Deployment, Placement, Topology, controller};
use sim::Sim;

fn deployed(topology: Topology, callees: usize) -> (SimEngine, Deployment) {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let mut engine = sim_engine(Sim::builder().with_subnets(topology.subnets()).build());
    let placement = Placement { callees, ..Placement::default() };
    let deployment = scenario::deploy_placed(&mut engine, topology, placement, &wasms).expect("deploys");
    (engine, deployment)
}

#[test]
fn spreading_over_four_callees_fills_each_queue_to_500() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 4);
    let mut p = Plan::new(Strategy::Parallel, 2000);
    p.callees = Some(d.callees.clone());
    let report = scenario::run_plan(&mut engine, &d, &p).unwrap().report;
    assert_eq!(report.succeeded, 2000, "{report:?}");
    for &callee in &d.callees {
        assert_eq!(engine.engine.stats(callee).unwrap().executions_of("ping"), 500);
    }
}

#[test]
fn unbounded_wait_calls_deliver_the_same() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    let mut p = Plan::new(Strategy::Bounded, 1000).with_k(200);
    p.wait = Some(Wait::Unbounded);
    let report = scenario::run_plan(&mut engine, &d, &p).unwrap().report;
    assert_eq!((report.succeeded, report.peak_in_flight), (1000, 200));
}

#[test]
fn bad_plans_are_rejected_before_any_call() {
    let (mut engine, d) = deployed(Topology::SameSubnet, 1);
    for (bad, says) in [
        (Plan::new(Strategy::Bounded, 10).with_k(0), "k = 0"),
        (Plan::new(Strategy::Bounded, 10), "bounded needs k"),
        (Plan::new(Strategy::Parallel, 10_001), "maximum of 10000"),
        (Plan { callees: Some(vec![]), ..Plan::new(Strategy::Parallel, 10) }, "callees is empty"),
    ] {
        let err = scenario::run_plan(&mut engine, &d, &bad).unwrap_err();
        assert!(format!("{err:#}").contains(says), "{err:#}");
    }
    assert_eq!(engine.engine.stats(d.caller).unwrap().calls_performed, 0);
}

/// A callee that forwards every tenth ping to a canister on a third subnet,
/// so that pings take different numbers of rounds.
const UNEVEN_CALLEE: &str = include_str!("../fixtures/uneven_callee.wat");

#[test]
fn bounded_refills_its_window_as_soon_as_any_call_answers() {
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let mut engine = sim_engine(Sim::builder().with_subnets(3).build());
    let controller = controller();
    let caller = engine.create_canister(0, controller).unwrap();
    let uneven = engine.create_canister(1, controller).unwrap();
    let far = engine.create_canister(2, controller).unwrap();
    engine.install(caller, &wasms.caller, controller).unwrap();
    engine.install(uneven, &wat::parse_str(UNEVEN_CALLEE).unwrap(), controller).unwrap();
    engine.install(far, &wasms.callee, controller).unwrap();
    engine.engine.update_call(uneven, controller, "set_forward", far.as_slice().to_vec()).unwrap();
    let d = Deployment { topology: Topology::CrossSubnet, caller, callees: vec![uneven] };
    d.client().setup_callee(&mut engine, uneven).unwrap();

    let (n, k) = (1000, 50);
    let message =
        d.client().submit_run_plan(&mut engine, &Plan::new(Strategy::Bounded, n).with_k(k)).unwrap();
    let mut in_flight_per_tick = vec![];
    while engine.ingress_status(message).is_none() {
        engine.tick();
        in_flight_per_tick.push(engine.engine.calls_in_flight(caller, uneven));
    }
    let report: Report = candid::decode_one(&engine.ingress_status(message).unwrap().unwrap()).unwrap();
    assert_eq!((report.succeeded, report.peak_in_flight), (n, k));
    // Engine-observed: after every tick but the last few the window is full.
    let full = in_flight_per_tick.iter().filter(|&&f| f == k as u32).count();
    assert!(full + 3 >= in_flight_per_tick.len(), "window not kept full: {in_flight_per_tick:?}");
    assert_eq!(in_flight_per_tick.iter().max(), Some(&(k as u32)));

    // Waiting for whole chunks would take every chunk as long as its slowest ping.
    let one_chunk = scenario::run_plan(&mut engine, &d, &Plan::new(Strategy::Bounded, k).with_k(k)).unwrap();
    let chunked = n.div_ceil(k) * one_chunk.rounds.0;
    let rounds = in_flight_per_tick.len() as u64;
    assert!(rounds < chunked, "bounded took {rounds} rounds, chunks would take {chunked}");
}

/// Every ping is accounted for: delivered or failed, once.
fn assert_accounted(report: &Report) {
    let failed: u64 = report.failures.iter().map(|f| f.count).sum();
    assert!(report.succeeded <= report.requested, "{report:?}");
    assert_eq!(report.succeeded + failed, report.requested, "{report:?}");
}

/// Ticks until every message is answered; their reports, in order.
fn answers(engine: &mut SimEngine, messages: &[IngressId]) -> Vec<Vec<u8>> {
    for _ in 0..100_000 {
        if messages.iter().all(|&m| engine.ingress_status(m).is_some()) {
            return messages.iter().map(|&m| engine.ingress_status(m).unwrap().unwrap()).collect();
        }
        engine.tick();
    }
    panic!("no answer");
}

#[test]
fn a_window_above_the_queue_capacity_delivers_everything() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    let report =
        scenario::run_plan(&mut engine, &d, &Plan::new(Strategy::Bounded, 2000).with_k(501)).unwrap().report;
    assert_eq!((report.succeeded, report.peak_in_flight), (2000, 500), "{report:?}");
    assert_eq!(report.failures, vec![]);
    assert_eq!(
        engine.engine.stats(d.caller).unwrap().calls_refused,
        1,
        "the window learned the capacity once"
    );
}

#[test]
fn two_windows_in_one_round_share_the_queue_and_both_deliver_everything() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    let p = Plan::new(Strategy::Bounded, 2000).with_k(300);
    let messages = [
        d.client().submit_run_plan(&mut engine, &p).unwrap(),
        d.client().submit_run_plan(&mut engine, &p).unwrap(),
    ];
    for reply in answers(&mut engine, &messages) {
        let report: Report = decode_one(&reply).unwrap();
        assert_eq!(report.succeeded, 2000, "{report:?}");
    }
    assert_eq!(engine.engine.stats(d.callee()).unwrap().executions_of("ping"), 4000);
}

#[test]
fn a_window_with_no_free_slot_and_nothing_in_flight_stops_and_says_what_it_did_not_start() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    let busy = d.client().submit_example(&mut engine, Strategy::Parallel, 500).unwrap();
    let bounded =
        d.client().submit_run_plan(&mut engine, &Plan::new(Strategy::Bounded, 10_000).with_k(500)).unwrap();
    let replies = answers(&mut engine, &[busy, bounded]);
    assert_eq!(decode_one::<u64>(&replies[0]).unwrap(), 500);
    let report: Report = decode_one(&replies[1]).unwrap();
    assert_accounted(&report);
    assert_eq!(report.succeeded, 0);
    assert_eq!(report.failed(FailureKind::CallPerformFailed), 1);
    assert_eq!(report.failed(FailureKind::NotAttempted), 9_999);
    assert_eq!(engine.engine.stats(d.caller).unwrap().calls_refused, 1, "no burning through the rest");
}

#[test]
fn a_job_retries_what_a_window_did_not_start_and_delivers_everything() {
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let mut engine =
        sim_engine(Sim::builder().with_subnets(2).with_time_step(TimeStep::ONE_SECOND.0).build());
    let d = scenario::deploy(&mut engine, Topology::CrossSubnet, &wasms).unwrap();
    d.client().submit_example(&mut engine, Strategy::Parallel, 500).unwrap();
    let retry = RetryPolicy { max_attempts: 10, backoff_ms: 1_000, idempotent: false };
    let report =
        scenario::run_job(&mut engine, &d, &Plan::new(Strategy::Bounded, 10_000).with_k(500), retry).unwrap();
    assert_eq!(report.report.succeeded, 10_000, "{:?}", report.report);
    assert_eq!(engine.engine.stats(d.callee()).unwrap().executions_of("ping"), 10_500);
}

/// A callee that answers `ping_batch` with the bytes it is given.
const BAD_ACKNOWLEDGER: &str = include_str!("../fixtures/bad_acknowledger.wat");

#[test]
fn a_batch_answered_with_the_wrong_number_of_results_fails_whole() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 1);
    let liar = engine.create_canister(1, controller()).unwrap();
    engine.install(liar, &wat::parse_str(BAD_ACKNOWLEDGER).unwrap(), controller()).unwrap();
    let d = Deployment { callees: vec![liar], ..d };
    let mut batch_of = |answer: Vec<u8>, n: u64| {
        let answer = encode_one(serde_bytes::ByteBuf::from(answer)).unwrap();
        engine.engine.update_call(liar, controller(), "set_answer", answer).unwrap();
        let p = Plan { callees: Some(vec![liar]), ..Plan::new(Strategy::Batched, n).with_k(n) };
        scenario::run_plan(&mut engine, &d, &p).unwrap().report
    };
    // Ten results per ping, then none at all, then a result byte that means nothing.
    for (answer, n) in [(vec![1; 50], 5), (vec![], 100), (vec![1, 1, 7], 3)] {
        let report = batch_of(answer.clone(), n);
        assert_accounted(&report);
        assert_eq!(report.succeeded, 0, "answer {answer:?}: {report:?}");
        assert_eq!(report.failed(FailureKind::BadAcknowledgement), n);
    }
    // The right answer still counts.
    assert_eq!(batch_of(vec![1, 2, 1], 3).succeeded, 3);
}

/// What `ic0.cost_call` withdraws for a `ping` with an empty candid argument
/// on a 13-node subnet (see sim/src/cycles.rs): 260 K + 1 K x (4 + 6) bytes
/// + 1 K x 2 MiB + 5 M + 40 G.
const PING_RESERVATION: u128 = 260_000 + 10_000 + 2_097_152_000 + 5_000_000 + 40_000_000_000;
/// What a message prepays for its own execution: 5 M + 40 G.
const MESSAGE_PREPAYMENT: u128 = 5_000_000 + 40_000_000_000;

#[test]
fn spreading_is_bounded_by_the_cycles_each_call_in_flight_reserves() {
    let (mut engine, d) = deployed(Topology::CrossSubnet, 16);
    let balance = engine.cycle_balance(d.caller).unwrap();
    let mut p = Plan::new(Strategy::Parallel, 10_000);
    p.callees = Some(d.callees.clone());
    let report = scenario::run_plan(&mut engine, &d, &p).unwrap().report;
    assert_accounted(&report);
    let by_cycles = ((balance - MESSAGE_PREPAYMENT) / PING_RESERVATION) as u64;
    assert!(by_cycles < 16 * 500, "cycles, not slots, bound this run");
    assert_eq!(report.succeeded, by_cycles, "{report:?}");
    assert_eq!(report.failed(FailureKind::InsufficientLiquidCycleBalance), 10_000 - by_cycles);
}
