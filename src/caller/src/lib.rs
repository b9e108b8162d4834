//! The caller canister: endpoints only. The calls and how their outcomes
//! are read are in [`calls`], the paces in [`fan_out`], plans and their
//! checks in [`plan`], retrying jobs in [`jobs`], the rules in [`guards`],
//! stable memory in [`memory`].
//!
//! Every endpoint with arguments decodes them with [`endpoint_args`]: an
//! argument that is not candid of the method's type is rejected with a
//! message naming the method and the type, not ic-cdk's panic text. ic-cdk
//! would then export the argument as `blob`, so `hidden` leaves the export
//! to `candid_method` on the same function, with the real types.

mod calls;
mod fan_out;
mod guards;
mod jobs;
mod memory;
mod plan;

use candid::Principal;
use ic_cdk::api::{canister_self, env_var_name_exists, env_var_value, is_controller, msg_caller};
use ic_stable_structures::StableCell;
use interface::{Plan, Report, RetryPolicy, Strategy};
use std::cell::RefCell;

use guards::CALLEE_ENV_VAR;
use memory::Memory;
use plan::{PlanError, ValidPlan};

thread_local! {
    /// Lives in stable memory, so it survives upgrades without upgrade hooks.
    static CALLEE: RefCell<StableCell<Option<Principal>, Memory>> =
        RefCell::new(StableCell::init(memory::region(memory::CALLEE), None));
}

fn caller_is_controller() -> Result<(), String> {
    let caller = msg_caller();
    guards::require_controller(caller, is_controller(&caller))
}

/// Rejects the message with `message`. Nothing has changed yet when the
/// endpoints below call it, so nothing is lost.
fn reject(message: impl ToString) -> ! {
    ic_cdk::trap(message.to_string())
}

#[ic_cdk::update(guard = "caller_is_controller", decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
fn setup_callee(callee: Principal) {
    let callee = guards::check_callee(callee, canister_self()).unwrap_or_else(|e| reject(e));
    CALLEE.with(|c| c.borrow_mut().set(Some(callee)));
}

fn callee() -> Result<Principal, PlanError> {
    let stored = CALLEE.with(|c| *c.borrow().get());
    guards::resolve_callee(stored, || {
        env_var_name_exists(CALLEE_ENV_VAR).then(|| env_var_value(CALLEE_ENV_VAR))
    })
}

fn validate(plan: Plan, retry: Option<RetryPolicy>) -> ValidPlan {
    plan::validate(plan, retry, callee, canister_self()).unwrap_or_else(|e| reject(e))
}

#[ic_cdk::update(guard = "caller_is_controller", decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
async fn sequential_calls(n: u64) -> u64 {
    calls::run(validate(Plan::new(Strategy::Sequential, n), None)).await.succeeded
}

#[ic_cdk::update(guard = "caller_is_controller", decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
async fn parallel_calls(n: u64) -> u64 {
    calls::run(validate(Plan::new(Strategy::Parallel, n), None)).await.succeeded
}

/// Runs a plan in this call and replies with its report. (Retries run
/// from timers, outside this call: plans that retry run as jobs.)
#[ic_cdk::update(guard = "caller_is_controller", decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
async fn run_plan(plan: Plan) -> Report {
    calls::run(validate(plan, None)).await
}

/// Starts a plan as a job, retrying with `retry` if given, and replies with
/// its id at once; `job_status` tells how it goes.
#[ic_cdk::update(guard = "caller_is_controller", decode_with = "endpoint_args::decode_args", hidden)]
#[candid::candid_method(update)]
fn start_job(plan: Plan, retry: Option<RetryPolicy>) -> u64 {
    jobs::runtime::start(validate(plan, retry)).unwrap_or_else(|e| reject(e))
}

#[ic_cdk::query(decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(query)]
fn job_status(id: u64) -> Option<Report> {
    jobs::runtime::status(id)
}

#[ic_cdk::post_upgrade]
fn post_upgrade() {
    jobs::runtime::restore();
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
