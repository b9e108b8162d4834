//! The callee's rules, checked on its real wasm in the simulator.

use candid::{CandidType, Principal, decode_one, encode_one};
use sim::Sim;

fn caller() -> Principal {
    Principal::self_authenticating(b"callee tests")
}

/// The callee's `ping_batch` argument.
#[derive(CandidType)]
struct PingBatch {
    first_nonce: Option<u64>,
    count: u32,
}

#[test]
fn a_batch_whose_nonces_would_wrap_is_rejected_and_executes_nothing() {
    let wasm = canister_wasm::caller_and_callee().expect("canister wasm").callee;
    let mut sim = Sim::builder().with_subnet().build();
    let callee = sim.create_canister(0, vec![caller()]).unwrap();
    sim.install_canister(callee, &wasm, encode_one(()).unwrap(), caller()).unwrap();

    let batch = PingBatch { first_nonce: Some(u64::MAX), count: 2 };
    let err = sim.update_call(callee, caller(), "ping_batch", encode_one(batch).unwrap()).unwrap_err();
    assert!(err.message.contains("passes the largest nonce"), "{err}");
    let received = sim.query_call(callee, caller(), "pings_received", encode_one(()).unwrap()).unwrap();
    assert_eq!(decode_one::<u64>(&received).unwrap(), 0);

    for nonce in [0, u64::MAX] {
        let reply = sim.update_call(callee, caller(), "ping_once", encode_one(nonce).unwrap()).unwrap();
        assert!(decode_one::<bool>(&reply).unwrap(), "nonce {nonce} was never executed");
    }
    // The last nonce itself is fine.
    let batch = PingBatch { first_nonce: Some(u64::MAX - 1), count: 1 };
    let reply = sim.update_call(callee, caller(), "ping_batch", encode_one(batch).unwrap()).unwrap();
    assert_eq!(decode_one::<serde_bytes::ByteBuf>(&reply).unwrap().into_vec(), [1]);
}
