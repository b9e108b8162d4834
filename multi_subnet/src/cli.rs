//! Command line, and the run it describes.

use anyhow::{Result, anyhow};
use clap::Parser;

use crate::engines::pocket_ic::PocketIcEngine;
use crate::engines::sim::SimEngine;
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
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    pub engine: EngineChoice,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineChoice {
    /// PocketIC if a server is available, else the simulator.
    Auto,
    /// A PocketIC server (POCKET_IC_BIN, or the pocket-ic crate's cached copy); never downloaded.
    PocketIc,
    /// This project's simulator, which runs the real canister wasm on a model of the IC.
    Sim,
}

/// Starts the chosen engine with `subnets` subnets. Checked before anything
/// is built: a missing server is the common failure.
pub fn start_engine(choice: EngineChoice, subnets: usize) -> Result<Box<dyn Engine>> {
    match choice {
        EngineChoice::Sim => Ok(Box::new(SimEngine::start(subnets))),
        EngineChoice::PocketIc => {
            let server = pocket_ic_server::find().map_err(|e| anyhow!(e))?;
            Ok(Box::new(PocketIcEngine::start(server, subnets)))
        }
        EngineChoice::Auto => match pocket_ic_server::find() {
            Ok(server) => Ok(Box::new(PocketIcEngine::start(server, subnets))),
            Err(why) => {
                eprintln!("note: using the simulator, not PocketIC: {why}");
                Ok(Box::new(SimEngine::start(subnets)))
            }
        },
    }
}

impl Cli {
    /// Runs the scenario and renders the report.
    pub fn execute(&self) -> Result<String> {
        let topology = Topology::from_subnets(self.subnets);
        let mut engine = start_engine(self.engine, topology.subnets())?;
        let engine = engine.as_mut();
        let wasms = canister_wasm::caller_and_callee()?;
        let deployment = scenario::deploy(engine, topology, &wasms)?;
        let mut runs = vec![];
        for &calls in &self.calls {
            for strategy in Strategy::EXAMPLE {
                runs.push(scenario::run(engine, &deployment, strategy, calls)?);
            }
        }
        let report = Report { engine: engine.kind(), engine_description: engine.description(), runs };
        Ok(report.render(self.format))
    }
}
