//! The example's scenarios (common/scenarios.rs) on the simulator; on
//! PocketIC they need a server, so they are ignored unless run with
//! `--include-ignored` (scripts/test.sh does that when POCKET_IC_BIN is set).

use crate::common::scenarios::{ONE_SUBNET, TWO_SUBNETS, rounds, suite, suite_placed};
use interface::Strategy;
use multi_subnet::engines::TimeStep;
use multi_subnet::engines::pocket_ic::{PocketIcEngine, Server};
use multi_subnet::engines::pocket_ic_server;
use multi_subnet::engines::sim::{SimEngine, sim_engine};
use multi_subnet::scenario::{CallerSubnet, Deployment, Run, Topology};

/// The simulator's own counts agree with what the caller replied: the
/// callee executed one ping per success, and `call_perform` refused the rest.
fn agrees_with_the_engine() -> impl FnMut(&SimEngine, &Deployment, &Run) {
    let (mut pings, mut refused) = (0, 0);
    move |engine, deployment, run| {
        pings += run.succeeded;
        refused += run.calls - run.succeeded;
        let callee = engine.engine.stats(deployment.callee()).unwrap();
        let caller = engine.engine.stats(deployment.caller).unwrap();
        assert_eq!(callee.executions_of("ping"), pings, "pings executed == succeeded");
        assert_eq!(caller.calls_refused, refused, "refused call_performs == calls - succeeded");
    }
}

#[test]
fn sim_one_subnet() {
    let runs = suite(
        &mut sim_engine(sim::Sim::builder().with_subnets(1).build()),
        Topology::SameSubnet,
        &ONE_SUBNET,
        agrees_with_the_engine(),
    );
    // 100 sequential calls overflow one round's budget (2 B instructions may
    // start, at ~20 M of overheads per call), 100 parallel ones do not; the
    // 500 parallel calls that are performed out of 2000 also take 2 rounds.
    assert_eq!(rounds(&runs), [2, 1, 21, 2]);
}

#[test]
fn sim_one_subnet_one_call_takes_one_round() {
    let cases = [(Strategy::Sequential, 1, 1), (Strategy::Parallel, 1, 1)];
    let runs = suite(
        &mut sim_engine(sim::Sim::builder().with_subnets(1).build()),
        Topology::SameSubnet,
        &cases,
        agrees_with_the_engine(),
    );
    assert_eq!(rounds(&runs), [1, 1]);
}

#[test]
fn sim_two_subnets() {
    for caller_subnet in [CallerSubnet::Lower, CallerSubnet::Higher] {
        let mut engine = sim_engine(sim::Sim::builder().with_subnets(2).build());
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

#[test]
fn sim_two_subnets_under_the_mainnet_profile() {
    // Two rounds a hop: ingress in round 1, then each call's request and
    // response take 2 + 2 rounds, one call after another or all at once.
    for latency in [1, 2, 3] {
        let mut engine = sim_engine(
            sim::Sim::builder()
                .with_subnets(2)
                .with_time_step(TimeStep::ONE_SECOND.0)
                .with_xnet_latency_rounds(latency)
                .build(),
        );
        let runs = suite(&mut engine, Topology::CrossSubnet, &TWO_SUBNETS, agrees_with_the_engine());
        assert_eq!(rounds(&runs), [1 + 90 * 2 * latency, 1 + 2 * latency], "latency {latency}");
    }
}

fn pocket_ic(subnets: usize) -> PocketIcEngine {
    let server = pocket_ic_server::find().unwrap_or_else(|e| panic!("{e}"));
    PocketIcEngine::start(Server::Binary(server), subnets).unwrap_or_else(|e| panic!("{e:#}"))
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
