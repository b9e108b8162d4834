//! The example's scenarios, written once for any engine: the suites and
//! the counts every engine must give.

use interface::Strategy;
use multi_subnet::engines::Engine;
use multi_subnet::scenario::{self, CallerSubnet, Deployment, Placement, Run, Topology};

/// The example's "100 vs 2000" on one subnet: everything succeeds except
/// parallel 2000, which hits the 500-slot queue to the callee.
pub const ONE_SUBNET: [(Strategy, u64, u64); 4] = [
    (Strategy::Sequential, 100, 100),
    (Strategy::Parallel, 100, 100),
    (Strategy::Sequential, 2000, 2000),
    (Strategy::Parallel, 2000, 500),
];

/// The example's multi-subnet run: 90 calls each way.
pub const TWO_SUBNETS: [(Strategy, u64, u64); 2] =
    [(Strategy::Sequential, 90, 90), (Strategy::Parallel, 90, 90)];

/// Deploys, runs `cases` and checks the successes the caller reports;
/// `observe` sees each run with the engine (for engine-side checks).
pub fn suite<E: Engine>(
    engine: &mut E,
    topology: Topology,
    cases: &[(Strategy, u64, u64)],
    observe: impl FnMut(&E, &Deployment, &Run),
) -> Vec<Run> {
    suite_placed(engine, topology, CallerSubnet::Lower, cases, observe)
}

pub fn suite_placed<E: Engine>(
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

pub fn rounds(runs: &[Run]) -> Vec<u64> {
    runs.iter().map(|r| r.rounds.0).collect()
}
