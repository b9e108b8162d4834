//! The callee's rules, checked on its real wasm in the simulator.

use candid::{CandidType, Principal, decode_one, encode_one};
use endpoint_args::testing::{endpoints_with_arguments, reject_for, undecodable_arguments};
use interface::OncePing;
use sim::{RejectCode, Sim};

fn caller() -> Principal {
    Principal::self_authenticating(b"callee tests")
}

/// Not a controller.
fn stranger() -> Principal {
    Principal::self_authenticating(b"a stranger")
}

/// The callee's `ping_batch` argument, as v0.1.0 callers send it.
#[derive(CandidType)]
struct PingBatch {
    first_nonce: Option<u64>,
    count: u32,
}

fn installed() -> (Sim, Principal) {
    let wasm = canister_wasm::caller_and_callee().expect("canister wasm").callee;
    let mut sim = Sim::builder().with_subnet().build();
    let callee = sim.create_canister(0, vec![caller()]).unwrap();
    sim.install_canister(callee, &wasm, encode_one(()).unwrap(), caller()).unwrap();
    (sim, callee)
}

fn pings_received(sim: &mut Sim, callee: Principal) -> u64 {
    let received = sim.query_call(callee, caller(), "pings_received", encode_one(()).unwrap()).unwrap();
    decode_one(&received).unwrap()
}

#[test]
fn a_batch_whose_nonces_would_wrap_is_rejected_and_executes_nothing() {
    let (mut sim, callee) = installed();

    let batch = PingBatch { first_nonce: Some(u64::MAX), count: 2 };
    let err = sim.update_call(callee, caller(), "ping_batch", encode_one(batch).unwrap()).unwrap_err();
    assert!(err.message.contains("passes the largest nonce"), "{err}");
    assert_eq!(pings_received(&mut sim, callee), 0);

    for nonce in [0, u64::MAX] {
        let reply = sim.update_call(callee, caller(), "ping_once", encode_one(nonce).unwrap()).unwrap();
        assert!(decode_one::<bool>(&reply).unwrap(), "nonce {nonce} was never executed");
    }
    // The last nonce itself is fine.
    let batch = PingBatch { first_nonce: Some(u64::MAX - 1), count: 1 };
    let reply = sim.update_call(callee, caller(), "ping_batch", encode_one(batch).unwrap()).unwrap();
    assert_eq!(decode_one::<serde_bytes::ByteBuf>(&reply).unwrap().into_vec(), [1]);
}

/// Every method of the callee that takes an argument, and the type its
/// reject names for an argument that is not of that type.
const METHODS_WITH_ARGUMENTS: [(&str, &str); 6] = [
    ("admit_caller", "principal"),
    ("nonce_state", "principal"),
    ("ping_batch", "PingBatch"),
    ("ping_once", "nat64"),
    ("ping_once_with_floor", "OncePing"),
    ("revoke_caller", "principal"),
];

#[test]
fn the_table_lists_every_method_with_arguments_in_the_did() {
    let did = endpoints_with_arguments(include_str!("../callee.did"));
    let did: Vec<_> = did.iter().map(|e| (e.method.as_str(), e.expected.as_str())).collect();
    assert_eq!(did, METHODS_WITH_ARGUMENTS);
}

#[test]
fn an_argument_that_is_not_the_methods_type_is_rejected_by_name_and_type_and_executes_nothing() {
    let (mut sim, callee) = installed();
    for (method, expected) in METHODS_WITH_ARGUMENTS {
        for (what, argument) in undecodable_arguments() {
            let err = if method == "nonce_state" {
                sim.query_call(callee, caller(), method, argument)
            } else {
                sim.update_call(callee, caller(), method, argument)
            }
            .unwrap_err();
            assert!(err.message.contains(&reject_for(method, expected)), "{method} given {what}: {err}");
            assert!(!err.message.contains("Panicked"), "{method} given {what}: {err}");
            assert_eq!(err.code(), RejectCode::CanisterError, "{method} given {what}");
        }
    }
    assert_eq!(pings_received(&mut sim, callee), 0);
    // Nonce 7 was never taken: it executes now.
    let reply = sim.update_call(callee, caller(), "ping_once", encode_one(7u64).unwrap()).unwrap();
    assert!(decode_one::<bool>(&reply).unwrap());
}

fn ping_once(
    sim: &mut Sim,
    callee: Principal,
    sender: Principal,
    ping: OncePing,
) -> Result<bool, sim::Reject> {
    sim.update_call(callee, sender, "ping_once_with_floor", encode_one(ping).unwrap())
        .map(|reply| decode_one(&reply).unwrap())
}

fn admin(
    sim: &mut Sim,
    callee: Principal,
    sender: Principal,
    method: &str,
    who: Principal,
) -> Result<(), sim::Reject> {
    sim.update_call(callee, sender, method, encode_one(who).unwrap()).map(drop)
}

fn nonce_state(sim: &mut Sim, callee: Principal, who: Principal) -> Option<(u64, u64, bool)> {
    #[derive(candid::Deserialize, CandidType)]
    struct NonceState {
        floor: u64,
        held: u64,
        admitted: bool,
    }
    let reply = sim.query_call(callee, stranger(), "nonce_state", encode_one(who).unwrap()).unwrap();
    decode_one::<Option<NonceState>>(&reply).unwrap().map(|s| (s.floor, s.held, s.admitted))
}

#[test]
fn a_stranger_has_nothing_executed_or_kept_until_a_controller_admits_it() {
    let (mut sim, callee) = installed();
    let once = OncePing { nonce: 1, floor: 0 };
    let err = ping_once(&mut sim, callee, stranger(), once).unwrap_err();
    assert_eq!(err.code(), RejectCode::CanisterError, "a trap, which idempotent callers retry: {err}");
    assert!(err.message.contains("is not admitted") && err.message.contains("controller"), "{err}");
    let err = admin(&mut sim, callee, stranger(), "admit_caller", stranger()).unwrap_err();
    assert!(err.message.contains("only a controller"), "{err}");
    assert_eq!((pings_received(&mut sim, callee), nonce_state(&mut sim, callee, stranger())), (0, None));

    admin(&mut sim, callee, caller(), "admit_caller", stranger()).unwrap();
    assert_eq!(ping_once(&mut sim, callee, stranger(), once), Ok(true));
    assert_eq!(ping_once(&mut sim, callee, stranger(), once), Ok(false));
    assert_eq!(nonce_state(&mut sim, callee, stranger()), Some((0, 1, true)));

    // Revoked, its nonces go, and none of them runs again once readmitted.
    admin(&mut sim, callee, caller(), "revoke_caller", stranger()).unwrap();
    assert!(ping_once(&mut sim, callee, stranger(), once).unwrap_err().message.contains("is not admitted"));
    admin(&mut sim, callee, caller(), "admit_caller", stranger()).unwrap();
    let err = ping_once(&mut sim, callee, stranger(), once).unwrap_err();
    assert!(err.message.contains("below the floor 2"), "{err}");
    assert_eq!(nonce_state(&mut sim, callee, stranger()), Some((2, 0, true)));
    assert_eq!(pings_received(&mut sim, callee), 1);
}

/// The callee's `ping_batch` argument with the floor later callers send.
#[derive(CandidType)]
struct FlooredBatch {
    first_nonce: Option<u64>,
    count: u32,
    floor: Option<u64>,
}

fn floored_batch(
    sim: &mut Sim,
    callee: Principal,
    sender: Principal,
    (first, count): (u64, u32),
    floor: u64,
) -> Result<(), sim::Reject> {
    let batch = FlooredBatch { first_nonce: Some(first), count, floor: Some(floor) };
    sim.update_call(callee, sender, "ping_batch", encode_one(batch).unwrap()).map(drop)
}

/// 10^6 nonces from one caller in batches of 10,000, its floor raised as
/// each starts: the callee's stable memory stops growing after the first,
/// a batch decides its nonces together (where one at a time cost ~145,000
/// instructions a nonce), and a batch that would pass the cap of 10,000
/// held nonces executes nothing.
#[test]
fn the_callees_state_stays_bounded_after_a_million_nonces_from_one_caller() {
    let (mut sim, callee) = installed();
    let instructions_before = sim.stats(callee).unwrap().instructions;
    let mut after_first = 0;
    for first in (0..1_000_000).step_by(10_000) {
        floored_batch(&mut sim, callee, caller(), (first, 10_000), first).unwrap();
        if first == 0 {
            after_first = sim.stable_memory_size(callee).unwrap();
        }
    }
    let per_nonce = (sim.stats(callee).unwrap().instructions - instructions_before) / 1_000_000;
    println!("10^6 nonces in batches of 10,000: {per_nonce} instructions a nonce");
    assert!(per_nonce < 10_000, "{per_nonce} instructions a nonce");
    assert_eq!(sim.stable_memory_size(callee).unwrap(), after_first, "stable memory grew");
    assert_eq!(nonce_state(&mut sim, callee, caller()), Some((990_000, 10_000, true)));
    assert_eq!(pings_received(&mut sim, callee), 1_000_000);

    let err = floored_batch(&mut sim, callee, caller(), (1_000_000, 10_000), 990_000).unwrap_err();
    assert!(err.message.contains("may hold at most 10000 executed nonces"), "{err}");
    assert_eq!(pings_received(&mut sim, callee), 1_000_000, "a refused batch executes none of its pings");
    let err = ping_once(&mut sim, callee, caller(), OncePing { nonce: 989_999, floor: 0 }).unwrap_err();
    assert!(err.message.contains("below the floor 990000"), "{err}");
}

/// 10^6 nonces from 1,000 callers, 1,000 each, all held (floor 0): the
/// callee's stable memory is its header and the first 8 MiB bucket of each
/// of `ExecuteOnce`'s two memories, and another 10^6 with the floors
/// raised past the first leave it so; a 1,001st caller is not admitted.
/// (`fanout/tests/it/once.rs` measures the bytes within the buckets: about
/// 1.2 KB a caller.)
#[test]
fn the_callees_state_stays_bounded_after_a_million_nonces_from_a_thousand_callers() {
    const PAGE: u64 = 64 * 1024;
    const BUCKET: u64 = 128 * PAGE;
    let (mut sim, callee) = installed();
    let senders: Vec<Principal> =
        (0..1_000u32).map(|i| Principal::self_authenticating(i.to_be_bytes())).collect();
    for &sender in &senders {
        admin(&mut sim, callee, caller(), "admit_caller", sender).unwrap();
    }
    let err = admin(&mut sim, callee, caller(), "admit_caller", stranger()).unwrap_err();
    assert!(err.message.contains("1000 callers are admitted"), "{err}");

    for &sender in &senders {
        floored_batch(&mut sim, callee, sender, (0, 1_000), 0).unwrap();
    }
    assert_eq!(pings_received(&mut sim, callee), 1_000_000);
    assert_eq!(sim.stable_memory_size(callee).unwrap(), PAGE + 2 * BUCKET);
    for &sender in &senders {
        floored_batch(&mut sim, callee, sender, (1_000, 1_000), 1_000).unwrap();
    }
    assert_eq!(pings_received(&mut sim, callee), 2_000_000);
    assert_eq!(sim.stable_memory_size(callee).unwrap(), PAGE + 2 * BUCKET);
    for sender in [senders[0], senders[999]] {
        assert_eq!(nonce_state(&mut sim, callee, sender), Some((1_000, 1_000, true)));
    }
}
