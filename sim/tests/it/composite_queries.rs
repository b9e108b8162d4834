//! Composite queries as the replica evaluates them: calls to queries on the
//! same subnet, state kept within the evaluation and none after it, and
//! the replica's limits and rejects.

use candid::Principal;
use sim::{ErrorCode, MAX_QUERY_CALL_DEPTH, RejectCode, Sim};

use crate::common::{controller, install};

/// `sum(hops)`, `peek(id)`, `inc` and `get`; see the fixture.
const COMPOSITE_SUM: &str = include_str!("../fixtures/composite_sum.wat");

/// `subnets` subnets and canisters on them (`placement[i]` is the subnet of
/// canister i), each counter at its index plus one.
fn counters(subnets: usize, placement: &[usize]) -> (Sim, Vec<Principal>) {
    let mut builder = Sim::builder();
    for _ in 0..subnets {
        builder = builder.with_subnet();
    }
    let mut sim = builder.build();
    let ids: Vec<_> = placement.iter().map(|&subnet| install(&mut sim, subnet, COMPOSITE_SUM)).collect();
    for (i, &id) in ids.iter().enumerate() {
        for _ in 0..=i {
            sim.update_call(id, controller(), "inc", vec![]).unwrap();
        }
    }
    (sim, ids)
}

fn hops(ids: &[Principal]) -> Vec<u8> {
    ids.iter().flat_map(|id| id.as_slice().to_vec()).collect()
}

fn value(reply: Vec<u8>) -> u64 {
    u64::from_le_bytes(reply.try_into().expect("8 bytes"))
}

fn sum(sim: &mut Sim, ids: &[Principal]) -> Result<u64, sim::Reject> {
    sim.query_call(ids[0], controller(), "sum", hops(&ids[1..])).map(value)
}

#[test]
fn a_composite_query_sums_counters_across_canisters_and_keeps_nothing() {
    let (mut sim, ids) = counters(1, &[0, 0, 0]);
    // Each adds 1 to its counter first; the caller's callback reads the
    // counter its first execution left: (1+1) + (2+1) + (3+1).
    assert_eq!(sum(&mut sim, &ids), Ok(9));
    assert_eq!(sum(&mut sim, &ids), Ok(9), "nothing of the first evaluation stayed");
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(value(sim.query_call(id, controller(), "get", vec![]).unwrap()), i as u64 + 1);
    }
    let peeked = sim.query_call(ids[0], controller(), "peek", hops(&ids[2..3])).map(value);
    assert_eq!(peeked, Ok(3), "a composite query calls a plain query");
}

#[test]
fn a_call_to_a_canister_on_another_subnet_is_rejected_as_not_found() {
    let (mut sim, ids) = counters(2, &[0, 1]);
    let refused = sum(&mut sim, &ids).unwrap_err();
    assert_eq!(refused.code(), RejectCode::CanisterReject, "the fixture passes the reject on");
    assert_eq!(refused.message, format!("3: Canister {} not found", ids[1]));
}

#[test]
fn a_composite_query_called_in_replicated_mode_is_refused() {
    let (mut sim, ids) = counters(1, &[0]);
    let refused = sim.update_call(ids[0], controller(), "sum", vec![]).unwrap_err();
    assert_eq!(refused.error_code, ErrorCode::CompositeQueryCalledInReplicatedMode);
    assert_eq!(refused.message, "Composite query cannot be called in replicated mode");
}

#[test]
fn calls_that_come_back_to_a_canister_on_the_stack_are_refused() {
    let (mut sim, ids) = counters(1, &[0, 0]);
    let refused = sum(&mut sim, &[ids[0], ids[1], ids[0]]).unwrap_err();
    assert_eq!(refused.error_code, ErrorCode::QueryCallGraphLoopDetected);
    assert_eq!(sum(&mut sim, &ids), Ok(5), "and every canister of the graph is as before");
}

#[test]
fn a_graph_may_nest_as_deep_as_the_replica_allows_and_no_deeper() {
    let deepest = MAX_QUERY_CALL_DEPTH + 1;
    let (mut sim, ids) = counters(1, &vec![0; deepest + 1]);
    // The last canister answers at once; one more that calls again is too deep.
    let expected: u64 = (2..=deepest as u64 + 1).sum();
    assert_eq!(sum(&mut sim, &ids[..deepest]), Ok(expected));
    let refused = sum(&mut sim, &ids).unwrap_err();
    assert_eq!(refused.error_code, ErrorCode::QueryCallGraphTooDeep);
}

#[test]
fn a_stopped_callee_rejects_and_the_caller_hears_why() {
    let (mut sim, ids) = counters(1, &[0, 0]);
    sim.stop_canister(ids[1]).unwrap();
    let refused = sum(&mut sim, &ids).unwrap_err();
    assert!(refused.message.starts_with("5: Canister"), "{}", refused.message);
    assert!(refused.message.ends_with("is stopped and therefore does not have a CallContextManager"));
}

#[test]
fn a_composite_query_runs_unreplicated_and_attaches_no_cycles() {
    let (mut sim, ids) = counters(1, &[0]);
    let replicated = sim.query_call(ids[0], controller(), "replicated", vec![]).unwrap();
    assert_eq!(replicated, 0_i32.to_le_bytes());
    let trapped = sim.query_call(ids[0], controller(), "attach", vec![]).unwrap_err();
    let expected = "\"ic0_call_cycles_add128\" cannot be executed in composite query mode";
    assert!(trapped.message.ends_with(expected), "{}", trapped.message);
}
