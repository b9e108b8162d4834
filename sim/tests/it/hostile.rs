//! Canisters that misbehave on purpose: the simulator answers each with an
//! IC-like trap, keeps the canister as it was, and keeps running.

use crate::common::*;
use sim::{RejectCode, Sim, SimConfig};

const HOSTILE: &str = include_str!("../fixtures/hostile.wat");

/// The hostile canister on one subnet, with `max_instructions` per message.
fn hostile(max_instructions: u64) -> (Sim, candid::Principal) {
    let config = SimConfig { max_instructions_per_message: max_instructions, ..SimConfig::default() };
    let mut sim = Sim::builder().with_config(config).with_subnet().build();
    let canister = install(&mut sim, 0, HOSTILE);
    (sim, canister)
}

fn touched(sim: &mut Sim, canister: candid::Principal) -> u32 {
    u32_at(&sim.query_call(canister, controller(), "touched", vec![]).unwrap(), 0)
}

/// After a trap, the canister is as it was and answers the next message.
fn assert_rolled_back_and_alive(sim: &mut Sim, canister: candid::Principal) {
    assert_eq!(touched(sim, canister), 0, "the trapped message's changes are undone");
    let grown = sim.update_call(canister, controller(), "grow", vec![]).unwrap();
    assert_eq!(u32_at(&grown, 0) as i32, -1);
}

#[test]
fn a_canister_that_loops_forever_traps_at_the_message_limit() {
    let (mut sim, canister) = hostile(10_000_000);
    let reject = sim.update_call(canister, controller(), "spin", vec![]).unwrap_err();
    assert_eq!(reject.code(), RejectCode::CanisterError);
    assert!(
        reject.message.contains("exceeded the limit of 10000000 instructions for single message execution"),
        "{reject}"
    );
    assert_rolled_back_and_alive(&mut sim, canister);
}

#[test]
fn unbounded_recursion_traps_without_overflowing_the_host_stack() {
    let (mut sim, canister) = hostile(SimConfig::default().max_instructions_per_message);
    let reject = sim.update_call(canister, controller(), "recurse", vec![]).unwrap_err();
    assert_eq!(reject.code(), RejectCode::CanisterError);
    assert!(reject.message.contains("Canister trapped"), "{reject}");
    assert_rolled_back_and_alive(&mut sim, canister);
}

#[test]
fn memory_grow_past_what_wasm32_addresses_fails_without_allocating() {
    let (mut sim, canister) = hostile(SimConfig::default().max_instructions_per_message);
    assert_rolled_back_and_alive(&mut sim, canister);
}

#[test]
fn a_reply_over_2_mib_is_refused_as_the_replica_refuses_it() {
    let (mut sim, canister) = hostile(SimConfig::default().max_instructions_per_message);
    let reject = sim.update_call(canister, controller(), "big_reply", vec![]).unwrap_err();
    assert_eq!(reject.code(), RejectCode::CanisterError);
    let expected = "Canister violated contract: ic0.msg_reply_data_append: application payload size (3145728) cannot be larger than 2097152.";
    assert!(reject.message.contains(expected), "{reject}");
    assert_rolled_back_and_alive(&mut sim, canister);
}

#[test]
fn a_callee_that_never_replies_keeps_its_context_open_and_a_bounded_wait_caller_times_out() {
    let mut sim =
        Sim::builder().with_subnet().with_subnet().with_subnet().with_time_step(sim::ONE_SECOND_NS).build();
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let caller = sim.create_canister(0, vec![controller()]).unwrap();
    sim.install_canister(caller, &wasms.caller, candid::encode_args(()).unwrap(), controller()).unwrap();
    // The silent callee waits on a canister held back past the caller's deadline.
    let held = install(&mut sim, 2, HOSTILE);
    sim.pause_canister(held, 1_000);
    let silent = sim.create_canister(1, vec![controller()]).unwrap();
    let wasm = wat::parse_str(include_str!("../fixtures/silent.wat")).unwrap();
    sim.install_canister(silent, &wasm, held.as_slice().to_vec(), controller()).unwrap();
    sim.update_call(caller, controller(), "setup_callee", candid::encode_one(silent).unwrap()).unwrap();
    let start = sim.time();
    let message =
        sim.submit_call(caller, controller(), "sequential_calls", candid::encode_one(1u64).unwrap()).unwrap();
    let reply = loop {
        sim.tick();
        if let Some(reply) = sim.ingress_status(message) {
            break reply.expect("the caller answers");
        }
        assert!(sim.time() - start < 400 * sim::ONE_SECOND_NS, "the caller did not answer");
    };
    assert_eq!(candid::decode_one::<u64>(&reply).unwrap(), 0, "no ping succeeded");
    // ic-cdk's bounded-wait calls give up after 300 s.
    let waited = (sim.time() - start) / sim::ONE_SECOND_NS;
    assert!((300..=302).contains(&waited), "the caller waited {waited} s");
    assert_eq!(sim.stats(caller).unwrap().rejects_received.get(&RejectCode::SysUnknown), Some(&1));
    let open = sim.outstanding();
    assert_eq!(open.ingress, 0, "every ingress message answered");
    assert_eq!(open.call_contexts, 1, "the silent callee's context stays open: {open:?}");
}
