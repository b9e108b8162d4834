//! A typed client for the caller canister over any engine: one method per
//! endpoint, arguments and replies in candid, rounds counted (in the style
//! of pocket-ic's `update_candid_as`).

use anyhow::{Context, Result, anyhow, bail};
use candid::utils::ArgumentEncoder;
use candid::{CandidType, Principal, decode_one, encode_args, encode_one};
use interface::{Plan, Report, RetryPolicy, Strategy};
use serde::de::DeserializeOwned;
use std::time::{Duration, Instant};

use crate::engines::{CanisterCall, Engine, IngressId};
use crate::rounds::{self, RoundLimit, RoundsToComplete};

/// The caller canister, called by `sender`.
#[derive(Clone, Copy, Debug)]
pub struct CallerClient {
    pub canister: Principal,
    pub sender: Principal,
}

/// A call's decoded reply, and what it took.
#[derive(Debug)]
pub struct Answered<T> {
    pub reply: T,
    pub rounds: RoundsToComplete,
    pub wall: Duration,
}

/// Generous: a sequential cross-subnet run of `pings` needs pings + 1 rounds.
pub(crate) fn round_limit(pings: u64) -> RoundLimit {
    RoundLimit(pings.saturating_mul(4).saturating_add(1_000))
}

impl CallerClient {
    pub fn setup_callee(&self, engine: &mut dyn Engine, callee: Principal) -> Result<()> {
        self.update::<_, ()>(engine, "setup_callee", (callee,), round_limit(1)).map(|_| ())
    }

    /// The example's endpoint for `strategy` (`sequential_calls`,
    /// `parallel_calls`): how many of `n` pings succeeded.
    pub fn example(&self, engine: &mut dyn Engine, strategy: Strategy, n: u64) -> Result<Answered<u64>> {
        self.update(engine, example_endpoint(strategy)?, (n,), round_limit(n))
    }

    pub fn run_plan(&self, engine: &mut dyn Engine, plan: &Plan) -> Result<Answered<Report>> {
        self.update(engine, "run_plan", (plan,), round_limit(plan.n))
    }

    /// Starts a job; its id.
    pub fn start_job(
        &self,
        engine: &mut dyn Engine,
        plan: &Plan,
        retry: Option<RetryPolicy>,
    ) -> Result<Answered<u64>> {
        self.update(engine, "start_job", (plan, retry), round_limit(1))
    }

    /// A job's report so far; `None` for an unknown id.
    pub fn job_status(&self, engine: &mut dyn Engine, job: u64) -> Result<Option<Report>> {
        let reply = engine
            .query(CanisterCall::new(self.canister, self.sender, "job_status", encode_one(job)?))
            .map_err(|reject| anyhow!("job_status was rejected: {reject}"))?;
        Ok(decode_one(&reply)?)
    }

    /// Submits `run_plan` without waiting: several can run in one round.
    pub fn submit_run_plan(&self, engine: &mut dyn Engine, plan: &Plan) -> Result<IngressId> {
        engine.submit_update(self.canister, self.sender, "run_plan", encode_one(plan)?)
    }

    /// Submits the example's endpoint for `strategy` without waiting.
    pub fn submit_example(&self, engine: &mut dyn Engine, strategy: Strategy, n: u64) -> Result<IngressId> {
        engine.submit_update(self.canister, self.sender, example_endpoint(strategy)?, encode_one(n)?)
    }

    fn update<A: ArgumentEncoder, R: CandidType + DeserializeOwned>(
        &self,
        engine: &mut dyn Engine,
        method: &str,
        args: A,
        limit: RoundLimit,
    ) -> Result<Answered<R>> {
        let started = Instant::now();
        let done = rounds::execute(engine, self.canister, self.sender, method, encode_args(args)?, limit)?;
        let wall = started.elapsed();
        let reply = done.outcome.map_err(|reject| anyhow!("the caller rejected {method}: {reject}"))?;
        let reply = decode_one(&reply).with_context(|| format!("decoding the reply of {method}"))?;
        Ok(Answered { reply, rounds: done.rounds, wall })
    }
}

fn example_endpoint(strategy: Strategy) -> Result<&'static str> {
    match strategy.example_endpoint() {
        Some(endpoint) => Ok(endpoint),
        None => bail!("the example has no endpoint for {}: run it as a plan", strategy.name()),
    }
}
