//! `once`: nothing executes twice, nothing decidable is refused, and the
//! state stays bounded however many nonces arrive.

use candid::Principal;
use ic_fanout::once::{ExecuteOnce, Execution, Limits, Refused};
use ic_stable_structures::{Memory, VectorMemory};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

fn principal(i: u64) -> Principal {
    Principal::from_slice(&i.to_be_bytes())
}

fn fresh(limits: Limits) -> (ExecuteOnce<VectorMemory>, VectorMemory, VectorMemory) {
    let (callers, executed) = (VectorMemory::default(), VectorMemory::default());
    (ExecuteOnce::init(callers.clone(), executed.clone(), limits), callers, executed)
}

fn bytes(memory: &VectorMemory) -> u64 {
    memory.size() * 65_536
}

#[derive(Clone, Debug)]
enum Op {
    Admit(u64),
    Revoke(u64),
    Execute { caller: u64, nonce: u64, floor: u64 },
    Reload,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0..4u64).prop_map(Op::Admit),
        1 => (0..4u64).prop_map(Op::Revoke),
        12 => (0..4u64, 0..40u64, 0..40u64).prop_map(|(caller, nonce, floor)| Op::Execute { caller, nonce, floor }),
        1 => Just(Op::Reload),
    ]
}

proptest! {
    /// Against a model that remembers everything: a nonce runs at most once
    /// per caller; a refusal is only ever for a reason the model sees too;
    /// held nonces never pass the cap; a reload (an upgrade) changes nothing.
    #[test]
    fn never_twice_and_refused_only_for_a_reason(ops in proptest::collection::vec(op(), 1..300)) {
        let limits = Limits { nonces_per_caller: 5, callers: 3 };
        let (mut once, callers_memory, executed_memory) = fresh(limits);
        let mut ran: BTreeSet<(u64, u64)> = BTreeSet::new();
        let mut floors: BTreeMap<u64, u64> = BTreeMap::new();
        let mut admitted: BTreeSet<u64> = BTreeSet::new();
        for op in ops {
            match op {
                Op::Admit(c) => match once.admit(principal(c)) {
                    Ok(()) => { admitted.insert(c); }
                    Err(refused) => {
                        prop_assert_eq!(refused, Refused::TooManyCallers { limit: 3 });
                        prop_assert_eq!(admitted.len(), 3);
                    }
                },
                Op::Revoke(c) => {
                    once.revoke(principal(c));
                    admitted.remove(&c);
                    prop_assert_eq!(once.caller(principal(c)).map_or(0, |s| s.held), 0);
                }
                Op::Reload => {
                    once = ExecuteOnce::init(callers_memory.clone(), executed_memory.clone(), limits);
                }
                Op::Execute { caller, nonce, floor } => {
                    let mut runs = 0;
                    let result = once.execute(principal(caller), nonce, floor, || runs += 1);
                    let model_floor = floors.entry(caller).or_default();
                    match result {
                        Ok(Execution::Now(())) => {
                            prop_assert!(ran.insert((caller, nonce)), "nonce {} of {} ran twice", nonce, caller);
                            prop_assert_eq!(runs, 1);
                        }
                        Ok(Execution::Earlier) => {
                            prop_assert!(ran.contains(&(caller, nonce)));
                            prop_assert_eq!(runs, 0);
                        }
                        Err(Refused::NotAdmitted(p)) => prop_assert!(p == principal(caller) && !admitted.contains(&caller)),
                        Err(Refused::BelowFloor { nonce: n, floor: f }) => prop_assert!(n == nonce && n < f),
                        Err(Refused::Full { held, .. }) => prop_assert_eq!(held, 5),
                        Err(other) => prop_assert!(false, "unexpected {:?}", other),
                    }
                    if admitted.contains(&caller) {
                        *model_floor = (*model_floor).max(floor);
                        let state = once.caller(principal(caller)).unwrap();
                        // The floor is at least the caller's own promises (a
                        // revoke may have raised it further).
                        prop_assert!(state.floor >= *model_floor);
                        prop_assert!(state.held <= 5);
                    }
                }
            }
        }
    }
}

/// A copy of `memory` that shares nothing with it.
fn copied(memory: &VectorMemory) -> VectorMemory {
    std::rc::Rc::new(std::cell::RefCell::new(memory.borrow().clone()))
}

/// Nonces and floors in the first chunks and in the last.
fn nonce() -> impl Strategy<Value = u64> {
    prop_oneof![0..300u64, (u64::MAX - 70)..=u64::MAX]
}

/// What executing `nonces` one at a time decides, on a model that keeps
/// every (caller, nonce) run and each caller's floor; the floor's raise is
/// kept even when refused, the nonces only when not.
fn one_at_a_time(
    ran: &mut BTreeSet<(u64, u64)>,
    floors: &mut BTreeMap<u64, u64>,
    caller: u64,
    nonces: &[u64],
    floor: u64,
    cap: usize,
) -> Result<Vec<Execution<u64>>, Refused> {
    if caller == NOT_ADMITTED {
        return Err(Refused::NotAdmitted(principal(caller)));
    }
    let floor = *floors.entry(caller).and_modify(|f| *f = (*f).max(floor)).or_insert(floor);
    ran.retain(|&(c, n)| c != caller || n >= floor);
    let mut after = ran.clone();
    let mut executions = Vec::new();
    for &nonce in nonces {
        if nonce < floor {
            return Err(Refused::BelowFloor { nonce, floor });
        }
        if after.contains(&(caller, nonce)) {
            executions.push(Execution::Earlier);
            continue;
        }
        let held = after.iter().filter(|&&(c, _)| c == caller).count();
        if held >= cap {
            return Err(Refused::Full { held: held as u64, floor });
        }
        after.insert((caller, nonce));
        executions.push(Execution::Now(nonce));
    }
    *ran = after;
    Ok(executions)
}

const NOT_ADMITTED: u64 = 2;

proptest! {
    /// `execute_all` decides a batch as executing its nonces one at a time
    /// would (on a model that keeps everything), all or nothing: where that
    /// would be refused part-way, it returns the same refusal, runs
    /// nothing, and leaves the store as raising the floor alone would.
    #[test]
    fn a_batch_is_decided_as_its_nonces_one_at_a_time_or_not_at_all(
        batches in proptest::collection::vec(
            (0..3u64, proptest::collection::vec(nonce(), 0..12), nonce()), 1..40),
    ) {
        let limits = Limits { nonces_per_caller: 8, callers: 2 };
        let (mut once, callers, executed) = fresh(limits);
        once.admit(principal(0)).unwrap();
        once.admit(principal(1)).unwrap();
        let (mut ran, mut floors) = (BTreeSet::new(), BTreeMap::new());
        for (c, nonces, floor) in batches {
            let caller = principal(c);
            let before = (copied(&callers), copied(&executed));
            let mut order = Vec::new();
            let all = once.execute_all(caller, nonces.iter().copied(), floor, |n| { order.push(n); n });
            let expected = one_at_a_time(&mut ran, &mut floors, c, &nonces, floor, 8);
            prop_assert_eq!(&all, &expected);
            if let Some(state) = once.caller(caller) {
                prop_assert_eq!(state.floor, floors[&c]);
                prop_assert_eq!(state.held as usize, ran.iter().filter(|&&(r, _)| r == c).count());
            }
            match all {
                Ok(executions) => {
                    let now: Vec<u64> = executions.iter().filter_map(|e| match e { Execution::Now(n) => Some(*n), Execution::Earlier => None }).collect();
                    prop_assert_eq!(order, now, "f runs once for each nonce executed now, in order");
                }
                Err(_) => {
                    prop_assert!(order.is_empty(), "ran {:?} of a refused batch", order);
                    let mut raised = ExecuteOnce::init(before.0.clone(), before.1.clone(), limits);
                    if raised.is_admitted(caller) {
                        raised.raise_floor(caller, floor);
                    }
                    prop_assert!(*callers.borrow() == *before.0.borrow(), "callers differ from the floor's raise alone");
                    prop_assert!(*executed.borrow() == *before.1.borrow(), "nonces differ from the floor's raise alone");
                }
            }
        }
    }
}

#[test]
fn nothing_the_callee_can_still_decide_is_refused() {
    let (mut once, _, _) = fresh(Limits { nonces_per_caller: 100, callers: 1 });
    let caller = principal(1);
    once.admit(caller).unwrap();
    // A caller that keeps within the cap by raising its floor as it goes
    // (and retries each nonce once) is never refused.
    for nonce in 0..10_000u64 {
        let floor = nonce.saturating_sub(50);
        assert_eq!(once.execute(caller, nonce, floor, || ()), Ok(Execution::Now(())));
        assert_eq!(once.execute(caller, nonce, floor, || ()), Ok(Execution::Earlier));
    }
    assert_eq!(once.caller(caller).unwrap().held, 51);
}

/// 10^6 nonces from one caller (in jobs of 10,000, its floor raised as each
/// starts), 10^6 from 1,000 callers (1,000 each), and the worst case: a
/// caller's 10,000 nonces 64 apart. The state stays what the caps allow.
/// Prints the bytes of stable memory for the crate's README.
#[test]
fn the_state_stays_bounded_after_a_million_nonces() {
    let (mut once, callers, executed) = fresh(Limits::default());
    let caller = principal(1);
    once.admit(caller).unwrap();
    let mut after_first_job = 0;
    for job in 0..100u64 {
        let first = job * 10_000;
        for nonce in first..first + 10_000 {
            assert!(once.execute(caller, nonce, first, || ()).unwrap().is_now());
        }
        if job == 0 {
            after_first_job = bytes(&executed);
        }
    }
    assert_eq!(once.caller(caller).unwrap().held, 10_000);
    assert_eq!(bytes(&executed), after_first_job, "memory grew after the first job");
    println!("one caller, 10^6 nonces in jobs of 10,000: {} bytes", bytes(&callers) + bytes(&executed));

    let (mut once, callers, executed) = fresh(Limits::default());
    for c in 0..1_000 {
        once.admit(principal(c)).unwrap();
        for nonce in 0..1_000 {
            once.execute(principal(c), nonce, 0, || ()).unwrap();
        }
    }
    let total = bytes(&callers) + bytes(&executed);
    println!("1,000 callers, 1,000 nonces each: {total} bytes, {} per caller", total / 1_000);
    // Consecutive nonces share their entries: about 1 KiB for 1,000.
    assert!(total / 1_000 <= 2_048, "{total} bytes");
    assert_eq!(once.admit(principal(1_000)), Err(Refused::TooManyCallers { limit: 1_000 }));

    let (mut once, callers, executed) = fresh(Limits::default());
    once.admit(caller).unwrap();
    for i in 0..10_000 {
        once.execute(caller, i * 64, 0, || ()).unwrap();
    }
    assert!(matches!(once.execute(caller, 1, 0, || ()), Err(Refused::Full { held: 10_000, .. })));
    let worst = bytes(&callers) + bytes(&executed);
    println!("worst case, one caller's 10,000 nonces 64 apart: {worst} bytes");
    // An entry a nonce, in B-tree nodes: what the module doc promises.
    assert!(worst <= 10_000 * 80, "{worst} bytes");
}

#[test]
fn the_largest_nonces_and_floors_are_decided_without_overflow() {
    let (mut once, _, _) = fresh(Limits::default());
    let caller = principal(1);
    once.admit(caller).unwrap();
    assert_eq!(once.execute(caller, u64::MAX, 0, || ()), Ok(Execution::Now(())));
    assert_eq!(once.execute(caller, u64::MAX, u64::MAX, || ()), Ok(Execution::Earlier));
    assert_eq!(once.caller(caller).unwrap().held, 1, "the floor u64::MAX keeps the nonce u64::MAX");
    assert_eq!(
        once.execute(caller, u64::MAX - 1, 0, || ()),
        Err(Refused::BelowFloor { nonce: u64::MAX - 1, floor: u64::MAX })
    );
    once.revoke(caller);
    once.admit(caller).unwrap();
    assert_eq!(
        once.execute(caller, u64::MAX, 0, || ()),
        Ok(Execution::Earlier),
        "never twice, even at the top"
    );

    let (mut capless, _, _) = fresh(Limits { nonces_per_caller: 0, callers: 0 });
    assert_eq!(capless.admit(caller), Err(Refused::TooManyCallers { limit: 0 }));
}
