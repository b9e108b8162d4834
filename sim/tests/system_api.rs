//! The system API beyond what the example's canisters call, against the
//! replica's semantics: certified data and the data certificate, call
//! deadlines, the canister version, and the stack.

mod common;

use candid::Principal;
use common::*;
use sim::{ONE_SECOND_NS, RejectCode, Sim};

const SYSTEM_API: &str = include_str!("fixtures/system_api.wat");

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
    assert_eq!(reject.code, RejectCode::CanisterError);
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
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert!(reject.message.ends_with("Canister trapped: stack overflow"), "{reject}");
    let touched = sim.query_call(canister, controller(), "touched", vec![]).unwrap();
    assert_eq!(u64_of(&touched, 0), 0, "the trapped message is rolled back");

    // wasmi's default stack took 1,000 frames; the replica's 5 MiB far more.
    let depth = 100_000u32;
    let answer = update(&mut sim, canister, "recurse", &depth.to_le_bytes()).unwrap();
    assert_eq!(u64_of(&answer, 0), u64::from(depth));
}
