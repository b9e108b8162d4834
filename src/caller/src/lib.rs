//! The caller canister: endpoints only. The strategies live in [`fan_out`],
//! the rules in [`guards`].

mod fan_out;
mod guards;

use candid::Principal;
use ic_cdk::api::{canister_self, env_var_name_exists, env_var_value, is_controller, msg_caller};
use ic_cdk::call::Call;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::{DefaultMemoryImpl, StableCell};
use std::cell::RefCell;

use guards::{CALLEE_ENV_VAR, CallCount};

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

/// Validates a fan-out request before any call is made.
fn fan_out_target(n: u64) -> (CallCount, Principal) {
    let n = CallCount::new(n).unwrap_or_else(|e| reject(e));
    let callee = callee().unwrap_or_else(|e| reject(e));
    (n, callee)
}

/// One bounded-wait `ping`; a call fails when it cannot be performed (no free
/// queue slot, too few cycles) or when the callee or the system rejects it.
async fn ping(callee: Principal) -> Result<(), ic_cdk::call::CallFailed> {
    Call::bounded_wait(callee, "ping").await.map(drop)
}

#[ic_cdk::update(guard = "caller_is_controller")]
async fn sequential_calls(n: u64) -> u64 {
    let (n, callee) = fan_out_target(n);
    fan_out::sequential(n, || ping(callee)).await
}

#[ic_cdk::update(guard = "caller_is_controller")]
async fn parallel_calls(n: u64) -> u64 {
    let (n, callee) = fan_out_target(n);
    fan_out::parallel(n, || ping(callee)).await
}

ic_cdk::export_candid!();

#[cfg(test)]
mod candid_interface {
    use candid_parser::utils::{CandidSource, service_equal};

    #[test]
    fn caller_did_matches_the_code() {
        let declared = include_str!("../caller.did");
        let exported = super::__export_service();
        service_equal(CandidSource::Text(declared), CandidSource::Text(&exported))
            .unwrap_or_else(|e| panic!("caller.did differs from the code: {e}\n{exported}"));
    }
}
