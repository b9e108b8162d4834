//! The callee canister: the target of the caller's fan-out.
//!
//! Endpoints with arguments decode them with [`endpoint_args`] (a reject
//! naming the method and the type for an argument of another type), so
//! `hidden` leaves their export to `candid_method`, with the real types.

use candid::Principal;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use ic_stable_structures::{DefaultMemoryImpl, StableBTreeMap, StableCell};
use serde_bytes::ByteBuf;
use std::cell::{Cell, RefCell};

use interface::{EXECUTED, EXECUTED_EARLIER, PingBatch};

thread_local! {
    static MEMORY_MANAGER: RefCell<MemoryManager<DefaultMemoryImpl>> =
        RefCell::new(MemoryManager::init(DefaultMemoryImpl::default()));

    /// Nonces of the pings executed, per caller (nonces are the caller's
    /// to choose), so that each executes once; in stable memory, so that an
    /// upgrade does not make a retry run twice.
    static EXECUTED_NONCES: RefCell<StableBTreeMap<(Principal, u64), (), VirtualMemory<DefaultMemoryImpl>>> = RefCell::new(
        StableBTreeMap::init(MEMORY_MANAGER.with(|m| m.borrow().get(MemoryId::new(0)))),
    );
}

/// Executes the ping tagged `nonce` unless it already was; says which.
fn execute_once(nonce: u64) -> bool {
    let key = (ic_cdk::api::msg_caller(), nonce);
    let first_time = EXECUTED_NONCES.with(|n| n.borrow_mut().insert(key, ()).is_none());
    if first_time {
        acknowledge(1);
    }
    first_time
}

thread_local! {
    /// Pings executed since installation. On the heap, so that a ping
    /// writes no stable memory; `pre_upgrade` saves it to `PINGS_SAVED`.
    static PINGS: Cell<u64> = const { Cell::new(0) };

    static PINGS_SAVED: RefCell<StableCell<u64, VirtualMemory<DefaultMemoryImpl>>> = RefCell::new(
        StableCell::init(MEMORY_MANAGER.with(|m| m.borrow().get(MemoryId::new(1))), 0),
    );
}

#[ic_cdk::pre_upgrade]
fn pre_upgrade() {
    PINGS_SAVED.with(|saved| saved.borrow_mut().set(PINGS.with(Cell::get)));
}

#[ic_cdk::post_upgrade]
fn post_upgrade() {
    PINGS.with(|p| p.set(PINGS_SAVED.with(|saved| *saved.borrow().get())));
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
/// encoding and decoding the results cheap. Nonce-tagged pings execute once.
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
    ByteBuf::from(
        nonces
            .map(|nonce| if execute_once(nonce) { EXECUTED } else { EXECUTED_EARLIER })
            .collect::<Vec<u8>>(),
    )
}

/// The nonces `first`, `first + 1`, ... of a batch of `count` pings; refused
/// if they would pass 2^64 - 1 (wrapping would reuse nonces from 0).
fn batch_nonces(first: u64, count: u32) -> Result<impl Iterator<Item = u64>, String> {
    match u64::from(count).checked_sub(1) {
        Some(last) if first.checked_add(last).is_none() => Err(format!(
            "first_nonce = {first} with count = {count} passes the largest nonce, 2^64 - 1: start the batch lower"
        )),
        _ => Ok((0..u64::from(count)).map(move |i| first + i)),
    }
}

/// A ping tagged with a nonce: executed once however often it arrives (a
/// caller may retry after `SYS_UNKNOWN`). True if it was executed now.
#[ic_cdk::update(decode_with = "endpoint_args::decode_one", hidden)]
#[candid::candid_method(update)]
fn ping_once(nonce: u64) -> bool {
    execute_once(nonce)
}

#[ic_cdk::query]
fn pings_received() -> u64 {
    PINGS.with(Cell::get)
}

ic_cdk::export_candid!();

#[cfg(test)]
mod tests {
    use super::batch_nonces;

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
