//! `multi_subnet network`: the simulator as a local IC network that
//! icp-cli, dfx and the agents use through the IC's HTTP interface.

use anyhow::{Context, Result};
use candid::Principal;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

use crate::profile::{MAINNET_XNET_LATENCY_ROUNDS, ProfileName};
use ic_model::Ic;
use ic_sim_client::api::FaultSpec;

/// What the network is, in one line: it says so when it starts.
pub const DESCRIPTION: &str = "this project's simulator (a model of IC message routing running the real canister wasm) behind the IC's HTTP interface; not the replica";

/// The cycles ledger's id lies in the 34th subnet's range of ids.
const MAX_SUBNETS: u64 = 33;

#[derive(Debug, Args)]
pub struct NetworkArgs {
    /// Application subnets, each with a range of 2^20 canister ids.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=MAX_SUBNETS))]
    pub subnets: u64,

    /// The port to listen on (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,

    /// Write `<port>` to this file once connections are accepted. It is
    /// created exclusively: if it exists, another network owns it and this
    /// one exits at once, successfully.
    #[arg(long, value_name = "PATH")]
    pub port_file: Option<PathBuf>,

    /// Once connections are accepted, write the URL, the root key and the
    /// subnets (JSON) to this file.
    #[arg(long, value_name = "PATH")]
    pub status_file: Option<PathBuf>,

    /// Whose rounds: PocketIC's (a message to another subnet is inducted at
    /// the next round) or mainnet's (2 rounds later).
    #[arg(long, value_enum, default_value_t = ProfileName::PocketIc)]
    pub profile: ProfileName,

    /// Milliseconds per round; 0 runs rounds as fast as there is work.
    /// `--profile mainnet --round-ms 1000` gives calls mainnet's latency.
    #[arg(long, value_name = "MS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub round_ms: u64,

    /// Derives every key: the same seed gives the same root key, which a
    /// tool's configuration can pin.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,

    /// Keep the network's state in this directory: saved when the network
    /// stops (SIGINT, SIGTERM) and at checkpoints, and resumed from when it
    /// starts again with the same flags.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// With --state-dir: seconds between checkpoints while the network is
    /// active (a `kill -9` loses what happened since the last).
    #[arg(long, value_name = "S", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub checkpoint_secs: u64,

    /// Which HTTPS outcalls (`http_request`) the host makes for the
    /// canisters: to this machine's loopback addresses only (a test's local
    /// server), to any URL, or none.
    #[arg(long, value_enum, default_value_t = Outcalls::LoopbackOnly)]
    pub outcalls: Outcalls,

    /// Faults from the start, rounds counted from then: a JSON spec (the
    /// body `POST /_/faults` takes; see docs/faults.md), or `@FILE`
    /// holding one. The launcher reads it from MULTI_SUBNET_FAULTS.
    #[arg(long, value_name = "SPEC", value_parser = fault_spec)]
    pub faults: Option<FaultSpec>,

    /// With --faults: the seed of its random choices, in place of the
    /// spec's. The launcher reads it from MULTI_SUBNET_FAULT_SEED.
    #[arg(long, value_name = "N", requires = "faults")]
    pub fault_seed: Option<u64>,

    #[command(flatten)]
    pub requests: crate::cli::RequestLimitArgs,
}

/// `--outcalls`: which HTTPS outcalls the host makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Outcalls {
    LoopbackOnly,
    Allow,
    Deny,
}

impl From<Outcalls> for ic_http::OutcallPolicy {
    fn from(outcalls: Outcalls) -> Self {
        match outcalls {
            Outcalls::LoopbackOnly => ic_http::OutcallPolicy::LoopbackOnly,
            Outcalls::Allow => ic_http::OutcallPolicy::Allow,
            Outcalls::Deny => ic_http::OutcallPolicy::Deny,
        }
    }
}

/// `--faults`: a JSON spec, or `@FILE` holding one.
pub fn fault_spec(text: &str) -> Result<FaultSpec, String> {
    let (json, from) = match text.strip_prefix('@') {
        Some(path) => (std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?, path),
        None => (text.to_string(), "the spec"),
    };
    serde_json::from_str(&json).map_err(|e| format!("{from} is not a fault spec: {e}"))
}

/// What `--status-file` holds.
#[derive(Serialize)]
struct Status {
    url: String,
    root_key: String,
    subnets: Vec<String>,
    engine: &'static str,
}

/// A network that accepts connections: what a launcher announces.
pub struct Serving {
    pub address: std::net::SocketAddr,
    /// The root key (DER), hex.
    pub root_key: String,
    pub subnets: Vec<Principal>,
}

impl NetworkArgs {
    /// `--faults` with `--fault-seed`'s seed.
    fn fault_spec(&self) -> Option<FaultSpec> {
        let spec = self.faults.clone()?;
        Some(FaultSpec { seed: self.fault_seed.unwrap_or(spec.seed), ..spec })
    }

    /// Serves until the process ends; returns only when another network owns the port file.
    pub fn execute(&self) -> Result<String> {
        let served = self.serve(|serving| {
            use std::io::Write;
            let url = format!("http://{}", serving.address);
            println!("{}; listening on {url}", DESCRIPTION);
            println!("root key: {}", serving.root_key);
            for (index, subnet) in serving.subnets.iter().enumerate() {
                println!("subnet {index}: {subnet}");
            }
            if let Some(spec) = self.fault_spec() {
                println!("faults: {}", serde_json::to_string(&spec).expect("plain data"));
            }
            let _ = std::io::stdout().flush();
            let Some(path) = &self.status_file else { return Ok(()) };
            let status = Status {
                url,
                root_key: serving.root_key.clone(),
                subnets: serving.subnets.iter().map(Principal::to_text).collect(),
                engine: DESCRIPTION,
            };
            std::fs::write(path, serde_json::to_string_pretty(&status).expect("plain data"))
                .with_context(|| format!("cannot write {}", path.display()))
        })?;
        // Stopped: the status file no longer describes a network.
        if served && let Some(path) = &self.status_file {
            let _ = std::fs::remove_file(path);
        }
        Ok(match (&self.port_file, served) {
            (Some(path), false) => format!("{} exists: another network owns it\n", path.display()),
            _ => String::new(),
        })
    }

    /// Serves until SIGINT or SIGTERM (then saves the state, with a state
    /// directory); `announce` is told where once connections are accepted.
    /// `Ok(false)` at once when another network owns the port file.
    pub fn serve(&self, announce: impl FnOnce(&Serving) -> Result<()>) -> Result<bool> {
        // Before the state directory is locked: the network that owns the
        // port file owns that too.
        if self.port_file.as_ref().is_some_and(|path| path.exists()) {
            return Ok(false);
        }
        let (subnets, profile, seed) = (self.subnets, self.profile, self.seed);
        let xnet_latency_rounds = match profile {
            ProfileName::PocketIc => 0,
            ProfileName::Mainnet => MAINNET_XNET_LATENCY_ROUNDS,
        };
        let keys = ic_model::Keys::from_seed(seed);
        let fresh = move || {
            let builder = (0..subnets).fold(sim::Sim::builder(), |builder, _| builder.with_subnet());
            let sim = builder.with_xnet_latency_rounds(xnet_latency_rounds).build();
            let network =
                ic_model::sim_engine::network(sim, keys).expect("a new simulator has no canister yet");
            Box::new(network) as Box<dyn ic_http::Backend>
        };
        let round_interval = (self.round_ms > 0).then(|| Duration::from_millis(self.round_ms));
        let options = ic_http::Options {
            round_interval,
            outcalls: self.outcalls.into(),
            faults: self.fault_spec(),
            ..ic_http::Options::default()
        };
        let network = match &self.state_dir {
            None => ic_http::Network::start(fresh, options),
            Some(dir) => {
                let shown = dir.display().to_string();
                let make = move |saved: Option<&[u8]>| match saved {
                    None => Ok(fresh()),
                    Some(saved) => {
                        let resumed = Ic::<sim::Sim>::restore(saved)?;
                        let (sim, keys) = (&resumed.engine, resumed.keys());
                        let (had_subnets, had_latency) = (sim.subnets().len() as u64, sim.config().xnet_latency_rounds);
                        if (had_subnets, had_latency, keys.seed()) == (subnets, xnet_latency_rounds, seed) {
                            return Ok(Box::new(resumed) as Box<dyn ic_http::Backend>);
                        }
                        let had_profile = if had_latency == 0 { "pocket-ic" } else { "mainnet" };
                        Err(format!(
                            "{shown} holds a network started with --subnets {had_subnets} --profile {had_profile} --seed {}: start it with those, or use another --state-dir",
                            keys.seed()
                        ))
                    }
                };
                let persistence = ic_http::Persistence {
                    dir: dir.clone(),
                    backend_format: Ic::<sim::Sim>::saved_format(),
                    checkpoint_every: Duration::from_secs(self.checkpoint_secs),
                };
                ic_http::Network::start_saved(make, options, persistence)
            }
        }
        .map_err(anyhow::Error::msg)?;
        let saver = self.state_dir.is_some().then(|| network.clone());
        let root_key = hex::encode(network.root_key());
        let subnets: Vec<Principal> = network.subnet_ids();
        let (mut announced, mut saved) = (Ok(()), Ok(()));
        // The HTTP gateway on the API's port, as dfx's and PocketIC's: paths outside `/api/`.
        let gateway = ic_gateway::Gateway::new(network.root_key());
        let served = ic_http::serve_forever(
            ic_http::router_beside(network, gateway.router()),
            self.requests.limits(ic_http::MAX_REQUEST_BYTES),
            ic_http::Listen { port_file: self.port_file.as_deref(), ..ic_http::Listen::local(self.port) },
            std::future::pending(),
            |address| {
                gateway.connect(&format!("http://{address}")).map_err(std::io::Error::other)?;
                announced = announce(&Serving { address, root_key, subnets });
                // Not serving is better than serving unannounced.
                announced.as_ref().map(drop).map_err(|_| std::io::Error::other("announcing failed"))
            },
            // Saved before the port file goes: whoever waits for it to go
            // may start the next network on the same directory.
            || {
                if let Some(network) = saver {
                    saved = network.save().map(|report| {
                        eprintln!(
                            "state saved: {:.1} MiB, rounds stopped for {} ms, encoded and written in {} ms",
                            report.bytes as f64 / f64::from(1 << 20),
                            report.snapshot.as_millis(),
                            report.write.as_millis()
                        );
                    });
                }
            },
        );
        announced?;
        let served = served.context("the network failed")?;
        saved.map_err(anyhow::Error::msg)?;
        Ok(served)
    }
}
