//! The example's scenario: a caller and a callee on one or two subnets, and
//! one fan-out of `n` pings per run.

use anyhow::{Context, Result, bail};
use candid::{Principal, decode_one, encode_one};
use serde::Serialize;
use std::time::{Duration, Instant};

use crate::engines::Engine;
use crate::rounds::{self, RoundLimit, RoundsToComplete};
use canister_wasm::CanisterWasms;

/// Where the two canisters live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// Both on one subnet, as on a local dfx replica.
    SameSubnet,
    /// Caller on the subnet with the lower id, callee on the other.
    CrossSubnet,
}

impl Topology {
    pub fn from_subnets(subnets: u8) -> Self {
        if subnets == 1 { Topology::SameSubnet } else { Topology::CrossSubnet }
    }

    pub fn subnets(self) -> usize {
        match self {
            Topology::SameSubnet => 1,
            Topology::CrossSubnet => 2,
        }
    }
}

/// How the caller fans out its pings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    Sequential,
    Parallel,
}

impl Strategy {
    pub const EXAMPLE: [Strategy; 2] = [Strategy::Sequential, Strategy::Parallel];

    /// The caller's endpoint that runs it.
    pub fn method(self) -> &'static str {
        match self {
            Strategy::Sequential => "sequential_calls",
            Strategy::Parallel => "parallel_calls",
        }
    }

    /// As the example prints it: `Sequential calls: ...`.
    pub fn label(self) -> &'static str {
        match self {
            Strategy::Sequential => "Sequential",
            Strategy::Parallel => "Parallel",
        }
    }
}

/// The principal that creates, controls and drives the canisters.
pub fn controller() -> Principal {
    Principal::self_authenticating(b"multi_subnet harness controller")
}

/// A caller wired to a callee.
#[derive(Clone, Copy, Debug)]
pub struct Deployment {
    pub topology: Topology,
    pub caller: Principal,
    pub callee: Principal,
}

/// Generous: a sequential cross-subnet run needs n + 1 rounds.
fn round_limit(calls: u64) -> RoundLimit {
    RoundLimit(4 * calls + 1_000)
}

/// Which of the two subnets gets the caller (cross-subnet only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallerSubnet {
    /// The subnet with the lower id, whose round runs first in a tick.
    Lower,
    Higher,
}

/// Creates and installs both canisters and calls `setup_callee`; across
/// subnets the caller goes on the subnet with the lower id.
pub fn deploy(engine: &mut dyn Engine, topology: Topology, wasms: &CanisterWasms) -> Result<Deployment> {
    deploy_placed(engine, topology, CallerSubnet::Lower, wasms)
}

pub fn deploy_placed(
    engine: &mut dyn Engine,
    topology: Topology,
    caller_subnet: CallerSubnet,
    wasms: &CanisterWasms,
) -> Result<Deployment> {
    if engine.subnet_count() < topology.subnets() {
        bail!("{topology:?} needs {} subnets; the engine has {}", topology.subnets(), engine.subnet_count());
    }
    let controller = controller();
    let higher = topology.subnets() - 1;
    let (caller_subnet, callee_subnet) = match caller_subnet {
        CallerSubnet::Lower => (0, higher),
        CallerSubnet::Higher => (higher, 0),
    };
    let caller = engine.create_canister(caller_subnet, controller)?;
    let callee = engine.create_canister(callee_subnet, controller)?;
    engine.install(caller, &wasms.caller, controller).context("installing the caller")?;
    engine.install(callee, &wasms.callee, controller).context("installing the callee")?;
    let setup =
        rounds::execute(engine, caller, controller, "setup_callee", encode_one(callee)?, round_limit(1))?;
    if let Err(reject) = setup.outcome {
        bail!("setup_callee was rejected: {reject}");
    }
    Ok(Deployment { topology, caller, callee })
}

/// One fan-out of `calls` pings and what it took.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub strategy: Strategy,
    pub topology: Topology,
    pub calls: u64,
    pub succeeded: u64,
    pub rounds: RoundsToComplete,
    #[serde(rename = "wall_ms", serialize_with = "as_millis")]
    pub wall: Duration,
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// Asks the caller to make `calls` pings with `strategy`; `succeeded` is
/// decoded from the caller's reply.
pub fn run(engine: &mut dyn Engine, deployment: &Deployment, strategy: Strategy, calls: u64) -> Result<Run> {
    let method = strategy.method();
    let started = Instant::now();
    let done = rounds::execute(
        engine,
        deployment.caller,
        controller(),
        method,
        encode_one(calls)?,
        round_limit(calls),
    )?;
    let wall = started.elapsed();
    let reply =
        done.outcome.map_err(|reject| anyhow::anyhow!("the caller rejected {method}({calls}): {reject}"))?;
    let succeeded: u64 = decode_one(&reply).with_context(|| format!("decoding the reply of {method}"))?;
    Ok(Run { strategy, topology: deployment.topology, calls, succeeded, rounds: done.rounds, wall })
}
