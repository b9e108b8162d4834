//! A sweep: every combination of topology, strategy, k and n, each run on
//! a fresh deployment, `repeat` times, as one row of figures.

use anyhow::Result;
use caller::plan::{FailureKind, Plan, RetryPolicy, Strategy, Wait};
use canister_wasm::CanisterWasms;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

use crate::engines::{EngineFactory, TimeStep};
use crate::scenario::{self, Placement, Topology};

/// What to sweep over.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    pub calls: Vec<u64>,
    pub strategies: Vec<StrategyName>,
    /// Windows (`bounded`) and batch sizes (`batched`).
    pub k: Vec<u64>,
    pub topologies: Vec<Topology>,
    pub wait: WaitName,
    pub callees: usize,
    pub repeat: usize,
    pub time_step: TimeStep,
    /// Run every plan as a job that retries with this policy.
    pub retry: Option<RetryPolicy>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum StrategyName {
    Sequential,
    Parallel,
    Bounded,
    Batched,
}

impl StrategyName {
    fn strategy(self) -> Strategy {
        match self {
            Self::Sequential => Strategy::Sequential,
            Self::Parallel => Strategy::Parallel,
            Self::Bounded => Strategy::Bounded,
            Self::Batched => Strategy::Batched,
        }
    }

    pub fn takes_k(self) -> bool {
        matches!(self, Self::Bounded | Self::Batched)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Parallel => "parallel",
            Self::Bounded => "bounded",
            Self::Batched => "batched",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum WaitName {
    Bounded,
    Unbounded,
}

impl WaitName {
    fn wait(self) -> Wait {
        match self {
            Self::Bounded => Wait::Bounded,
            Self::Unbounded => Wait::Unbounded,
        }
    }
}

/// One combination's figures. All but the `wall_*` fields are
/// deterministic on the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub strategy: StrategyName,
    pub topology: Topology,
    pub calls: u64,
    pub succeeded: u64,
    pub rounds: u64,
    /// Median over the repeats.
    pub wall_ms: f64,
    pub k: Option<u64>,
    pub wait: WaitName,
    pub retry: bool,
    pub callees: u64,
    /// Instructions of the caller's whole call context.
    pub caller_instructions: u64,
    pub instructions_per_ping: f64,
    /// Cycles the run cost the caller: its balance before minus after, once
    /// everything was answered and refunded.
    pub cycles: u64,
    /// Failed pings by kind.
    pub failures: BTreeMap<String, u64>,
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

/// Every combination of the spec, in a stable order.
pub fn combinations(spec: &SweepSpec) -> Vec<(Topology, StrategyName, Option<u64>, u64)> {
    let mut out = vec![];
    for &topology in &spec.topologies {
        for &strategy in &spec.strategies {
            let ks: Vec<Option<u64>> =
                if strategy.takes_k() { spec.k.iter().map(|&k| Some(k)).collect() } else { vec![None] };
            for k in ks {
                for &n in &spec.calls {
                    out.push((topology, strategy, k, n));
                }
            }
        }
    }
    out
}

/// Runs the sweep; `progress` is told after every run.
pub fn run(
    factory: &EngineFactory,
    spec: &SweepSpec,
    wasms: &CanisterWasms,
    mut progress: impl FnMut(),
) -> Result<Vec<Row>> {
    let mut rows = vec![];
    for (topology, strategy, k, n) in combinations(spec) {
        let plan = Plan {
            strategy: strategy.strategy(),
            n,
            k,
            wait: Some(spec.wait.wait()),
            callees: None,
            timeout_seconds: None,
        };
        let mut walls = vec![];
        let mut first = None;
        for _ in 0..spec.repeat.max(1) {
            let mut engine = factory.start(topology.subnets(), spec.time_step);
            let placement = Placement { callees: spec.callees, ..Placement::default() };
            let deployment = scenario::deploy_placed(engine.as_mut(), topology, placement, wasms)?;
            let plan =
                Plan { callees: (spec.callees > 1).then(|| deployment.callees.clone()), ..plan.clone() };
            let run = match spec.retry {
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
            retry: spec.retry.is_some(),
            callees: spec.callees as u64,
            caller_instructions: r.instructions,
            instructions_per_ping: if n == 0 { 0.0 } else { r.instructions as f64 / n as f64 },
            cycles: u64::try_from(run.cycles).unwrap_or(u64::MAX),
            failures: r.failures.iter().map(|f| (failure_name(f.kind), f.count)).collect(),
            peak_in_flight: r.peak_in_flight,
            time_step: spec.time_step.0,
            wall_ms_p95: ms(percentile(&mut walls, 95)),
        });
    }
    Ok(rows)
}

fn failure_name(kind: FailureKind) -> String {
    format!("{kind:?}")
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

    fn spec() -> SweepSpec {
        SweepSpec {
            calls: vec![10, 100],
            strategies: vec![StrategyName::Sequential, StrategyName::Bounded],
            k: vec![5, 50],
            topologies: vec![Topology::SameSubnet],
            wait: WaitName::Bounded,
            callees: 1,
            repeat: 1,
            time_step: TimeStep::ONE_SECOND,
            retry: None,
        }
    }

    #[test]
    fn k_multiplies_only_the_strategies_that_take_it() {
        let combos = combinations(&spec());
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
