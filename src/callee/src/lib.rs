//! The callee canister: the target of the caller's fan-out.

use candid::{CandidType, Deserialize};
use serde_bytes::ByteBuf;
use std::cell::Cell;

/// The most pings one `ping_batch` call may carry.
const MAX_BATCH: u32 = 10_000;

/// Pings `first_nonce`, `first_nonce + 1`, ... (`count` of them).
#[derive(CandidType, Deserialize)]
struct PingBatch {
    first_nonce: u64,
    count: u32,
}

/// One byte per ping of a batch, in order.
const ACKNOWLEDGED: u8 = 1;

thread_local! {
    /// Pings acknowledged since installation (diagnostic; not kept across upgrades).
    static PINGS: Cell<u64> = const { Cell::new(0) };
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
/// encoding and decoding the results cheap.
#[ic_cdk::update]
fn ping_batch(batch: PingBatch) -> ByteBuf {
    if batch.count > MAX_BATCH {
        ic_cdk::trap(format!("a batch may carry at most {MAX_BATCH} pings, not {}", batch.count));
    }
    acknowledge(u64::from(batch.count));
    ByteBuf::from(vec![ACKNOWLEDGED; batch.count as usize])
}

#[ic_cdk::query]
fn pings_received() -> u64 {
    PINGS.with(Cell::get)
}

ic_cdk::export_candid!();

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
