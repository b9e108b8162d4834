//! icp-cli's network launcher (interface 1.x) over this project's
//! simulator: `export ICP_CLI_NETWORK_LAUNCHER_PATH=$(./scripts/launcher-path.sh)`
//! and `icp network start` runs `multi_subnet network` instead of
//! downloading PocketIC. It is not PocketIC: `/api/v2/status` says which
//! engine answers.

use anyhow::{Context, Result, anyhow, bail};
use clap::{CommandFactory, Parser};
use multi_subnet::cli::RequestLimitArgs;
use multi_subnet::commands::network::{self, DESCRIPTION, NetworkArgs, Outcalls};
use multi_subnet::profile::ProfileName;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Chooses mainnet's cross-subnet latency (`mainnet`) or PocketIC's
/// (`pocket-ic`, the default): icp.yaml has no word for it.
const PROFILE_VARIABLE: &str = "MULTI_SUBNET_PROFILE";
/// Which HTTPS outcalls the network makes: `loopback-only` (the default),
/// `allow` or `deny`, as `network --outcalls`.
const OUTCALLS_VARIABLE: &str = "MULTI_SUBNET_OUTCALLS";

/// Faults from the start, and their seed, as `network --faults` and
/// `--fault-seed` take them.
const FAULTS_VARIABLE: &str = "MULTI_SUBNET_FAULTS";
const FAULT_SEED_VARIABLE: &str = "MULTI_SUBNET_FAULT_SEED";

/// The flags icp-cli passes (icp-cli-network-launcher's interface 1.1.0),
/// as `--flag value` or `--flag=value`.
#[derive(Debug, Parser)]
#[command(
    name = "network_launcher",
    about = "icp-cli's network launcher over this project's simulator (not PocketIC)"
)]
struct LauncherArgs {
    /// The interface icp-cli speaks: 1.x.
    #[arg(long)]
    interface_version: String,

    /// Where icp-cli would have the network keep its state; it empties it
    /// before every start, so the network keeps none (no checkpoints).
    #[arg(long)]
    state_dir: Option<PathBuf>,

    /// The address to listen on: a loopback one.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,

    /// The port of the API and the HTTP gateway; none: any free port.
    #[arg(long)]
    gateway_port: Option<u16>,

    /// Where `status.json` goes once the network serves.
    #[arg(long)]
    status_dir: PathBuf,

    /// Domains the gateway answers for: taken, unused (it answers
    /// `<id>.localhost` and `?canisterId=`).
    #[arg(long)]
    domain: Vec<String>,

    /// Milliseconds per round (0: as fast as there is work).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    artificial_delay_ms: Option<u64>,

    /// One subnet of a kind, repeated: only `application` here.
    #[arg(long)]
    subnet: Vec<String>,

    #[arg(long)]
    verbose: bool,

    /// Internet Identity: not here.
    #[arg(long)]
    ii: bool,

    /// The NNS and SNS canisters: not here.
    #[arg(long)]
    nns: bool,

    #[arg(long)]
    bitcoind_addr: Vec<String>,

    #[arg(long)]
    dogecoind_addr: Vec<String>,

    #[command(flatten)]
    requests: RequestLimitArgs,
}

/// What icp-cli waits for in the status directory.
#[derive(Serialize)]
struct Status {
    v: &'static str,
    gateway_port: u16,
    root_key: String,
}

impl LauncherArgs {
    /// The network these flags ask for, or why the simulator cannot be it.
    fn network(self) -> Result<NetworkArgs> {
        if !self.interface_version.starts_with("1.") {
            bail!("interface version {} is not one this launcher speaks (1.x)", self.interface_version);
        }
        let missing = [
            ("Internet Identity (ii)", self.ii),
            ("the NNS (nns)", self.nns),
            ("bitcoin (bitcoind-addr)", !self.bitcoind_addr.is_empty()),
            ("dogecoin (dogecoind-addr)", !self.dogecoind_addr.is_empty()),
        ];
        if let Some((what, _)) = missing.iter().find(|(_, asked)| *asked) {
            bail!("the simulator's network has no {what}: remove it from the network in icp.yaml");
        }
        if let Some(kind) = self.subnet.iter().find(|kind| *kind != "application") {
            bail!(
                "the simulator's network has application subnets only, not {kind}: list `application` subnets in icp.yaml"
            );
        }
        if !["127.0.0.1", "localhost"].contains(&self.bind.as_str()) {
            bail!("the simulator's network listens on 127.0.0.1 only, not {}", self.bind);
        }
        let profile = match std::env::var(PROFILE_VARIABLE).as_deref() {
            Err(_) | Ok("pocket-ic") => ProfileName::PocketIc,
            Ok("mainnet") => ProfileName::Mainnet,
            Ok(other) => bail!("{PROFILE_VARIABLE}={other}: it is pocket-ic or mainnet"),
        };
        let outcalls = match std::env::var(OUTCALLS_VARIABLE).as_deref() {
            Err(_) | Ok("loopback-only") => Outcalls::LoopbackOnly,
            Ok("allow") => Outcalls::Allow,
            Ok("deny") => Outcalls::Deny,
            Ok(other) => bail!("{OUTCALLS_VARIABLE}={other}: it is loopback-only, allow or deny"),
        };
        let faults = match std::env::var(FAULTS_VARIABLE) {
            Err(_) => None,
            Ok(spec) => Some(network::fault_spec(&spec).map_err(|why| anyhow!("{FAULTS_VARIABLE}: {why}"))?),
        };
        let fault_seed = match std::env::var(FAULT_SEED_VARIABLE) {
            Err(_) => None,
            Ok(_) if faults.is_none() => {
                bail!("{FAULT_SEED_VARIABLE} seeds {FAULTS_VARIABLE}, which is not set")
            }
            Ok(seed) => {
                Some(seed.parse().map_err(|_| anyhow!("{FAULT_SEED_VARIABLE}={seed}: it is a number"))?)
            }
        };
        Ok(NetworkArgs {
            subnets: self.subnet.len().max(1) as u64,
            port: self.gateway_port.unwrap_or(0),
            port_file: None,
            status_file: None,
            profile,
            round_ms: self.artificial_delay_ms.unwrap_or(0),
            seed: 0,
            state_dir: None,
            checkpoint_secs: 5,
            outcalls,
            faults,
            fault_seed,
            requests: self.requests,
        })
    }
}

/// Writes `status.json` whole: icp-cli reads it as soon as it appears.
fn write_status(dir: &Path, status: &Status) -> Result<()> {
    let text = serde_json::to_string(status).expect("plain data") + "\n";
    let partial = dir.join("status.json.tmp");
    std::fs::write(&partial, text).with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, dir.join("status.json"))
        .with_context(|| format!("cannot write {}", dir.display()))
}

/// The arguments without the flags this launcher does not know, each
/// warned about: a later 1.x interface may add flags, which its
/// specification asks a launcher to ignore rather than fail on.
fn known_arguments(arguments: impl Iterator<Item = String>) -> Vec<String> {
    let command = LauncherArgs::command();
    let known: Vec<&str> = command.get_arguments().filter_map(|a| a.get_long()).chain(["help"]).collect();
    let mut arguments = arguments.peekable();
    let mut kept = vec![];
    while let Some(argument) = arguments.next() {
        let Some(flag) = argument.strip_prefix("--") else {
            kept.push(argument);
            continue;
        };
        let name = flag.split('=').next().unwrap_or(flag);
        if known.contains(&name) {
            kept.push(argument);
            continue;
        }
        eprintln!("warning: ignoring --{name}, which this launcher does not know");
        if !flag.contains('=') && arguments.peek().is_some_and(|next| !next.starts_with("--")) {
            arguments.next();
        }
    }
    kept
}

fn run() -> Result<()> {
    let args = match LauncherArgs::try_parse_from(known_arguments(std::env::args())) {
        Ok(args) => args,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => e.exit(),
        Err(e) => {
            // clap's message, before its usage: one line.
            let message = e.to_string();
            let why: Vec<&str> = message.lines().take_while(|line| !line.is_empty()).map(str::trim).collect();
            bail!("{}", why.join(" ").trim_start_matches("error: "))
        }
    };
    let status_dir = args.status_dir.clone();
    std::fs::create_dir_all(&status_dir)
        .with_context(|| format!("cannot create {}", status_dir.display()))?;
    let network = args.network()?;
    let served = network.serve(|serving| {
        eprintln!("{DESCRIPTION}; listening on http://{}", serving.address);
        // icp-cli keeps this log: `--subnet` takes these ids.
        for (index, subnet) in serving.subnets.iter().enumerate() {
            eprintln!("subnet {index}: {subnet}");
        }
        write_status(
            &status_dir,
            &Status { v: "1", gateway_port: serving.address.port(), root_key: serving.root_key.clone() },
        )
    });
    // Stopped, or failed: the status no longer describes a network.
    let _ = std::fs::remove_file(status_dir.join("status.json"));
    served.map(drop)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let why = format!("{e:#}");
            eprintln!("error: {}", why.lines().map(str::trim).collect::<Vec<_>>().join("; "));
            ExitCode::FAILURE
        }
    }
}
