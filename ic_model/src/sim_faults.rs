//! Faults on the simulator as any client asks for them: a spec of
//! `ic-sim-client` (the body of `POST .../_/faults`, rounds counted from
//! now) read as the simulator's [`Faults`], and the report of what they
//! did. `serve`'s instances, the network and the harness all read a spec
//! here.

use ic_sim_client::api::{Action, CallsTo, CanisterCalls, EventSpec, FaultReport, FaultSpec, Open};
use sim::{Event, Faults, RejectCounts, Sim, Stall, TrapRate, Traps};
use std::collections::BTreeMap;

/// Turns on `spec`'s faults, rounds counted from the simulator's round
/// now, or says why not (and changes nothing).
pub(crate) fn inject_faults(sim: &mut Sim, spec: FaultSpec) -> Result<(), String> {
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
            (Some(0), None) => {
                return Err(format!("a trap on {} every 0th execution: `every` is 1 or more", trap.canister));
            }
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
    if sim.canister_ids().all(|id| id != canister) {
        return Err(format!("no canister {canister} on this instance"));
    }
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

/// What the faults did, and what is open.
pub(crate) fn fault_report(sim: &Sim) -> FaultReport {
    let canisters = sim
        .canister_ids()
        .filter_map(|canister| {
            let stats = sim.stats(canister).ok()?;
            let calls_to = stats
                .calls_to
                .iter()
                .map(|(&callee, to)| CallsTo {
                    callee,
                    calls_performed: to.performed,
                    calls_refused: to.refused,
                    rejects_received: by_code(&to.rejects),
                })
                .collect();
            Some(CanisterCalls {
                canister,
                traps: stats.traps,
                calls_performed: stats.calls_performed,
                calls_refused: stats.calls_refused,
                rejects_received: by_code(&stats.rejects_received),
                calls_to,
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

/// Counts by reject code, keyed by the code's number.
fn by_code(counts: &RejectCounts) -> BTreeMap<u64, u64> {
    use ic_error_types::RejectCode;
    let codes = [
        RejectCode::SysFatal,
        RejectCode::SysTransient,
        RejectCode::DestinationInvalid,
        RejectCode::CanisterReject,
        RejectCode::CanisterError,
        RejectCode::SysUnknown,
    ];
    codes.iter().filter_map(|code| Some((*code as u64, *counts.get(code)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use candid::Principal;

    #[test]
    fn a_spec_naming_what_the_simulator_lacks_is_refused_and_changes_nothing() {
        let mut sim = Sim::builder().with_subnet().build();
        let canister = sim.create_canister(0, vec![Principal::anonymous()]).unwrap();
        let stranger = Principal::from_slice(&[9; 10]);
        let refused = |sim: &mut Sim, spec: FaultSpec| inject_faults(sim, spec).unwrap_err();
        let why = refused(&mut sim, FaultSpec::default().event(stranger, 1, Action::Stop));
        assert!(why.contains(&format!("no canister {stranger}")), "{why}");
        assert!(refused(&mut sim, FaultSpec::default().trap_every(canister, 0)).contains("1 or more"));
        assert!(refused(&mut sim, FaultSpec::default().stall(stranger, 0, 1)).contains("no subnet"));
        let no_module = refused(
            &mut sim,
            FaultSpec::default().event(canister, 0, Action::Upgrade { wasm: None, arg: Default::default() }),
        );
        assert!(no_module.contains("runs no module"), "{no_module}");
        assert!(inject_faults(&mut sim, FaultSpec::default().event(canister, 1, Action::Stop)).is_ok());
        assert_eq!(fault_report(&sim).log, Vec::<String>::new(), "nothing done yet");
    }
}
