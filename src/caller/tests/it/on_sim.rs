//! The caller's rules, checked on its real wasm in the simulator.

use candid::{Principal, decode_one, encode_one};
use endpoint_args::testing::{endpoints_with_arguments, reject_for, undecodable_arguments};
use sim::{ONE_SECOND_NS, RejectCode, Sim};

const MAX_CALLS: u64 = 10_000;

fn controller() -> Principal {
    Principal::self_authenticating(b"caller tests")
}

fn stranger() -> Principal {
    Principal::self_authenticating(b"not a controller")
}

struct Setup {
    sim: Sim,
    caller: Principal,
    callee: Principal,
    caller_wasm: Vec<u8>,
}

/// Caller and callee installed on one subnet; `setup_callee` not called.
fn installed() -> Setup {
    installed_on(Sim::builder())
}

fn installed_on(builder: sim::SimBuilder) -> Setup {
    let wasms = canister_wasm::caller_and_callee().expect("canister wasm");
    let mut sim = builder.with_subnet().build();
    let caller = sim.create_canister(0, vec![controller()]).unwrap();
    let callee = sim.create_canister(0, vec![controller()]).unwrap();
    let no_arg = candid::encode_args(()).unwrap();
    sim.install_canister(caller, &wasms.caller, no_arg.clone(), controller()).unwrap();
    sim.install_canister(callee, &wasms.callee, no_arg, controller()).unwrap();
    Setup { sim, caller, callee, caller_wasm: wasms.caller }
}

impl Setup {
    fn setup_callee(&mut self, sender: Principal, callee: Principal) -> Result<(), sim::Reject> {
        self.sim.update_call(self.caller, sender, "setup_callee", encode_one(callee).unwrap()).map(drop)
    }

    fn calls(&mut self, sender: Principal, method: &str, n: u64) -> Result<u64, sim::Reject> {
        let reply = self.sim.update_call(self.caller, sender, method, encode_one(n).unwrap())?;
        Ok(decode_one(&reply).unwrap())
    }

    fn pings(&self) -> u64 {
        self.sim.stats(self.callee).unwrap().executions_of("ping")
    }
}

#[test]
fn setup_callee_from_a_non_controller_is_rejected_and_changes_nothing() {
    let mut s = installed();
    let callee = s.callee;
    let err = s.setup_callee(stranger(), callee).unwrap_err();
    assert!(err.message.contains("only a controller of this canister"), "{err}");
    assert!(err.message.contains(&stranger().to_text()), "{err}");
    let err = s.calls(controller(), "sequential_calls", 1).unwrap_err();
    assert!(err.message.contains("callee not set"), "no callee was stored: {err}");
}

#[test]
fn fan_outs_from_a_non_controller_are_rejected() {
    let mut s = installed();
    let callee = s.callee;
    s.setup_callee(controller(), callee).unwrap();
    for method in ["sequential_calls", "parallel_calls"] {
        let err = s.calls(stranger(), method, 1).unwrap_err();
        assert!(err.message.contains("only a controller"), "{err}");
    }
    assert_eq!(s.pings(), 0);
}

#[test]
fn the_caller_itself_is_refused_as_callee() {
    let mut s = installed();
    let caller = s.caller;
    let err = s.setup_callee(controller(), caller).unwrap_err();
    assert!(err.message.contains("is this caller canister itself"), "{err}");
}

#[test]
fn a_principal_that_is_no_canister_is_refused_as_callee_and_the_stored_one_kept() {
    let mut s = installed();
    let callee = s.callee;
    s.setup_callee(controller(), callee).unwrap();
    for (principal, what) in [
        (Principal::management_canister(), "the management canister"),
        (Principal::anonymous(), "the anonymous principal"),
        (stranger(), "a self-authenticating (user) principal"),
    ] {
        let err = s.setup_callee(controller(), principal).unwrap_err();
        assert!(
            err.message.contains(&format!("{principal} is {what}, which can never be a callee")),
            "{err}"
        );
    }
    assert_eq!(s.calls(controller(), "sequential_calls", 3).unwrap(), 3, "the stored callee still answers");
    assert_eq!(s.pings(), 3);
}

#[test]
fn without_a_callee_the_documented_message() {
    let mut s = installed();
    for method in ["sequential_calls", "parallel_calls"] {
        let err = s.calls(controller(), method, 1).unwrap_err();
        assert!(err.message.contains("callee not set: call setup_callee(principal) first"), "{err}");
    }
}

#[test]
fn more_than_the_maximum_is_rejected_before_any_call() {
    let mut s = installed();
    let callee = s.callee;
    s.setup_callee(controller(), callee).unwrap();
    for method in ["sequential_calls", "parallel_calls"] {
        let err = s.calls(controller(), method, MAX_CALLS + 1).unwrap_err();
        assert!(err.message.contains("maximum of 10000"), "{err}");
    }
    assert_eq!(s.sim.stats(s.caller).unwrap().calls_performed, 0);
    assert_eq!(s.pings(), 0);
}

#[test]
fn the_callee_survives_an_upgrade() {
    let mut s = installed();
    let (caller, callee) = (s.caller, s.callee);
    s.setup_callee(controller(), callee).unwrap();
    let wasm = s.caller_wasm.clone();
    s.sim.upgrade_canister(caller, &wasm, candid::encode_args(()).unwrap(), controller()).unwrap();
    assert_eq!(s.calls(controller(), "sequential_calls", 3), Ok(3));
    assert_eq!(s.pings(), 3);
}

#[test]
fn the_environment_variable_is_the_fallback() {
    let mut s = installed();
    let (caller, callee) = (s.caller, s.callee);
    s.sim.set_env_var(caller, "PUBLIC_CANISTER_ID:callee", &callee.to_text()).unwrap();
    assert_eq!(s.calls(controller(), "parallel_calls", 4), Ok(4));
    assert_eq!(s.pings(), 4);
}

#[test]
fn a_deleted_callee_makes_calls_fail_without_trapping() {
    let mut s = installed();
    let callee = s.callee;
    s.setup_callee(controller(), callee).unwrap();
    s.sim.stop_canister(callee).unwrap();
    s.sim.delete_canister(callee).unwrap();
    assert_eq!(s.calls(controller(), "sequential_calls", 5), Ok(0));
    assert_eq!(s.calls(controller(), "parallel_calls", 5), Ok(0));
    let stats = s.sim.stats(s.caller).unwrap();
    assert_eq!((stats.calls_performed, stats.traps), (10, 0));
    // The failures were DESTINATION_INVALID rejects, not refusals.
    assert_eq!(stats.calls_refused, 0);
    assert_eq!(stats.rejects_received.get(&RejectCode::DestinationInvalid), Some(&10));
}

#[test]
fn a_callee_that_does_not_answer_within_the_deadline_gives_sys_unknown() {
    let mut s = installed_on(Sim::builder().with_time_step(ONE_SECOND_NS));
    let (caller, callee) = (s.caller, s.callee);
    s.setup_callee(controller(), callee).unwrap();
    // ic-cdk's bounded-wait calls wait 300 s; the callee is held back for 400.
    s.sim.pause_canister(callee, 400);
    let start = s.sim.time();
    let message =
        s.sim.submit_call(caller, controller(), "sequential_calls", encode_one(1u64).unwrap()).unwrap();
    let reply = loop {
        s.sim.tick();
        if let Some(reply) = s.sim.ingress_status(message) {
            break reply.unwrap();
        }
        assert!(s.sim.ticks() < 1_000, "no answer");
    };
    assert_eq!(decode_one::<u64>(&reply).unwrap(), 0);
    let waited = (s.sim.time() - start) / ONE_SECOND_NS;
    assert!((300..=302).contains(&waited), "the deadline passed after {waited} s");
    let stats = s.sim.stats(caller).unwrap();
    assert_eq!(stats.rejects_received.get(&RejectCode::SysUnknown), Some(&1));
    // The callee runs the ping late; its response is dropped.
    for _ in 0..200 {
        s.sim.tick();
    }
    assert_eq!(s.pings(), 1);
    assert_eq!(
        s.sim.stats(caller).unwrap().executions_of("callback"),
        1,
        "no callback for the late response"
    );
    assert_eq!(s.sim.calls_in_flight(caller, callee), 0);
}

/// Every endpoint of the caller that takes an argument, and the type its
/// reject names for an argument that is not of that type.
const ENDPOINTS_WITH_ARGUMENTS: [(&str, &str); 6] = [
    ("setup_callee", "principal"),
    ("sequential_calls", "nat64"),
    ("parallel_calls", "nat64"),
    ("run_plan", "Plan"),
    ("start_job", "(Plan, opt RetryPolicy)"),
    ("job_status", "nat64"),
];

#[test]
fn the_table_lists_every_method_with_arguments_in_the_did() {
    let did = endpoints_with_arguments(include_str!("../../caller.did"));
    let mut did: Vec<_> = did.iter().map(|e| (e.method.as_str(), e.expected.as_str())).collect();
    let mut table = ENDPOINTS_WITH_ARGUMENTS.to_vec();
    did.sort();
    table.sort();
    assert_eq!(did, table);
}

#[test]
fn an_argument_that_is_not_the_methods_type_is_rejected_by_name_and_type_and_changes_nothing() {
    let mut s = installed();
    let (caller, callee) = (s.caller, s.callee);
    s.setup_callee(controller(), callee).unwrap();
    for (method, expected) in ENDPOINTS_WITH_ARGUMENTS {
        for (what, argument) in undecodable_arguments() {
            let err = if method == "job_status" {
                s.sim.query_call(caller, controller(), method, argument)
            } else {
                s.sim.update_call(caller, controller(), method, argument)
            }
            .unwrap_err();
            assert!(err.message.contains(&reject_for(method, expected)), "{method} given {what}: {err}");
            assert!(!err.message.contains("Panicked"), "{method} given {what}: {err}");
            assert_eq!(err.code(), RejectCode::CanisterError, "{method} given {what}");
        }
    }
    let stats = s.sim.stats(caller).unwrap();
    assert_eq!((stats.calls_performed, s.pings()), (0, 0));
    let job = s.sim.query_call(caller, controller(), "job_status", encode_one(1u64).unwrap()).unwrap();
    assert_eq!(decode_one::<Option<interface::Report>>(&job).unwrap(), None, "no job started");
    // The stored callee is still the one set.
    assert_eq!(s.calls(controller(), "sequential_calls", 1), Ok(1));
}

#[test]
fn a_stranger_is_told_about_the_controller_rule_before_the_argument() {
    let mut s = installed();
    let err = s.sim.update_call(s.caller, stranger(), "run_plan", b"not candid".to_vec()).unwrap_err();
    assert!(err.message.contains("only a controller"), "{err}");
}

/// What `ic0.cost_call` asks for a `ping` with an empty candid argument:
/// 260 K + 1 K x (4 + 6) bytes + 1 K x 2 MiB + 5 M + 40 G.
const PING_PREPAYMENT: u128 = 260_000 + 10_000 + 2_097_152_000 + 5_000_000 + 40_000_000_000;
/// What a message prepays for its own execution.
const MESSAGE_PREPAYMENT: u128 = 5_000_000 + 40_000_000_000;

#[test]
fn too_few_liquid_cycles_fail_calls_before_they_are_performed() {
    let mut s = installed();
    let (caller, callee) = (s.caller, s.callee);
    s.setup_callee(controller(), callee).unwrap();
    // Keep all but enough for the message and two and a half call prepayments.
    let balance = s.sim.cycle_balance(caller).unwrap();
    let reserve = balance - MESSAGE_PREPAYMENT - PING_PREPAYMENT * 5 / 2;
    s.sim.set_frozen_reserve_cycles(caller, reserve).unwrap();
    assert_eq!(s.calls(controller(), "parallel_calls", 10), Ok(2));
    let stats = s.sim.stats(caller).unwrap();
    // ic-cdk saw InsufficientLiquidCycleBalance and never called call_perform.
    assert_eq!((stats.calls_performed, stats.calls_refused, stats.traps), (2, 0, 0));
    // One at a time, each prepayment is refunded before the next call.
    assert_eq!(s.calls(controller(), "sequential_calls", 10), Ok(10));
}

#[test]
fn the_balance_falls_by_exactly_what_was_consumed_and_prepayments_are_refunded() {
    let mut s = installed();
    let (caller, callee) = (s.caller, s.callee);
    s.setup_callee(controller(), callee).unwrap();
    let balance = s.sim.cycle_balance(caller).unwrap();
    let consumed = s.sim.stats(caller).unwrap().cycles_consumed;
    assert_eq!(s.calls(controller(), "parallel_calls", 100), Ok(100));
    let spent = balance - s.sim.cycle_balance(caller).unwrap();
    assert_eq!(spent, s.sim.stats(caller).unwrap().cycles_consumed - consumed);
    assert!(spent < 100 * PING_PREPAYMENT / 100, "the prepayments came back: spent {spent}");
}
