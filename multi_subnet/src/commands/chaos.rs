//! `chaos`: every strategy under every fault the simulator injects, in
//! process or through a server's extensions (`--engine pocket-ic
//! --pocket-ic-url` naming `serve`).

use anyhow::Result;
use clap::Args;

use crate::chaos::{self, Fault};
use crate::cli::{EngineArgs, Output};
use crate::engines::{EngineChoice, EngineFactory};
use crate::report::Format;

#[derive(Debug, Args)]
pub struct ChaosArgs {
    /// Seeds per fault and strategy: 1 to S.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub seeds: u64,

    /// Faults to inject, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Fault::ALL)]
    pub faults: Vec<Fault>,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    #[command(flatten)]
    pub engine: EngineArgs,
}

impl ChaosArgs {
    /// Runs the chaos matrix; a run whose ledger does not balance fails the command.
    pub(crate) fn execute(&self) -> Result<Output> {
        // Only the simulator injects faults: `auto` means it in process.
        let engines = match self.engine.engine {
            EngineChoice::PocketIc => self.engine.resolve()?.factory,
            EngineChoice::Auto | EngineChoice::Sim => EngineFactory::Sim,
        };
        let wasms = canister_wasm::caller_and_callee()?;
        let report = chaos::run(&self.faults, self.seeds, &engines, &wasms)?;
        let violations = report.violations();
        let failure = (!violations.is_empty())
            .then(|| format!("{} runs do not balance; first: {}", violations.len(), violations[0]));
        Ok(Output { stdout: report.render(self.format), failure, fallback_note: None })
    }
}
