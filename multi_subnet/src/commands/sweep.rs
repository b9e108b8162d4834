//! `sweep`: every combination of strategy, k, n and topology.

use anyhow::{Context, Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};
use std::path::PathBuf;

use interface::{RetryPolicy, Strategy, Wait};

use crate::baseline::{Baseline, Comparison};
use crate::charts;
use crate::cli::{EngineArgs, Output, calls};
use crate::engines::{EngineFactory, TimeStep};
use crate::report::{Format, Metering, SweepReport};
use crate::scenario::Topology;
use crate::sweep;

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Pings per run, comma-separated (at most 10000 each).
    #[arg(
        long,
        value_name = "N[,N...]",
        value_delimiter = ',',
        default_value = "1,10,100,500,1000,2000,5000",
        value_parser = calls()
    )]
    pub calls: Vec<u64>,

    #[arg(long, value_enum, value_delimiter = ',', default_value = "sequential,parallel,bounded,batched")]
    pub strategies: Vec<Strategy>,

    /// Windows (bounded) and batch sizes (batched, at most 1000).
    #[arg(long, value_name = "K[,K...]", value_delimiter = ',', default_value = "10,100,500")]
    pub k: Vec<u64>,

    #[arg(long, value_enum, value_delimiter = ',', default_value = "same-subnet,cross-subnet")]
    pub topologies: Vec<Topology>,

    /// Bounded-wait or unbounded-wait calls.
    #[arg(long, value_enum, default_value_t = Wait::Bounded)]
    pub wait: Wait,

    /// Callees to spread the calls over (1 to 16).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
    pub callees: u64,

    /// Plans each caller runs at once, comma-separated (load that shares the callers' queues).
    #[arg(long, value_name = "C[,C...]", value_delimiter = ',', default_value = "1", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub plans: Vec<u64>,

    /// Callers running the plans at once, all calling the same callees; comma-separated.
    #[arg(long, value_name = "M[,M...]", value_delimiter = ',', default_value = "1", value_parser = clap::value_parser!(u64).range(1..=100))]
    pub callers: Vec<u64>,

    /// Subnets the callers are spread over (cross-subnet only; the callees get one of their own).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=39))]
    pub caller_subnets: u64,

    /// Runs per combination, each on a fresh deployment; wall times are their median and p95.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub repeat: u64,

    /// IC time per round in ns, set on both engines (mainnet-like by default; at most an hour).
    #[arg(long, default_value_t = TimeStep::ONE_SECOND.0, value_parser = clap::value_parser!(u64).range(..=TimeStep::MAX.0))]
    pub time_step_ns: u64,

    /// Run every plan as a job that retries clean failures from timers
    /// (up to 10 attempts, the first after --backoff-ms, then doubling).
    #[arg(long)]
    pub retry: bool,

    /// With --retry: the first backoff.
    #[arg(long, default_value_t = 1000, requires = "retry")]
    pub backoff_ms: u64,

    /// With --retry: tag pings with nonces, so that SYS_UNKNOWN is retried too.
    #[arg(long, requires = "retry")]
    pub idempotent: bool,

    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Also write every format and the SVG charts into this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Save the deterministic figures as a baseline.
    #[arg(long, value_name = "FILE")]
    pub save_baseline: Option<PathBuf>,

    /// Compare with a saved baseline; exit non-zero on a change beyond the noise threshold.
    #[arg(long, value_name = "FILE")]
    pub compare: Option<PathBuf>,

    /// Largest change, in percent, that --compare tolerates (a finite number, 0 or more).
    #[arg(long, default_value_t = 0.0, value_parser = noise_threshold)]
    pub noise_threshold: f64,

    #[command(flatten)]
    pub engine: EngineArgs,
}

/// A percentage that can gate a comparison: NaN or infinity would let every
/// change through.
fn noise_threshold(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(percent) if percent.is_finite() && percent >= 0.0 => Ok(percent),
        _ => Err(format!("{text} is not a finite percentage of 0 or more")),
    }
}

impl SweepArgs {
    /// What the flags ask the sweep to run.
    pub fn grid(&self) -> sweep::Grid {
        sweep::Grid {
            topologies: self.topologies.clone(),
            strategies: self.strategies.clone(),
            k: self.k.clone(),
            calls: self.calls.clone(),
            callers: self.callers.clone(),
            plans: self.plans.clone(),
            caller_subnets: self.caller_subnets,
            callees: self.callees,
            wait: self.wait,
            repeat: self.repeat,
            time_step: TimeStep(self.time_step_ns),
            // Up to 10 attempts.
            retry: self.retry.then_some(RetryPolicy {
                max_attempts: 10,
                backoff_ms: self.backoff_ms,
                idempotent: self.idempotent,
            }),
        }
    }

    /// Runs the sweep on the engine `--engine` resolves to.
    pub fn report(&self) -> Result<SweepReport> {
        self.report_on(&self.engine.resolve()?.factory)
    }

    /// Runs the sweep (with a progress bar on a terminal).
    fn report_on(&self, factory: &EngineFactory) -> Result<SweepReport> {
        if self.k.contains(&0) {
            bail!("--k 0: every k must be at least 1");
        }
        if self.retry && self.time_step_ns == 0 {
            bail!(
                "--retry needs IC time to pass: with --time-step-ns 0 no retry's backoff would ever end (use 1 or more)"
            );
        }
        let wasms = canister_wasm::caller_and_callee()?;
        let grid = self.grid();
        let progress = ProgressBar::new(grid.combinations().len() as u64 * self.repeat.max(1))
            .with_finish(ProgressFinish::AndClear);
        progress
            .set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed}").expect("valid"));
        let runs = sweep::run(factory, &grid, &wasms, || progress.inc(1))?;
        progress.finish_and_clear();
        Ok(SweepReport {
            engine: factory.kind(),
            metering: Metering::Replica,
            engine_description: factory.description(),
            runs,
        })
    }

    pub(crate) fn execute(&self) -> Result<Output> {
        let baseline = self.compare.as_deref().map(Baseline::load).transpose()?;
        let resolved = self.engine.resolve()?;
        let report = self.report_on(&resolved.factory)?;
        if let Some(dir) = &self.out {
            write_all(&report, dir)?;
        }
        if let Some(path) = &self.save_baseline {
            Baseline { engine: report.engine, metering: report.metering, runs: report.runs.clone() }
                .save(path)?;
        }
        let mut stdout = report.render(self.format);
        let mut failure = None;
        if let (Some(baseline), Some(path)) = (baseline, &self.compare) {
            let comparison = Comparison::between(&baseline, &report.runs);
            stdout +=
                &format!("\nCompared with {}:\n{}", path.display(), comparison.render(self.noise_threshold));
            if comparison.regressed(self.noise_threshold) {
                failure = Some(format!(
                    "the sweep differs from the baseline {} beyond the noise threshold of {}%",
                    path.display(),
                    self.noise_threshold
                ));
            }
        }
        Ok(Output { stdout, failure, fallback_note: resolved.fallback_note })
    }
}

/// Every format, and the charts, into `dir`.
fn write_all(report: &SweepReport, dir: &std::path::Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (format, file) in [
        (Format::Text, "sweep.txt"),
        (Format::Json, "sweep.json"),
        (Format::Csv, "sweep.csv"),
        (Format::Markdown, "sweep.md"),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, report.render(format))
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    charts::write_all(report, dir)?;
    Ok(())
}
