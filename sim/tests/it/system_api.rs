//! The system API beyond what the example's canisters call, against the
//! replica's semantics: certified data and the data certificate, call
//! deadlines, the canister version, and the stack.

use crate::common::stack_shapes;
use crate::common::*;
use candid::Principal;
use sim::{ONE_SECOND_NS, RejectCode, Sim};

const SYSTEM_API: &str = include_str!("../fixtures/system_api.wat");

fn one_canister() -> (Sim, Principal) {
    let mut sim = Sim::builder().with_subnet().build();
    let canister = install(&mut sim, 0, SYSTEM_API);
    (sim, canister)
}

fn u64_of(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

fn update(sim: &mut Sim, canister: Principal, method: &str, arg: &[u8]) -> Result<Vec<u8>, sim::Reject> {
    sim.update_call(canister, controller(), method, arg.to_vec())
}

#[test]
fn certified_data_is_kept_when_the_message_commits_and_only_then() {
    let (mut sim, canister) = one_canister();
    assert_eq!(sim.certified_data(canister).unwrap(), b"");
    update(&mut sim, canister, "certify", &[7; 32]).unwrap();
    assert_eq!(sim.certified_data(canister).unwrap(), [7; 32]);
    assert_eq!(sim.take_certified_data_changes(), vec![canister]);
    assert_eq!(sim.take_certified_data_changes(), vec![], "a change is reported once");

    let reject = update(&mut sim, canister, "certify_then_trap", b"other").unwrap_err();
    assert!(reject.message.contains("Canister trapped: unreachable"), "{reject}");
    assert_eq!(sim.certified_data(canister).unwrap(), [7; 32], "a trap keeps what was certified");
    assert_eq!(sim.take_certified_data_changes(), vec![]);
}

#[test]
fn certified_data_over_32_bytes_traps_with_the_replicas_message() {
    let (mut sim, canister) = one_canister();
    let reject = update(&mut sim, canister, "certify", &[1; 33]).unwrap_err();
    assert_eq!(reject.code(), RejectCode::CanisterError);
    let expected = "Canister violated contract: ic0_certified_data_set failed because the passed data must be no larger than 32 bytes. Found 33 bytes.";
    assert!(reject.message.contains(expected), "{reject}");
    assert_eq!(sim.certified_data(canister).unwrap(), b"");
}

#[test]
fn certified_data_cannot_be_set_in_a_query_nor_the_certificate_read_in_an_update() {
    let (mut sim, canister) = one_canister();
    let reject = sim.query_call(canister, controller(), "certify_in_a_query", vec![1]).unwrap_err();
    let expected = "Canister violated contract: \"ic0_certified_data_set\" cannot be executed in non replicated query mode";
    assert!(reject.message.contains(expected), "{reject}");
    let reject = update(&mut sim, canister, "certificate_in_an_update", b"").unwrap_err();
    let expected =
        "Canister violated contract: \"ic0_data_certificate_size\" cannot be executed in update mode";
    assert!(reject.message.contains(expected), "{reject}");
}

#[test]
fn a_query_reads_the_certificate_it_is_given_and_none_without_one() {
    let (mut sim, canister) = one_canister();
    let none = sim.query_call(canister, controller(), "certificate", vec![]).unwrap();
    assert_eq!(none, b"", "data_certificate_present is 0 without a certificate");
    let certificate = b"\xd9\xd9\xf7 a certificate".to_vec();
    let read =
        sim.query_call_certified(canister, controller(), "certificate", vec![], Some(certificate.clone()));
    assert_eq!(read.unwrap(), certificate);
}

#[test]
fn a_reinstall_clears_certified_data_and_an_upgrade_keeps_it() {
    let (mut sim, canister) = one_canister();
    let wasm = wat::parse_str(SYSTEM_API).unwrap();
    update(&mut sim, canister, "certify", b"kept").unwrap();
    sim.upgrade_canister(canister, &wasm, vec![], controller()).unwrap();
    assert_eq!(sim.certified_data(canister).unwrap(), b"kept");
    sim.install_canister(canister, &wasm, vec![], controller()).unwrap();
    assert_eq!(sim.certified_data(canister).unwrap(), b"");
}

#[test]
fn msg_deadline_is_the_bounded_calls_deadline_in_callee_and_callback_and_0_for_ingress() {
    let mut sim = Sim::builder().with_subnet().with_subnet().with_time_step(ONE_SECOND_NS / 2).build();
    let caller = install(&mut sim, 0, SYSTEM_API);
    let callee = install(&mut sim, 1, SYSTEM_API);
    assert_eq!(u64_of(&update(&mut sim, callee, "deadline", b"").unwrap(), 0), 0, "ingress has no deadline");

    let message = sim.submit_call(caller, controller(), "call_deadline", callee.as_slice().to_vec()).unwrap();
    let sent_at = sim.time();
    let answer = loop {
        sim.tick();
        if let Some(answer) = sim.ingress_status(message) {
            break answer.unwrap();
        }
    };
    let (in_callback, in_callee) = (u64_of(&answer, 0), u64_of(&answer, 8));
    assert_eq!(in_callee, in_callback, "the callee and the callback see the same deadline");
    assert_eq!(in_callee % ONE_SECOND_NS, 0, "a deadline is whole seconds");
    let expected = (sent_at / ONE_SECOND_NS + 30) * ONE_SECOND_NS;
    assert!(
        (expected..=expected + 2 * ONE_SECOND_NS).contains(&in_callee),
        "30 s after the call was made: {in_callee} vs {expected}"
    );
}

#[test]
fn canister_version_counts_installs_and_every_committed_update() {
    let (mut sim, canister) = one_canister();
    // The install bumped it once, before canister_init.
    let first = u64_of(&update(&mut sim, canister, "version", b"").unwrap(), 0);
    assert_eq!(first, 1);
    let second = u64_of(&update(&mut sim, canister, "version", b"").unwrap(), 0);
    assert_eq!(second, 2, "the first update committed and bumped it");
    update(&mut sim, canister, "certify_then_trap", b"").unwrap_err();
    let third = u64_of(&update(&mut sim, canister, "version", b"").unwrap(), 0);
    assert_eq!(third, 3, "a trapped execution does not bump it");
    sim.query_call(canister, controller(), "touched", vec![]).unwrap();
    let fourth = u64_of(&update(&mut sim, canister, "version", b"").unwrap(), 0);
    assert_eq!(fourth, 4, "a query does not bump it");
}

#[test]
fn recursion_as_deep_as_the_replicas_stack_runs_and_deeper_traps_rolled_back() {
    let (mut sim, canister) = one_canister();
    let reject = update(&mut sim, canister, "recurse", &10_000_000u32.to_le_bytes()).unwrap_err();
    assert_eq!(reject.code(), RejectCode::CanisterError);
    assert!(reject.message.ends_with("Canister trapped: stack overflow"), "{reject}");
    let touched = sim.query_call(canister, controller(), "touched", vec![]).unwrap();
    assert_eq!(u64_of(&touched, 0), 0, "the trapped message is rolled back");

    // wasmi's default stack took 1,000 frames; the replica's 5 MiB far more.
    let depth = 100_000u32;
    let answer = update(&mut sim, canister, "recurse", &depth.to_le_bytes()).unwrap();
    assert_eq!(u64_of(&answer, 0), u64::from(depth));
}

/// The deepest recursion of each of [`SHAPES`] that completes on the
/// replica's engine (wasmtime 45 as the replica configures it, 5 MiB of wasm
/// stack, x86-64), compiling the module as the replica instruments it.
/// Measured by
/// `cargo run -p sim --release --features replica-stack --example stack_depth`
/// (its "replica (instrumented)" column).
const REPLICA_DEPTHS: [u32; 4] = [163_835, 54_611, 9_636, 18_203];

#[test]
fn each_shape_runs_as_deep_as_on_the_replica_and_half_as_deep_again_overflows_rolled_back() {
    let controller = Principal::anonymous();
    for (shape, depth) in stack_shapes::SHAPES.iter().zip(REPLICA_DEPTHS) {
        let mut sim = Sim::builder().with_subnet().build();
        let id = sim.create_canister(0, vec![controller]).unwrap();
        let wasm = wat::parse_str(stack_shapes::canister(shape, stack_shapes::Metering::None)).unwrap();
        sim.install_canister(id, &wasm, vec![], controller).unwrap();
        let mut recurse =
            |depth: u32| sim.update_call(id, controller, "recurse", depth.to_le_bytes().to_vec());

        recurse(depth).unwrap_or_else(|reject| panic!("{}, {depth} deep: {reject}", shape.name));
        let reject = recurse(depth + depth / 2).unwrap_err();
        assert_eq!(reject.code(), RejectCode::CanisterError, "{}", shape.name);
        assert!(reject.message.ends_with("Canister trapped: stack overflow"), "{}: {reject}", shape.name);
        recurse(depth).unwrap_or_else(|reject| panic!("{}, {depth} deep again: {reject}", shape.name));

        let calls = sim.query_call(id, controller, "calls", vec![]).unwrap();
        assert_eq!(u64_of(&calls, 0), 2, "{}: the overflowing call is rolled back", shape.name);
    }
}

fn u128_of(bytes: &[u8], at: usize) -> u128 {
    u128::from_le_bytes(bytes[at..at + 16].try_into().unwrap())
}

#[test]
fn root_key_is_the_networks_and_only_replicated_executions_read_it() {
    let (mut sim, canister) = one_canister();
    let key = update(&mut sim, canister, "root_key", b"").unwrap();
    assert_eq!(key, sim::IC_ROOT_KEY, "without a network: the IC's, as the replica's fallback");
    sim.set_root_key(vec![0x30; 133]);
    assert_eq!(update(&mut sim, canister, "root_key", b"").unwrap(), vec![0x30; 133]);
    let reject = sim.query_call(canister, controller(), "root_key_in_a_query", vec![]).unwrap_err();
    let expected =
        "Canister violated contract: \"ic0_root_key_size\" cannot be executed in non replicated query mode";
    assert!(reject.message.contains(expected), "{reject}");
}

#[test]
fn subnet_self_is_the_canisters_subnet_of_13_nodes_and_there_is_no_sender_info() {
    let mut sim = Sim::builder().with_subnet().with_subnet().build();
    let canister = install(&mut sim, 1, SYSTEM_API);
    let answer = update(&mut sim, canister, "subnet", b"").unwrap();
    let subnet = sim.subnets()[1];
    assert_eq!(&answer[..answer.len() - 4], subnet.as_slice());
    assert_eq!(u32::from_le_bytes(answer[answer.len() - 4..].try_into().unwrap()), 13);
    assert_eq!(update(&mut sim, canister, "caller_info", b"").unwrap(), [0; 8], "no sender info: empty");
}

#[test]
fn cycles_burn128_burns_at_most_the_liquid_balance_and_a_trap_burns_nothing() {
    let (mut sim, canister) = one_canister();
    let before = sim.cycle_balance(canister).unwrap();
    let answer = update(&mut sim, canister, "burn", &1_000_000u64.to_le_bytes()).unwrap();
    assert_eq!(u128_of(&answer, 0), 1_000_000);
    let after = sim.cycle_balance(canister).unwrap();
    assert!(before - after >= 1_000_000, "the burned cycles are gone: {before} -> {after}");
    let answer = update(&mut sim, canister, "burn", &u64::MAX.to_le_bytes()).unwrap();
    let burned = u128_of(&answer, 0);
    assert!(burned < u128::from(u64::MAX) && burned > 0, "only what is liquid: {burned}");
    assert_eq!(u64_of(&answer, 16), 0, "nothing liquid is left (no freezing threshold)");
}

#[test]
fn the_cost_functions_price_as_a_13_node_application_subnet() {
    let (mut sim, canister) = one_canister();
    let answer = update(&mut sim, canister, "costs", b"").unwrap();
    assert_eq!(u128_of(&answer, 0), 500_000_000_000, "cost_create_canister");
    // (3M + 60k x 13 + 400 x 100 + 800 x 1000) x 13
    assert_eq!(u128_of(&answer, 16), (3_000_000 + 780_000 + 40_000 + 800_000) * 13, "cost_http_request");
    let code = |at| u32::from_le_bytes(answer[at..at + 4].try_into().unwrap());
    assert_eq!(code(32), 2, "no subnet of the simulator holds a chain key: unknown key");
    assert_eq!(code(36), 1, "curve 7 is no curve: unknown curve");
    assert_eq!(u128_of(&answer, 48), 0, "and no fee written");
    sim.set_chain_keys(["key_1".to_string()].into());
    let answer = update(&mut sim, canister, "costs", b"").unwrap();
    let code = |at| u32::from_le_bytes(answer[at..at + 4].try_into().unwrap());
    assert_eq!((code(32), code(36)), (0, 1), "a key the network holds is priced; curve 7 is still none");
    assert_eq!(u128_of(&answer, 48), sim::THRESHOLD_SIGNATURE_FEE);

    #[derive(candid::CandidType)]
    struct Params {
        request_bytes: u64,
        http_roundtrip_time_ms: u64,
        raw_response_bytes: u64,
        transformed_response_bytes: u64,
        transform_instructions: u64,
    }
    let params = Params {
        request_bytes: 100,
        http_roundtrip_time_ms: 200,
        raw_response_bytes: 1000,
        transformed_response_bytes: 500,
        transform_instructions: 1300,
    };
    let answer = update(&mut sim, canister, "cost_http_v2", &candid::encode_one(&params).unwrap()).unwrap();
    let per_node = 1_000_000 + 50 * 100 + 140_000 * 13 + 800 * 169 + 50 * 1000 + 300 * 200 + 100 + 780 * 500;
    assert_eq!(u128_of(&answer, 0), 13 * per_node);
    let reject = update(&mut sim, canister, "cost_http_v2", b"not candid").unwrap_err();
    assert!(reject.message.contains("Failed to decode HttpRequestV2CostParams from Candid"), "{reject}");
}

#[test]
fn the_32_bit_stable_memory_api_works_on_the_same_stable_memory() {
    let (mut sim, canister) = one_canister();
    let answer = update(&mut sim, canister, "stable32", b"hello").unwrap();
    let word = |at| u32::from_le_bytes(answer[at..at + 4].try_into().unwrap());
    assert_eq!((word(0), word(4)), (0, 1), "grown from 0 to 1 page");
    assert_eq!(&answer[8..], b"hello");
    assert_eq!(sim.stable_memory_size(canister).unwrap(), 65_536);
}

/// A wasm64 canister, as the Motoko compiler builds them by default: the
/// system API with 64-bit pointers, callbacks that take a 64-bit `env`.
const WASM64: &str = r#"(module
  (import "ic0" "msg_arg_data_size" (func $arg_size (result i64)))
  (import "ic0" "msg_arg_data_copy" (func $arg_copy (param i64 i64 i64)))
  (import "ic0" "msg_reply_data_append" (func $reply_append (param i64 i64)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "call_new" (func $call_new (param i64 i64 i64 i64 i64 i64 i64 i64)))
  (import "ic0" "call_data_append" (func $call_data_append (param i64 i64)))
  (import "ic0" "call_perform" (func $call_perform (result i32)))
  (memory i64 1)
  (table 1 funcref)
  (elem (i32.const 0) $on_reply)
  (data (i64.const 100) "echo")
  (global $env (mut i64) (i64.const 0))
  (func (export "canister_update echo")
    (call $arg_copy (i64.const 0) (i64.const 0) (call $arg_size))
    (call $reply_append (i64.const 0) (call $arg_size))
    (call $reply))
  ;; Calls `echo` on the callee the argument names, with env 0x1_0000_0007.
  (func (export "canister_update relay")
    (call $arg_copy (i64.const 0) (i64.const 0) (call $arg_size))
    (call $call_new (i64.const 0) (call $arg_size) (i64.const 100) (i64.const 4)
      (i64.const 0) (i64.const 0x100000007) (i64.const 0) (i64.const 0x100000007))
    (call $call_data_append (i64.const 100) (i64.const 4))
    (drop (call $call_perform)))
  (func $on_reply (param $env i64)
    (global.set $env (local.get $env))
    (call $arg_copy (i64.const 200) (i64.const 0) (call $arg_size))
    (i64.store (i64.const 204) (local.get $env))
    (call $reply_append (i64.const 200) (i64.const 12))
    (call $reply))
  (func (export "canister_update grow")
    ;; 6 GiB is 98,304 pages: one more than that is refused.
    (i64.store (i64.const 0) (memory.grow (i64.const 98304)))
    (i64.store (i64.const 8) (memory.grow (i64.const 1)))
    (call $reply_append (i64.const 0) (i64.const 16))
    (call $reply)))"#;

#[test]
fn a_wasm64_canister_runs_with_64_bit_pointers_and_callbacks() {
    let mut sim = Sim::builder().with_subnet().with_subnet().build();
    let caller = install(&mut sim, 0, WASM64);
    let callee = install(&mut sim, 1, WASM64);
    assert_eq!(update(&mut sim, callee, "echo", b"abc").unwrap(), b"abc");
    let answer = update(&mut sim, caller, "relay", callee.as_slice()).unwrap();
    assert_eq!(&answer[..4], b"echo", "the callee's reply, read in the callback");
    assert_eq!(u64_of(&answer, 4), 0x1_0000_0007, "the callback's env, all 64 bits");
    let grown = update(&mut sim, caller, "grow", b"").unwrap();
    assert_eq!(u64_of(&grown, 0) as i64, -1, "past 6 GiB memory.grow fails");
    assert_eq!(u64_of(&grown, 8), 1, "a page more is given");
}

const GROWER: &str = r#"(module
  (import "ic0" "msg_arg_data_copy" (func $arg_copy (param i32 i32 i32)))
  (import "ic0" "msg_reply_data_append" (func $reply_append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (memory 1)
  ;; Grows by the argument's pages (a u32); replies with the size after.
  (func $grow
    (call $arg_copy (i32.const 0) (i32.const 0) (i32.const 4))
    (drop (memory.grow (i32.load (i32.const 0))))
    (i32.store (i32.const 0) (memory.size))
    (call $reply_append (i32.const 0) (i32.const 4))
    (call $reply))
  (func (export "canister_update grow") (call $grow))
  (func (export "canister_query grow_in_a_query") (call $grow)))"#;

#[test]
fn growth_past_the_wasm_memory_limit_traps_in_updates_not_in_queries() {
    let mut sim = Sim::builder().with_subnet().build();
    let canister = install(&mut sim, 0, GROWER);
    let limit = sim::Settings { wasm_memory_limit: Some(2 << 20), ..sim::Settings::default() };
    sim.update_settings(canister, limit).unwrap();
    let pages = |answer: Vec<u8>| u32::from_le_bytes(answer[..4].try_into().unwrap());
    assert_eq!(
        pages(update(&mut sim, canister, "grow", &31u32.to_le_bytes()).unwrap()),
        32,
        "2 MiB: at the limit"
    );
    let reject = update(&mut sim, canister, "grow", &1u32.to_le_bytes()).unwrap_err();
    let expected = "Canister exceeded its current Wasm memory limit of 2097152 bytes. The peak Wasm memory usage was 2162688 bytes.";
    assert!(reject.message.contains(expected), "{reject}");
    assert_eq!(pages(update(&mut sim, canister, "grow", &0u32.to_le_bytes()).unwrap()), 32, "rolled back");
    let read = sim.query_call(canister, controller(), "grow_in_a_query", 64u32.to_le_bytes().to_vec());
    assert_eq!(pages(read.unwrap()), 96, "a query may pass the limit (and keeps nothing)");
}

#[test]
fn an_update_call_to_a_query_method_runs_it_replicated_and_keeps_nothing() {
    let (mut sim, canister) = one_canister();
    for _ in 0..2 {
        let answer = update(&mut sim, canister, "replicated", b"").unwrap();
        assert_eq!((u64_of(&answer, 0), u64_of(&answer, 8)), (1, 1), "replicated, and its change discarded");
    }
    let answer = sim.query_call(canister, controller(), "replicated", vec![]).unwrap();
    assert_eq!(u64_of(&answer, 0), 0, "a query is not replicated");
    let reject = update(&mut sim, canister, "no_such_method", b"").unwrap_err();
    assert!(reject.message.contains("has no update method 'no_such_method'"), "{reject}");
}

/// Each reject carries the replica's error code from where it is made, so
/// a trap whose message reads like a missing method is still a trap: no
/// one has to tell them apart by their text.
#[test]
fn each_reject_carries_the_replicas_error_code_whatever_its_message() {
    use sim::ErrorCode;
    let mut sim = Sim::builder().with_subnet().build();
    let canister = install(
        &mut sim,
        0,
        r#"(module
          (import "ic0" "trap" (func $trap (param i32 i32)))
          (import "ic0" "msg_reject" (func $reject (param i32 i32)))
          (memory 1)
          (data (i32.const 0) "Canister x has no update method 'y'")
          (func (export "canister_update mimic") (call $trap (i32.const 0) (i32.const 35)))
          (func (export "canister_update unreachable") unreachable)
          (func (export "canister_update refuse") (call $reject (i32.const 0) (i32.const 35)))
          (func (export "canister_update silent")))"#,
    );
    let error_code = |sim: &mut Sim, method: &str| update(sim, canister, method, b"").unwrap_err().error_code;
    assert_eq!(error_code(&mut sim, "y"), ErrorCode::CanisterMethodNotFound);
    let mimic = update(&mut sim, canister, "mimic", b"").unwrap_err();
    assert!(mimic.message.contains("has no update method 'y'"), "{mimic}");
    assert_eq!((mimic.error_code, mimic.code()), (ErrorCode::CanisterCalledTrap, RejectCode::CanisterError));
    assert_eq!(error_code(&mut sim, "unreachable"), ErrorCode::CanisterTrapped);
    assert_eq!(error_code(&mut sim, "refuse"), ErrorCode::CanisterRejectedMessage);
    assert_eq!(error_code(&mut sim, "silent"), ErrorCode::CanisterDidNotReply);
    let missing_query = sim.query_call(canister, controller(), "y", vec![]).unwrap_err();
    assert_eq!(missing_query.error_code, ErrorCode::CanisterMethodNotFound);
    let nowhere = sim::canister_id(99);
    let not_found = sim.update_call(nowhere, controller(), "y", vec![]).unwrap_err();
    assert_eq!(
        (not_found.error_code, not_found.code()),
        (ErrorCode::CanisterNotFound, RejectCode::DestinationInvalid)
    );
}
