//! The callee canister: the target of the caller's fan-out.
//!
//! Endpoints with arguments decode them with [`endpoint_args`] (a reject
//! naming the method and the type for an argument of another type), so
//! `hidden` leaves their export to `candid_method`, with the real types.

use candid::{CandidType, Deserialize, Principal};
use ic_cdk::api::{env_var_name_exists, env_var_value, is_controller, msg_caller};
use ic_fanout::once::{ExecuteOnce, Execution, Limits, Refused};
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::{DefaultMemoryImpl, StableBTreeMap, StableCell};
use serde_bytes::ByteBuf;
use std::cell::{Cell, RefCell};

use interface::{EXECUTED, EXECUTED_EARLIER, OncePing, PingBatch};

type Memory = VirtualMemory<DefaultMemoryImpl>;

thread_local! {
    static MEMORY_MANAGER: RefCell<MemoryManager<DefaultMemoryImpl>> =
        RefCell::new(MemoryManager::init(DefaultMemoryImpl::default()));

    /// Which nonces each admitted caller had executed, so that each
    /// executes once; in stable memory, so that an upgrade does not make a
    /// retry run twice. Bounded: see [`ic_fanout::once`].
    static ONCE: RefCell<ExecuteOnce<Memory>> = RefCell::new(ExecuteOnce::init(
        memory(ONCE_CALLERS),
        memory(ONCE_EXECUTED),
        Limits::default(),
    ));
}

/// Until v0.2.0: every nonce ever executed, per caller (unbounded), now
/// emptied into floors by `post_upgrade`.
const UNBOUNDED_NONCES: MemoryId = MemoryId::new(0);
const PINGS_MEMORY: MemoryId = MemoryId::new(1);
const ONCE_CALLERS: MemoryId = MemoryId::new(2);
const ONCE_EXECUTED: MemoryId = MemoryId::new(3);

fn memory(id: MemoryId) -> Memory {
    MEMORY_MANAGER.with(|m| m.borrow().get(id))
}

/// The canister icp-cli names `caller` in this canister's environment, if
/// any: admitted without a controller's call, like the controllers.
const CALLER_ENV_VAR: &str = "PUBLIC_CANISTER_ID:caller";

/// Executes the pings tagged `nonces` for the calling canister, each unless
/// it already was, first raising the caller's floor to `floor`; all of them
/// or, refused, none. True for each executed now.
fn execute_once(nonces: impl Iterator<Item = u64> + Clone, floor: u64) -> Result<Vec<bool>, Refused> {
    let caller = msg_caller();
    ONCE.with(|once| {
        let mut once = once.borrow_mut();
        let execute = |once: &mut ExecuteOnce<Memory>| {
            let executed = once.execute_all(caller, nonces.clone(), floor, |_| acknowledge(1))?;
            Ok(executed.iter().map(Execution::is_now).collect())
        };
        // Admission is looked at only when refused: a batch looks up its
        // caller once, not twice.
        match execute(&mut once) {
            Err(Refused::NotAdmitted(_)) if admitted_without_asking(caller) => {
                once.admit(caller)?;
                execute(&mut once)
            }
            executed => executed,
        }
    })
}

/// Controllers, and the caller icp-cli deployed beside this canister.
fn admitted_without_asking(caller: Principal) -> bool {
    is_controller(&caller)
        || (env_var_name_exists(CALLER_ENV_VAR)
            && Principal::from_text(env_var_value(CALLER_ENV_VAR)).is_ok_and(|named| named == caller))
}

thread_local! {
    /// Pings executed since installation. On the heap, so that a ping
    /// writes no stable memory; `pre_upgrade` saves it to `PINGS_SAVED`.
    static PINGS: Cell<u64> = const { Cell::new(0) };

    static PINGS_SAVED: RefCell<StableCell<u64, Memory>> = RefCell::new(StableCell::init(memory(PINGS_MEMORY), 0));
}

#[ic_cdk::pre_upgrade]
fn pre_upgrade() {
    PINGS_SAVED.with(|saved| saved.borrow_mut().set(PINGS.with(Cell::get)));
}

#[ic_cdk::post_upgrade]
fn post_upgrade() {
    PINGS.with(|p| p.set(PINGS_SAVED.with(|saved| *saved.borrow().get())));
    empty_the_unbounded_nonces();
}

/// An upgrade from a version that kept every nonce: empties that store.
fn empty_the_unbounded_nonces() {
    let old = memory(UNBOUNDED_NONCES);
    // Never used (installed at v0.2.0 or later): opening a map there would
    // give it its first bucket of stable memory for nothing.
    if ic_stable_structures::Memory::size(&old) == 0 {
        return;
    }
    let mut old = StableBTreeMap::init(old);
    ONCE.with(|once| floors_from_unbounded(&mut old, &mut once.borrow_mut()));
}

/// Each caller's floor goes above the highest nonce it had executed, so
/// that none of them executes again, and the nonces go. (This admits no
/// one: callers of that version had no admission to carry over. A floor
/// cannot pass 2^64 - 1, so that one nonce could run once more.)
fn floors_from_unbounded<M: ic_stable_structures::Memory>(
    old: &mut StableBTreeMap<(Principal, u64), (), M>,
    once: &mut ExecuteOnce<M>,
) {
    let mut highest = std::collections::BTreeMap::new();
    for entry in old.iter() {
        let (caller, nonce) = *entry.key();
        highest.insert(caller, nonce);
    }
    for (caller, nonce) in highest {
        once.raise_floor(caller, nonce.saturating_add(1));
    }
    old.clear_new();
}

fn acknowledge(pings: u64) {
    PINGS.with(|p| p.set(p.get() + pings));
}

#[ic_cdk::update]
fn ping() {
    acknowledge(1);
}

/// Acknowledges a batch of pings in one call, with one result per ping in
/// the request's order, as ICRC-4 batch methods answer; a blob keeps
/// encoding and decoding the results cheap. Nonce-tagged pings execute once
/// (see `ping_once`): a batch with one refused executes none.
#[ic_cdk::update(decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
fn ping_batch(batch: PingBatch) -> ByteBuf {
    if batch.count > PingBatch::MAX_COUNT {
        ic_cdk::trap(format!(
            "a batch may carry at most {} pings, not {}",
            PingBatch::MAX_COUNT,
            batch.count
        ));
    }
    let Some(first) = batch.first_nonce else {
        acknowledge(u64::from(batch.count));
        return ByteBuf::from(vec![EXECUTED; batch.count as usize]);
    };
    let nonces = batch_nonces(first, batch.count).unwrap_or_else(|e| ic_cdk::trap(e));
    let floor = batch.floor.unwrap_or(0);
    // A refusal traps, with nothing executed: the caller may send the batch
    // again once admitted or once its floor is raised.
    let executed = execute_once(nonces, floor)
        .unwrap_or_else(|refused| ic_cdk::trap(format!("the batch from nonce {first}: {refused}")));
    ByteBuf::from(
        executed.into_iter().map(|now| if now { EXECUTED } else { EXECUTED_EARLIER }).collect::<Vec<u8>>(),
    )
}

/// The nonces `first`, `first + 1`, ... of a batch of `count` pings; refused
/// if they would pass 2^64 - 1 (wrapping would reuse nonces from 0).
fn batch_nonces(first: u64, count: u32) -> Result<impl Iterator<Item = u64> + Clone, String> {
    match u64::from(count).checked_sub(1) {
        Some(last) if first.checked_add(last).is_none() => Err(format!(
            "first_nonce = {first} with count = {count} passes the largest nonce, 2^64 - 1: start the batch lower"
        )),
        _ => Ok((0..u64::from(count)).map(move |i| first + i)),
    }
}

/// A ping tagged with a nonce: executed once however often it arrives (a
/// caller may retry after `SYS_UNKNOWN`). True if it was executed now.
/// Traps, with nothing executed, for a caller not admitted, a nonce below
/// its floor, or a new nonce past its cap: a trap (`CANISTER_ERROR`) is
/// what an idempotent caller retries, and a retry after a backoff may
/// succeed (the caller admitted, its floor raised meanwhile).
#[ic_cdk::update(decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
fn ping_once(nonce: u64) -> bool {
    ping_once_with_floor(OncePing { nonce, floor: 0 })
}

/// `ping_once`, with the caller's floor: its promise never to send a nonce
/// below it again, so that the nonces below it can be forgotten.
#[ic_cdk::update(decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
fn ping_once_with_floor(ping: OncePing) -> bool {
    match execute_once(std::iter::once(ping.nonce), ping.floor) {
        Ok(executed) => executed == [true],
        Err(refused) => ic_cdk::trap(refused.to_string()),
    }
}

fn require_controller() -> Result<(), String> {
    let caller = msg_caller();
    if is_controller(&caller) {
        Ok(())
    } else {
        Err(format!(
            "only a controller of this canister may admit or revoke callers, and {caller} is not one"
        ))
    }
}

/// Lets `caller` have pings executed once (controllers, and the canister
/// icp-cli names `caller`, need not be admitted).
#[ic_cdk::update(guard = "require_controller", decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
fn admit_caller(caller: Principal) {
    ONCE.with(|once| once.borrow_mut().admit(caller))
        .unwrap_or_else(|refused| ic_cdk::trap(refused.to_string()));
}

/// Stops executing `caller`'s nonces and forgets them; none of them will
/// execute again.
#[ic_cdk::update(guard = "require_controller", decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
fn revoke_caller(caller: Principal) {
    ONCE.with(|once| once.borrow_mut().revoke(caller));
}

/// What the callee keeps about a caller's nonces.
#[derive(CandidType, Deserialize)]
struct NonceState {
    floor: u64,
    held: u64,
    admitted: bool,
}

#[ic_cdk::query(decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(query)]
fn nonce_state(caller: Principal) -> Option<NonceState> {
    ONCE.with(|once| once.borrow().caller(caller)).map(|state| NonceState {
        floor: state.floor,
        held: state.held,
        admitted: state.admitted,
    })
}

#[ic_cdk::query]
fn pings_received() -> u64 {
    PINGS.with(Cell::get)
}

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    use super::{batch_nonces, floors_from_unbounded};
    use candid::Principal;
    use ic_fanout::once::{ExecuteOnce, Limits, Refused};
    use ic_stable_structures::{StableBTreeMap, VectorMemory};

    #[test]
    fn nonces_kept_by_v0_1_0_never_execute_again_and_are_let_go() {
        let mut old = StableBTreeMap::init(VectorMemory::default());
        let (a, b) = (Principal::from_slice(&[1]), Principal::from_slice(&[2]));
        for key in [(a, 3), (a, 70), (b, 5)] {
            old.insert(key, ());
        }
        let mut once = ExecuteOnce::init(VectorMemory::default(), VectorMemory::default(), Limits::default());
        floors_from_unbounded(&mut old, &mut once);
        assert!(old.is_empty());
        once.admit(a).unwrap();
        assert_eq!(once.execute(a, 70, 0, || ()), Err(Refused::BelowFloor { nonce: 70, floor: 71 }));
        assert!(once.execute(a, 71, 0, || ()).unwrap().is_now());
        let b_state = once.caller(b).unwrap();
        assert_eq!((b_state.floor, b_state.held, b_state.admitted), (6, 0, false));
    }

    #[test]
    fn batch_nonces_run_up_to_the_largest_and_never_wrap() {
        assert_eq!(batch_nonces(u64::MAX - 1, 2).unwrap().collect::<Vec<_>>(), [u64::MAX - 1, u64::MAX]);
        assert_eq!(batch_nonces(u64::MAX, 0).unwrap().count(), 0);
        let err = batch_nonces(u64::MAX, 2).err().unwrap();
        assert!(err.contains("2^64 - 1"), "{err}");
    }
}

#[cfg(test)]
mod candid_interface {
    use candid_parser::utils::{CandidSource, service_compatible, service_equal};

    #[test]
    fn callee_did_matches_the_code() {
        let declared = include_str!("../callee.did");
        let exported = super::__export_service();
        service_equal(CandidSource::Text(declared), CandidSource::Text(&exported))
            .unwrap_or_else(|e| panic!("callee.did differs from the code: {e}\n{exported}"));
    }

    /// Callers written against an earlier release keep working.
    #[test]
    fn callee_did_is_compatible_with_every_frozen_release() {
        let current = include_str!("../callee.did");
        let frozen = include_str!("../frozen/v0.1.0.did");
        service_compatible(CandidSource::Text(current), CandidSource::Text(frozen))
            .unwrap_or_else(|e| panic!("callee.did breaks callers of v0.1.0: {e}"));
    }
}
