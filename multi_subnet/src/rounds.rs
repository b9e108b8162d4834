//! Where rounds are counted: submit an ingress message, then tick until the
//! engine reports its outcome. Unlike PocketIC's `update_call`, which gives up
//! after 100 rounds, this runs as long as the caller allows (2000 sequential
//! cross-subnet calls need about 2000 rounds).

use anyhow::{Result, bail};
use candid::Principal;
use serde::Serialize;

use crate::engines::{Engine, IngressId, IngressOutcome};

/// Rounds (ticks) from submission until the outcome was available.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct RoundsToComplete(pub u64);

/// How many rounds to wait before declaring a message stuck.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundLimit(pub u64);

/// An ingress message's outcome and the rounds it took.
#[derive(Debug)]
pub struct Completed {
    pub outcome: IngressOutcome,
    pub rounds: RoundsToComplete,
}

/// Submits `method(arg)` to `canister` and ticks until it completes.
pub fn execute(
    engine: &mut dyn Engine,
    canister: Principal,
    sender: Principal,
    method: &str,
    arg: Vec<u8>,
    limit: RoundLimit,
) -> Result<Completed> {
    let id = engine.submit_update(canister, sender, method, arg)?;
    await_outcome(engine, id, limit).map_err(|e| e.context(format!("{method} on {canister}")))
}

/// Ticks until the outcome of `id` is known.
pub fn await_outcome(engine: &mut dyn Engine, id: IngressId, limit: RoundLimit) -> Result<Completed> {
    let (outcome, rounds) = tick_until(engine, limit, |engine| Ok(engine.ingress_status(id)))?;
    Ok(Completed { outcome, rounds })
}

/// Ticks until `poll` has an answer (it is asked before every tick).
pub fn tick_until<T>(
    engine: &mut dyn Engine,
    limit: RoundLimit,
    mut poll: impl FnMut(&mut dyn Engine) -> Result<Option<T>>,
) -> Result<(T, RoundsToComplete)> {
    let mut rounds = 0;
    loop {
        if let Some(answer) = poll(engine)? {
            return Ok((answer, RoundsToComplete(rounds)));
        }
        if rounds == limit.0 {
            bail!("no answer after {} rounds", limit.0);
        }
        engine.tick();
        rounds += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::{CanisterCall, Effective, EngineKind, Interface, Reject};

    /// Answers each message after a scripted number of ticks.
    struct ScriptedEngine {
        ticks_needed: u64,
        ticks: u64,
        submitted_at: Vec<u64>,
        outcome: IngressOutcome,
    }

    impl ScriptedEngine {
        fn new(ticks_needed: u64, outcome: IngressOutcome) -> Self {
            Self { ticks_needed, ticks: 0, submitted_at: vec![], outcome }
        }
    }

    impl Interface for ScriptedEngine {
        fn description(&self) -> String {
            "scripted".into()
        }
        fn time(&self) -> u64 {
            unreachable!()
        }
        fn advance_time_to(&mut self, _: u64) {
            unreachable!()
        }
        fn submit(&mut self, _: Effective, _: CanisterCall) -> Result<u64, Reject> {
            self.submitted_at.push(self.ticks);
            Ok(self.submitted_at.len() as u64 - 1)
        }
        fn outcome(&self, ticket: u64) -> Option<IngressOutcome> {
            (self.ticks - self.submitted_at[ticket as usize] >= self.ticks_needed)
                .then(|| self.outcome.clone())
        }
        fn forget(&mut self, _: u64) {
            unreachable!()
        }
        fn tick(&mut self) {
            self.ticks += 1;
        }
        fn query(&mut self, _: CanisterCall) -> IngressOutcome {
            unreachable!()
        }
    }

    impl Engine for ScriptedEngine {
        fn kind(&self) -> EngineKind {
            EngineKind::PocketIc
        }
        fn subnets(&self) -> Vec<Principal> {
            unreachable!()
        }
        fn cycle_balance(&mut self, _: Principal) -> anyhow::Result<u128> {
            unreachable!()
        }
        fn set_xnet_latency_rounds(&mut self, _: u64) -> anyhow::Result<()> {
            unreachable!()
        }
        fn inject_faults(&mut self, _: &ic_sim_client::api::FaultSpec) -> anyhow::Result<()> {
            unreachable!()
        }
        fn fault_report(&mut self) -> anyhow::Result<ic_sim_client::api::FaultReport> {
            unreachable!()
        }
    }

    fn run(engine: &mut ScriptedEngine, limit: u64) -> Result<Completed> {
        let p = Principal::anonymous();
        execute(engine, p, p, "m", vec![], RoundLimit(limit))
    }

    #[test]
    fn counts_exactly_the_ticks_the_engine_needed() {
        for needed in [0, 1, 2, 91, 2001] {
            let mut engine = ScriptedEngine::new(needed, Ok(vec![7]));
            let done = run(&mut engine, 10_000).unwrap();
            assert_eq!(done.rounds, RoundsToComplete(needed));
            assert_eq!(done.outcome, Ok(vec![7]));
            assert_eq!(engine.ticks, needed, "no tick after the answer");
        }
    }

    #[test]
    fn counts_from_submission_not_from_engine_start() {
        let mut engine = ScriptedEngine::new(3, Ok(vec![]));
        run(&mut engine, 10).unwrap();
        assert_eq!(run(&mut engine, 10).unwrap().rounds, RoundsToComplete(3));
    }

    #[test]
    fn passes_rejects_through() {
        let reject = Reject::new(ic_reject::ErrorCode::CanisterCalledTrap, "trapped");
        let mut engine = ScriptedEngine::new(1, Err(reject.clone()));
        assert_eq!(run(&mut engine, 10).unwrap().outcome, Err(reject));
    }

    #[test]
    fn gives_up_at_the_limit_and_says_so() {
        let mut engine = ScriptedEngine::new(150, Ok(vec![]));
        let err = run(&mut engine, 100).unwrap_err();
        assert!(format!("{err:#}").contains("no answer after 100 rounds"), "{err:#}");
        assert_eq!(engine.ticks, 100);
    }
}
