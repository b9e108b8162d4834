//! The example's scenarios, written once for any engine. They run on the
//! simulator here; on PocketIC they need a server, so they are ignored
//! unless run with `--include-ignored` (scripts/test.sh does that when
//! POCKET_IC_BIN is set).

use interface::Strategy;
use multi_subnet::engines::Engine;
use multi_subnet::engines::pocket_ic::PocketIcEngine;
use multi_subnet::engines::pocket_ic_server;
use multi_subnet::engines::sim::SimEngine;
use multi_subnet::scenario::{self, CallerSubnet, Deployment, Placement, Run, Topology};

/// The example's "100 vs 2000" on one subnet: everything succeeds except
/// parallel 2000, which hits the 500-slot queue to the callee.
const ONE_SUBNET: [(Strategy, u64, u64); 4] = [
    (Strategy::Sequential, 100, 100),
    (Strategy::Parallel, 100, 100),
    (Strategy::Sequential, 2000, 2000),
    (Strategy::Parallel, 2000, 500),
];

/// The example's multi-subnet run: 90 calls each way.
const TWO_SUBNETS: [(Strategy, u64, u64); 2] = [(Strategy::Sequential, 90, 90), (Strategy::Parallel, 90, 90)];

/// Deploys, runs `cases` and checks the successes the caller reports;
/// `observe` sees each run with the engine (for engine-side checks).
fn suite<E: Engine>(
    engine: &mut E,
    topology: Topology,
    cases: &[(Strategy, u64, u64)],
    observe: impl FnMut(&E, &Deployment, &Run),
) -> Vec<Run> {
    suite_placed(engine, topology, CallerSubnet::Lower, cases, observe)
}

fn suite_placed<E: Engine>(
    engine: &mut E,
    topology: Topology,
    caller_subnet: CallerSubnet,
    cases: &[(Strategy, u64, u64)],
    mut observe: impl FnMut(&E, &Deployment, &Run),
) -> Vec<Run> {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let deployment =
        scenario::deploy_placed(engine, topology, Placement { caller_subnet, callees: 1 }, &wasms)
            .expect("deploys");
    let mut runs = vec![];
    for &(strategy, calls, expected) in cases {
        let run = scenario::run(engine, &deployment, strategy, calls).expect("the run completes");
        assert_eq!(run.succeeded, expected, "{strategy:?}({calls}) on {topology:?}");
        observe(engine, &deployment, &run);
        runs.push(run);
    }
    runs
}

/// The simulator's own counts agree with what the caller replied: the
/// callee executed one ping per success, and `call_perform` refused the rest.
fn agrees_with_the_engine() -> impl FnMut(&SimEngine, &Deployment, &Run) {
    let (mut pings, mut refused) = (0, 0);
    move |engine, deployment, run| {
        pings += run.succeeded;
        refused += run.calls - run.succeeded;
        let callee = engine.sim().stats(deployment.callee()).unwrap();
        let caller = engine.sim().stats(deployment.caller).unwrap();
        assert_eq!(callee.executions_of("ping"), pings, "pings executed == succeeded");
        assert_eq!(caller.calls_refused, refused, "refused call_performs == calls - succeeded");
    }
}

fn rounds(runs: &[Run]) -> Vec<u64> {
    runs.iter().map(|r| r.rounds.0).collect()
}

#[test]
fn sim_one_subnet() {
    let runs = suite(&mut SimEngine::start(1), Topology::SameSubnet, &ONE_SUBNET, agrees_with_the_engine());
    // 100 sequential calls overflow one round's budget (2 B instructions may
    // start, at ~20 M of overheads per call), 100 parallel ones do not; the
    // 500 parallel calls that are performed out of 2000 also take 2 rounds.
    assert_eq!(rounds(&runs), [2, 1, 21, 2]);
}

#[test]
fn sim_one_subnet_one_call_takes_one_round() {
    let cases = [(Strategy::Sequential, 1, 1), (Strategy::Parallel, 1, 1)];
    let runs = suite(&mut SimEngine::start(1), Topology::SameSubnet, &cases, agrees_with_the_engine());
    assert_eq!(rounds(&runs), [1, 1]);
}

#[test]
fn sim_two_subnets() {
    for caller_subnet in [CallerSubnet::Lower, CallerSubnet::Higher] {
        let mut engine = SimEngine::start(2);
        let runs = suite_placed(
            &mut engine,
            Topology::CrossSubnet,
            caller_subnet,
            &TWO_SUBNETS,
            agrees_with_the_engine(),
        );
        // Sequential: one round trip per call plus one; parallel: one round trip.
        assert_eq!(rounds(&runs), [91, 2], "caller on the {caller_subnet:?} subnet");
    }
}

fn pocket_ic(subnets: usize) -> PocketIcEngine {
    let server = pocket_ic_server::find().unwrap_or_else(|e| panic!("{e}"));
    PocketIcEngine::start(server, subnets).unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
#[ignore = "needs POCKET_IC_BIN"]
fn pocket_ic_one_subnet() {
    suite(&mut pocket_ic(1), Topology::SameSubnet, &ONE_SUBNET, |_, _, _| {});
}

#[test]
#[ignore = "needs POCKET_IC_BIN"]
fn pocket_ic_two_subnets() {
    let runs = suite(&mut pocket_ic(2), Topology::CrossSubnet, &TWO_SUBNETS, |_, _, _| {});
    assert!(runs[1].rounds < runs[0].rounds, "parallel needs fewer rounds: {runs:?}");
}
