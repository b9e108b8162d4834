//! Load that shares the queues: several plans at once from each of several
//! callers, on one or more subnets, against the same callees, with the
//! pings the callees execute counted round by round.

use anyhow::{Context, Result, anyhow, bail};
use candid::{Principal, decode_one, encode_args};
use canister_wasm::CanisterWasms;
use interface::{Plan, Report, RetryPolicy};
use std::time::{Duration, Instant};

use crate::caller_client::{CallerClient, round_limit};
use crate::engines::{Engine, IngressId};
use crate::scenario::{self, JOB_ROUND_ALLOWANCE, Topology, controller};

/// How much runs at once. The default (1, 1, 1) is one plan from one caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Load {
    /// Plans each caller runs at once.
    pub plans: u64,
    pub callers: u64,
    /// Subnets the callers are spread over (round-robin); across subnets the
    /// callees are on a subnet of their own.
    pub caller_subnets: u64,
}

impl Default for Load {
    fn default() -> Self {
        Self { plans: 1, callers: 1, caller_subnets: 1 }
    }
}

impl Load {
    /// Subnets the engine needs for `topology`.
    pub fn subnets(&self, topology: Topology) -> usize {
        match topology {
            Topology::SameSubnet => 1,
            Topology::CrossSubnet => self.caller_subnets as usize + 1,
        }
    }

    /// Plans in flight at once.
    pub fn plans_in_all(&self) -> u64 {
        self.plans * self.callers
    }
}

/// Callers and the callees they share.
#[derive(Clone, Debug)]
pub struct LoadDeployment {
    pub callers: Vec<Principal>,
    pub callees: Vec<Principal>,
}

/// Installs `load.callers` callers and `callees` callees; every caller's
/// stored callee is the first.
pub fn deploy(
    engine: &mut dyn Engine,
    topology: Topology,
    load: Load,
    callees: usize,
    wasms: &CanisterWasms,
) -> Result<LoadDeployment> {
    if topology == Topology::SameSubnet && load.caller_subnets > 1 {
        bail!("callers on {} subnets need the cross-subnet topology", load.caller_subnets);
    }
    let callee_subnet = load.subnets(topology) - 1;
    let install = |engine: &mut dyn Engine, subnet: usize, wasm: &[u8]| -> Result<Principal> {
        let canister = engine.create_canister(subnet, controller())?;
        engine.install(canister, wasm, controller())?;
        Ok(canister)
    };
    let callees = (0..callees.max(1))
        .map(|_| install(engine, callee_subnet, &wasms.callee).context("installing a callee"))
        .collect::<Result<Vec<_>>>()?;
    let mut callers = vec![];
    for i in 0..load.callers.max(1) {
        let subnet = (i % load.caller_subnets.max(1)) as usize;
        let caller =
            install(engine, subnet.min(callee_subnet), &wasms.caller).context("installing a caller")?;
        client(caller).setup_callee(engine, callees[0])?;
        for &callee in &callees {
            scenario::admit_caller(engine, callee, caller)?;
        }
        callers.push(caller);
    }
    Ok(LoadDeployment { callers, callees })
}

fn client(caller: Principal) -> CallerClient {
    CallerClient { canister: caller, sender: controller() }
}

/// What a load run took: every plan's report, and the callees' pace.
#[derive(Clone, Debug)]
pub struct LoadRun {
    pub reports: Vec<Report>,
    /// Rounds from submitting every plan until the last one finished.
    pub rounds: u64,
    pub wall: Duration,
    /// The callers' balances before minus after.
    pub cycles: u128,
    /// The most pings the callees executed in one round.
    pub peak_pings_per_round: u64,
}

/// A plan under way: its `run_plan` or `start_job` message, or its job.
enum Running {
    Plan(IngressId),
    Starting(Principal, IngressId),
    Job(Principal, u64),
}

/// Runs `plan` `load.plans` times on every caller at once (as jobs with
/// `retry`), ticking until all finished.
pub fn run(
    engine: &mut dyn Engine,
    deployment: &LoadDeployment,
    load: Load,
    plan: &Plan,
    retry: Option<RetryPolicy>,
) -> Result<LoadRun> {
    let started = Instant::now();
    let mut balances = vec![];
    let mut running = vec![];
    for &caller in &deployment.callers {
        balances.push(engine.cycle_balance(caller)?);
        for _ in 0..load.plans {
            running.push(match retry {
                None => Running::Plan(client(caller).submit_run_plan(engine, plan)?),
                Some(retry) => Running::Starting(
                    caller,
                    engine.submit_update(
                        caller,
                        controller(),
                        "start_job",
                        encode_args((plan, Some(retry)))?,
                    )?,
                ),
            });
        }
    }
    let pings = plan.n.saturating_mul(load.plans_in_all());
    let limit = round_limit(pings).0 + if retry.is_some() { JOB_ROUND_ALLOWANCE } else { 0 };
    let mut reports = vec![];
    let (mut rounds, mut peak) = (0, 0);
    let mut executed = executed_pings(engine, &deployment.callees)?;
    loop {
        running = poll(engine, running, &mut reports)?;
        if running.is_empty() {
            break;
        }
        if rounds == limit {
            bail!("{} plans still running after {limit} rounds", running.len());
        }
        engine.tick();
        rounds += 1;
        let now = executed_pings(engine, &deployment.callees)?;
        peak = peak.max(now - executed);
        executed = now;
    }
    let wall = started.elapsed();
    let mut cycles = 0u128;
    for (&caller, before) in deployment.callers.iter().zip(balances) {
        cycles += before.saturating_sub(engine.cycle_balance(caller)?);
    }
    Ok(LoadRun { reports, rounds, wall, cycles, peak_pings_per_round: peak })
}

/// The plans still running; the reports of those that finished go to `done`.
fn poll(engine: &mut dyn Engine, running: Vec<Running>, done: &mut Vec<Report>) -> Result<Vec<Running>> {
    let mut still = vec![];
    for r in running {
        let r = match r {
            Running::Starting(caller, id) => match engine.ingress_status(id) {
                Some(outcome) => {
                    let reply =
                        outcome.map_err(|reject| anyhow!("the caller rejected start_job: {reject}"))?;
                    Running::Job(caller, decode_one(&reply).context("decoding the job id")?)
                }
                None => Running::Starting(caller, id),
            },
            other => other,
        };
        match r {
            Running::Plan(id) => match engine.ingress_status(id) {
                Some(outcome) => {
                    let reply =
                        outcome.map_err(|reject| anyhow!("the caller rejected run_plan: {reject}"))?;
                    done.push(decode_one(&reply).context("decoding the report of run_plan")?);
                }
                None => still.push(r),
            },
            Running::Job(caller, job) => match client(caller).job_status(engine, job)? {
                Some(report) if report.finished => done.push(report),
                Some(_) => still.push(r),
                None => bail!("the caller does not know job {job}"),
            },
            Running::Starting(..) => still.push(r),
        }
    }
    Ok(still)
}

/// Pings the callees executed so far.
fn executed_pings(engine: &mut dyn Engine, callees: &[Principal]) -> Result<u64> {
    callees.iter().map(|&callee| scenario::pings_received(engine, callee)).sum()
}
