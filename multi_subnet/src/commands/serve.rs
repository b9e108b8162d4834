//! `serve`: the simulator behind PocketIC's REST API.

use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

use crate::cli::{Output, RequestLimitArgs};

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

    /// End after this many seconds without a request (none in flight), as
    /// PocketIC's server does; by default it serves until stopped.
    #[arg(long, value_name = "SECONDS")]
    pub ttl: Option<u64>,

    /// End this many seconds after starting, whatever it is doing.
    #[arg(long, value_name = "SECONDS")]
    pub hard_ttl: Option<u64>,

    #[command(flatten)]
    pub requests: RequestLimitArgs,
}

impl ServeArgs {
    /// Serves until the process ends; returns only when another server owns the port file.
    pub(crate) fn execute(&self) -> Result<Output> {
        let limits = sim_server::Limits {
            host_memory_budget: self.host_memory_gib << 30,
            max_instructions_per_message: self.max_instructions_per_message,
        };
        let options = sim_server::Options {
            ip: std::net::Ipv4Addr::LOCALHOST.into(),
            port: self.port,
            port_file: self.port_file.clone(),
            limits,
            requests: self.requests.limits(sim_server::MAX_BODY_BYTES),
            lifetime: sim_server::Lifetime {
                ttl: self.ttl.map(std::time::Duration::from_secs),
                hard_ttl: self.hard_ttl.map(std::time::Duration::from_secs),
            },
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
