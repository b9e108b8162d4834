//! Properties of the model over random programs of the WAT fixtures and
//! random topologies.

mod common;

use candid::Principal;
use common::*;
use proptest::prelude::*;
use sim::{MessageId, Sim, SimConfig};

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
