//! `chaos`: every strategy under every fault the simulator injects.

use anyhow::{Result, bail};
use clap::Args;

use crate::chaos::{self, Fault};
use crate::cli::{EngineArgs, Output};
use crate::engines::EngineChoice;
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
        if self.engine.engine == EngineChoice::PocketIc {
            bail!("chaos needs the simulator (--engine sim): PocketIC cannot inject these faults");
        }
        let wasms = canister_wasm::caller_and_callee()?;
        let report = chaos::run(&self.faults, self.seeds, &wasms)?;
        let violations = report.violations();
        let failure = (!violations.is_empty())
            .then(|| format!("{} runs do not balance; first: {}", violations.len(), violations[0]));
        Ok(Output { stdout: report.render(self.format), failure, fallback_note: None })
    }
}
