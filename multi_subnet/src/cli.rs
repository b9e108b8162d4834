//! Command line, and the runs it describes.

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressFinish, ProgressStyle};
use std::path::PathBuf;

use interface::{MAX_CALLS, Strategy, Wait};

use crate::baseline::{Baseline, Comparison};
use crate::chaos::{self, Fault};
use crate::charts;
use crate::engines::{Engine, EngineChoice, EngineFactory, Resolved, TimeStep};
use crate::network::NetworkArgs;
use crate::profile::{MAINNET_ROUND_SECONDS, MAINNET_XNET_LATENCY_ROUNDS, Profile, ProfileArgs};
use crate::report::{ExampleFormat, ExampleReport, Format, Metering, SweepReport};
use crate::scenario::{self, Run, Topology};
use crate::sweep;

/// Runs `n` ping calls from a caller canister to a callee canister,
/// sequentially and in parallel, and reports successes, rounds and time.
/// `sweep` and `compare` go further.
#[derive(Debug, Parser)]
#[command(version, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,

    #[command(flatten)]
    pub example: ExampleArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Every combination of strategy, k, n and topology, with full figures.
    Sweep(Box<SweepArgs>),
    /// The example's two comparisons, with rounds and speed-up.
    Compare(EngineArgs),
    /// Every strategy under every fault the simulator injects, over seeds:
    /// each ping delivered, failed or unknown, none lost or counted twice.
    Chaos(ChaosArgs),
    /// Serve this project's simulator behind PocketIC's REST API on 127.0.0.1,
    /// for the pocket-ic client (`PocketIcBuilder::with_server_url`). It is not PocketIC.
    Serve(ServeArgs),
    /// Serve this project's simulator as a local IC network on 127.0.0.1,
    /// behind the IC's HTTP interface, for icp-cli, dfx and the agents. It
    /// is not the replica.
    Network(NetworkArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,

    /// Write `<port>` to this file once connections are accepted. It is
    /// created exclusively: if it exists, another server owns it and this
    /// one exits at once, successfully (as PocketIC's server does).
    #[arg(long, value_name = "PATH")]
    pub port_file: Option<PathBuf>,

    /// GiB of the host's memory that the canisters of all instances may
    /// hold together (a canister's linear memory counts three times);
    /// growth past it traps, and a module that does not fit is refused.
    #[arg(long, value_name = "GIB", default_value_t = sim::DEFAULT_HOST_MEMORY_BUDGET >> 30,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub host_memory_gib: u64,

    /// Instructions one message may execute (the replica's 40 B by
    /// default); less makes a canister that loops forever cost less time.
    #[arg(long, value_name = "N", default_value_t = sim::SimConfig::default().max_instructions_per_message,
          value_parser = clap::value_parser!(u64).range(1_000_000..=sim::SimConfig::default().max_instructions_per_message))]
    pub max_instructions_per_message: u64,

    #[command(flatten)]
    pub requests: RequestLimitArgs,
}

/// The defaults of [`RequestLimitArgs`].
const REQUEST_LIMITS: ic_http::RequestLimits = ic_http::RequestLimits::new(0);

/// How much of a server its clients may hold at once, and for how long
/// (`serve` and `network`).
#[derive(Debug, Args)]
pub struct RequestLimitArgs {
    /// Connections open at once; past it, new ones wait for a slot.
    #[arg(long, value_name = "N", default_value_t = REQUEST_LIMITS.max_connections,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_connections: usize,

    /// Requests served at once; past it, 503.
    #[arg(long, value_name = "N", default_value_t = REQUEST_LIMITS.max_requests,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_requests: usize,

    /// MiB of request bodies being read at once; past it, 503.
    #[arg(long, value_name = "MIB", default_value_t = REQUEST_LIMITS.max_body_bytes_in_flight >> 20,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(64..=65_536))]
    pub max_body_mib_in_flight: usize,

    /// Seconds a client may take to send a request's headers; past it,
    /// the connection closes.
    #[arg(long, value_name = "S", default_value_t = REQUEST_LIMITS.header_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout_secs: u64,

    /// Seconds a client may take to send a request's body; past it, 408.
    #[arg(long, value_name = "S", default_value_t = REQUEST_LIMITS.body_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub body_timeout_secs: u64,
}

impl RequestLimitArgs {
    /// The limits, for bodies of at most `max_body_bytes`.
    pub fn limits(&self, max_body_bytes: usize) -> ic_http::RequestLimits {
        ic_http::RequestLimits {
            max_connections: self.max_connections,
            max_requests: self.max_requests,
            max_body_bytes_in_flight: self.max_body_mib_in_flight << 20,
            max_body_bytes,
            header_timeout: std::time::Duration::from_secs(self.header_timeout_secs),
            body_timeout: std::time::Duration::from_secs(self.body_timeout_secs),
        }
    }
}

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

#[derive(Debug, Args)]
pub struct EngineArgs {
    /// Which engine runs the canisters.
    #[arg(long, value_enum, default_value_t = EngineChoice::Auto)]
    pub engine: EngineChoice,

    /// A running server of PocketIC's REST API for the PocketIC engine
    /// (PocketIC's, or `multi_subnet serve`), instead of a server binary.
    #[arg(long, env = "POCKET_IC_URL", value_name = "URL")]
    pub pocket_ic_url: Option<url::Url>,
}

impl EngineArgs {
    pub fn resolve(&self) -> Result<Resolved> {
        EngineFactory::resolve(self.engine, self.pocket_ic_url.as_ref())
    }
}

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

/// A number of pings per run: the caller refuses more than its maximum.
fn calls() -> clap::builder::RangedU64ValueParser {
    clap::value_parser!(u64).range(..=MAX_CALLS)
}

/// A percentage that can gate a comparison: NaN or infinity would let every
/// change through.
fn noise_threshold(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(percent) if percent.is_finite() && percent >= 0.0 => Ok(percent),
        _ => Err(format!("{text} is not a finite percentage of 0 or more")),
    }
}

/// What a command prints, the one-line failure it may end with, and why
/// `auto` fell back to the simulator if it did.
#[derive(Default)]
pub struct Output {
    pub stdout: String,
    pub failure: Option<String>,
    pub fallback_note: Option<String>,
}

impl Cli {
    pub fn execute(&self) -> Result<Output> {
        match &self.command {
            None => self.example.execute(),
            Some(Command::Compare(args)) => compare(args),
            Some(Command::Chaos(args)) => args.execute(),
            Some(Command::Sweep(args)) => args.execute(),
            Some(Command::Serve(args)) => args.execute(),
            Some(Command::Network(args)) => Ok(Output { stdout: args.execute()?, ..Output::default() }),
        }
    }
}

impl ExampleArgs {
    /// Runs the example's scenario and renders the report.
    fn execute(&self) -> Result<Output> {
        let topology = Topology::from_subnets(self.subnets);
        let profile = self.profile.profile()?;
        let resolved = self.engine.resolve()?;
        let mut engine = resolved.factory.start_profile(topology.subnets(), profile)?;
        let runs = example_runs(engine.as_mut(), topology, &self.calls, profile)?;
        let report = ExampleReport {
            engine: engine.kind(),
            metering: Metering::Replica,
            engine_description: engine.description(),
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
fn example_runs(
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
            runs.push(Run { mainnet_seconds: profile.mainnet_seconds(run.rounds), ..run });
        }
    }
    Ok(runs)
}

/// The example's comparisons, as it prints them, then what they show.
fn compare(args: &EngineArgs) -> Result<Output> {
    let resolved = args.resolve()?;
    let mut out = String::new();
    // The last comparison's: the example's 90 cross-subnet calls.
    let mut pocket_ic_rounds = vec![];
    for (topology, calls, title) in [
        (Topology::SameSubnet, &[100, 2000][..], "One subnet, as on a local dfx replica"),
        (Topology::CrossSubnet, &[90][..], "Two subnets, caller and callee apart"),
    ] {
        let mut engine = resolved.factory.start(topology.subnets(), TimeStep::POCKET_IC)?;
        let runs = example_runs(engine.as_mut(), topology, calls, Profile::PocketIc)?;
        pocket_ic_rounds = runs.iter().map(|r| r.rounds.0).collect();
        let report = ExampleReport {
            engine: engine.kind(),
            metering: Metering::Replica,
            engine_description: engine.description(),
            runs,
        };
        if out.is_empty() {
            out += &format!("Engine: {}\n", report.engine_description);
        }
        out += &format!("\n{title}:\n");
        out += report.render(ExampleFormat::Text).split_once('\n').map_or("", |(_, lines)| lines);
        for pair in report.runs.chunks(2) {
            let [sequential, parallel] = pair else { continue };
            out += &format!(
                "  n = {}: parallel took {} rounds to sequential's {} ({:.1}x fewer) and {:.1}x less wall time; {} of {} parallel calls succeeded\n",
                parallel.calls,
                parallel.rounds.0,
                sequential.rounds.0,
                sequential.rounds.0 as f64 / parallel.rounds.0.max(1) as f64,
                sequential.wall.as_secs_f64() / parallel.wall.as_secs_f64(),
                parallel.succeeded,
                parallel.calls,
            );
        }
    }
    out += &mainnet_estimate(&pocket_ic_rounds)?;
    Ok(Output { stdout: out, failure: None, fallback_note: resolved.fallback_note })
}

/// The example's 90 cross-subnet calls under the mainnet profile (on the
/// simulator, the only engine that has it), beside their PocketIC rounds.
fn mainnet_estimate(pocket_ic_rounds: &[u64]) -> Result<String> {
    let mut engine = EngineFactory::Sim.start_profile(2, Profile::MAINNET)?;
    let runs = example_runs(engine.as_mut(), Topology::CrossSubnet, &[90], Profile::MAINNET)?;
    let [sequential, parallel] = &runs[..] else { unreachable!("one run of each") };
    let seconds = |run: &Run| run.mainnet_seconds.unwrap_or_default();
    let mut out = format!(
        "\nThe same 90 calls as mainnet would take them (simulator; {MAINNET_XNET_LATENCY_ROUNDS} rounds per cross-subnet hop, {MAINNET_ROUND_SECONDS} s rounds):\n"
    );
    out += &format!(
        "  sequential: {} rounds, about {:.0} s (PocketIC: {} rounds)\n",
        sequential.rounds.0,
        seconds(sequential),
        pocket_ic_rounds[0]
    );
    out += &format!(
        "  parallel: {} rounds, about {:.0} s (PocketIC: {} rounds)\n",
        parallel.rounds.0,
        seconds(parallel),
        pocket_ic_rounds[1]
    );
    out += &format!(
        "  parallel is {:.1}x faster on mainnet ({:.1}x in PocketIC rounds); {} and {} of 90 succeeded\n",
        seconds(sequential) / seconds(parallel).max(f64::MIN_POSITIVE),
        pocket_ic_rounds[0] as f64 / pocket_ic_rounds[1].max(1) as f64,
        sequential.succeeded,
        parallel.succeeded,
    );
    Ok(out)
}

impl SweepArgs {
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
        let progress = ProgressBar::new(self.combinations().len() as u64 * self.repeat.max(1))
            .with_finish(ProgressFinish::AndClear);
        progress
            .set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {elapsed}").expect("valid"));
        let runs = sweep::run(factory, self, &wasms, || progress.inc(1))?;
        progress.finish_and_clear();
        Ok(SweepReport {
            engine: factory.kind(),
            metering: Metering::Replica,
            engine_description: factory.description(),
            runs,
        })
    }

    fn execute(&self) -> Result<Output> {
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

impl ChaosArgs {
    /// Runs the chaos matrix; a run whose ledger does not balance fails the command.
    fn execute(&self) -> Result<Output> {
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

impl ServeArgs {
    /// Serves until the process ends; returns only when another server owns the port file.
    fn execute(&self) -> Result<Output> {
        let limits = sim_server::Limits {
            host_memory_budget: self.host_memory_gib << 30,
            max_instructions_per_message: self.max_instructions_per_message,
        };
        let options = sim_server::Options {
            port: self.port,
            port_file: self.port_file.clone(),
            limits,
            requests: self.requests.limits(sim_server::MAX_BODY_BYTES),
        };
        let served = sim_server::serve_forever(options, |address| {
            use std::io::Write;
            println!("{}; listening on http://{address}/", sim_server::DESCRIPTION);
            std::io::stdout().flush()
        })
        .context("the simulator server failed")?;
        let stdout = match (&self.port_file, served) {
            (Some(path), false) => format!("{} exists: another server owns it\n", path.display()),
            _ => String::new(),
        };
        Ok(Output { stdout, ..Output::default() })
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
