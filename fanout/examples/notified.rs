//! A user canister that `notify_all` (the other half of this example)
//! notifies: it acts on each notice once, however often it arrives, with
//! `ic_fanout::once`, whose state stays bounded by the sender's floor.
//! Only its controllers (the canister that created it, say) may notify it.

use candid::{CandidType, Deserialize, Principal};
use ic_cdk::api::{is_controller, msg_caller};
use ic_fanout::once::{ExecuteOnce, Execution, Limits, Refused};
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::{DefaultMemoryImpl, StableCell};
use std::cell::RefCell;

type Memory = VirtualMemory<DefaultMemoryImpl>;

thread_local! {
    // Buckets of one 64 KiB page, not the default 8 MiB: there are
    // thousands of user canisters, and each pays for the stable memory it
    // grows (its three memories would take 24 MiB each otherwise).
    static MEMORY: MemoryManager<DefaultMemoryImpl> =
        MemoryManager::init_with_bucket_size(DefaultMemoryImpl::default(), 1);
    static ONCE: RefCell<ExecuteOnce<Memory>> = RefCell::new(ExecuteOnce::init(
        MEMORY.with(|m| m.get(MemoryId::new(0))),
        MEMORY.with(|m| m.get(MemoryId::new(1))),
        Limits::default(),
    ));
    /// Notices acted on.
    static RECEIVED: RefCell<StableCell<u64, Memory>> =
        RefCell::new(StableCell::init(MEMORY.with(|m| m.get(MemoryId::new(2))), 0));
    /// The last message (in the heap: an upgrade forgets it).
    static LAST_MESSAGE: RefCell<String> = const { RefCell::new(String::new()) };
}

#[derive(CandidType, Deserialize)]
struct Notice {
    nonce: u64,
    floor: u64,
    message: String,
}

/// Acts on `notice` once: true now, false if it had before. A notice it
/// cannot decide traps (`CANISTER_ERROR`), and the sender may retry.
#[ic_cdk::update]
fn notify(notice: Notice) -> bool {
    let sender = msg_caller();
    let act = || {
        RECEIVED.with(|r| {
            let count = *r.borrow().get();
            r.borrow_mut().set(count + 1)
        });
        LAST_MESSAGE.with(|m| m.borrow_mut().clone_from(&notice.message));
    };
    let mut done = ONCE.with(|o| o.borrow_mut().execute(sender, notice.nonce, notice.floor, act));
    if matches!(done, Err(Refused::NotAdmitted(_))) && is_controller(&sender) {
        done = ONCE.with(|o| {
            let mut once = o.borrow_mut();
            once.admit(sender)?;
            once.execute(sender, notice.nonce, notice.floor, act)
        });
    }
    match done {
        Ok(Execution::Now(_)) => true,
        Ok(Execution::Earlier) => false,
        Err(refused) => ic_cdk::trap(format!("notice {} not acted on: {refused}", notice.nonce)),
    }
}

/// Notices acted on so far, and the last one's message.
#[ic_cdk::query]
fn received() -> (u64, String) {
    (RECEIVED.with(|r| *r.borrow().get()), LAST_MESSAGE.with(|m| m.borrow().clone()))
}

/// Whom it takes notices from, and their floors.
#[ic_cdk::query]
fn senders() -> Vec<(Principal, u64)> {
    ONCE.with(|o| {
        let once = o.borrow();
        once.admitted().filter_map(|p| Some((p, once.caller(p)?.floor))).collect()
    })
}
