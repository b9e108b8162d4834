//! What the REST hop costs: the example's 90 calls each way across two
//! subnets, on the in-process simulator and through the pocket-ic client
//! against the simulator served in-process, in one run; prints the ratio
//! of their wall times (the calls only, not the deployment), and what one
//! bare request through the pocket-ic client costs (each round of the
//! harness makes two: a tick and an ingress status).
//! docs/pocket-ic-offline.md gives the command and the figures.

use interface::Strategy;
use multi_subnet::engines::pocket_ic::{PocketIcEngine, Server};
use multi_subnet::engines::sim::sim_engine;
use multi_subnet::engines::{Engine, TimeStep};
use multi_subnet::scenario::{self, Topology};
use std::time::{Duration, Instant};

const CALLS: u64 = 90;
const BARE_REQUESTS: u32 = 1_000;

/// Wall time of sequential then parallel, after deploying.
fn calls(engine: &mut dyn Engine, wasms: &canister_wasm::CanisterWasms) -> anyhow::Result<Duration> {
    let deployment = scenario::deploy(engine, Topology::CrossSubnet, wasms)?;
    let mut wall = Duration::ZERO;
    for strategy in [Strategy::Sequential, Strategy::Parallel] {
        wall += scenario::run(engine, &deployment, strategy, CALLS)?.wall;
    }
    Ok(wall)
}

fn main() -> anyhow::Result<()> {
    let wasms = canister_wasm::caller_and_callee()?;
    let server = sim_server::Running::start()?;
    let url = url::Url::parse(&server.url)?;
    let in_process = calls(&mut sim_engine(sim::Sim::builder().with_subnets(2).build()), &wasms)?;
    let served = calls(
        &mut PocketIcEngine::start_with_time_step(Server::Url(url.clone()), 2, TimeStep::POCKET_IC)?,
        &wasms,
    )?;
    println!(
        "{CALLS} calls each way across two subnets: in-process simulator {in_process:.2?}, pocket-ic client + served simulator {served:.2?}: {:.1}x",
        served.as_secs_f64() / in_process.as_secs_f64()
    );
    let pic = pocket_ic::PocketIcBuilder::new().with_server_url(url).with_application_subnet().build();
    let started = Instant::now();
    for _ in 0..BARE_REQUESTS {
        pic.get_time();
    }
    println!(
        "one bare request (get_time) through the pocket-ic client: {:.0?}",
        started.elapsed() / BARE_REQUESTS
    );
    Ok(())
}
