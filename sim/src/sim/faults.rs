//! Seeded fault injection: traps, lifecycle events by round, stalled
//! subnets and dropped best-effort responses, reproducible from one seed.

use candid::Principal;
use rand_pcg::Pcg64Mcg;
use rand_pcg::rand_core::SeedableRng;
use serde::{Deserialize, Serialize};

use super::{InstallMode, Sim, SimError};
use crate::canister::{CanisterStatus, TrapInjector, TrapRate, chance};
use crate::message::{ErrorCode, Payload, Response};

/// Faults to inject with [`Sim::inject_faults`]. Rounds are tick numbers:
/// round `r` is the tick after which [`Sim::ticks`] is `r`. The same faults
/// with the same `seed` give the same run, in any process.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// Seeds every random choice below.
    pub seed: u64,
    /// Canisters whose update executions trap now and then.
    pub traps: Vec<Traps>,
    /// The probability that a best-effort (bounded-wait) response is shed on
    /// its way: its caller gets `SYS_UNKNOWN` in its place, as on the IC.
    pub drop_best_effort_responses: f64,
    /// Subnets that execute nothing for a while.
    pub stalls: Vec<Stall>,
    /// Stops, starts, upgrades, deletions and cycle drains, by round.
    pub events: Vec<Event>,
}

/// A canister whose update methods (ingress or calls) trap on some
/// executions. The execution is rolled back as any trap is, and its caller
/// gets `CANISTER_ERROR`; the method's code does not run.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Traps {
    /// The canister that traps.
    pub canister: Principal,
    /// Which of its executions trap.
    pub rate: TrapRate,
}

/// A subnet that executes nothing, inducts nothing and expires no deadline
/// in rounds `from_round .. from_round + rounds`: what is sent to it waits.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Stall {
    /// An index into [`Sim::subnets`].
    pub subnet: usize,
    /// The first round it executes nothing.
    pub from_round: u64,
    /// How many rounds it executes nothing.
    pub rounds: u64,
}

/// Something done to a canister at the start of a round, as its controller
/// would. An upgrade waits for the canister's call contexts to close, a
/// deletion for the canister to be stopped; a canister's later events wait
/// behind them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Event {
    /// The round at whose start it is done (or later, if it must wait).
    pub round: u64,
    /// The canister it is done to.
    pub canister: Principal,
    /// What is done.
    pub action: Action,
}

/// What an [`Event`] does.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[allow(missing_docs)] // Each is the management operation of that name.
pub enum Action {
    Stop,
    Start,
    Upgrade {
        #[serde(with = "serde_bytes")]
        wasm: Vec<u8>,
        #[serde(with = "serde_bytes")]
        arg: Vec<u8>,
    },
    Delete,
    /// The balance falls to at most `left` cycles.
    RunOutOfCycles {
        left: u128,
    },
}

/// The faults still to come, and what was done.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct FaultState {
    drop_rate: f64,
    drop_rng: Option<Pcg64Mcg>,
    stalls: Vec<Stall>,
    /// Events not applied yet, in the order given (stable-sorted by round).
    events: Vec<Event>,
    log: Vec<String>,
    /// Responses shed so far.
    dropped: u64,
}

impl FaultState {
    fn stalled(&self, subnet: usize, round: u64) -> bool {
        self.stalls.iter().any(|s| {
            s.subnet == subnet && (s.from_round..s.from_round.saturating_add(s.rounds)).contains(&round)
        })
    }
}

impl Sim {
    /// Injects `faults`, replacing any injected before (`Faults::default()`
    /// turns them all off).
    pub fn inject_faults(&mut self, faults: Faults) -> Result<(), SimError> {
        if let Some(missing) =
            faults.traps.iter().map(|t| t.canister).find(|id| !self.canisters.contains_key(id))
        {
            return Err(SimError::CanisterNotFound(missing));
        }
        for canister in self.canisters.values_mut() {
            canister.clear_traps();
        }
        for (i, traps) in faults.traps.iter().enumerate() {
            let rng = Pcg64Mcg::seed_from_u64(faults.seed.wrapping_add(1 + i as u64));
            self.canister_mut(traps.canister)?.inject_traps(TrapInjector::new(traps.rate, rng));
        }
        let mut events = faults.events;
        events.sort_by_key(|e| e.round);
        self.faults = FaultState {
            drop_rate: faults.drop_best_effort_responses,
            drop_rng: Some(Pcg64Mcg::seed_from_u64(faults.seed)),
            stalls: faults.stalls,
            events,
            log: vec![],
            dropped: 0,
        };
        Ok(())
    }

    /// What the injected events did, a line each (`round 5: stopped <id>`).
    pub fn fault_log(&self) -> &[String] {
        &self.faults.log
    }

    /// The best-effort responses shed since faults were last injected.
    pub fn dropped_responses(&self) -> u64 {
        self.faults.dropped
    }

    pub(super) fn is_stalled(&self, subnet: usize) -> bool {
        self.faults.stalled(subnet, self.ticks)
    }

    /// Applies the events due by this round that can be applied; the
    /// others wait for a later round.
    pub(super) fn apply_due_events(&mut self) {
        let due = self.faults.events.partition_point(|e| e.round <= self.ticks);
        let mut waiting: Vec<Principal> = vec![];
        let mut kept = vec![];
        for event in self.faults.events.drain(..due).collect::<Vec<_>>() {
            if waiting.contains(&event.canister) || !self.apply(&event) {
                waiting.push(event.canister);
                kept.push(event);
            }
        }
        self.faults.events.splice(0..0, kept);
    }

    /// Applies one event; false if it must wait. Events that cannot ever
    /// apply (no such canister, a trapping upgrade) are logged and dropped.
    fn apply(&mut self, event: &Event) -> bool {
        let id = event.canister;
        let Ok(canister) = self.canister_mut(id) else {
            self.faults.log.push(format!("round {}: {id} does not exist", self.ticks));
            return true;
        };
        let done = match &event.action {
            Action::Stop => {
                canister.stop();
                "stopped".to_string()
            }
            Action::Start => {
                canister.start();
                "started".to_string()
            }
            Action::RunOutOfCycles { left } => {
                let state = canister.system_state_mut();
                state.balance = state.balance.min(*left);
                format!("drained to {} cycles", state.balance)
            }
            Action::Delete if canister.status() != CanisterStatus::Stopped => return false,
            Action::Delete => {
                self.remove_canister(id);
                "deleted".to_string()
            }
            Action::Upgrade { wasm, arg } => {
                let sender = canister.system_state().controllers.first().copied().unwrap_or(id);
                match self.install_code(id, wasm, arg.clone(), sender, InstallMode::Upgrade) {
                    Ok(()) => "upgraded".to_string(),
                    Err(SimError::OpenCallContexts(_)) => return false,
                    Err(e) => format!("not upgraded: {e}"),
                }
            }
        };
        self.faults.log.push(format!("round {}: {done} {id}", self.ticks));
        true
    }

    /// A response on its way to a best-effort callback may be shed: its
    /// caller then gets `SYS_UNKNOWN` (and the cycles it carried are lost).
    pub(super) fn maybe_drop(&mut self, response: Response) -> Response {
        let best_effort =
            self.canisters.get(&response.originator).is_some_and(|c| c.is_best_effort(response.callback));
        let Some(rng) = self.faults.drop_rng.as_mut() else { return response };
        if !best_effort || !chance(rng, self.faults.drop_rate) {
            return response;
        }
        self.faults.dropped += 1;
        let payload =
            Payload::reject(ErrorCode::ResponseDropped, "Response dropped: shed by the simulator's faults");
        Response { payload, refund: 0, ..response }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_cover_their_rounds_only() {
        let state =
            FaultState { stalls: vec![Stall { subnet: 1, from_round: 3, rounds: 2 }], ..Default::default() };
        let stalled: Vec<u64> = (0..8).filter(|&r| state.stalled(1, r)).collect();
        assert_eq!(stalled, [3, 4]);
        assert!(!state.stalled(0, 3));
        // A stall to the end of time covers every later round, and panics on none.
        let forever = FaultState {
            stalls: vec![Stall { subnet: 0, from_round: 2, rounds: u64::MAX }],
            ..Default::default()
        };
        assert!(forever.stalled(0, u64::MAX - 1) && !forever.stalled(0, 1));
    }
}
