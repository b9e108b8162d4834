//! This project's own endpoints beside PocketIC's, under
//! `/instances/<id>/_/`: what only the simulator models. PocketIC's clients
//! never call them; a test reaches them with any HTTP client (or
//! `multi_subnet`'s own). `latency`: how many rounds a message takes to
//! another subnet, by a named profile or a number, at any time. `faults`:
//! seeded faults (the simulator's `Faults`, with rounds counted from now),
//! turned on, read back as a log, and turned off.

use candid::Principal;
use serde::{Deserialize, Serialize};
use sim::{Action, Event, Faults, Stall, TrapRate, Traps};

use crate::errors::ApiError;
use crate::instance::Instance;

/// The most rounds a message may take between subnets: beyond this a test
/// only waits longer.
pub const MAX_XNET_LATENCY_ROUNDS: u64 = 1_000;

/// A latency profile by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Inducted at the next round: PocketIC's rounds (the default).
    PocketIc,
    /// `sim::MAINNET_XNET_LATENCY_ROUNDS` rounds each way.
    Mainnet,
    /// Any other number of rounds.
    Custom,
}

/// `POST /instances/<id>/_/latency`: a named profile or a number of rounds.
#[derive(Debug, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum SetLatency {
    Profile { profile: Profile },
    Rounds { xnet_latency_rounds: u64 },
}

/// What `GET /instances/<id>/_/latency` answers.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    pub profile: Profile,
    pub xnet_latency_rounds: u64,
}

pub fn latency(instance: &Instance) -> Latency {
    let rounds = instance.engine.config().xnet_latency_rounds;
    let profile = match rounds {
        0 => Profile::PocketIc,
        sim::MAINNET_XNET_LATENCY_ROUNDS => Profile::Mainnet,
        _ => Profile::Custom,
    };
    Latency { profile, xnet_latency_rounds: rounds }
}

pub fn set_latency(instance: &mut Instance, set: SetLatency) -> Result<Latency, ApiError> {
    let rounds = match set {
        SetLatency::Profile { profile: Profile::PocketIc } => 0,
        SetLatency::Profile { profile: Profile::Mainnet } => sim::MAINNET_XNET_LATENCY_ROUNDS,
        SetLatency::Profile { profile: Profile::Custom } => {
            return Err(ApiError::bad_request("a custom latency is given as {\"xnet_latency_rounds\": N}"));
        }
        SetLatency::Rounds { xnet_latency_rounds } if xnet_latency_rounds > MAX_XNET_LATENCY_ROUNDS => {
            return Err(ApiError::bad_request(format!(
                "xnet_latency_rounds {xnet_latency_rounds} is more than {MAX_XNET_LATENCY_ROUNDS}"
            )));
        }
        SetLatency::Rounds { xnet_latency_rounds } => xnet_latency_rounds,
    };
    instance.engine.set_xnet_latency_rounds(rounds);
    Ok(latency(instance))
}

/// `POST /instances/<id>/_/faults`: what goes wrong from now on, replacing
/// what went wrong before. Rounds count from the instance's current round.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Seeds every random choice: the same spec and seed, the same run.
    #[serde(default)]
    pub seed: u64,
    /// Canisters whose update executions trap now and then.
    #[serde(default)]
    pub traps: Vec<TrapSpec>,
    /// The share of best-effort responses shed on their way (0 to 1).
    #[serde(default)]
    pub drop_best_effort_responses: f64,
    /// Subnets that execute nothing for a while.
    #[serde(default)]
    pub stalls: Vec<StallSpec>,
    /// What is done to canisters, by round.
    #[serde(default)]
    pub events: Vec<EventSpec>,
}

/// A canister that traps on every `every`-th update execution, or on each
/// with probability `chance`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrapSpec {
    pub canister: Principal,
    pub every: Option<u64>,
    pub chance: Option<f64>,
}

/// A subnet that executes nothing for `rounds` rounds, `after_rounds` from now.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StallSpec {
    pub subnet: Principal,
    #[serde(default)]
    pub after_rounds: u64,
    pub rounds: u64,
}

/// Something done to a canister `after_rounds` from now, as its controller would.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    pub canister: Principal,
    #[serde(default)]
    pub after_rounds: u64,
    pub action: ActionSpec,
}

/// What an event does: `"stop"`, `"start"`, `"delete"` (once stopped), or
/// `{"run_out_of_cycles": {"left": N}}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionSpec {
    Stop,
    Start,
    Delete,
    RunOutOfCycles { left: u128 },
}

/// What `GET /instances/<id>/_/faults` answers: what the events did, what
/// became of each canister's calls, and what is still open, so that a test
/// can assert that nothing was lost (all of `outstanding` zero once idle).
#[derive(Debug, Serialize, Deserialize)]
pub struct FaultReport {
    /// What the events did, a line each (`round 5: stopped <id>`).
    pub log: Vec<String>,
    pub canisters: Vec<CanisterCalls>,
    pub outstanding: Open,
}

/// One canister's executions and calls since it was created.
#[derive(Debug, Serialize, Deserialize)]
pub struct CanisterCalls {
    pub canister: Principal,
    /// Executions that trapped, injected or not.
    pub traps: u64,
    /// Calls it made that `call_perform` accepted, and refused.
    pub calls_performed: u64,
    pub calls_refused: u64,
    /// Rejects its callbacks got, by reject code (`"5"`: CANISTER_ERROR).
    pub rejects_received: std::collections::BTreeMap<String, u64>,
}

/// What is still open across the instance.
#[derive(Debug, Serialize, Deserialize)]
pub struct Open {
    pub ingress: usize,
    pub call_contexts: usize,
    pub calls_in_flight: u64,
    pub messages: usize,
}

pub fn inject_faults(instance: &mut Instance, spec: FaultSpec) -> Result<(), ApiError> {
    let sim = &mut instance.engine;
    let now = sim.ticks();
    let bad = |why: String| Err(ApiError::bad_request(why));
    let share = |what: &str, p: f64| {
        if (0.0..=1.0).contains(&p) {
            Ok(p)
        } else {
            Err(ApiError::bad_request(format!("{what} {p} is not between 0 and 1")))
        }
    };
    let mut traps = vec![];
    for trap in spec.traps {
        let rate = match (trap.every, trap.chance) {
            (Some(k), None) => TrapRate::EveryKth(k),
            (None, Some(p)) => TrapRate::Fraction(share("chance", p)?),
            _ => return bad(format!("a trap on {} gives `every` or `chance`, one of them", trap.canister)),
        };
        traps.push(Traps { canister: trap.canister, rate });
    }
    let subnets = sim.subnets();
    let mut stalls = vec![];
    for stall in spec.stalls {
        let Some(subnet) = subnets.iter().position(|&s| s == stall.subnet) else {
            return bad(format!("no subnet {} on this instance", stall.subnet));
        };
        stalls.push(Stall {
            subnet,
            from_round: now.saturating_add(stall.after_rounds),
            rounds: stall.rounds,
        });
    }
    let events = spec
        .events
        .into_iter()
        .map(|event| Event {
            round: now.saturating_add(event.after_rounds),
            canister: event.canister,
            action: match event.action {
                ActionSpec::Stop => Action::Stop,
                ActionSpec::Start => Action::Start,
                ActionSpec::Delete => Action::Delete,
                ActionSpec::RunOutOfCycles { left } => Action::RunOutOfCycles { left },
            },
        })
        .collect();
    let drop_best_effort_responses = share("drop_best_effort_responses", spec.drop_best_effort_responses)?;
    let faults = Faults { seed: spec.seed, traps, drop_best_effort_responses, stalls, events };
    sim.inject_faults(faults).map_err(|e| ApiError::bad_request(e.to_string()))
}

pub fn fault_report(instance: &Instance) -> FaultReport {
    use ic_error_types::RejectCode;
    let sim = &instance.engine;
    let codes = [
        RejectCode::SysFatal,
        RejectCode::SysTransient,
        RejectCode::DestinationInvalid,
        RejectCode::CanisterReject,
        RejectCode::CanisterError,
        RejectCode::SysUnknown,
    ];
    let canisters = instance
        .state()
        .canisters
        .keys()
        .filter_map(|&canister| {
            let stats = sim.stats(canister).ok()?;
            let rejects_received = codes
                .iter()
                .filter_map(|code| Some(((*code as u64).to_string(), *stats.rejects_received.get(code)?)))
                .collect();
            Some(CanisterCalls {
                canister,
                traps: stats.traps,
                calls_performed: stats.calls_performed,
                calls_refused: stats.calls_refused,
                rejects_received,
            })
        })
        .collect();
    let open = sim.outstanding();
    FaultReport {
        log: sim.fault_log().to_vec(),
        canisters,
        outstanding: Open {
            ingress: open.ingress,
            call_contexts: open.call_contexts,
            calls_in_flight: open.calls_in_flight,
            messages: open.messages,
        },
    }
}
