//! A canister's calls to the management canister, through the simulator:
//! a canister in WAT forwards a call to `aaaaa-aa` and replies with what
//! came back, as the canister saw it.

use candid::{Decode, Encode, Nat, Principal};
use ic_error_types::ErrorCode;
use ic_management_canister_types::{
    CanisterIdRecord, CanisterSettings, CanisterStatusResult, CanisterStatusType, CreateCanisterArgs,
    InstallCodeArgs, ProvisionalCreateCanisterWithCyclesArgs, UpdateSettingsArgs,
};
use sim::Sim;

use crate::management::{self, CANISTER_CREATION_FEE, raw_rand_value};
use crate::{CanisterCall, Effective, Engine, Ic, Interface, Keys, Reject};

/// `call`'s argument: the cycles to attach (u64), the method's length
/// (u32) and name, then the candid argument. It replies with 0 and the
/// reply, or the reject code and message; in both cases after the cycles
/// refunded (u128).
const FORWARDER: &str = r#"(module
  (import "ic0" "msg_arg_data_size" (func $arg_size (result i32)))
  (import "ic0" "msg_arg_data_copy" (func $arg_copy (param i32 i32 i32)))
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "msg_reject_code" (func $reject_code (result i32)))
  (import "ic0" "msg_reject_msg_size" (func $reject_msg_size (result i32)))
  (import "ic0" "msg_reject_msg_copy" (func $reject_msg_copy (param i32 i32 i32)))
  (import "ic0" "msg_cycles_refunded128" (func $refunded (param i32)))
  (import "ic0" "call_new" (func $call_new (param i32 i32 i32 i32 i32 i32 i32 i32)))
  (import "ic0" "call_data_append" (func $call_data_append (param i32 i32)))
  (import "ic0" "call_cycles_add128" (func $cycles_add (param i64 i64)))
  (import "ic0" "call_perform" (func $call_perform (result i32)))
  (memory 2)
  (table 2 funcref)
  (elem (i32.const 0) $on_reply $on_reject)
  (func (export "canister_update call") (local $size i32) (local $name i32)
    (local.set $size (call $arg_size))
    (call $arg_copy (i32.const 0) (i32.const 0) (local.get $size))
    (local.set $name (i32.load (i32.const 8)))
    ;; The callee: the empty principal, aaaaa-aa.
    (call $call_new (i32.const 0) (i32.const 0) (i32.const 12) (local.get $name)
      (i32.const 0) (i32.const 0) (i32.const 1) (i32.const 0))
    (call $call_data_append
      (i32.add (i32.const 12) (local.get $name))
      (i32.sub (local.get $size) (i32.add (i32.const 12) (local.get $name))))
    (call $cycles_add (i64.const 0) (i64.load (i32.const 0)))
    (drop (call $call_perform)))
  (func $on_reply (param i32) (local $size i32)
    (i32.store8 (i32.const 65536) (i32.const 0))
    (call $refunded (i32.const 65537))
    (call $append (i32.const 65536) (i32.const 17))
    (local.set $size (call $arg_size))
    (call $arg_copy (i32.const 0) (i32.const 0) (local.get $size))
    (call $append (i32.const 0) (local.get $size))
    (call $reply))
  (func $on_reject (param i32) (local $size i32)
    (i32.store8 (i32.const 65536) (call $reject_code))
    (call $refunded (i32.const 65537))
    (call $append (i32.const 65536) (i32.const 17))
    (local.set $size (call $reject_msg_size))
    (call $reject_msg_copy (i32.const 0) (i32.const 0) (local.get $size))
    (call $append (i32.const 0) (local.get $size))
    (call $reply)))"#;

/// What the forwarder saw: the reply, or the reject code and message.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    answer: Result<Vec<u8>, (u8, String)>,
    refunded: u128,
}

fn owner() -> Principal {
    Principal::from_slice(&[0x0e; 29])
}

/// An ingress message from the owner, run to its outcome; the rounds it took.
fn run(ic: &mut Ic<Sim>, canister: Principal, method: &str, arg: Vec<u8>) -> (Result<Vec<u8>, Reject>, u64) {
    let number = ic.submit(Effective::None, CanisterCall::new(canister, owner(), method, arg)).unwrap();
    for rounds in 1..=10 {
        ic.execute_round();
        if let Some(outcome) = ic.outcome(number) {
            return (outcome, rounds);
        }
    }
    panic!("{method} did not finish");
}

fn manage(ic: &mut Ic<Sim>, method: &str, arg: Vec<u8>) -> Vec<u8> {
    run(ic, Principal::management_canister(), method, arg).0.unwrap()
}

/// A new canister of the owner's on subnet `subnet` (an index), with the forwarder installed.
fn forwarder(ic: &mut Ic<Sim>, subnet: usize) -> Principal {
    let create = ProvisionalCreateCanisterWithCyclesArgs::default();
    let effective = Effective::Subnet(ic.engine.subnets()[subnet]);
    let number = ic
        .submit(
            effective,
            CanisterCall::new(
                Principal::management_canister(),
                owner(),
                "provisional_create_canister_with_cycles",
                Encode!(&create).unwrap(),
            ),
        )
        .unwrap();
    ic.execute_round();
    let created = ic.outcome(number).unwrap().unwrap();
    let canister_id = Decode!(&created, CanisterIdRecord).unwrap().canister_id;
    let install = InstallCodeArgs {
        mode: ic_management_canister_types::CanisterInstallMode::Install,
        canister_id,
        wasm_module: wat::parse_str(FORWARDER).unwrap(),
        arg: vec![],
        sender_canister_version: None,
    };
    manage(ic, "install_code", Encode!(&install).unwrap());
    canister_id
}

/// `canister` calls `method` on the management canister with `cycles`
/// attached; what it saw, and the rounds the owner's message took.
fn forward(ic: &mut Ic<Sim>, canister: Principal, method: &str, arg: Vec<u8>, cycles: u64) -> (Seen, u64) {
    let mut forwarded = cycles.to_le_bytes().to_vec();
    forwarded.extend((method.len() as u32).to_le_bytes());
    forwarded.extend(method.as_bytes());
    forwarded.extend(arg);
    let (outcome, rounds) = run(ic, canister, "call", forwarded);
    let bytes = outcome.expect("the forwarder replies");
    let refunded = u128::from_le_bytes(bytes[1..17].try_into().unwrap());
    let answer = match bytes[0] {
        0 => Ok(bytes[17..].to_vec()),
        code => Err((code, String::from_utf8(bytes[17..].to_vec()).unwrap())),
    };
    (Seen { answer, refunded }, rounds)
}

fn raw_rand(ic: &mut Ic<Sim>, canister: Principal) -> [u8; 32] {
    let (seen, _) = forward(ic, canister, "raw_rand", Encode!().unwrap(), 0);
    Decode!(&seen.answer.unwrap(), Vec<u8>).unwrap().try_into().expect("32 bytes")
}

fn cycles(ic: &Ic<Sim>, canister: Principal) -> u128 {
    ic.engine.status(canister).unwrap().cycles
}

fn id_arg(canister_id: Principal) -> Vec<u8> {
    Encode!(&CanisterIdRecord { canister_id }).unwrap()
}

/// A network without system canisters: the management canister answers
/// canisters all the same.
fn network(seed: u64) -> Ic<Sim> {
    Ic::new(Sim::builder().with_subnets(2).with_xnet_latency_rounds(5).build(), Keys::from_seed(seed), false)
}

#[test]
fn raw_rand_gives_32_new_bytes_each_call_the_same_on_a_network_of_the_same_seed() {
    let mut ic = network(7);
    let canister = forwarder(&mut ic, 1);
    let (first, second) = (raw_rand(&mut ic, canister), raw_rand(&mut ic, canister));
    assert_ne!(first, second);
    assert_eq!((first, second), (raw_rand_value(7, 0), raw_rand_value(7, 1)), "as documented");

    // Saved and restored: the sequence goes on.
    let mut restored = Ic::<Sim>::restore(&ic.save().unwrap()().unwrap()).unwrap();
    let third = raw_rand(&mut restored, canister);
    assert_eq!(third, raw_rand_value(7, 2));

    // Replayed: the same bytes; another seed, others.
    let mut again = network(7);
    let canister = forwarder(&mut again, 1);
    assert_eq!([raw_rand(&mut again, canister), raw_rand(&mut again, canister)], [first, second]);
    let mut other = network(8);
    let canister = forwarder(&mut other, 1);
    assert_ne!(raw_rand(&mut other, canister), first);

    // Only canisters may call it, as on the replica.
    let refused =
        run(&mut ic, Principal::management_canister(), "raw_rand", Encode!().unwrap()).0.unwrap_err();
    assert_eq!(refused.error_code, ErrorCode::CanisterRejectedMessage);
    assert_eq!(refused.message, "Only canisters can call ic00 method raw_rand");
}

#[test]
fn a_canister_reads_its_own_status_only_as_its_own_controller() {
    let mut ic = network(1);
    let canister = forwarder(&mut ic, 1);
    // Not its own controller: refused as the replica refuses, with
    // CANISTER_ERROR (IC0512, CanisterInvalidController).
    let (seen, rounds) = forward(&mut ic, canister, "canister_status", id_arg(canister), 0);
    let (code, message) = seen.answer.unwrap_err();
    assert_eq!(code, 5, "CANISTER_ERROR");
    assert!(message.contains("Only controllers of canister"), "{message}");
    assert_eq!(rounds, 2, "on the caller's own subnet, with no latency between subnets");
    let subnet = ic.engine.subnets()[1];
    let (answer, accepted) =
        management::call_from_canister(&mut ic, subnet, canister, "canister_status", &id_arg(canister), 0);
    assert_eq!(answer.unwrap_err().error_code, ErrorCode::CanisterInvalidController);
    assert_eq!(accepted, 0);

    // Its own controller: its status.
    let settings = UpdateSettingsArgs {
        canister_id: canister,
        settings: CanisterSettings { controllers: Some(vec![owner(), canister]), ..Default::default() },
        sender_canister_version: None,
    };
    manage(&mut ic, "update_settings", Encode!(&settings).unwrap());
    let (seen, _) = forward(&mut ic, canister, "canister_status", id_arg(canister), 0);
    let status = Decode!(&seen.answer.unwrap(), CanisterStatusResult).unwrap();
    assert_eq!(status.status, CanisterStatusType::Running);
    assert_eq!(status.settings.controllers, [owner(), canister]);
    // Read while its call was open, with the cycles for the largest reply
    // it may get set aside.
    let (now, initial) = (Nat::from(cycles(&ic, canister)), Nat::from(100_000_000_000_000u64));
    assert!(status.cycles > 0u8 && status.cycles <= now && now <= initial, "{status:?}");

    // A method the model does not implement: its reject, not "not found".
    let (seen, _) = forward(&mut ic, canister, "bitcoin_get_utxos", vec![], 0);
    let (code, message) = seen.answer.unwrap_err();
    assert!(message.contains("not supported by this project's model"), "{code}: {message}");
    // Nor may it delete itself.
    let (seen, _) = forward(&mut ic, canister, "delete_canister", id_arg(canister), 0);
    assert!(seen.answer.unwrap_err().1.contains("cannot delete itself"));
}

#[test]
fn deposit_cycles_adds_the_cycles_attached_to_the_target() {
    let mut ic = network(2);
    let (canister, target) = (forwarder(&mut ic, 0), forwarder(&mut ic, 1));
    let (before, own_before) = (cycles(&ic, target), cycles(&ic, canister));
    let (seen, _) = forward(&mut ic, canister, "deposit_cycles", id_arg(target), 1_000_000);
    assert_eq!(seen.refunded, 0, "all accepted");
    Decode!(&seen.answer.unwrap(), ()).unwrap();
    assert_eq!(cycles(&ic, target), before + 1_000_000, "on another subnet too");
    assert!(cycles(&ic, canister) <= own_before - 1_000_000);

    // To no canister: refunded.
    let missing = Principal::from_slice(&[9; 10]);
    let (seen, _) = forward(&mut ic, canister, "deposit_cycles", id_arg(missing), 5);
    assert_eq!(seen.refunded, 5);
    assert_eq!(seen.answer.unwrap_err().0, 3, "DESTINATION_INVALID");

    // Ingress carries no cycles: only canisters deposit, as on the replica.
    let refused = run(&mut ic, Principal::management_canister(), "deposit_cycles", id_arg(target)).0;
    assert_eq!(refused.unwrap_err().error_code, ErrorCode::CanisterRejectedMessage);
}

#[test]
fn create_canister_is_paid_with_the_cycles_attached_and_the_caller_controls_it() {
    let mut ic = network(3);
    let canister = forwarder(&mut ic, 1);
    let create = Encode!(&CreateCanisterArgs { settings: None, sender_canister_version: None }).unwrap();
    let paid = CANISTER_CREATION_FEE as u64 + 1_000_000_000_000;
    let (seen, _) = forward(&mut ic, canister, "create_canister", create.clone(), paid);
    assert_eq!(seen.refunded, 0);
    let created = Decode!(&seen.answer.unwrap(), CanisterIdRecord).unwrap().canister_id;
    let info = ic.canister(created).unwrap();
    assert_eq!(info.controllers, [canister]);
    assert_eq!(info.subnet, ic.engine.subnets()[1], "on the caller's subnet");
    assert_eq!(cycles(&ic, created), 1_000_000_000_000, "the creation fee kept");

    // Too few cycles: refused as the replica refuses, and refunded.
    let (seen, _) = forward(&mut ic, canister, "create_canister", create.clone(), 100);
    assert_eq!(seen.refunded, 100);
    let (code, message) = seen.answer.unwrap_err();
    assert_eq!(code, 4, "CANISTER_REJECT");
    assert!(message.starts_with("Creating a canister requires a fee of 500000000000"), "{message}");

    // Ingress may not: nothing pays for it.
    let refused = run(&mut ic, Principal::management_canister(), "create_canister", create).0;
    assert_eq!(refused.unwrap_err().message, "Only canisters can call ic00 method create_canister");
}
