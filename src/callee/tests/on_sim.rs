//! The callee's rules, checked on its real wasm in the simulator.

use candid::{CandidType, Principal, decode_one, encode_one};
use endpoint_args::testing::{endpoints_with_arguments, reject_for, undecodable_arguments};
use sim::{RejectCode, Sim};

fn caller() -> Principal {
    Principal::self_authenticating(b"callee tests")
}

/// The callee's `ping_batch` argument.
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

/// Every update of the callee that takes an argument, and the type its
/// reject names for an argument that is not of that type.
const UPDATES_WITH_ARGUMENTS: [(&str, &str); 2] = [("ping_batch", "PingBatch"), ("ping_once", "nat64")];

#[test]
fn the_table_lists_every_method_with_arguments_in_the_did() {
    let did = endpoints_with_arguments(include_str!("../callee.did"));
    let did: Vec<_> = did.iter().map(|e| (e.method.as_str(), e.expected.as_str())).collect();
    assert_eq!(did, UPDATES_WITH_ARGUMENTS);
}

#[test]
fn an_argument_that_is_not_the_methods_type_is_rejected_by_name_and_type_and_executes_nothing() {
    let (mut sim, callee) = installed();
    for (method, expected) in UPDATES_WITH_ARGUMENTS {
        for (what, argument) in undecodable_arguments() {
            let err = sim.update_call(callee, caller(), method, argument).unwrap_err();
            assert!(err.message.contains(&reject_for(method, expected)), "{method} given {what}: {err}");
            assert!(!err.message.contains("Panicked"), "{method} given {what}: {err}");
            assert_eq!(err.code, RejectCode::CanisterError, "{method} given {what}");
        }
    }
    assert_eq!(pings_received(&mut sim, callee), 0);
    // Nonce 7 was never taken: it executes now.
    let reply = sim.update_call(callee, caller(), "ping_once", encode_one(7u64).unwrap()).unwrap();
    assert!(decode_one::<bool>(&reply).unwrap());
}
