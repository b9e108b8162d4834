//! The default command: the example's sequential and parallel calls.

use anyhow::Result;
use clap::Args;

use interface::Strategy;

use crate::cli::{EngineArgs, Output, calls};
use crate::engines::Engine;
use crate::profile::{Profile, ProfileArgs};
use crate::report::{ExampleFormat, ExampleReport, Metering};
use crate::scenario::{self, Run, Topology};

#[derive(Debug, Args)]
pub struct ExampleArgs {
    /// Numbers of calls per run, comma-separated (at most 10000 each, the caller's maximum).
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',', default_value = "90", value_parser = calls())]
    pub calls: Vec<u64>,

    /// 1: both canisters on one subnet (like a local dfx replica); 2: caller and callee on separate subnets.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub subnets: u8,

    /// Output format.
    #[arg(long, value_enum, default_value_t = ExampleFormat::Text)]
    pub format: ExampleFormat,

    #[command(flatten)]
    pub engine: EngineArgs,

    #[command(flatten)]
    pub profile: ProfileArgs,
}

impl ExampleArgs {
    /// Runs the example's scenario and renders the report.
    pub(crate) fn execute(&self) -> Result<Output> {
        let topology = Topology::from_subnets(self.subnets);
        let profile = self.profile.profile()?;
        let resolved = self.engine.resolve()?;
        let mut engine = resolved.factory.start_profile(topology.subnets(), profile)?;
        let runs = example_runs(engine.as_mut(), topology, &self.calls, profile)?;
        let report = ExampleReport {
            engine: engine.kind(),
            metering: Metering::Replica,
            engine_description: resolved.factory.description(),
            runs,
        };
        Ok(Output {
            stdout: report.render(self.format),
            failure: None,
            fallback_note: resolved.fallback_note,
        })
    }
}

/// Sequential then parallel, for each n, on one deployment; what they
/// would take on mainnet under the mainnet profile.
pub(crate) fn example_runs(
    engine: &mut dyn Engine,
    topology: Topology,
    calls: &[u64],
    profile: Profile,
) -> Result<Vec<Run>> {
    let wasms = canister_wasm::caller_and_callee()?;
    let deployment = scenario::deploy(engine, topology, &wasms)?;
    let mut runs = vec![];
    for &n in calls {
        for strategy in [Strategy::Sequential, Strategy::Parallel] {
            let run = scenario::run(engine, &deployment, strategy, n)?;
            runs.push(Run { mainnet_seconds: profile.mainnet_seconds(run.rounds.0), ..run });
        }
    }
    Ok(runs)
}
