//! Hostile input to every endpoint of both canisters, on their real wasm:
//! random bytes, well-formed candid of the wrong type, and boundary values.
//! Each is answered (a reject, or a reply for a value that is allowed),
//! never with a panic of the simulator, and changes nothing: no ping is
//! sent, the stored callee stays, no job starts. An argument that does not
//! decode as the method's type is rejected with a message that names the
//! method and that type.

use candid::{CandidType, Principal, encode_one};
use endpoint_args::testing::{Endpoint, endpoints_with_arguments, reject_for};
use interface::{PingBatch, Plan, RetryPolicy};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use serde_bytes::ByteBuf;
use sim::Sim;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

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
    let no_arg = candid::encode_args(()).unwrap();
    sim.install_canister(caller, &wasms.caller, no_arg.clone(), controller()).unwrap();
    sim.install_canister(callee, &wasms.callee, no_arg, controller()).unwrap();
    sim.update_call(caller, controller(), "setup_callee", encode_one(callee).unwrap()).unwrap();
    World { sim, caller, callee }
}

/// Which canister an endpoint belongs to.
#[derive(Clone, Copy, Debug)]
enum Canister {
    Caller,
    Callee,
}

/// Every endpoint of both canisters that takes an argument, as their .did
/// files declare them, with the type an undecodable argument's reject names.
fn endpoints() -> Vec<(Canister, Endpoint)> {
    let caller = endpoints_with_arguments(include_str!("../../caller.did"));
    let callee = endpoints_with_arguments(include_str!("../../../callee/callee.did"));
    let all: Vec<_> = caller
        .into_iter()
        .map(|e| (Canister::Caller, e))
        .chain(callee.into_iter().map(|e| (Canister::Callee, e)))
        .collect();
    assert_eq!(all.len(), 12, "6 caller and 6 callee endpoints take arguments: {all:?}");
    all
}

/// Whether the canister decodes `argument` for `method` (then its checks,
/// not the decoder, answer it).
fn decodes(method: &str, argument: &[u8]) -> bool {
    use endpoint_args::decode;
    match method {
        "setup_callee" | "admit_caller" | "revoke_caller" | "nonce_state" => {
            decode::<(Principal,)>(argument).is_ok()
        }
        "ping_once_with_floor" => decode::<(interface::OncePing,)>(argument).is_ok(),
        "sequential_calls" | "parallel_calls" | "job_status" | "ping_once" => {
            decode::<(u64,)>(argument).is_ok()
        }
        "run_plan" => decode::<(Plan,)>(argument).is_ok(),
        "start_job" => decode::<(Plan, Option<RetryPolicy>)>(argument).is_ok(),
        "ping_batch" => decode::<(PingBatch,)>(argument).is_ok(),
        other => panic!("the fuzz test does not know {other}'s argument type: add it here"),
    }
}

/// Candid of a shape no argument has.
#[derive(CandidType, Clone, Debug)]
struct Nonce {
    nonce: u64,
}

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
        prop::collection::vec(any::<u8>(), 0..100).prop_map(|tail| [b"DIDL".to_vec(), tail].concat()),
        any::<bool>().prop_map(|b| encode_one(b).unwrap()),
        any::<u64>().prop_map(|nonce| encode_one(Nonce { nonce }).unwrap()),
        Just(candid::encode_args(()).unwrap()),
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

/// How many hostile arguments a run tries (each against every endpoint
/// that takes an argument).
const CASES: u32 = 64;

#[test]
fn no_endpoint_panics_or_changes_anything_on_hostile_input() {
    let mut runner = TestRunner::new(ProptestConfig { cases: CASES, ..ProptestConfig::default() });
    let endpoints = endpoints();
    let cases = Cell::new(0);
    // Per method: arguments that did not decode, each rejected by name and type.
    let undecodable = RefCell::new(BTreeMap::<String, u32>::new());
    let outcome = runner.run(&hostile_argument(), |argument| {
        cases.set(cases.get() + 1);
        let mut w = world();
        for (canister, Endpoint { method, expected, query }) in &endpoints {
            let target = match canister {
                Canister::Caller => w.caller,
                Canister::Callee => w.callee,
            };
            let answer = if *query {
                w.sim.query_call(target, controller(), method, argument.clone())
            } else {
                w.sim.update_call(target, controller(), method, argument.clone())
            };
            // A reply is fine where the value is allowed (n = 0, say); nothing may run.
            if let Err(reject) = &answer {
                prop_assert!(!reject.message.is_empty());
            }
            if !decodes(method, &argument) {
                let message = answer.err().map(|r| r.message).unwrap_or_default();
                prop_assert!(
                    message.contains(&reject_for(method, expected)),
                    "{} given {:?}: {}",
                    method,
                    argument,
                    message
                );
                *undecodable.borrow_mut().entry(method.clone()).or_default() += 1;
            }
        }
        assert_unchanged(&mut w, "hostile argument");
        // The callee is still the one stored: a real plan reaches it.
        let one = w.sim.update_call(w.caller, controller(), "sequential_calls", encode_one(1u64).unwrap());
        prop_assert_eq!(one, Ok(encode_one(1u64).unwrap()));
        Ok(())
    });
    let undecodable = undecodable.into_inner();
    println!(
        "fuzz cases run: {} (each against {} endpoints); undecodable arguments rejected by name and type: {undecodable:?}",
        cases.get(),
        endpoints.len()
    );
    outcome.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cases.get(), CASES, "every case ran");
    for (_, endpoint) in &endpoints {
        let checked = undecodable.get(&endpoint.method).copied().unwrap_or(0);
        assert!(checked >= CASES / 2, "only {checked} undecodable arguments reached {}", endpoint.method);
    }
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
