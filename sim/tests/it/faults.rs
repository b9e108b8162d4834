//! Fault injection: each knob does what it says, and the seed alone
//! decides the random choices.

use crate::common::{self, CALLEE, controller, install};
use sim::{Action, Event, Faults, Outstanding, RejectCode, Sim, Stall, TrapRate, Traps};

fn callee_on(subnets: usize) -> (Sim, candid::Principal) {
    let mut builder = Sim::builder();
    for _ in 0..subnets {
        builder = builder.with_subnet();
    }
    let mut sim = builder.build();
    let callee = install(&mut sim, subnets - 1, CALLEE);
    (sim, callee)
}

/// Submits `n` pings, ticks once, and says which were rejected, by code.
fn pings(sim: &mut Sim, callee: candid::Principal, n: usize) -> Vec<Option<RejectCode>> {
    let ids: Vec<_> =
        (0..n).map(|_| sim.submit_call(callee, controller(), "ping", vec![]).unwrap()).collect();
    sim.tick();
    ids.into_iter().map(|id| sim.ingress_status(id).expect("answered").err().map(|r| r.code())).collect()
}

#[test]
fn every_kth_execution_traps_and_is_rolled_back() {
    let (mut sim, callee) = callee_on(1);
    let traps = vec![Traps { canister: callee, rate: TrapRate::EveryKth(3) }];
    sim.inject_faults(Faults { traps, ..Faults::default() }).unwrap();
    let trapped: Vec<usize> =
        pings(&mut sim, callee, 7).iter().enumerate().filter(|(_, r)| r.is_some()).map(|(i, _)| i).collect();
    assert_eq!(trapped, [2, 5]);
    assert_eq!(pings(&mut sim, callee, 1), [None]);
    assert_eq!(sim.stats(callee).unwrap().traps, 2);
}

#[test]
fn the_seed_alone_decides_which_executions_trap() {
    let outcomes = |seed| {
        let (mut sim, callee) = callee_on(1);
        let traps = vec![Traps { canister: callee, rate: TrapRate::Fraction(0.5) }];
        sim.inject_faults(Faults { seed, traps, ..Faults::default() }).unwrap();
        pings(&mut sim, callee, 64)
    };
    assert_eq!(outcomes(7), outcomes(7));
    assert_ne!(outcomes(7), outcomes(8));
    assert!(outcomes(7).iter().all(|r| r.is_none_or(|code| code == RejectCode::CanisterError)));
}

#[test]
fn a_stalled_subnet_executes_nothing_until_the_stall_ends() {
    let (mut sim, callee) = callee_on(2);
    let stalls = vec![Stall { subnet: 1, from_round: 1, rounds: 3 }];
    sim.inject_faults(Faults { stalls, ..Faults::default() }).unwrap();
    let id = sim.submit_call(callee, controller(), "ping", vec![]).unwrap();
    for _ in 0..3 {
        sim.tick();
        assert_eq!(sim.ingress_status(id), None, "round {}", sim.ticks());
        assert_eq!(sim.outstanding(), Outstanding { ingress: 1, messages: 1, ..Outstanding::default() });
    }
    sim.tick();
    assert_eq!(sim.ingress_status(id), Some(Ok(vec![])));
    assert_eq!(sim.outstanding(), Outstanding::default());
}

#[test]
fn events_apply_at_their_round_in_order() {
    let (mut sim, callee) = callee_on(1);
    let at = |round, action| Event { round, canister: callee, action };
    let events = vec![
        at(1, Action::RunOutOfCycles { left: 5 }),
        at(2, Action::Stop),
        at(3, Action::Start),
        at(4, Action::Stop),
        at(4, Action::Delete),
    ];
    sim.inject_faults(Faults { events, ..Faults::default() }).unwrap();
    assert_eq!(pings(&mut sim, callee, 1), [None]);
    assert!(sim.cycle_balance(callee).unwrap() <= 5);
    assert_eq!(pings(&mut sim, callee, 1), [Some(RejectCode::CanisterError)], "stopped");
    assert_eq!(pings(&mut sim, callee, 1), [None], "started");
    assert_eq!(pings(&mut sim, callee, 1), [Some(RejectCode::DestinationInvalid)], "stopped, then deleted");
    let log = sim.fault_log().join("\n");
    assert!(log.ends_with(&format!("round 4: stopped {callee}\nround 4: deleted {callee}")), "{log}");
}

#[test]
fn an_upgrade_waits_for_the_open_call_contexts_to_close() {
    let mut world = common::world(2, 1, 1);
    let (sim, probe) = (&mut world.sim, world.probe);
    let upgrade = Action::Upgrade { wasm: wat::parse_str(common::PROBE).unwrap(), arg: vec![] };
    let faults = Faults {
        stalls: vec![Stall { subnet: 1, from_round: 1, rounds: 3 }],
        events: vec![Event { round: 2, canister: probe, action: upgrade }],
        ..Faults::default()
    };
    sim.inject_faults(faults).unwrap();
    let id = common::submit_fan_out(
        sim,
        probe,
        &[common::record(world.callees[0], 1, common::Method::Ping, false)],
    );
    for _ in 0..10 {
        sim.tick();
    }
    assert!(sim.ingress_status(id).is_some());
    // Stalled in rounds 1 to 3, the callee answers in round 4; the probe's
    // call context closes when it takes the answer in round 5.
    assert_eq!(sim.fault_log(), [format!("round 6: upgraded {probe}")]);
    assert_eq!(sim.outstanding(), Outstanding::default());
}
