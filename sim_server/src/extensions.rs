//! This project's own endpoints beside PocketIC's, under
//! `/instances/<id>/_/`: what only the simulator models. PocketIC's clients
//! never call them; `ic-sim-client` (`sim_client/`) does, and its `api`
//! module holds their JSON bodies. `latency`: how many rounds a message
//! takes to another subnet, by a named profile or a number, at any time.
//! `faults`: seeded faults (the simulator's `Faults`, with rounds counted
//! from now), turned on, reported on, and turned off.

use ic_sim_client::api::{
    Action, CanisterCalls, EventSpec, FaultReport, FaultSpec, Latency, Open, Profile, SetLatency,
};
use sim::{Event, Faults, Sim, Stall, TrapRate, Traps};

/// The most rounds a message may take between subnets: beyond this a test
/// only waits longer.
pub const MAX_XNET_LATENCY_ROUNDS: u64 = 1_000;

/// The simulator's latency, as `GET /instances/<id>/_/latency` answers it.
pub fn latency(sim: &Sim) -> Latency {
    let rounds = sim.config().xnet_latency_rounds;
    let profile = match rounds {
        0 => Profile::PocketIc,
        sim::MAINNET_XNET_LATENCY_ROUNDS => Profile::Mainnet,
        _ => Profile::Custom,
    };
    Latency { profile, xnet_latency_rounds: rounds }
}

/// Sets the simulator's latency, or says why not (and changes nothing).
pub fn set_latency(sim: &mut Sim, set: SetLatency) -> Result<Latency, String> {
    let rounds = match set {
        SetLatency::Profile { profile: Profile::PocketIc } => 0,
        SetLatency::Profile { profile: Profile::Mainnet } => sim::MAINNET_XNET_LATENCY_ROUNDS,
        SetLatency::Profile { profile: Profile::Custom } => {
            return Err("a custom latency is given as {\"xnet_latency_rounds\": N}".into());
        }
        SetLatency::Rounds { xnet_latency_rounds } if xnet_latency_rounds > MAX_XNET_LATENCY_ROUNDS => {
            return Err(format!(
                "xnet_latency_rounds {xnet_latency_rounds} is more than {MAX_XNET_LATENCY_ROUNDS}"
            ));
        }
        SetLatency::Rounds { xnet_latency_rounds } => xnet_latency_rounds,
    };
    sim.set_xnet_latency_rounds(rounds);
    Ok(latency(sim))
}

/// Turns on `spec`'s faults, rounds counted from the simulator's round
/// now, or says why not (and changes nothing).
pub fn inject_faults(sim: &mut Sim, spec: FaultSpec) -> Result<(), String> {
    let faults = faults(sim, spec)?;
    sim.inject_faults(faults).map_err(|e| e.to_string())
}

/// `spec` as the simulator's faults, checked against what `sim` has.
fn faults(sim: &Sim, spec: FaultSpec) -> Result<Faults, String> {
    let now = sim.ticks();
    let share = |what: &str, p: f64| {
        if (0.0..=1.0).contains(&p) { Ok(p) } else { Err(format!("{what} {p} is not between 0 and 1")) }
    };
    let mut traps = vec![];
    for trap in spec.traps {
        let rate = match (trap.every, trap.chance) {
            (Some(k), None) => TrapRate::EveryKth(k),
            (None, Some(p)) => TrapRate::Fraction(share("chance", p)?),
            _ => return Err(format!("a trap on {} gives `every` or `chance`, one of them", trap.canister)),
        };
        traps.push(Traps { canister: trap.canister, rate });
    }
    let subnets = sim.subnets();
    let mut stalls = vec![];
    for stall in spec.stalls {
        let Some(subnet) = subnets.iter().position(|&s| s == stall.subnet) else {
            return Err(format!("no subnet {} on this instance", stall.subnet));
        };
        stalls.push(Stall {
            subnet,
            from_round: now.saturating_add(stall.after_rounds),
            rounds: stall.rounds,
        });
    }
    let events =
        spec.events.into_iter().map(|event| self::event(sim, now, event)).collect::<Result<_, _>>()?;
    let drop_best_effort_responses = share("drop_best_effort_responses", spec.drop_best_effort_responses)?;
    Ok(Faults { seed: spec.seed, traps, drop_best_effort_responses, stalls, events })
}

fn event(sim: &Sim, now: u64, event: EventSpec) -> Result<Event, String> {
    let canister = event.canister;
    let action = match event.action {
        Action::Stop => sim::Action::Stop,
        Action::Start => sim::Action::Start,
        Action::Delete => sim::Action::Delete,
        Action::RunOutOfCycles { left } => sim::Action::RunOutOfCycles { left },
        Action::Upgrade { wasm: Some(wasm), arg } => sim::Action::Upgrade { wasm: wasm.0, arg: arg.0 },
        Action::Upgrade { wasm: None, arg } => {
            let running = sim.wasm_module(canister).map_err(|e| e.to_string())?;
            let wasm =
                running.ok_or_else(|| format!("{canister} runs no module to upgrade to: give `wasm`"))?;
            sim::Action::Upgrade { wasm: wasm.to_vec(), arg: arg.0 }
        }
    };
    Ok(Event { round: now.saturating_add(event.after_rounds), canister, action })
}

/// What `GET /instances/<id>/_/faults` answers.
pub fn fault_report(sim: &Sim) -> FaultReport {
    use ic_error_types::RejectCode;
    let codes = [
        RejectCode::SysFatal,
        RejectCode::SysTransient,
        RejectCode::DestinationInvalid,
        RejectCode::CanisterReject,
        RejectCode::CanisterError,
        RejectCode::SysUnknown,
    ];
    let canisters = sim
        .canister_ids()
        .filter_map(|canister| {
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
        dropped_responses: sim.dropped_responses(),
        canisters,
        outstanding: Open {
            ingress: open.ingress,
            call_contexts: open.call_contexts,
            calls_in_flight: open.calls_in_flight,
            messages: open.messages,
        },
    }
}
