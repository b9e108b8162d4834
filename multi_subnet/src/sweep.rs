//! A sweep: every combination of topology, strategy, k and n, each run on
//! a fresh deployment, `repeat` times, as one row of figures.

use anyhow::Result;
use canister_wasm::CanisterWasms;
use interface::{FailureKind, Plan, RetryPolicy, Strategy, Wait};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

use crate::cli::SweepArgs;
use crate::engines::{EngineFactory, TimeStep};
use crate::scenario::{self, Placement, Topology};

impl SweepArgs {
    /// How a job retries, with `--retry`: up to 10 attempts.
    pub fn retry_policy(&self) -> Option<RetryPolicy> {
        self.retry.then_some(RetryPolicy {
            max_attempts: 10,
            backoff_ms: self.backoff_ms,
            idempotent: self.idempotent,
        })
    }

    pub fn time_step(&self) -> TimeStep {
        TimeStep(self.time_step_ns)
    }

    /// Every combination, in a stable order.
    pub fn combinations(&self) -> Vec<(Topology, Strategy, Option<u64>, u64)> {
        let mut out = vec![];
        for &topology in &self.topologies {
            for &strategy in &self.strategies {
                let ks: Vec<Option<u64>> =
                    if strategy.takes_k() { self.k.iter().map(|&k| Some(k)).collect() } else { vec![None] };
                for k in ks {
                    for &n in &self.calls {
                        out.push((topology, strategy, k, n));
                    }
                }
            }
        }
        out
    }
}

/// One combination's figures. All but the `wall_*` fields are
/// deterministic on the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub strategy: Strategy,
    pub topology: Topology,
    pub calls: u64,
    pub succeeded: u64,
    pub rounds: u64,
    /// Median over the repeats.
    pub wall_ms: f64,
    pub k: Option<u64>,
    pub wait: Wait,
    pub retry: bool,
    pub callees: u64,
    /// Instructions of the caller's whole call context.
    pub caller_instructions: u64,
    pub instructions_per_ping: f64,
    /// Cycles the run cost the caller: its balance before minus after, once
    /// everything was answered and refunded.
    pub cycles: u64,
    /// Failed pings by kind.
    pub failures: BTreeMap<FailureKind, u64>,
    pub peak_in_flight: u64,
    /// IC time per round, in ns.
    pub time_step: u64,
    pub wall_ms_p95: f64,
}

impl Row {
    /// What identifies a row across runs (for baselines).
    pub fn key(&self) -> String {
        let k = self.k.map_or(String::new(), |k| format!(" k={k}"));
        format!(
            "{} {}{k} n={} wait={:?} callees={} retry={}",
            self.topology.name(),
            self.strategy.name(),
            self.calls,
            self.wait,
            self.callees,
            self.retry
        )
    }
}

/// Runs the sweep; `progress` is told after every run.
pub fn run(
    factory: &EngineFactory,
    spec: &SweepArgs,
    wasms: &CanisterWasms,
    mut progress: impl FnMut(),
) -> Result<Vec<Row>> {
    let callees = spec.callees as usize;
    let mut rows = vec![];
    for (topology, strategy, k, n) in spec.combinations() {
        let plan = Plan { k, wait: Some(spec.wait), ..Plan::new(strategy, n) };
        let mut walls = vec![];
        let mut first = None;
        for _ in 0..spec.repeat.max(1) {
            let mut engine = factory.start(topology.subnets(), spec.time_step())?;
            let placement = Placement { callees, ..Placement::default() };
            let deployment = scenario::deploy_placed(engine.as_mut(), topology, placement, wasms)?;
            let plan = Plan { callees: (callees > 1).then(|| deployment.callees.clone()), ..plan.clone() };
            let run = match spec.retry_policy() {
                None => scenario::run_plan(engine.as_mut(), &deployment, &plan)?,
                Some(retry) => scenario::run_job(engine.as_mut(), &deployment, &plan, retry)?,
            };
            walls.push(run.wall);
            first.get_or_insert(run);
            progress();
        }
        let run = first.expect("at least one repeat");
        let r = &run.report;
        rows.push(Row {
            strategy,
            topology,
            calls: n,
            succeeded: r.succeeded,
            rounds: run.rounds.0,
            wall_ms: ms(percentile(&mut walls, 50)),
            k,
            wait: spec.wait,
            retry: spec.retry,
            callees: spec.callees,
            caller_instructions: r.instructions,
            instructions_per_ping: if n == 0 { 0.0 } else { r.instructions as f64 / n as f64 },
            cycles: u64::try_from(run.cycles).unwrap_or(u64::MAX),
            failures: r.failures.iter().map(|f| (f.kind, f.count)).collect(),
            peak_in_flight: r.peak_in_flight,
            time_step: spec.time_step_ns,
            wall_ms_p95: ms(percentile(&mut walls, 95)),
        });
    }
    Ok(rows)
}

fn percentile(values: &mut [Duration], p: usize) -> Duration {
    values.sort();
    values[((values.len() - 1) * p).div_ceil(100)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn spec(args: &str) -> SweepArgs {
        let args = ["multi_subnet", "sweep"].into_iter().chain(args.split_whitespace());
        let Some(Command::Sweep(sweep)) = Cli::try_parse_from(args).unwrap().command else { unreachable!() };
        *sweep
    }

    #[test]
    fn k_multiplies_only_the_strategies_that_take_it() {
        let combos = spec("--calls 10,100 --strategies sequential,bounded --k 5,50 --topologies same-subnet")
            .combinations();
        assert_eq!(combos.len(), 2 + 2 * 2);
        assert!(combos.iter().all(|(_, s, k, _)| s.takes_k() == k.is_some()));
    }

    #[test]
    fn percentiles_of_repeats() {
        let mut walls: Vec<Duration> = [5, 1, 3, 2, 4].map(Duration::from_millis).to_vec();
        assert_eq!(percentile(&mut walls, 50), Duration::from_millis(3));
        assert_eq!(percentile(&mut walls, 95), Duration::from_millis(5));
        assert_eq!(percentile(&mut [Duration::from_millis(7)], 95), Duration::from_millis(7));
    }
}
