//! The caller canister: endpoints only. The strategies live in [`fan_out`],
//! plans and reports in [`plan`], the rules in [`guards`].

mod fan_out;
mod guards;
pub mod plan;

use candid::Principal;
use ic_cdk::api::{
    call_context_instruction_counter, canister_cycle_balance, canister_self, env_var_name_exists,
    env_var_value, is_controller, msg_caller, time,
};
use ic_cdk::call::{Call, CallFailed};
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::{DefaultMemoryImpl, StableCell};
use std::cell::RefCell;

use guards::CALLEE_ENV_VAR;
use plan::{FailureKind, PingBatch, Plan, Report, Strategy, ValidPlan, Wait};
use serde_bytes::ByteBuf;

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

/// One call to `callee`: a `ping`, or a `ping_batch` carrying `pings`
/// pings. Yields how many pings were acknowledged.
async fn ping(callee: Principal, wait: Wait, batch: Option<u64>) -> Result<u64, FailureKind> {
    let method = if batch.is_some() { "ping_batch" } else { "ping" };
    let call = match wait {
        Wait::Bounded => Call::bounded_wait(callee, method),
        Wait::Unbounded => Call::unbounded_wait(callee, method),
    };
    match batch {
        None => call.await.map(|_| 1).map_err(|e| classify(&e)),
        Some(pings) => {
            let batch = PingBatch { first_nonce: 0, count: pings as u32 };
            let response = call.with_arg(batch).await.map_err(|e| classify(&e))?;
            let results: ByteBuf = response.candid().map_err(|_| FailureKind::CandidDecodeFailed)?;
            Ok(results.iter().filter(|&&r| r == plan::ACKNOWLEDGED).count() as u64)
        }
    }
}

/// Where a failure is classified.
fn classify(error: &CallFailed) -> FailureKind {
    match error {
        CallFailed::InsufficientLiquidCycleBalance(_) => FailureKind::InsufficientLiquidCycleBalance,
        CallFailed::CallPerformFailed(_) => FailureKind::CallPerformFailed,
        CallFailed::CallRejected(rejected) => FailureKind::from_reject_code(rejected.raw_reject_code()),
    }
}

/// Runs a validated plan in this call context and reports on it.
async fn run(plan: ValidPlan) -> Report {
    let (started, balance) = (time(), canister_cycle_balance());
    let callees = &plan.callees;
    let batched = plan.strategy == Strategy::Batched;
    let tally = fan_out::run(plan.strategy, plan.n.get(), plan.k, |i, pings| {
        ping(callees[(i % callees.len() as u64) as usize], plan.wait, batched.then_some(pings))
    })
    .await;
    Report {
        requested: plan.n.get(),
        succeeded: tally.succeeded,
        calls: tally.calls,
        failures: tally.failures(),
        retries: 0,
        peak_in_flight: tally.peak_in_flight,
        instructions: call_context_instruction_counter(),
        cycles_spent: balance.saturating_sub(canister_cycle_balance()).into(),
        time_elapsed_ns: time() - started,
    }
}

fn validate(plan: Plan) -> ValidPlan {
    plan::validate(plan, callee, canister_self()).unwrap_or_else(|e| reject(e))
}

/// The example's endpoints: a plan with the stored callee.
fn example_plan(strategy: Strategy, n: u64) -> ValidPlan {
    validate(Plan { strategy, n, k: None, wait: None, callees: None })
}

#[ic_cdk::update(guard = "caller_is_controller")]
async fn sequential_calls(n: u64) -> u64 {
    run(example_plan(Strategy::Sequential, n)).await.succeeded
}

#[ic_cdk::update(guard = "caller_is_controller")]
async fn parallel_calls(n: u64) -> u64 {
    run(example_plan(Strategy::Parallel, n)).await.succeeded
}

/// Runs any plan in this call and replies with its report.
#[ic_cdk::update(guard = "caller_is_controller")]
async fn run_plan(plan: Plan) -> Report {
    run(validate(plan)).await
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
