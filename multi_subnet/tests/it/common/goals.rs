//! The strategies' goals, written once for any engine, and `goal_tests!`,
//! which makes one test per goal and engine.

use interface::{FailureKind, Plan, Report, RetryPolicy, Strategy};
use multi_subnet::engines::Engine;
use multi_subnet::scenario::{self, Deployment, Placement, Topology};

fn deploy(engine: &mut dyn Engine, callees: usize) -> Deployment {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let placement = Placement { callees, ..Placement::default() };
    scenario::deploy_placed(engine, Topology::CrossSubnet, placement, &wasms).expect("deploys")
}

/// Cross-subnet bounded with k <= 500 delivers 2000 and 5000 in at most
/// 1.25 x (ceil(n/k) + 1) rounds.
pub fn bounded_delivers_everything_in_about_one_round_per_window(engine: &mut dyn Engine) {
    let d = deploy(engine, 1);
    for n in [2000, 5000] {
        for k in [100, 250, 500] {
            let run = scenario::run_plan(engine, &d, &Plan::new(Strategy::Bounded, n).with_k(k)).unwrap();
            assert_eq!(run.report.succeeded, n, "bounded k = {k}, n = {n}: {:?}", run.report);
            assert_eq!(run.report.peak_in_flight, k);
            let goal = 1.25 * (n.div_ceil(k) + 1) as f64;
            assert!((run.rounds.0 as f64) <= goal, "k = {k}, n = {n}: {} rounds > {goal}", run.rounds.0);
        }
    }
}

/// Parallel 2000 still shows the limit: 500 delivered, 1500 CallPerformFailed.
pub fn parallel_2000_still_shows_the_limit(engine: &mut dyn Engine) {
    let d = deploy(engine, 1);
    let report = scenario::run_plan(engine, &d, &Plan::new(Strategy::Parallel, 2000)).unwrap().report;
    assert_eq!((report.succeeded, report.calls), (500, 2000));
    assert_eq!(report.failed(FailureKind::CallPerformFailed), 1500);
    assert_eq!(report.peak_in_flight, 500);
}

/// With retries from timers, the same 2000 are all delivered.
pub fn retries_deliver_all_2000(engine: &mut dyn Engine) {
    let d = deploy(engine, 1);
    let retry = RetryPolicy { max_attempts: 10, backoff_ms: 2_000, idempotent: false };
    let report = scenario::run_job(engine, &d, &Plan::new(Strategy::Parallel, 2000), retry).unwrap().report;
    assert_eq!(report.succeeded, 2000, "{report:?}");
    assert!(report.retries >= 1500);
}

/// Four callees lift the limit fourfold: parallel 2000 delivers 2000.
pub fn four_callees_deliver_parallel_2000(engine: &mut dyn Engine) {
    let d = deploy(engine, 4);
    let mut p = Plan::new(Strategy::Parallel, 2000);
    p.callees = Some(d.callees.clone());
    let report = scenario::run_plan(engine, &d, &p).unwrap().report;
    assert_eq!((report.succeeded, report.peak_in_flight), (2000, 2000), "{report:?}");
}

/// Batches of 500 cost the caller at least 10x fewer instructions per ping.
/// (Every plan pays a fixed cost before its first call, mostly decoding the
/// candid Plan, and a batch call about 0.2 M instructions of encoding and
/// decoding; batches of 500 spread both over many pings.)
pub fn batching_costs_at_least_ten_times_fewer_instructions_per_ping(engine: &mut dyn Engine) {
    let d = deploy(engine, 1);
    let k = 500;
    for n in [500, 2000] {
        let parallel = scenario::run_plan(engine, &d, &Plan::new(Strategy::Parallel, n)).unwrap().report;
        let batched =
            scenario::run_plan(engine, &d, &Plan::new(Strategy::Batched, n).with_k(k)).unwrap().report;
        assert_eq!((batched.succeeded, batched.calls), (n, n.div_ceil(k)));
        let per_ping = |r: &Report| r.instructions as f64 / r.requested as f64;
        assert!(
            per_ping(&parallel) >= 10.0 * per_ping(&batched),
            "n = {n}: parallel {:.0} vs batched {:.0} instructions per ping",
            per_ping(&parallel),
            per_ping(&batched)
        );
    }
}

/// One test module per goal, holding a test per engine:
/// `goal_tests!([sim => start_sim; pocket_ic => start_pocket_ic #[ignore = "why"];])`
/// with `start_*` functions of the calling module that return a `Box<dyn Engine>`.
macro_rules! goal_tests {
    ($engines:tt) => {
        $crate::common::goals::goal_tests!(@each $engines
            bounded_delivers_everything_in_about_one_round_per_window,
            parallel_2000_still_shows_the_limit,
            retries_deliver_all_2000,
            four_callees_deliver_parallel_2000,
            batching_costs_at_least_ten_times_fewer_instructions_per_ping);
    };
    (@each $engines:tt $($goal:ident),*) => {$(
        $crate::common::goals::goal_tests!(@one $goal $engines);
    )*};
    (@one $goal:ident [$($engine:ident => $start:ident $(#[$attr:meta])*;)*]) => {
        mod $goal {
            $(
                #[test]
                $(#[$attr])*
                fn $engine() {
                    $crate::common::goals::$goal(super::$start().as_mut());
                }
            )*
        }
    };
}
pub(crate) use goal_tests;
