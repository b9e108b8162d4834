//! Jobs: plans that retry from timers, measured on the simulator.

use candid::{Principal, encode_one};
use interface::{FailureKind, Plan, Report, RetryPolicy, Strategy};
use multi_subnet::engines::sim::{SimEngine, sim_engine};
use multi_subnet::engines::{CanisterCall, Interface};
use multi_subnet::engines::{Engine, TimeStep};
use multi_subnet::scenario::{self, Deployment, Topology, controller};
use sim::Sim;

const TIMER_TASK: &str = "<ic-cdk internal> timer_executor";

fn deployed() -> (SimEngine, Deployment) {
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let mut engine =
        sim_engine(Sim::builder().with_subnets(2).with_time_step(TimeStep::ONE_SECOND.0).build());
    let deployment = scenario::deploy(&mut engine, Topology::CrossSubnet, &wasms).unwrap();
    (engine, deployment)
}

fn start_job(engine: &mut SimEngine, d: &Deployment, plan: &Plan, retry: RetryPolicy) -> u64 {
    d.client().start_job(engine, plan, Some(retry)).unwrap().reply
}

fn status(engine: &mut SimEngine, d: &Deployment, job: u64) -> Report {
    d.client().job_status(engine, job).unwrap().expect("the job exists")
}

/// Ticks until the job reports it finished.
fn finish(engine: &mut SimEngine, d: &Deployment, job: u64) -> Report {
    for _ in 0..2_000 {
        let report = status(engine, d, job);
        if report.finished {
            return report;
        }
        engine.tick();
    }
    panic!("the job did not finish: {:?}", status(engine, d, job));
}

fn pings_received(engine: &mut SimEngine, callee: Principal) -> u64 {
    scenario::pings_received(engine, callee).unwrap()
}

#[test]
fn retries_from_timers_deliver_all_2000_parallel_pings() {
    let (mut engine, d) = deployed();
    let backoff_ms = 3_000;
    let policy = RetryPolicy { max_attempts: 10, backoff_ms, idempotent: false };
    let started = engine.engine.time();
    let job = start_job(&mut engine, &d, &Plan::new(Strategy::Parallel, 2000), policy);
    let report = finish(&mut engine, &d, job);
    assert_eq!(report.succeeded, 2000, "{report:?}");
    assert!(report.retries >= 1500, "{report:?}");
    assert_eq!(report.failed(FailureKind::CallPerformFailed), report.calls - 2000);
    assert_eq!(pings_received(&mut engine, d.callee()), 2000);

    // The engine saw it: the first 500 calls in start_job; every retried
    // call_perform in a timer task, no earlier than the failure + backoff.
    let performed = &engine.engine.stats(d.caller).unwrap().calls_performed_in;
    let first = performed["start_job"];
    assert_eq!(first.calls, 500);
    let failed_at = first.first_at;
    assert!(failed_at >= started);
    // canister_global_timer only makes ic-cdk-timers' self-call to its task.
    assert!(performed["canister_global_timer"].calls >= 1);
    let retried: Vec<&String> =
        performed.keys().filter(|entry| *entry != "start_job" && *entry != "canister_global_timer").collect();
    assert_eq!(retried, [TIMER_TASK], "retries run from timers only");
    let retried = performed[TIMER_TASK];
    assert_eq!(retried.calls, 1500);
    let earliest = failed_at + backoff_ms * 1_000_000;
    assert!(retried.first_at >= earliest, "a retry at {} before the backoff ended", retried.first_at);
}

#[test]
fn sys_unknown_is_retried_for_idempotent_pings_and_each_nonce_runs_once() {
    let (mut engine, d) = deployed();
    let p = Plan { timeout_seconds: Some(5), ..Plan::new(Strategy::Parallel, 20) };
    let retry = RetryPolicy { max_attempts: 3, backoff_ms: 1_000, idempotent: true };
    let job = start_job(&mut engine, &d, &p, retry);
    // The callee executed the pings in start_job's tick; the caller is held
    // back past the deadline, so it learns only SYS_UNKNOWN.
    assert_eq!(pings_received(&mut engine, d.callee()), 20);
    engine.engine.pause_canister(d.caller, 10);
    let report = finish(&mut engine, &d, job);
    assert_eq!((report.succeeded, report.retries), (20, 20), "{report:?}");
    assert_eq!(report.delivered_earlier, 20, "the first attempt delivered them; the retry learned it");
    assert_eq!(report.failed(FailureKind::SysUnknown), 20);
    assert_eq!(
        engine.engine.stats(d.callee()).unwrap().executions_of("ping_once_with_floor"),
        40,
        "each ping arrived twice"
    );
    assert_eq!(pings_received(&mut engine, d.callee()), 20, "and executed once");
}

#[test]
fn without_idempotence_sys_unknown_is_not_retried() {
    let (mut engine, d) = deployed();
    let p = Plan { timeout_seconds: Some(5), ..Plan::new(Strategy::Parallel, 5) };
    let retry = RetryPolicy { max_attempts: 3, backoff_ms: 1_000, idempotent: false };
    let job = start_job(&mut engine, &d, &p, retry);
    engine.engine.pause_canister(d.caller, 10);
    let report = finish(&mut engine, &d, job);
    assert_eq!((report.succeeded, report.retries, report.failed(FailureKind::SysUnknown)), (0, 0, 5));
    assert_eq!(pings_received(&mut engine, d.callee()), 5, "they did run: that is why they are not retried");
}

#[test]
fn a_job_survives_an_upgrade_of_the_caller() {
    let (mut engine, d) = deployed();
    let policy = RetryPolicy { max_attempts: 5, backoff_ms: 30_000, idempotent: false };
    let job = start_job(&mut engine, &d, &Plan::new(Strategy::Parallel, 1000), policy);
    for _ in 0..3 {
        engine.tick();
    }
    let before = status(&mut engine, &d, job);
    assert_eq!((before.succeeded, before.finished), (500, false), "the rest waits for its retry");
    let wasm = canister_wasm::caller_and_callee().unwrap().caller;
    let sim = &mut engine.engine;
    sim.stop_canister(d.caller).unwrap();
    sim.upgrade_canister(d.caller, &wasm, encode_one(()).unwrap(), controller()).unwrap();
    sim.start_canister(d.caller).unwrap();
    let after = status(&mut engine, &d, job);
    assert_eq!(
        (after.succeeded, after.calls, after.retries),
        (before.succeeded, before.calls, before.retries)
    );
    let report = finish(&mut engine, &d, job);
    assert_eq!(report.succeeded, 1000, "the timer was re-armed after the upgrade: {report:?}");
}

#[test]
fn a_bad_retry_policy_is_rejected_naming_the_cap_and_job_status_of_an_unknown_job_is_null() {
    let (mut engine, d) = deployed();
    let plan = Plan::new(Strategy::Parallel, 5);
    let mut start = |max_attempts, backoff_ms| {
        let policy = RetryPolicy { max_attempts, backoff_ms, idempotent: false };
        d.client().start_job(&mut engine, &plan, Some(policy)).map(|_| ()).map_err(|e| format!("{e:#}"))
    };
    let err = start(1, 1).unwrap_err();
    assert!(err.contains("2 to 20"), "{err}");
    // Each cap at its figure and one past it, with a policy only that cap refuses.
    let backoff_cap = "over the cap of 345600000 ms (4 days) on one backoff";
    let schedule_cap = "over the cap of 604800000 ms (7 days) on a job's whole schedule";
    start(2, 345_600_000).unwrap();
    let err = start(2, 345_600_001).unwrap_err();
    assert!(err.contains(backoff_cap) && err.contains("pass backoff_ms = 345600000 or less"), "{err}");
    start(5, 40_320_000).unwrap();
    let err = start(5, 40_320_001).unwrap_err();
    assert!(err.contains(schedule_cap) && err.contains("pass backoff_ms = 40320000 or less"), "{err}");
    // 20 attempts from an hour: about 60 years.
    let err = start(20, 3_600_000).unwrap_err();
    assert!(err.contains(backoff_cap), "{err}");
    assert_eq!(d.client().job_status(&mut engine, 99).unwrap(), None);
}

#[test]
fn after_a_reinstall_of_the_caller_idempotent_jobs_execute_their_pings_again() {
    let (mut engine, d) = deployed();
    let retry = RetryPolicy { max_attempts: 3, backoff_ms: 1_000, idempotent: true };
    let first = start_job(&mut engine, &d, &Plan::new(Strategy::Parallel, 10), retry);
    assert_eq!((first, finish(&mut engine, &d, first).succeeded), (1, 10));
    for batched in [false, true] {
        let p = if batched {
            Plan::new(Strategy::Batched, 10).with_k(5)
        } else {
            Plan::new(Strategy::Parallel, 10)
        };
        let before = pings_received(&mut engine, d.callee());
        // A reinstall wipes the caller: job ids start at 1 again.
        let wasm = canister_wasm::caller_and_callee().unwrap().caller;
        let sim = &mut engine.engine;
        sim.stop_canister(d.caller).unwrap();
        sim.install_canister(d.caller, &wasm, encode_one(()).unwrap(), controller()).unwrap();
        sim.start_canister(d.caller).unwrap();
        d.client().setup_callee(&mut engine, d.callee()).unwrap();
        let job = start_job(&mut engine, &d, &p, retry);
        assert_eq!(job, 1);
        let report = finish(&mut engine, &d, job);
        assert_eq!((report.succeeded, report.delivered_earlier), (10, 0), "batched {batched}: {report:?}");
        assert_eq!(
            pings_received(&mut engine, d.callee()),
            before + 10,
            "batched {batched}: the callee ran them"
        );
    }
}

#[test]
fn a_job_waits_for_a_callee_that_is_only_stopped() {
    for idempotent in [false, true] {
        let (mut engine, d) = deployed();
        engine.engine.stop_canister(d.callee()).unwrap();
        let policy = RetryPolicy { max_attempts: 10, backoff_ms: 1_000, idempotent };
        let job = start_job(&mut engine, &d, &Plan::new(Strategy::Parallel, 2000), policy);
        for _ in 0..3 {
            engine.tick();
        }
        engine.engine.start_canister(d.callee()).unwrap();
        let report = finish(&mut engine, &d, job);
        assert_eq!(report.succeeded, 2000, "idempotent {idempotent}: {report:?}");
        assert!(report.failed(FailureKind::CalleeStopped) >= 500, "{report:?}");
        assert_eq!(report.failed(FailureKind::CanisterError), 0, "{report:?}");
        assert_eq!(pings_received(&mut engine, d.callee()), 2000);
    }
}

/// What the callee keeps about `caller`'s nonces: (floor, held).
fn nonce_state(engine: &mut SimEngine, callee: Principal, caller: Principal) -> (u64, u64) {
    #[derive(candid::CandidType, candid::Deserialize)]
    struct NonceState {
        floor: u64,
        held: u64,
    }
    let reply = engine
        .query(CanisterCall::new(callee, controller(), "nonce_state", encode_one(caller).unwrap()))
        .unwrap();
    let state: Option<NonceState> = candid::decode_one(&reply).unwrap();
    state.map(|s| (s.floor, s.held)).expect("the caller is admitted")
}

#[test]
fn the_callee_forgets_the_nonces_of_finished_jobs() {
    let (mut engine, d) = deployed();
    let retry = RetryPolicy { max_attempts: 3, backoff_ms: 1_000, idempotent: true };
    let mut floors = vec![];
    for n in [300, 200, 100] {
        let job = start_job(&mut engine, &d, &Plan::new(Strategy::Parallel, n), retry);
        assert_eq!(finish(&mut engine, &d, job).succeeded, n);
        floors.push(nonce_state(&mut engine, d.callee(), d.caller));
    }
    // Each job's calls carry its first nonce as the floor (the earlier jobs
    // have finished), so the callee holds only the latest job's nonces.
    let held: Vec<u64> = floors.iter().map(|&(_, held)| held).collect();
    assert_eq!(held, [300, 200, 100]);
    assert!(floors[1].0 >= floors[0].0 + 300, "the second job's nonces follow the first's: {floors:?}");
    assert!(floors[2].0 >= floors[1].0 + 200, "{floors:?}");
}

#[test]
fn a_caller_admitted_while_its_job_waits_has_its_pings_executed_on_retry() {
    let (mut engine, d) = deployed();
    let revoke = engine
        .submit_update(d.callee(), controller(), "revoke_caller", encode_one(d.caller).unwrap())
        .unwrap();
    multi_subnet::rounds::await_outcome(&mut engine, revoke, multi_subnet::rounds::RoundLimit(10)).unwrap();

    let plain = d.client().run_plan(&mut engine, &Plan::new(Strategy::Parallel, 10)).unwrap().reply;
    assert_eq!(plain.succeeded, 10, "pings without nonces keep no state, and need no admission");

    let retry = RetryPolicy { max_attempts: 3, backoff_ms: 30_000, idempotent: true };
    let job = start_job(&mut engine, &d, &Plan::new(Strategy::Parallel, 10), retry);
    while status(&mut engine, &d, job).calls < 10 {
        engine.tick();
    }
    let refused = status(&mut engine, &d, job);
    assert_eq!((refused.succeeded, refused.failed(FailureKind::CanisterError)), (0, 10), "{refused:?}");
    assert_eq!(pings_received(&mut engine, d.callee()), 10, "only the plain pings ran");

    scenario::admit_caller(&mut engine, d.callee(), d.caller).unwrap();
    let report = finish(&mut engine, &d, job);
    assert_eq!((report.succeeded, report.retries), (10, 10), "{report:?}");
    assert_eq!(pings_received(&mut engine, d.callee()), 20);
}

#[test]
fn a_job_waiting_for_one_callee_does_not_hold_down_another_callee_s_floor() {
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let mut engine =
        sim_engine(Sim::builder().with_subnets(2).with_time_step(TimeStep::ONE_SECOND.0).build());
    let placement = scenario::Placement { callees: 2, ..Default::default() };
    let d = scenario::deploy_placed(&mut engine, Topology::CrossSubnet, placement, &wasms).unwrap();
    let (stopped, busy) = (d.callees[0], d.callees[1]);
    let to = |callee: Principal, n: u64| Plan {
        callees: Some(vec![callee]),
        ..Plan::new(Strategy::Batched, n).with_k(1_000)
    };

    engine.engine.stop_canister(stopped).unwrap();
    let retry = RetryPolicy { max_attempts: 10, backoff_ms: 60_000, idempotent: true };
    let waiting = start_job(&mut engine, &d, &to(stopped, 10), retry);
    assert!(!status(&mut engine, &d, waiting).finished);

    // 12,000 nonces at the other callee, past the 10,000 it holds for one
    // caller below its floor: each job's calls must raise that floor past
    // the earlier jobs', not leave it at the waiting job's first nonce.
    for _ in 0..4 {
        let job = start_job(&mut engine, &d, &to(busy, 3_000), retry);
        let report = finish(&mut engine, &d, job);
        assert_eq!((report.succeeded, report.retries), (3_000, 0), "{report:?}");
        assert_eq!(nonce_state(&mut engine, busy, d.caller).1, 3_000, "only the latest job's nonces held");
    }
    assert!(!status(&mut engine, &d, waiting).finished, "still waiting for its callee");

    engine.engine.start_canister(stopped).unwrap();
    assert_eq!(finish(&mut engine, &d, waiting).succeeded, 10);
    assert_eq!(pings_received(&mut engine, stopped), 10);
    assert_eq!(pings_received(&mut engine, busy), 12_000);
}
