//! `compare`: the example's two comparisons, with rounds and speed-up.

use anyhow::Result;

use crate::cli::{EngineArgs, Output};
use crate::commands::example::example_runs;
use crate::engines::{EngineFactory, TimeStep};
use crate::profile::Profile;
use crate::report::{CompareReport, ExampleReport, MainnetEstimate, Metering};
use crate::scenario::Topology;

/// The example's comparisons on the engine `args` resolve to, then the 90
/// cross-subnet calls under the mainnet profile.
pub fn execute(args: &EngineArgs) -> Result<Output> {
    let resolved = args.resolve()?;
    let mut sections = vec![];
    for (topology, calls, title) in [
        (Topology::SameSubnet, &[100, 2000][..], "One subnet, as on a local dfx replica"),
        (Topology::CrossSubnet, &[90][..], "Two subnets, caller and callee apart"),
    ] {
        let mut engine = resolved.factory.start(topology.subnets(), TimeStep::POCKET_IC)?;
        let runs = example_runs(engine.as_mut(), topology, calls, Profile::PocketIc)?;
        let report = ExampleReport {
            engine: engine.kind(),
            metering: Metering::Replica,
            engine_description: resolved.factory.description(),
            runs,
        };
        sections.push((title, report));
    }
    // On the simulator, the only engine that has the mainnet profile.
    let mut engine = EngineFactory::Sim.start_profile(2, Profile::MAINNET)?;
    let runs = example_runs(engine.as_mut(), Topology::CrossSubnet, &[90], Profile::MAINNET)?;
    let [sequential, parallel] = <[_; 2]>::try_from(runs).expect("one run of each");
    let report = CompareReport { sections, mainnet: MainnetEstimate { sequential, parallel } };
    Ok(Output { stdout: report.render(), failure: None, fallback_note: resolved.fallback_note })
}
