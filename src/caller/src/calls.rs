//! The calls a plan makes to its callees, how their answers and failures
//! are read, and a plan's run from first call to report.

use candid::Principal;
use ic_cdk::api::{call_context_instruction_counter, canister_cycle_balance, time};
use ic_cdk::call::{Call, CallFailed};
use interface::{
    Acknowledged, FailureKind, OncePing, Outcome, PingBatch, PlainPingBatch, Report, Strategy, Wait,
};
use serde_bytes::ByteBuf;

use crate::fan_out;
use crate::plan::{CallId, Pace, Tally, ValidPlan};

/// What one call carries.
#[derive(Clone, Copy)]
enum Pings {
    /// `ping`.
    One,
    /// `ping_once_with_floor`: executed once however often it arrives.
    OneOnce(Nonce),
    /// `ping_batch`: `count` pings, nonce-tagged from the given one's.
    Batch { count: u64, first: Option<Nonce> },
}

/// What a nonce-tagged call carries: its (first) ping's nonce, and the
/// caller's floor at its callee.
#[derive(Clone, Copy)]
struct Nonce {
    nonce: u64,
    floor: u64,
}

/// The nonces of a job whose retries need them.
pub struct PingNonces {
    /// The nonce of the job's first ping; ping `i` carries this plus `i`.
    pub first: u64,
    /// The floor sent to each of the plan's callees, in their order
    /// ([`crate::jobs::nonce_floors`]).
    pub floors: Vec<u64>,
}

/// How a plan reaches its callees.
pub struct Pinger<'a> {
    pub plan: &'a ValidPlan,
    pub nonces: Option<PingNonces>,
}

impl Pinger<'_> {
    fn call(&self, call: CallId) -> impl std::future::Future<Output = Outcome> + use<> {
        let plan = self.plan;
        let which = (call.index % plan.callees.len() as u64) as usize;
        let nonce = self
            .nonces
            .as_ref()
            .map(|n| Nonce { nonce: n.first + plan.first_ping(call), floor: n.floors[which] });
        let pings = match (plan.strategy, nonce) {
            (Strategy::Batched, first) => Pings::Batch { count: call.pings, first },
            (_, Some(nonce)) => Pings::OneOnce(nonce),
            (_, None) => Pings::One,
        };
        ping(plan.callees[which], plan.wait, plan.timeout_seconds, pings)
    }

    /// Makes `calls` at `pace` and tallies them.
    pub async fn run(&self, pace: Pace, calls: Vec<CallId>) -> Tally {
        fan_out::run(pace, calls, |call| self.call(call)).await
    }
}

/// One call to `callee`; yields what it acknowledged.
async fn ping(callee: Principal, wait: Wait, timeout: Option<u32>, pings: Pings) -> Outcome {
    let method = match pings {
        Pings::One => "ping",
        Pings::OneOnce(_) => "ping_once_with_floor",
        Pings::Batch { .. } => "ping_batch",
    };
    let call = match (wait, timeout) {
        (Wait::Bounded, None) => Call::bounded_wait(callee, method),
        (Wait::Bounded, Some(seconds)) => Call::bounded_wait(callee, method).change_timeout(seconds),
        (Wait::Unbounded, _) => Call::unbounded_wait(callee, method),
    };
    let classify = |error: CallFailed| classify(&error, callee);
    match pings {
        Pings::One => call.await.map(|_| Acknowledged::now(1)).map_err(classify),
        Pings::OneOnce(Nonce { nonce, floor }) => {
            let response = call.with_arg(OncePing { nonce, floor }).await.map_err(classify)?;
            match response.candid::<bool>() {
                Ok(true) => Ok(Acknowledged::now(1)),
                Ok(false) => Ok(Acknowledged { now: 0, earlier: 1 }),
                Err(_) => Err(FailureKind::CandidDecodeFailed),
            }
        }
        Pings::Batch { count, first } => {
            let response = match first {
                // Each field encoded costs: leave out the absent ones.
                None => call.with_arg(PlainPingBatch { count: count as u32 }).await,
                Some(Nonce { nonce, floor }) => {
                    let batch =
                        PingBatch { first_nonce: Some(nonce), count: count as u32, floor: Some(floor) };
                    call.with_arg(batch).await
                }
            };
            let response = response.map_err(classify)?;
            let results: ByteBuf = response.candid().map_err(|_| FailureKind::CandidDecodeFailed)?;
            interface::batch_acknowledgement(results.into_vec(), count)
        }
    }
}

/// Where a failure is classified.
fn classify(error: &CallFailed, callee: Principal) -> FailureKind {
    match error {
        CallFailed::InsufficientLiquidCycleBalance(_) => FailureKind::InsufficientLiquidCycleBalance,
        CallFailed::CallPerformFailed(_) => FailureKind::CallPerformFailed,
        CallFailed::CallRejected(rejected) => {
            FailureKind::from_reject(rejected.reject_code().ok(), rejected.reject_message(), callee)
        }
    }
}

/// Runs a validated plan in this call context and reports on it.
pub async fn run(plan: ValidPlan) -> Report {
    let (started, balance) = (time(), canister_cycle_balance());
    let pinger = Pinger { plan: &plan, nonces: None };
    let tally = pinger.run(plan.pace(), plan.calls()).await;
    Report {
        requested: plan.n.get(),
        succeeded: tally.succeeded,
        delivered_earlier: tally.delivered_earlier,
        calls: tally.calls,
        failures: tally.failures(),
        retries: 0,
        peak_in_flight: tally.peak_in_flight,
        instructions: call_context_instruction_counter(),
        cycles_spent: balance.saturating_sub(canister_cycle_balance()).into(),
        time_elapsed_ns: time() - started,
        finished: true,
    }
}
