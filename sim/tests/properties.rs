//! Properties of the model over random programs of the WAT fixtures and
//! random topologies.

mod common;

use candid::Principal;
use common::*;
use proptest::prelude::*;
use sim::{IDS_PER_SUBNET, MessageId, Sim, SimConfig};

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
        w.sim.set_frozen_reserve_cycles(probe, controller(), reserve).unwrap();
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
