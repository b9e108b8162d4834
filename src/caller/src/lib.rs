//! The caller canister: endpoints only. The strategies live in [`fan_out`],
//! plans and reports in [`plan`], retrying jobs in [`jobs`], the rules in
//! [`guards`].

mod fan_out;
mod guards;
mod jobs;
pub mod plan;

use candid::Principal;
use ic_cdk::api::{
    call_context_instruction_counter, canister_cycle_balance, canister_self, canister_version,
    env_var_name_exists, env_var_value, is_controller, msg_caller, time,
};
use ic_cdk::call::{Call, CallFailed};
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::{DefaultMemoryImpl, StableCell};
use std::cell::RefCell;

use guards::CALLEE_ENV_VAR;
use jobs::{Job, NonceRange};
use plan::{
    Acknowledged, CallId, FailureKind, Outcome, Pace, PingBatch, Plan, Report, RetryPolicy, Strategy, Tally,
    ValidPlan, Wait,
};
use serde_bytes::ByteBuf;
use std::collections::BTreeMap;
use std::time::Duration;

type Memory = VirtualMemory<DefaultMemoryImpl>;

/// Stable memory regions; a new piece of persistent state takes the next id.
const CALLEE_MEMORY: MemoryId = MemoryId::new(0);

thread_local! {
    static MEMORY_MANAGER: MemoryManager<DefaultMemoryImpl> =
        MemoryManager::init(DefaultMemoryImpl::default());

    /// Lives in stable memory, so it survives upgrades without upgrade hooks.
    static CALLEE: RefCell<StableCell<Option<Principal>, Memory>> = RefCell::new(
        StableCell::init(MEMORY_MANAGER.with(|m| m.get(CALLEE_MEMORY)), None),
    );
}

fn caller_is_controller() -> Result<(), String> {
    let caller = msg_caller();
    guards::require_controller(caller, is_controller(&caller))
}

/// Rejects the message with `message`. Nothing has changed yet when the
/// endpoints below call it, so nothing is lost.
fn reject(message: String) -> ! {
    ic_cdk::trap(message)
}

#[ic_cdk::update(guard = "caller_is_controller")]
fn setup_callee(callee: Principal) {
    let callee = guards::check_callee(callee, canister_self()).unwrap_or_else(|e| reject(e));
    CALLEE.with(|c| c.borrow_mut().set(Some(callee)));
}

fn callee() -> Result<Principal, String> {
    let stored = CALLEE.with(|c| *c.borrow().get());
    guards::resolve_callee(stored, || {
        env_var_name_exists(CALLEE_ENV_VAR).then(|| env_var_value(CALLEE_ENV_VAR))
    })
}

/// What one call carries.
#[derive(Clone, Copy)]
enum Pings {
    /// `ping`.
    One,
    /// `ping_once(nonce)`: executed once however often it arrives.
    OneOnce(u64),
    /// `ping_batch`: `count` pings, nonce-tagged from `first_nonce` if given.
    Batch { count: u64, first_nonce: Option<u64> },
}

/// How a plan reaches its callees.
struct Pinger<'a> {
    plan: &'a ValidPlan,
    /// A job whose retries need nonces: the nonce of its first ping.
    first_nonce: Option<u64>,
}

impl Pinger<'_> {
    fn call(&self, call: CallId) -> impl std::future::Future<Output = Outcome> + use<> {
        let plan = self.plan;
        let callee = plan.callees[(call.index % plan.callees.len() as u64) as usize];
        let nonce = self.first_nonce.map(|first| first + plan.first_ping(call));
        let pings = match (plan.strategy, nonce) {
            (Strategy::Batched, first_nonce) => Pings::Batch { count: call.pings, first_nonce },
            (_, Some(nonce)) => Pings::OneOnce(nonce),
            (_, None) => Pings::One,
        };
        ping(callee, plan.wait, plan.timeout_seconds, pings)
    }

    /// Makes `calls` at `pace` and tallies them.
    async fn run(&self, pace: Pace, calls: Vec<CallId>) -> Tally {
        fan_out::run(pace, calls, |call| self.call(call)).await
    }
}

/// One call to `callee`; yields what it acknowledged.
async fn ping(callee: Principal, wait: Wait, timeout: Option<u32>, pings: Pings) -> Outcome {
    let method = match pings {
        Pings::One => "ping",
        Pings::OneOnce(_) => "ping_once",
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
        Pings::OneOnce(nonce) => {
            let response = call.with_arg(nonce).await.map_err(classify)?;
            match response.candid::<bool>() {
                Ok(true) => Ok(Acknowledged::now(1)),
                Ok(false) => Ok(Acknowledged { now: 0, earlier: 1 }),
                Err(_) => Err(FailureKind::CandidDecodeFailed),
            }
        }
        Pings::Batch { count, first_nonce } => {
            let batch = PingBatch { first_nonce, count: count as u32 };
            let response = call.with_arg(batch).await.map_err(classify)?;
            let results: ByteBuf = response.candid().map_err(|_| FailureKind::CandidDecodeFailed)?;
            plan::batch_acknowledgement(&results, count)
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
async fn run(plan: ValidPlan) -> Report {
    let (started, balance) = (time(), canister_cycle_balance());
    let pinger = Pinger { plan: &plan, first_nonce: None };
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

fn validate(plan: Plan, retry: Option<RetryPolicy>) -> ValidPlan {
    plan::validate(plan, retry, callee, canister_self()).unwrap_or_else(|e| reject(e))
}

/// The example's endpoints: a plan with the stored callee.
fn example_plan(strategy: Strategy, n: u64) -> ValidPlan {
    validate(Plan { strategy, n, k: None, wait: None, callees: None, timeout_seconds: None }, None)
}

#[ic_cdk::update(guard = "caller_is_controller")]
async fn sequential_calls(n: u64) -> u64 {
    run(example_plan(Strategy::Sequential, n)).await.succeeded
}

#[ic_cdk::update(guard = "caller_is_controller")]
async fn parallel_calls(n: u64) -> u64 {
    run(example_plan(Strategy::Parallel, n)).await.succeeded
}

/// Runs a plan in this call and replies with its report. (Retries run
/// from timers, outside this call: plans that retry run as jobs.)
#[ic_cdk::update(guard = "caller_is_controller")]
async fn run_plan(plan: Plan) -> Report {
    run(validate(plan, None)).await
}

// ----- Jobs -----

/// Every job, by id; in the heap, saved to stable memory across upgrades.
#[derive(candid::CandidType, candid::Deserialize, Default)]
struct Jobs {
    next_id: u64,
    jobs: BTreeMap<u64, Job>,
}

thread_local! {
    static JOBS: RefCell<Jobs> = RefCell::new(Jobs::default());
    /// Not kept across upgrades: the version they bring starts a new range.
    static NONCES: RefCell<NonceRange> = RefCell::new(NonceRange::default());
    /// Jobs with a retry timer set, and when it fires (timers do not
    /// survive upgrades, so neither does this).
    static ARMED: RefCell<BTreeMap<u64, u64>> = const { RefCell::new(BTreeMap::new()) };
}

/// Jobs kept for `job_status`; beyond this, the oldest finished ones go.
const MAX_JOBS: usize = 1_000;

fn with_job<R>(id: u64, f: impl FnOnce(&mut Job) -> R) -> R {
    JOBS.with(|j| f(j.borrow_mut().jobs.get_mut(&id).expect("only finished jobs are removed")))
}

/// Starts a plan as a job, retrying with `retry` if given, and replies with
/// its id at once; `job_status` tells how it goes.
#[ic_cdk::update(guard = "caller_is_controller")]
fn start_job(plan: Plan, retry: Option<RetryPolicy>) -> u64 {
    let plan = validate(plan, retry);
    let first_nonce = plan.retry.filter(|r| r.idempotent).map(|_| {
        NONCES
            .with(|n| n.borrow_mut().reserve(canister_version(), plan.n.get()))
            .unwrap_or_else(|e| reject(e))
    });
    let id = JOBS.with(|j| {
        let mut j = j.borrow_mut();
        j.next_id += 1;
        let id = j.next_id;
        j.jobs.insert(id, Job::new(plan, first_nonce, time(), canister_cycle_balance()));
        // Keep memory (and pre_upgrade's work) bounded: forget the oldest
        // finished jobs.
        while j.jobs.len() > MAX_JOBS {
            let Some(oldest) = j.jobs.iter().find(|(_, job)| job.finished_at.is_some()).map(|(&id, _)| id)
            else {
                break;
            };
            j.jobs.remove(&oldest);
        }
        id
    });
    ic_cdk::futures::spawn(first_pass(id));
    id
}

#[ic_cdk::query]
fn job_status(id: u64) -> Option<Report> {
    JOBS.with(|j| j.borrow().jobs.get(&id).map(|job| job.report(time(), canister_cycle_balance())))
}

async fn first_pass(id: u64) {
    let (plan, first_nonce) = with_job(id, |job| (job.plan.clone(), job.first_nonce));
    let tally = Pinger { plan: &plan, first_nonce }.run(plan.pace(), plan.calls()).await;
    with_job(id, |job| job.absorb(&tally, |_| 1, call_context_instruction_counter(), time()));
    arm_retry_timer(id);
}

/// Sets a timer for the job's next due retry, unless one fires by then.
fn arm_retry_timer(id: u64) {
    let Some(due) = with_job(id, |job| job.next_due()) else { return };
    if ARMED.with(|a| a.borrow().get(&id).is_some_and(|&armed| armed <= due)) {
        return;
    }
    ARMED.with(|a| a.borrow_mut().insert(id, due));
    let delay = Duration::from_nanos(due.saturating_sub(time()));
    ic_cdk_timers::set_timer(delay, retry_pass(id));
}

/// The most retries one timer makes at once: a bounded plan's window, else
/// what the callees' queues can take.
fn retry_window(plan: &ValidPlan) -> usize {
    match plan.strategy {
        Strategy::Bounded => plan.k as usize,
        _ => RETRY_WINDOW_PER_CALLEE * plan.callees.len(),
    }
}

/// The platform's per-pair queue is 500; a window of that size per callee
/// keeps a retry pass from failing for lack of slots on its own.
const RETRY_WINDOW_PER_CALLEE: usize = 500;

/// Runs from a timer: the due retries, all at once, then the next timer.
async fn retry_pass(id: u64) {
    ARMED.with(|a| a.borrow_mut().remove(&id));
    let (plan, first_nonce) = with_job(id, |job| (job.plan.clone(), job.first_nonce));
    let due = with_job(id, |job| job.take_due(time(), retry_window(&plan)));
    arm_retry_timer(id);
    if due.is_empty() {
        return;
    }
    let attempts: BTreeMap<u64, u32> = due.iter().map(|p| (p.call.index, p.attempt)).collect();
    // A bounded plan's retries keep to its window; the others' go at once.
    let pace = match plan.pace() {
        Pace::Window(k) if k > 1 => Pace::Window(k),
        _ => Pace::AllAtOnce,
    };
    let tally = Pinger { plan: &plan, first_nonce }.run(pace, due.iter().map(|p| p.call).collect()).await;
    with_job(id, |job| {
        job.absorb(&tally, |call| attempts[&call.index], call_context_instruction_counter(), time())
    });
    arm_retry_timer(id);
}

const JOBS_MEMORY: MemoryId = MemoryId::new(1);

thread_local! {
    /// The jobs while an upgrade is under way.
    static JOBS_SAVED: RefCell<StableCell<Vec<u8>, Memory>> = RefCell::new(
        StableCell::init(MEMORY_MANAGER.with(|m| m.get(JOBS_MEMORY)), vec![]),
    );
}

#[ic_cdk::pre_upgrade]
fn pre_upgrade() {
    let saved = JOBS.with(|j| candid::encode_one(&*j.borrow())).expect("jobs encode");
    JOBS_SAVED.with(|s| s.borrow_mut().set(saved));
}

/// Restores the jobs and re-arms their timers, which an upgrade drops.
#[ic_cdk::post_upgrade]
fn post_upgrade() {
    let saved = JOBS_SAVED.with(|s| s.borrow_mut().set(vec![]));
    if !saved.is_empty() {
        let jobs: Jobs = candid::decode_one(&saved).expect("jobs saved by pre_upgrade decode");
        JOBS.with(|j| *j.borrow_mut() = jobs);
    }
    let ids: Vec<u64> = JOBS.with(|j| j.borrow().jobs.keys().copied().collect());
    for id in ids {
        with_job(id, |job| job.after_upgrade(id, time()));
        arm_retry_timer(id);
    }
}

ic_cdk::export_candid!();

#[cfg(test)]
mod candid_interface {
    use candid_parser::utils::{CandidSource, service_compatible, service_equal};

    #[test]
    fn caller_did_matches_the_code() {
        let declared = include_str!("../caller.did");
        let exported = super::__export_service();
        service_equal(CandidSource::Text(declared), CandidSource::Text(&exported))
            .unwrap_or_else(|e| panic!("caller.did differs from the code: {e}\n{exported}"));
    }

    /// Clients written against an earlier release keep working.
    #[test]
    fn caller_did_is_compatible_with_every_frozen_release() {
        let current = include_str!("../caller.did");
        let frozen = include_str!("../frozen/v0.1.0.did");
        service_compatible(CandidSource::Text(current), CandidSource::Text(frozen))
            .unwrap_or_else(|e| panic!("caller.did breaks clients of v0.1.0: {e}"));
    }
}
