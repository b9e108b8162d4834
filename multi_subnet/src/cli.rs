//! Command line, and the run it describes.

use anyhow::{Result, anyhow};
use clap::Parser;

use crate::engines::pocket_ic::PocketIcEngine;
use crate::engines::{Engine, pocket_ic_server};
use crate::report::{Format, Report};
use crate::scenario::{self, Strategy, Topology};

/// Runs `n` ping calls from a caller canister to a callee canister,
/// sequentially and in parallel, and reports successes, rounds and time.
#[derive(Debug, Parser)]
#[command(version)]
pub struct Cli {
    /// Numbers of calls per run, comma-separated (at most 10000 each, the caller's maximum).
    #[arg(long, value_name = "N[,N...]", value_delimiter = ',', default_value = "90")]
    pub calls: Vec<u64>,

    /// 1: both canisters on one subnet (like a local dfx replica); 2: caller and callee on separate subnets.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub subnets: u8,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Which engine runs the canisters.
    #[arg(long, value_enum, default_value_t = EngineChoice::PocketIc)]
    pub engine: EngineChoice,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// A PocketIC server (POCKET_IC_BIN, or the pocket-ic crate's cached copy); never downloaded.
    PocketIc,
}

impl Cli {
    /// Runs the scenario and renders the report.
    pub fn execute(&self) -> Result<String> {
        let topology = Topology::from_subnets(self.subnets);
        // Before building anything: a missing server is the common failure.
        let server = pocket_ic_server::find().map_err(|e| anyhow!(e))?;
        let wasms = canister_wasm::caller_and_callee()?;
        let mut engine = PocketIcEngine::start(server, topology.subnets());
        let deployment = scenario::deploy(&mut engine, topology, &wasms)?;
        let mut runs = vec![];
        for &calls in &self.calls {
            for strategy in Strategy::EXAMPLE {
                runs.push(scenario::run(&mut engine, &deployment, strategy, calls)?);
            }
        }
        let report = Report { engine: engine.kind(), engine_description: engine.description(), runs };
        Ok(report.render(self.format))
    }
}
