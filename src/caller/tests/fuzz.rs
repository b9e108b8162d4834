//! Hostile input to every endpoint of both canisters, on their real wasm:
//! random bytes, well-formed candid of the wrong type, and boundary values.
//! Each is answered (a reject, or a reply for a value that is allowed),
//! never with a panic of the simulator, and changes nothing: no ping is
//! sent, the stored callee stays, no job starts, no nonce is taken.

use candid::{Principal, encode_args, encode_one};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_bytes::ByteBuf;
use sim::Sim;
use std::cell::Cell;

fn controller() -> Principal {
    Principal::self_authenticating(b"fuzz tests")
}

struct World {
    sim: Sim,
    caller: Principal,
    callee: Principal,
}

fn world() -> World {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let mut sim = Sim::builder().with_subnet().build();
    let caller = sim.create_canister(0, vec![controller()]).unwrap();
    let callee = sim.create_canister(0, vec![controller()]).unwrap();
    let no_arg = encode_args(()).unwrap();
    sim.install_canister(caller, &wasms.caller, no_arg.clone(), controller()).unwrap();
    sim.install_canister(callee, &wasms.callee, no_arg, controller()).unwrap();
    sim.update_call(caller, controller(), "setup_callee", encode_one(callee).unwrap()).unwrap();
    World { sim, caller, callee }
}

const CALLER_UPDATES: [&str; 5] =
    ["setup_callee", "sequential_calls", "parallel_calls", "run_plan", "start_job"];
const CALLEE_UPDATES: [&str; 2] = ["ping_batch", "ping_once"];

/// Arguments no endpoint accepts, or accepts only to refuse their values.
fn hostile_argument() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        any::<String>().prop_map(|s| encode_one(s).unwrap()),
        any::<i64>().prop_map(|n| encode_one(n).unwrap()),
        Just(encode_one(u64::MAX).unwrap()),
        Just(encode_one(ByteBuf::from(vec![0u8; 10_000])).unwrap()),
        Just(encode_one(vec![Principal::anonymous(); 10_000]).unwrap()),
        // "DIDL" with a type table that claims far more than it holds.
        Just(b"DIDL\xff\xff\xff\xff\x0f".to_vec()),
    ]
}

/// What must not change: pings sent, the stored callee (still answering a
/// plan), and the jobs.
fn assert_unchanged(w: &mut World, case: &str) {
    let pings = w.sim.stats(w.callee).unwrap().executions_of("ping");
    assert_eq!(pings, 0, "{case}: a ping was sent");
    let jobs = w.sim.query_call(w.caller, controller(), "job_status", encode_one(1u64).unwrap()).unwrap();
    let jobs: Option<interface::Report> = candid::decode_one(&jobs).unwrap();
    assert_eq!(jobs, None, "{case}: a job started");
}

/// How many hostile arguments a run tries (each against one caller and one
/// callee method).
const CASES: u32 = 64;

#[test]
fn no_endpoint_panics_or_changes_anything_on_hostile_input() {
    let mut runner = TestRunner::new(ProptestConfig { cases: CASES, ..ProptestConfig::default() });
    let cases = Cell::new(0);
    let strategy = (hostile_argument(), 0..CALLER_UPDATES.len(), 0..CALLEE_UPDATES.len());
    let outcome = runner.run(&strategy, |(argument, caller_method, callee_method)| {
        cases.set(cases.get() + 1);
        let mut w = world();
        // A reply is fine where the value is allowed (n = 0, say); nothing may run.
        if let Err(reject) =
            w.sim.update_call(w.caller, controller(), CALLER_UPDATES[caller_method], argument.clone())
        {
            prop_assert!(!reject.message.is_empty());
        }
        if let Err(reject) =
            w.sim.update_call(w.callee, controller(), CALLEE_UPDATES[callee_method], argument.clone())
        {
            prop_assert!(!reject.message.is_empty());
        }
        let _ = w.sim.query_call(w.caller, controller(), "job_status", argument);
        assert_unchanged(
            &mut w,
            &format!("{}/{}", CALLER_UPDATES[caller_method], CALLEE_UPDATES[callee_method]),
        );
        // The callee is still the one stored: a real plan reaches it.
        let one = w.sim.update_call(w.caller, controller(), "sequential_calls", encode_one(1u64).unwrap());
        prop_assert_eq!(one, Ok(encode_one(1u64).unwrap()));
        Ok(())
    });
    println!("fuzz cases run: {} (each: one caller and one callee method, then job_status)", cases.get());
    outcome.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cases.get(), CASES, "every case ran");
}

#[test]
fn boundary_values_are_refused_before_any_call() {
    let mut w = world();
    let plan = |n: u64, k: Option<u64>, callees: Option<Vec<Principal>>| {
        encode_one(interface::Plan { k, callees, ..interface::Plan::new(interface::Strategy::Bounded, n) })
            .unwrap()
    };
    for (argument, says) in [
        (plan(u64::MAX, Some(1), None), "maximum of 10000"),
        (plan(10, Some(0), None), "k = 0"),
        (plan(10, Some(u64::MAX), Some(vec![])), "callees is empty"),
        (plan(10, Some(1), Some(vec![Principal::anonymous(); 10_000])), "maximum of 16"),
    ] {
        let reject = w.sim.update_call(w.caller, controller(), "run_plan", argument).unwrap_err();
        assert!(reject.message.contains(says), "{reject}");
    }
    assert_unchanged(&mut w, "boundary values");
}
