//! Rounds across subnets, time and timers, with the WAT fixtures.

use crate::common::*;
use candid::Principal;
use sim::{ONE_SECOND_NS, RoundLimits, Sim, SimConfig};

/// Three subnet ids whose byte order differs from the order of their text
/// form (which starts with a checksum).
fn three_subnet_ids() -> [Principal; 3] {
    let id = |b: u8| Principal::from_slice(&[b; 29]);
    let mut ids = [id(0x10), id(0x20), id(0x30)];
    ids.sort_by(|a, b| a.as_slice().cmp(b.as_slice()));
    ids
}

#[test]
fn a_tick_runs_subnets_in_byte_order_of_their_ids_not_creation_or_text_order() {
    let ids = three_subnet_ids();
    let mut by_text = ids;
    by_text.sort_by_key(|p| p.to_text());
    assert_ne!(by_text, ids, "the fixture's ids must sort differently as text");
    let sim = Sim::builder().with_subnet_id(ids[2]).with_subnet_id(ids[0]).with_subnet_id(ids[1]).build();
    assert_eq!(sim.subnets(), ids);
}

/// A on subnet `a`, B on `b`, C on `c`; A.relay([B, C]): A calls B, which
/// calls C before answering. Returns (tick in which C ran, ticks until A's
/// answer).
fn relay(a: usize, b: usize, c: usize) -> (u64, u64) {
    relay_with_latency(a, b, c, 0)
}

fn relay_with_latency(a: usize, b: usize, c: usize, xnet_latency_rounds: u64) -> (u64, u64) {
    let ids = three_subnet_ids();
    let builder = Sim::builder().with_xnet_latency_rounds(xnet_latency_rounds);
    let mut sim = builder.with_subnet_id(ids[0]).with_subnet_id(ids[1]).with_subnet_id(ids[2]).build();
    let [ca, cb, cc] = [a, b, c].map(|subnet| install(&mut sim, subnet, RELAY));
    let hops = [cb.as_slice(), cc.as_slice()].concat();
    let message = sim.submit_call(ca, controller(), "relay", hops).unwrap();
    let mut c_ran_in = None;
    for tick in 1..=20 {
        sim.tick();
        let seen = sim.query_call(cc, controller(), "calls_seen", vec![]).unwrap();
        if c_ran_in.is_none() && u32_at(&seen, 0) == 1 {
            c_ran_in = Some(tick);
        }
        if let Some(answer) = sim.ingress_status(message) {
            assert_eq!(answer.unwrap(), b"relay");
            return (c_ran_in.expect("C ran"), tick);
        }
    }
    panic!("no answer after 20 ticks");
}

#[test]
fn a_relay_across_three_subnets_depends_on_their_order() {
    // Ascending: every request goes to a later subnet of the same tick;
    // every response waits for the next tick.
    assert_eq!(relay(0, 1, 2), (1, 3));
    // Descending: every request waits for the next tick, every response is
    // inducted in the same tick. A round trip costs one tick either way.
    assert_eq!(relay(2, 1, 0), (3, 3));
    // Mixed: A -> B waits, B -> C does not.
    assert_eq!(relay(1, 0, 2), (2, 3));
}

#[test]
fn with_an_xnet_latency_every_hop_takes_that_many_rounds_whatever_the_order() {
    // Ingress runs A in tick 1; each of the four hops (A -> B -> C and the
    // two responses back) is inducted `latency` ticks after it was sent.
    for latency in [1, 2, 3] {
        for (a, b, c) in [(0, 1, 2), (2, 1, 0), (1, 0, 2)] {
            let expected = (1 + 2 * latency, 1 + 4 * latency);
            assert_eq!(relay_with_latency(a, b, c, latency), expected, "latency {latency}, order {a}{b}{c}");
        }
    }
}

#[test]
fn ingress_is_inducted_in_the_next_round() {
    let mut w = world(1, 1, 0);
    let callee = w.callees[0];
    w.sim.submit_call(callee, controller(), "ping", vec![]).unwrap();
    assert_eq!(w.sim.stats(callee).unwrap().executions_of("ping"), 0, "nothing runs before a tick");
    w.sim.tick();
    assert_eq!(w.sim.stats(callee).unwrap().executions_of("ping"), 1);
}

#[test]
fn time_moves_by_the_configured_step_and_by_advance_time() {
    let mut sim = Sim::builder().with_subnet().with_time_step(ONE_SECOND_NS).build();
    let start = sim.time();
    sim.tick();
    sim.tick();
    assert_eq!(sim.time() - start, 2 * ONE_SECOND_NS);
    sim.advance_time(7);
    assert_eq!(sim.time() - start, 2 * ONE_SECOND_NS + 7);
    let default = Sim::builder().with_subnet().build();
    assert_eq!(default.config().time_step_ns, 1, "PocketIC's 1 ns per round");
}

fn timer_runs(sim: &mut Sim, probe: Principal) -> (u32, u64) {
    let b = sim.query_call(probe, controller(), "timer", vec![]).unwrap();
    (u32_at(&b, 0), u64::from_le_bytes(b[4..12].try_into().unwrap()))
}

#[test]
fn a_timer_fires_in_the_first_round_at_or_past_its_time() {
    let mut w = world_with(Sim::builder().with_time_step(ONE_SECOND_NS), 1, 0, 0);
    let at = w.sim.time() + 5 * ONE_SECOND_NS + ONE_SECOND_NS / 2;
    w.sim.update_call(w.probe, controller(), "set_timer", at.to_le_bytes().to_vec()).unwrap();
    let mut fired_at_tick_time = None;
    for _ in 0..10 {
        let before = w.sim.time();
        w.sim.tick();
        let (runs, when) = timer_runs(&mut w.sim, w.probe);
        if runs == 0 {
            assert!(w.sim.time() < at, "not fired although the round's time {} >= {at}", w.sim.time());
            continue;
        }
        assert_eq!(runs, 1, "fires once");
        assert!(before < at && when >= at, "fired at {when}, the first round at or past {at}");
        fired_at_tick_time = Some(when);
        break;
    }
    assert!(fired_at_tick_time.is_some(), "the timer never fired");
    run_until_idle(&mut w.sim);
    assert_eq!(timer_runs(&mut w.sim, w.probe).0, 1, "and does not fire again");
}

#[test]
fn a_due_timer_and_every_queued_message_run_in_the_same_iteration() {
    // One iteration a round: finalization takes what the round has left.
    let round_limits =
        RoundLimits { overhead_per_canister_for_finalization: u64::MAX, ..RoundLimits::default() };
    let config = SimConfig { round_limits, ..SimConfig::default() };
    let mut w = world_with(Sim::builder().with_config(config), 1, 0, 0);
    let due = w.sim.time() + 1;
    w.sim.update_call(w.probe, controller(), "set_timer", due.to_le_bytes().to_vec()).unwrap();
    let never = u64::MAX.to_le_bytes().to_vec();
    let queued: Vec<_> = (0..3)
        .map(|_| w.sim.submit_call(w.probe, controller(), "set_timer", never.clone()).unwrap())
        .collect();
    w.sim.tick();
    assert_eq!(timer_runs(&mut w.sim, w.probe).0, 1, "the timer ran first");
    let answered = queued.iter().filter(|&&id| w.sim.ingress_status(id).is_some()).count();
    assert_eq!(
        answered, 3,
        "and the 3 queued messages after it, as the replica runs them all in one iteration"
    );
}

/// Counts its heartbeats; `beats` answers the count.
const HEARTBEAT_COUNTER: &str = include_str!("../fixtures/heartbeat_counter.wat");

/// As the replica schedules it: `canister_heartbeat` once in every round of
/// a running canister, none while it is stopped.
#[test]
fn a_running_canister_beats_once_a_round_and_a_stopped_one_not_at_all() {
    let mut sim = Sim::builder().with_subnet().build();
    let canister = sim.create_canister(0, vec![controller()]).unwrap();
    sim.install_canister(canister, &wat::parse_str(HEARTBEAT_COUNTER).unwrap(), vec![], controller())
        .unwrap();
    let beats = |sim: &mut Sim| {
        let reply = sim.query_call(canister, controller(), "beats", vec![]).unwrap();
        u32::from_le_bytes(reply.try_into().unwrap())
    };
    assert_eq!(beats(&mut sim), 0, "no round yet");
    for _ in 0..5 {
        sim.tick();
    }
    assert_eq!(beats(&mut sim), 5);
    sim.stop_canister(canister).unwrap();
    for _ in 0..3 {
        sim.tick();
    }
    sim.start_canister(canister).unwrap();
    assert_eq!(beats(&mut sim), 5, "none while stopping or stopped");
    sim.tick();
    assert_eq!(beats(&mut sim), 6);
}
