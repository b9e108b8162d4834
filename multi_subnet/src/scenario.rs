//! The example's scenario: a caller and a callee on one or two subnets, and
//! one fan-out of `n` pings per run.

use anyhow::{Context, Result, anyhow, bail};
use candid::{Principal, decode_one, encode_one};
use interface::{Plan, Report, RetryPolicy, Strategy};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

use crate::caller_client::{CallerClient, round_limit};
use crate::engines::{CanisterCall, Engine};
use crate::rounds::{self, RoundLimit, RoundsToComplete};
use canister_wasm::CanisterWasms;

/// Where the two canisters live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
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

    pub fn name(self) -> &'static str {
        match self {
            Topology::SameSubnet => "same-subnet",
            Topology::CrossSubnet => "cross-subnet",
        }
    }

    pub fn subnets(self) -> usize {
        match self {
            Topology::SameSubnet => 1,
            Topology::CrossSubnet => 2,
        }
    }
}

/// The principal that creates, controls and drives the canisters.
pub fn controller() -> Principal {
    Principal::self_authenticating(b"multi_subnet harness controller")
}

/// A caller wired to its callees (the first is the one `setup_callee` stored).
#[derive(Clone, Debug)]
pub struct Deployment {
    pub topology: Topology,
    pub caller: Principal,
    pub callees: Vec<Principal>,
}

impl Deployment {
    /// The callee the example's endpoints call.
    pub fn callee(&self) -> Principal {
        self.callees[0]
    }

    /// The caller, called by the [`controller`].
    pub fn client(&self) -> CallerClient {
        CallerClient { canister: self.caller, sender: controller() }
    }
}

/// Which of the two subnets gets the caller (cross-subnet only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallerSubnet {
    /// The subnet with the lower id, whose round runs first in a tick.
    Lower,
    Higher,
}

/// Where the canisters go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub caller_subnet: CallerSubnet,
    /// Callees, all on the callee subnet.
    pub callees: usize,
}

impl Default for Placement {
    fn default() -> Self {
        Self { caller_subnet: CallerSubnet::Lower, callees: 1 }
    }
}

/// Creates and installs a caller and a callee and calls `setup_callee`;
/// across subnets the caller goes on the subnet with the lower id.
pub fn deploy(engine: &mut dyn Engine, topology: Topology, wasms: &CanisterWasms) -> Result<Deployment> {
    deploy_placed(engine, topology, Placement::default(), wasms)
}

pub fn deploy_placed(
    engine: &mut dyn Engine,
    topology: Topology,
    placement: Placement,
    wasms: &CanisterWasms,
) -> Result<Deployment> {
    if engine.subnet_count() < topology.subnets() {
        bail!("{topology:?} needs {} subnets; the engine has {}", topology.subnets(), engine.subnet_count());
    }
    let controller = controller();
    let higher = topology.subnets() - 1;
    let (caller_subnet, callee_subnet) = match placement.caller_subnet {
        CallerSubnet::Lower => (0, higher),
        CallerSubnet::Higher => (higher, 0),
    };
    let caller = engine.create_canister(caller_subnet, controller)?;
    engine.install(caller, &wasms.caller, controller).context("installing the caller")?;
    let mut callees = vec![];
    for _ in 0..placement.callees.max(1) {
        let callee = engine.create_canister(callee_subnet, controller)?;
        engine.install(callee, &wasms.callee, controller).context("installing a callee")?;
        callees.push(callee);
    }
    for &callee in &callees {
        admit_caller(engine, callee, caller)?;
    }
    let deployment = Deployment { topology, caller, callees };
    deployment.client().setup_callee(engine, deployment.callee())?;
    Ok(deployment)
}

/// Lets `caller` have its idempotent jobs' pings executed by `callee`
/// (the callee executes nonces only for callers its controllers admit).
pub fn admit_caller(engine: &mut dyn Engine, callee: Principal, caller: Principal) -> Result<()> {
    let done =
        rounds::execute(engine, callee, controller(), "admit_caller", encode_one(caller)?, round_limit(1))?;
    done.outcome.map_err(|reject| anyhow!("the callee rejected admit_caller: {reject}"))?;
    Ok(())
}

/// Pings the callee executed since it was installed (its `pings_received`).
pub fn pings_received(engine: &mut dyn Engine, callee: Principal) -> Result<u64> {
    let reply = engine
        .query(CanisterCall::new(callee, controller(), "pings_received", encode_one(())?))
        .map_err(|reject| anyhow!("pings_received was rejected: {reject}"))?;
    Ok(decode_one(&reply)?)
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
    /// Under the mainnet profile: the rounds times the round's duration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mainnet_seconds: Option<f64>,
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

/// Asks the caller to make `calls` pings with the example's endpoint for
/// `strategy`; `succeeded` is decoded from the caller's reply.
pub fn run(engine: &mut dyn Engine, deployment: &Deployment, strategy: Strategy, calls: u64) -> Result<Run> {
    let answered = deployment
        .client()
        .example(engine, strategy, calls)
        .with_context(|| format!("{} calls ({calls})", strategy.name()))?;
    Ok(Run {
        strategy,
        topology: deployment.topology,
        calls,
        succeeded: answered.reply,
        rounds: answered.rounds,
        wall: answered.wall,
        mainnet_seconds: None,
    })
}

/// A plan's report, as the caller made it, and what running it took.
#[derive(Clone, Debug)]
pub struct PlanRun {
    pub report: Report,
    pub rounds: RoundsToComplete,
    pub wall: Duration,
    /// The caller's balance before minus after, as the engine sees it once
    /// every call is answered and every prepayment refunded.
    pub cycles: u128,
}

/// Runs `plan` as a job (`start_job`) that retries with `retry`, ticking
/// until `job_status` says it finished; rounds count from the submission of
/// `start_job`.
pub fn run_job(
    engine: &mut dyn Engine,
    deployment: &Deployment,
    plan: &Plan,
    retry: RetryPolicy,
) -> Result<PlanRun> {
    let balance = engine.cycle_balance(deployment.caller)?;
    let started = Instant::now();
    let client = deployment.client();
    let job = client.start_job(engine, plan, Some(retry))?;
    let limit = RoundLimit(round_limit(plan.n).0.saturating_add(JOB_ROUND_ALLOWANCE));
    let (report, rounds) = rounds::tick_until(engine, limit, |engine| {
        Ok(client.job_status(engine, job.reply)?.filter(|r| r.finished))
    })
    .with_context(|| format!("job {}", job.reply))?;
    let rounds = RoundsToComplete(job.rounds.0 + rounds.0);
    let wall = started.elapsed();
    let cycles = balance.saturating_sub(engine.cycle_balance(deployment.caller)?);
    Ok(PlanRun { report, rounds, wall, cycles })
}

/// Rounds a job may spend waiting out its backoffs, beyond its calls.
pub(crate) const JOB_ROUND_ALLOWANCE: u64 = 100_000;

/// Runs `plan` with `run_plan`.
pub fn run_plan(engine: &mut dyn Engine, deployment: &Deployment, plan: &Plan) -> Result<PlanRun> {
    let balance = engine.cycle_balance(deployment.caller)?;
    let answered = deployment
        .client()
        .run_plan(engine, plan)
        .with_context(|| format!("run_plan({:?}, n = {})", plan.strategy, plan.n))?;
    let cycles = balance.saturating_sub(engine.cycle_balance(deployment.caller)?);
    Ok(PlanRun { report: answered.reply, rounds: answered.rounds, wall: answered.wall, cycles })
}
