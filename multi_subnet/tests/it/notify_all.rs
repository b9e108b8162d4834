//! ic-fanout's second example, which is not the demo: `notify_all` tells
//! 2,000 user canisters (`notified`) on 4 subnets something, with a job,
//! under the simulator's faults (receivers that trap, receivers stopped for
//! a while, responses dropped on their way back, the notifier upgraded
//! mid-job); every receiver must act on every notification exactly once.

use candid::{CandidType, Deserialize, Principal, decode_one, encode_args, encode_one};
use multi_subnet::engines::sim::{SimEngine, sim_engine};
use multi_subnet::engines::{CanisterCall, Interface};
use multi_subnet::engines::{Engine, TimeStep};
use multi_subnet::rounds::{self, RoundLimit};
use multi_subnet::scenario::controller;
use sim::{Action, Event, Faults, Sim, TrapRate, Traps};

const RECEIVER_SUBNETS: usize = 4;
const RECEIVERS_PER_SUBNET: usize = 500;
const HOST_MEMORY_BUDGET: u64 = 16 << 30;

#[derive(CandidType)]
struct NotifyAll {
    receivers: Vec<Principal>,
    message: String,
}

#[derive(CandidType, Deserialize, Debug)]
struct Progress {
    receivers: u64,
    delivered: u64,
    delivered_earlier: u64,
    waiting: u64,
    given_up: u64,
    retries: u64,
    finished: bool,
}

struct Network {
    engine: SimEngine,
    notifier: Principal,
    receivers: Vec<Principal>,
    notifier_wasm: Vec<u8>,
}

/// The notifier on subnet 0; 500 receivers on each of subnets 1 to 4, each
/// controlled by the notifier (it created them, as a factory would).
fn network() -> Network {
    let notifier_wasm = canister_wasm::fanout_example("notify_all").unwrap();
    let receiver_wasm = canister_wasm::fanout_example("notified").unwrap();
    // A round in transit between subnets, so that faults catch calls on
    // their way. The simulator counts three copies of each canister's
    // memories against its host-memory budget: 2,000 receivers' take 7.1 GB
    // of the default 8 GiB (the test's resident set stays under 4 GB).
    let mut sim = Sim::builder()
        .with_time_step(TimeStep::ONE_SECOND.0)
        .with_xnet_latency_rounds(1)
        .with_host_memory_budget(HOST_MEMORY_BUDGET);
    for _ in 0..=RECEIVER_SUBNETS {
        sim = sim.with_subnet();
    }
    let mut engine = sim_engine(sim.build());
    let notifier = engine.create_canister(0, controller()).unwrap();
    engine.install(notifier, &notifier_wasm, controller()).unwrap();
    let mut receivers = vec![];
    for subnet in 1..=RECEIVER_SUBNETS {
        for _ in 0..RECEIVERS_PER_SUBNET {
            let sim = &mut engine.engine;
            let receiver = sim.create_canister(subnet, vec![controller(), notifier]).unwrap();
            sim.install_canister(receiver, &receiver_wasm, encode_args(()).unwrap(), controller()).unwrap();
            receivers.push(receiver);
        }
    }
    Network { engine, notifier, receivers, notifier_wasm }
}

impl Network {
    fn notify_all(&mut self, message: &str) -> u64 {
        let arg =
            encode_one(NotifyAll { receivers: self.receivers.clone(), message: message.into() }).unwrap();
        let done = rounds::execute(
            &mut self.engine,
            self.notifier,
            controller(),
            "notify_all",
            arg,
            RoundLimit(100),
        )
        .unwrap();
        decode_one(&done.outcome.expect("notify_all replies")).unwrap()
    }

    /// The job's progress; `None` while the notifier answers no query
    /// (stopped for its upgrade, as on the IC).
    fn status(&mut self, job: u64) -> Option<Progress> {
        let reply = self
            .engine
            .query(CanisterCall::new(self.notifier, controller(), "job_status", encode_one(job).unwrap()))
            .ok()?;
        decode_one::<Option<Progress>>(&reply).unwrap()
    }

    fn finish(&mut self, job: u64) -> Progress {
        for _ in 0..3_000 {
            if let Some(progress) = self.status(job).filter(|p| p.finished) {
                return progress;
            }
            self.engine.tick();
        }
        panic!("the notification did not finish: {:?}", self.status(job));
    }

    /// Each receiver's count of notices acted on.
    fn received(&mut self) -> Vec<u64> {
        let receivers = self.receivers.clone();
        receivers
            .into_iter()
            .map(|r| {
                let reply = self
                    .engine
                    .query(CanisterCall::new(r, controller(), "received", encode_args(()).unwrap()))
                    .unwrap();
                candid::decode_args::<(u64, String)>(&reply).unwrap().0
            })
            .collect()
    }

    /// The floor each receiver keeps for the notifier.
    fn floors(&mut self) -> Vec<u64> {
        let (receivers, notifier) = (self.receivers.clone(), self.notifier);
        receivers
            .into_iter()
            .map(|r| {
                let reply = self
                    .engine
                    .query(CanisterCall::new(r, controller(), "senders", encode_args(()).unwrap()))
                    .unwrap();
                let senders: Vec<(Principal, u64)> = decode_one(&reply).unwrap();
                senders.into_iter().find(|&(p, _)| p == notifier).expect("the notifier is admitted").1
            })
            .collect()
    }
}

#[test]
fn every_one_of_2000_receivers_on_4_subnets_acts_on_each_notification_once_under_faults() {
    let mut net = network();
    let start = net.engine.engine.ticks();
    let at =
        |round: u64, canister: Principal, action: Action| Event { round: start + round, canister, action };
    let mut faults = Faults { seed: 7, drop_best_effort_responses: 0.05, ..Faults::default() };
    // Every receiver traps on 10% of its executions.
    faults.traps =
        net.receivers.iter().map(|&canister| Traps { canister, rate: TrapRate::Fraction(0.1) }).collect();
    // Every 10th receiver is stopped from round 2 to round 6.
    for &receiver in net.receivers.iter().step_by(10) {
        faults.events.extend([at(2, receiver, Action::Stop), at(6, receiver, Action::Start)]);
    }
    // The notifier is stopped at round 3, upgraded once its calls are
    // answered, and started: its retries wait in stable memory meanwhile,
    // and their timers are set again after the upgrade.
    let upgrade = Action::Upgrade { wasm: net.notifier_wasm.clone(), arg: encode_args(()).unwrap() };
    faults.events.extend([
        at(3, net.notifier, Action::Stop),
        at(3, net.notifier, upgrade),
        at(3, net.notifier, Action::Start),
    ]);
    net.engine.engine.inject_faults(faults).unwrap();

    let first = net.notify_all("maintenance at noon");
    let progress = net.finish(first);
    assert_eq!(
        (progress.receivers, progress.delivered, progress.given_up),
        (2_000, 2_000, 0),
        "{progress:?}"
    );
    assert_eq!(net.received(), vec![1; 2_000], "every receiver acted on it exactly once");

    // The faults bit: notices trapped, were refused by stopped receivers,
    // lost their answers (and were acted on earlier when sent again), and
    // the notifier was upgraded mid-job.
    let traps: u64 = net.receivers.iter().map(|&r| net.engine.engine.stats(r).unwrap().traps).sum();
    assert!(traps >= 100, "{traps} traps");
    assert!(progress.retries >= 200 + traps, "{progress:?}");
    assert!(progress.delivered_earlier >= 10, "answers were lost and the notices sent again: {progress:?}");
    eprintln!("first notification, under faults: {progress:?}; {traps} traps");
    let log = net.engine.engine.fault_log().join("\n");
    assert!(log.contains(&format!("upgraded {}", net.notifier)), "{log}");
    let stopped = net.receivers.iter().step_by(10).filter(|r| log.contains(&format!("stopped {r}"))).count();
    assert_eq!(stopped, 200, "{log}");

    // A second notification, after the faults: each receiver acts on it
    // once more, and forgets the first one's nonce (the floor passed it).
    let floors_before = net.floors();
    let second = net.notify_all("done");
    let progress = net.finish(second);
    assert_eq!((progress.delivered, progress.given_up), (2_000, 0), "{progress:?}");
    assert_eq!(net.received(), vec![2; 2_000]);
    let floors_after = net.floors();
    assert!(
        floors_after.iter().zip(&floors_before).all(|(after, before)| after > before),
        "floors rise with the jobs"
    );
}

#[test]
fn only_a_controller_may_notify_and_a_list_too_long_is_refused_with_what_to_do() {
    let notifier_wasm = canister_wasm::fanout_example("notify_all").unwrap();
    let mut engine =
        sim_engine(Sim::builder().with_subnets(1).with_time_step(TimeStep::ONE_SECOND.0).build());
    let notifier = engine.create_canister(0, controller()).unwrap();
    engine.install(notifier, &notifier_wasm, controller()).unwrap();
    let mut call = |sender, receivers: usize| {
        let arg =
            NotifyAll { receivers: vec![Principal::management_canister(); receivers], message: "x".into() };
        let done = rounds::execute(
            &mut engine,
            notifier,
            sender,
            "notify_all",
            encode_one(arg).unwrap(),
            RoundLimit(10),
        );
        done.unwrap().outcome.unwrap_err().to_string()
    };
    let stranger = Principal::from_slice(&[9; 29]);
    assert!(call(stranger, 1).contains("only a controller"));
    assert!(call(controller(), 10_001).contains("10001 receivers: name 1 to 10000"));
    assert!(call(controller(), 0).contains("0 receivers"));
}
