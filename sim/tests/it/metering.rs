//! The replica's metering rules, pinned on `fixtures/metering.wat`. Each
//! expected count is worked out by hand in the comment beside it, from the
//! rules in `rs/embedders/src/wasm_utils/instrumentation.rs` and
//! `system_api_complexity.rs` (dfinity/ic):
//! - a basic block is charged, when entered, the sum of its instructions'
//!   costs; a function's entry block starts at 1; blocks end after `loop`,
//!   `if`, `else`, `br*`, `end`, `return` and `unreachable`;
//! - most instructions cost 1; `call` 5, `call_indirect` 10, `global.*` 2,
//!   `if`/`br*` 2, integer division 10, `memory.grow` 300, `memory.size` 20,
//!   bulk memory 100 plus its size; `block`/`loop`/`else`/`end` 0;
//! - a system call adds its overhead and per-byte charge.

use crate::common::*;
use candid::Principal;
use sim::{RejectCode, Sim, SimConfig};

const METERING: &str = include_str!("../fixtures/metering.wat");

fn metered(max_instructions: u64) -> (Sim, Principal) {
    let config = SimConfig { max_instructions_per_message: max_instructions, ..SimConfig::default() };
    let mut sim = Sim::builder().with_config(config).with_subnet().build();
    let canister = install(&mut sim, 0, METERING);
    (sim, canister)
}

/// The instructions one execution of `method` used.
fn cost_of(method: &str) -> u64 {
    let (mut sim, canister) = metered(SimConfig::default().max_instructions_per_message);
    let before = sim.stats(canister).unwrap().instructions;
    sim.update_call(canister, controller(), method, vec![]).unwrap();
    sim.stats(canister).unwrap().instructions - before
}

/// What `performance_counter(0)` said, late in the message.
fn counted_by(method: &str) -> u64 {
    let (mut sim, canister) = metered(SimConfig::default().max_instructions_per_message);
    let reply = sim.update_call(canister, controller(), method, vec![]).unwrap();
    u64::from_le_bytes(reply[..8].try_into().unwrap())
}

const REPLY: u64 = 500;

#[test]
fn an_empty_method_costs_its_entry_its_call_and_the_reply() {
    // entry 1 + call 5 + end 0; msg_reply 500
    assert_eq!(cost_of("empty"), 1 + 5 + REPLY);
}

#[test]
fn a_block_that_is_skipped_is_not_charged() {
    // entry 1 + i32.const 1 + if 2 = 4; [skipped: 1 + 1 + div 10 + drop 1 = 13];
    // after end: call 5
    assert_eq!(cost_of("skip"), 4 + 5 + REPLY);
    assert_eq!(cost_of("take"), 4 + 13 + 5 + REPLY);
}

#[test]
fn a_loop_body_is_charged_per_iteration() {
    // entry 1 + const 1 + local.set 1 + loop 0 = 3; each of the 10 iterations:
    // local.get 1 + const 1 + sub 1 + tee 1 + br_if 2 = 6; then call 5
    assert_eq!(cost_of("loop"), 3 + 10 * 6 + 5 + REPLY);
}

#[test]
fn expensive_instruction_classes_cost_what_the_replica_charges() {
    // entry 1 + global.get 2 + const 1 + add 1 + global.set 2 + call 5
    assert_eq!(cost_of("globals"), 12 + REPLY);
    // entry 1 + const 1 + memory.grow 300 + drop 1 + memory.size 20 + drop 1 + call 5
    assert_eq!(cost_of("grow"), 329 + REPLY);
    // entry 1 + call 5 + call 5, and $nop's entry 1
    assert_eq!(cost_of("direct"), 12 + REPLY);
    // entry 1 + const 1 + call_indirect 10 + call 5, and $nop's entry 1
    assert_eq!(cost_of("indirect"), 18 + REPLY);
    // entry 1 + 3 consts + memory.fill 100 + call 5, and the 1000 bytes filled
    assert_eq!(cost_of("fill"), 109 + 1000 + REPLY);
}

#[test]
fn system_calls_add_their_overhead_and_per_byte_charge() {
    // entry 1 + 2 consts + call 5 + call 5; msg_reply_data_append 500 + 50 x 10 bytes
    assert_eq!(cost_of("append"), 13 + (500 + 50 * 10) + REPLY);
}

// `$reply_counter`: entry 1 + 4 consts + i64.store 1 + 3 calls 15 = 21, of
// which performance_counter sees all (a block is charged when entered),
// plus its own 200.
const REPLY_COUNTER: u64 = 21 + 200;

#[test]
fn performance_counter_sees_its_block_and_its_own_overhead() {
    // entry 1 + call 5, then $reply_counter
    assert_eq!(counted_by("counter"), 6 + REPLY_COUNTER);
    // ... and the whole message: the rest of $reply_counter is
    // msg_reply_data_append of 8 bytes (500 + 400) and msg_reply.
    assert_eq!(cost_of("counter"), 6 + REPLY_COUNTER + 900 + REPLY);
}

#[test]
fn a_call_costs_call_new_per_byte_and_call_perform() {
    // The caller's block: entry 1, canister_self_size call 5, local.set 1,
    // canister_self_copy 3 + call 5, call_new 8 + call 5, call_perform 5,
    // drop 1, call 5 = 39. Fees: canister_self_size 500, canister_self_copy
    // 500 + 10 (a 10-byte canister id), call_new 1,500 + 10 + 4 ("ping"),
    // call_perform 5,000.
    assert_eq!(counted_by("call"), 39 + 500 + 510 + 1_514 + 5_000 + REPLY_COUNTER);
}

#[test]
fn stable_memory_charges_bytes_and_each_newly_dirtied_page_once() {
    // The block: entry 1, 10 consts... = 37 (1 + [1 + 5 + 1] + [3 + 5] x 3 + 5).
    // Fees: stable64_grow 100; write of 5,000 bytes 20 + 5,000 + 2 dirtied
    // 4 KiB pages x 1,000; write of 10 bytes to page 0 again 20 + 10;
    // read of 8 bytes 20 + 8.
    assert_eq!(counted_by("stable"), 37 + 100 + 7_020 + 30 + 28 + REPLY_COUNTER);
}

#[test]
fn printing_pays_the_canister_log_charge() {
    // The block: entry 1 + 4 consts + 3 calls = 20. debug_print of 100 bytes:
    // 100 + 2 x 100 + 50 x 100; of 5,000 bytes with 3,996 left of the 4 KiB
    // log: 100 + 2 x 4,096 + 50 x 3,996.
    assert_eq!(counted_by("print"), 20 + 5_300 + (100 + 8_192 + 199_800) + REPLY_COUNTER);
}

#[test]
fn the_message_limit_counts_every_instruction_and_system_call() {
    // `loop` costs exactly 568 (see above): one instruction fewer traps in
    // msg_reply, which is charged before it replies.
    let (mut sim, canister) = metered(568);
    sim.update_call(canister, controller(), "loop", vec![]).unwrap();
    let (mut sim, canister) = metered(567);
    let reject = sim.update_call(canister, controller(), "loop", vec![]).unwrap_err();
    assert_eq!(reject.code(), RejectCode::CanisterError);
    assert!(reject.message.contains("exceeded the limit of 567 instructions"), "{reject}");
    // The loop body alone passes a limit of 20 at its third header.
    let (mut sim, canister) = metered(20);
    let before = sim.stats(canister).unwrap().instructions;
    let reject = sim.update_call(canister, controller(), "loop", vec![]).unwrap_err();
    assert!(reject.message.contains("exceeded the limit of 20 instructions"), "{reject}");
    assert_eq!(sim.stats(canister).unwrap().instructions - before, 20, "a trapped message pays its limit");
}
