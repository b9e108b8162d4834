//! The command line: the clap types every command shares, and which command
//! runs (each one's arguments and body are in `commands/`).

use anyhow::Result;
use clap::{Args, Parser, Subcommand};

pub use crate::commands::chaos::ChaosArgs;
pub use crate::commands::example::ExampleArgs;
pub use crate::commands::network::NetworkArgs;
pub use crate::commands::serve::ServeArgs;
pub use crate::commands::sweep::SweepArgs;
use interface::MAX_CALLS;

use crate::engines::{EngineChoice, EngineFactory, Resolved};

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
            Some(Command::Compare(args)) => crate::commands::compare::execute(args),
            Some(Command::Chaos(args)) => args.execute(),
            Some(Command::Sweep(args)) => args.execute(),
            Some(Command::Serve(args)) => args.execute(),
            Some(Command::Network(args)) => Ok(Output { stdout: args.execute()?, ..Output::default() }),
        }
    }
}

/// A number of pings per run: the caller refuses more than its maximum.
pub(crate) fn calls() -> clap::builder::RangedU64ValueParser {
    clap::value_parser!(u64).range(..=MAX_CALLS)
}
