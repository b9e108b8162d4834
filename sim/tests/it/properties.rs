//! Properties of the model over random programs of the WAT fixtures and
//! random topologies.

use crate::common::*;
use candid::Principal;
use proptest::prelude::*;
use sim::{
    Action, Event, Faults, IDS_PER_SUBNET, MessageId, ONE_SECOND_NS, RejectCode, Sim, SimConfig, Stall,
    TrapRate, Traps,
};

/// One `fan_out` message: submitted `after_ticks` ticks after the previous
/// one, making calls to callees by index.
#[derive(Clone, Debug)]
struct Submission {
    probe: usize,
    after_ticks: u64,
    calls: Vec<(usize, u32, bool, bool)>, // callee, n, traps, reply callback traps
}

#[derive(Clone, Debug)]
struct Program {
    subnets: usize,
    queue_capacity: u32,
    probe_subnets: Vec<usize>,
    callee_subnets: Vec<usize>,
    submissions: Vec<Submission>,
}

fn program() -> impl Strategy<Value = Program> {
    (1usize..=3, 2u32..=12, 1usize..=2, 1usize..=3).prop_flat_map(
        |(subnets, queue_capacity, probes, callees)| {
            let submission = (
                0..probes,
                0u64..3,
                prop::collection::vec((0..callees, 0u32..15, any::<bool>(), any::<bool>()), 1..4),
            )
                .prop_map(|(probe, after_ticks, calls)| Submission { probe, after_ticks, calls });
            (
                prop::collection::vec(0..subnets, probes),
                prop::collection::vec(0..subnets, callees),
                prop::collection::vec(submission, 1..7),
            )
                .prop_map(move |(probe_subnets, callee_subnets, submissions)| Program {
                    subnets,
                    queue_capacity,
                    probe_subnets,
                    callee_subnets,
                    submissions,
                })
        },
    )
}

/// What a run of a program shows from outside.
#[derive(Debug, PartialEq)]
struct Outcome {
    replies: Vec<Option<Result<Vec<u8>, sim::Reject>>>,
    stats: Vec<String>,
}

fn run(p: &Program) -> Outcome {
    let config = SimConfig { queue_capacity: p.queue_capacity, ..SimConfig::default() };
    let mut builder = Sim::builder().with_config(config);
    for _ in 0..p.subnets {
        builder = builder.with_subnet();
    }
    let mut sim = builder.build();
    let probes: Vec<Principal> = p.probe_subnets.iter().map(|&s| install(&mut sim, s, PROBE)).collect();
    let callees: Vec<Principal> = p.callee_subnets.iter().map(|&s| install(&mut sim, s, CALLEE)).collect();
    let check_slots = |sim: &Sim| {
        for &probe in &probes {
            for &callee in &callees {
                let in_flight = sim.calls_in_flight(probe, callee);
                assert!(
                    in_flight <= p.queue_capacity,
                    "{in_flight} requests in flight, capacity {}",
                    p.queue_capacity
                );
            }
        }
    };
    let mut messages: Vec<MessageId> = vec![];
    for s in &p.submissions {
        for _ in 0..s.after_ticks {
            sim.tick();
            check_slots(&sim);
        }
        let records: Vec<Vec<u8>> = s
            .calls
            .iter()
            .map(|&(callee, n, traps, reply_traps)| {
                let method = if traps { Method::Trap } else { Method::Ping };
                record(callees[callee], n, method, reply_traps)
            })
            .collect();
        messages.push(submit_fan_out(&mut sim, probes[s.probe], &records));
    }
    for _ in 0..20 {
        sim.tick();
        check_slots(&sim);
    }
    let replies: Vec<_> = messages.iter().map(|&m| sim.ingress_status(m)).collect();
    assert!(replies.iter().all(Option::is_some), "every ingress message completed: {replies:?}");
    let mut callee_executions = 0;
    for &callee in &callees {
        let stats = sim.stats(callee).unwrap();
        callee_executions += stats.executions_of("ping") + stats.executions_of("trap");
    }
    let mut performed = 0;
    for &probe in &probes {
        let stats = sim.stats(probe).unwrap();
        assert_eq!(stats.executions_of("callback"), stats.calls_performed, "one callback per performed call");
        performed += stats.calls_performed;
        for &callee in &callees {
            assert_eq!(sim.calls_in_flight(probe, callee), 0, "every slot was freed");
        }
    }
    assert_eq!(callee_executions, performed, "every performed call was executed once");
    let stats = probes.iter().chain(&callees).map(|&c| format!("{:?}", sim.stats(c).unwrap())).collect();
    Outcome { replies, stats }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn slots_callbacks_and_ingress_are_never_lost_and_runs_repeat(p in program()) {
        let first = run(&p);
        prop_assert_eq!(run(&p), first);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// No public method panics on any number it is given: times, ticks,
    /// cycles and round limits saturate; the model keeps running after.
    #[test]
    fn public_methods_take_any_number(
        step in any::<u64>(),
        advance in any::<u64>(),
        pause in any::<u64>(),
        cycles in any::<u128>(),
        reserve in any::<u128>(),
        round in any::<u64>(),
        slice in any::<u64>(),
        overhead in any::<u64>(),
        cores in any::<usize>(),
        xnet_latency_rounds in any::<u64>(),
        max_instructions in prop_oneof![Just(0), Just(u64::MAX), 0..1_000_000u64],
    ) {
        let mut config = SimConfig {
            time_step_ns: step,
            xnet_latency_rounds,
            max_instructions_per_message: max_instructions,
            ..SimConfig::default()
        };
        config.round_limits.max_instructions_per_round = round;
        config.round_limits.max_instructions_per_slice = slice;
        config.round_limits.overhead_per_execution = overhead;
        config.round_limits.overhead_per_canister_for_finalization = overhead;
        config.round_limits.scheduler_cores = cores;
        let mut w = world_with(Sim::builder().with_config(config), 2, 1, 1);
        let (probe, callee) = (w.probe, w.callees[0]);
        w.sim.advance_time(advance);
        w.sim.pause_canister(callee, pause);
        w.sim.add_cycles(probe, cycles).unwrap();
        w.sim.set_frozen_reserve_cycles(probe, reserve).unwrap();
        let message = submit_fan_out(&mut w.sim, probe, &[record(callee, 3, Method::Ping, false)]);
        for _ in 0..3 {
            w.sim.tick();
        }
        w.sim.advance_time(u64::MAX);
        w.sim.tick();
        prop_assert_eq!(w.sim.time(), u64::MAX);
        let _ = w.sim.ingress_status(message);
    }
}

proptest! {
    /// Reserving any number of ids, then creating a canister: a subnet
    /// never assigns an id outside its range (refused once it is full).
    #[test]
    fn reserved_ids_never_leave_the_subnets_range(reserve in prop_oneof![Just(u64::MAX), Just(IDS_PER_SUBNET), any::<u64>()]) {
        let mut sim = Sim::builder().with_subnet().with_subnet().build();
        let reserved = sim.reserve_canister_ids(0, reserve);
        prop_assert_eq!(reserved.is_ok(), reserve <= IDS_PER_SUBNET);
        match sim.create_canister(0, vec![]) {
            Ok(id) => prop_assert_eq!(sim_canister_subnet(&sim, id), Some(0)),
            Err(e) => prop_assert!(e.to_string().contains("has no canister ids left"), "{}", e),
        }
    }
}

/// The subnet whose range holds `id`, as the routing table says.
fn sim_canister_subnet(sim: &Sim, id: Principal) -> Option<usize> {
    let number = u64::from_be_bytes(id.as_slice()[..8].try_into().ok()?);
    let subnet = usize::try_from(number / IDS_PER_SUBNET).ok()?;
    (subnet < sim.subnets().len()).then_some(subnet)
}

#[test]
fn subnet_ids_stay_apart_beyond_256_subnets() {
    let mut builder = Sim::builder();
    for _ in 0..600 {
        builder = builder.with_subnet();
    }
    assert_eq!(builder.build().subnets().len(), 600);
}

const SYSTEM_API: &str = include_str!("../fixtures/system_api.wat");

/// The ticks of [`fan_out_run`].
const TICKS: u64 = 40;

/// A fan-out across two subnets at its end.
struct Run {
    sim: Sim,
    /// Its replies, statistics, balances, time, ticks, what is open, the
    /// fault log and the probe's state.
    shown: String,
    /// Messages not executed yet, before each tick.
    in_flight: Vec<usize>,
    /// The canisters whose calls time out, whose responses are shed, and
    /// which traps now and then.
    waiter: Principal,
    caller: Principal,
    trapping: Principal,
}

/// A fan-out across two subnets, restored from its saved state before tick
/// `restore_at` (counting from 0; [`TICKS`]: after the last). Every kind of
/// in-flight state is there: streams (2 rounds of xnet latency), ingress
/// pools, queues, call contexts, callbacks and their deadlines, a paused
/// canister, a stalled subnet, pending events and the faults' generators.
fn fan_out_run(wasms: &canister_wasm::CanisterWasms, restore_at: Option<u64>) -> Run {
    let mut sim = Sim::builder()
        .with_subnet()
        .with_subnet()
        .with_xnet_latency_rounds(2)
        .with_time_step(ONE_SECOND_NS)
        .build();
    let probe = install(&mut sim, 0, PROBE);
    let callees = [install(&mut sim, 1, CALLEE), install(&mut sim, 1, CALLEE)];
    let caller = sim.create_canister(0, vec![controller()]).unwrap();
    sim.install_canister(caller, &wasms.caller, candid::encode_args(()).unwrap(), controller()).unwrap();
    let callee = sim.create_canister(1, vec![controller()]).unwrap();
    sim.install_canister(callee, &wasms.callee, candid::encode_args(()).unwrap(), controller()).unwrap();
    sim.update_call(caller, controller(), "setup_callee", candid::encode_one(callee).unwrap()).unwrap();
    // A 30 s bounded-wait call to a canister held back past its deadline.
    let waiter = install(&mut sim, 0, SYSTEM_API);
    let held = install(&mut sim, 1, SYSTEM_API);
    sim.pause_canister(held, 35);
    let at = |round, canister, action| Event { round, canister, action };
    let faults = Faults {
        seed: 11,
        traps: vec![Traps { canister: callees[0], rate: TrapRate::Fraction(0.3) }],
        drop_best_effort_responses: 0.3,
        stalls: vec![Stall { subnet: 1, from_round: 7, rounds: 2 }],
        events: vec![at(12, callees[1], Action::Stop), at(16, callees[1], Action::Start)],
    };
    sim.inject_faults(faults).unwrap();
    let fan_out = |n, reply_traps| {
        [record(callees[0], n, Method::Ping, reply_traps), record(callees[1], n, Method::Trap, false)]
    };
    let calls = |n: u64| candid::encode_one(n).unwrap();
    let mut messages = vec![];
    let mut in_flight = vec![];
    for tick in 0..=TICKS {
        match tick {
            0 => {
                messages.push(submit_fan_out(&mut sim, probe, &fan_out(30, true)));
                messages.push(sim.submit_call(caller, controller(), "parallel_calls", calls(40)).unwrap());
                let arg = held.as_slice().to_vec();
                messages.push(sim.submit_call(waiter, controller(), "call_deadline", arg).unwrap());
            }
            5 | 13 | 20 => messages.push(submit_fan_out(&mut sim, probe, &fan_out(10, tick == 5))),
            9 => messages.push(sim.submit_call(caller, controller(), "parallel_calls", calls(10)).unwrap()),
            _ => {}
        }
        if restore_at == Some(tick) {
            let bytes = encoded(&sim);
            sim = restored(&bytes);
            assert!(encoded(&sim) == bytes, "restored at tick {tick}: saved again, the bytes differ");
        }
        in_flight.push(sim.outstanding().messages);
        if tick < TICKS {
            sim.tick();
        }
    }
    let replies: Vec<_> = messages.iter().map(|&m| sim.ingress_status(m)).collect();
    let canisters = [probe, callees[0], callees[1], caller, callee, waiter, held];
    let stats: Vec<_> =
        canisters.iter().map(|&c| (sim.stats(c).unwrap().clone(), sim.cycle_balance(c))).collect();
    let probe_state = probe_state(&mut sim, probe);
    let shown = format!(
        "{:?}",
        (
            replies,
            stats,
            sim.time(),
            sim.ticks(),
            sim.outstanding(),
            sim.fault_log(),
            sim.dropped_responses(),
            probe_state
        )
    );
    Run { sim, shown, in_flight, waiter, caller, trapping: callees[0] }
}

#[test]
fn a_run_saved_and_restored_at_any_tick_ends_as_the_run_that_never_stopped() {
    let wasms = canister_wasm::caller_and_callee().unwrap();
    let run = fan_out_run(&wasms, None);
    let in_flight = &run.in_flight;
    assert!(
        in_flight[..20].iter().all(|&n| n > 0),
        "messages in flight before every tick to 20: {in_flight:?}"
    );
    let stats = |id| run.sim.stats(id).unwrap();
    let timed_out = |id| stats(id).rejects_received.get(&RejectCode::SysUnknown).copied();
    assert_eq!(timed_out(run.waiter), Some(1), "its deadline passed");
    assert!(timed_out(run.caller).is_some(), "responses were shed");
    assert!(run.sim.dropped_responses() > 0, "and counted");
    assert!(stats(run.trapping).traps > 0, "executions trapped");
    let log = run.sim.fault_log().join("\n");
    assert!(log.contains("round 12: stopped") && log.contains("round 16: started"), "{log}");
    let bytes = encoded(&run.sim);
    for tick in 0..=TICKS {
        let restored = fan_out_run(&wasms, Some(tick));
        assert_eq!(restored.shown, run.shown, "restored at tick {tick}");
        assert!(encoded(&restored.sim) == bytes, "restored at tick {tick}: the final states differ");
    }
}
