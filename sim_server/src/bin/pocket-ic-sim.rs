//! `pocket-ic-sim`: this project's simulator behind PocketIC's REST API,
//! started the way the pocket-ic client starts a PocketIC server, so that
//! `POCKET_IC_BIN=$(scripts/pocket-ic-path.sh) cargo test` runs a suite
//! written for PocketIC unchanged. It is not PocketIC and says so: in
//! `--help`, on stderr of `--version`, when it starts, and in every answer
//! to what it does not support.

use clap::Parser;
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// PocketIC's default TTL: a server nobody talks to for a minute ends.
const DEFAULT_TTL_SECONDS: u64 = 60;

#[derive(Parser)]
#[command(
    name = "pocket-ic-sim",
    disable_version_flag = true,
    about = "This project's simulator (a model of IC message routing running the real canister wasm) behind PocketIC's REST API; not PocketIC.",
    long_about = "This project's simulator (a model of IC message routing running the real canister wasm) behind PocketIC's REST API; not PocketIC.\n\nIt takes PocketIC's server's command line, so the pocket-ic client starts it when POCKET_IC_BIN names it. `--version` prints the PocketIC server version whose REST API it serves (the pocket-ic client checks it); what it does not support is answered with the reason."
)]
struct Args {
    /// Print `pocket-ic-server X.Y.Z`, the PocketIC server version whose REST API this serves (what the pocket-ic client checks), and on stderr what this is.
    #[arg(long)]
    version: bool,

    /// The address to listen on.
    #[arg(long, short, default_value = "127.0.0.1")]
    ip_addr: IpAddr,

    /// Accepted for PocketIC's command line; the simulator writes no logs.
    #[arg(long, short, value_name = "LEVELS")]
    log_levels: Option<String>,

    /// The port to listen on (0: any free port).
    #[arg(long, short, default_value_t = 0)]
    port: u16,

    /// Write `<port>` and a newline here once connections are accepted. It is
    /// created exclusively: if it exists, another server owns it and this one
    /// exits at once, successfully (as PocketIC's server does).
    #[arg(long, value_name = "PATH")]
    port_file: Option<PathBuf>,

    /// End after this many seconds without a request (none in flight).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TTL_SECONDS)]
    ttl: u64,

    /// End this many seconds after starting, whatever it is doing.
    #[arg(long, value_name = "SECONDS")]
    hard_ttl: Option<u64>,

    /// The pocket-ic client major version whose REST API to present: what
    /// `--version` prints. The 15.x and 16.x clients' APIs differ only in
    /// HTTPS outcall mocking, which this server does not serve.
    #[arg(long, value_name = "MAJOR", env = "POCKET_IC_SIM_REST_API", default_value = "16")]
    rest_api: RestApi,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RestApi {
    #[value(name = "15")]
    V15,
    #[value(name = "16")]
    V16,
}

impl RestApi {
    /// The PocketIC server version whose REST API this is, as the pocket-ic
    /// client of that major version checks it.
    fn server_version(self) -> &'static str {
        match self {
            RestApi::V15 => "15.0.0",
            RestApi::V16 => pocket_ic::LATEST_SERVER_VERSION,
        }
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.version {
        println!("pocket-ic-server {}", args.rest_api.server_version());
        eprintln!("{}", sim_server::DESCRIPTION);
        return ExitCode::SUCCESS;
    }
    let options = sim_server::Options {
        ip: args.ip_addr,
        port: args.port,
        port_file: args.port_file,
        limits: sim_server::Limits::default(),
        requests: ic_http::RequestLimits::new(sim_server::MAX_BODY_BYTES),
        lifetime: sim_server::Lifetime {
            ttl: Some(Duration::from_secs(args.ttl)),
            hard_ttl: args.hard_ttl.map(Duration::from_secs),
        },
    };
    let served = sim_server::serve_forever(options, |address| {
        eprintln!("{}; listening on http://{address}/", sim_server::DESCRIPTION);
        Ok(())
    });
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pocket-ic-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
