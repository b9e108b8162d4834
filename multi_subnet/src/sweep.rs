//! A sweep: every combination of topology, strategy, k and n, each run on
//! a fresh deployment, `repeat` times, as one row of figures.

use anyhow::Result;
use canister_wasm::CanisterWasms;
use interface::{FailureKind, Plan, RetryPolicy, Strategy, Wait};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

use crate::engines::{EngineFactory, TimeStep};
use crate::load::{self, Load};
use crate::scenario::Topology;

/// What a sweep runs: every combination of its lists, each `repeat` times
/// on a fresh deployment.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub topologies: Vec<Topology>,
    pub strategies: Vec<Strategy>,
    /// Windows (bounded) and batch sizes (batched); the other strategies
    /// take none.
    pub k: Vec<u64>,
    /// Pings per plan.
    pub calls: Vec<u64>,
    pub callers: Vec<u64>,
    /// Plans each caller runs at once.
    pub plans: Vec<u64>,
    /// Subnets the callers are spread over.
    pub caller_subnets: u64,
    pub callees: u64,
    pub wait: Wait,
    pub repeat: u64,
    pub time_step: TimeStep,
    /// How a plan's job retries; `None`: plans run once, without a job.
    pub retry: Option<RetryPolicy>,
}

impl Grid {
    /// Every load, in a stable order.
    fn loads(&self) -> Vec<Load> {
        let caller_subnets = self.caller_subnets;
        let mut loads = vec![];
        for &callers in &self.callers {
            for &plans in &self.plans {
                loads.push(Load { plans, callers, caller_subnets });
            }
        }
        loads
    }

    /// Every combination, in a stable order.
    pub fn combinations(&self) -> Vec<(Topology, Strategy, Option<u64>, u64, Load)> {
        let mut out = vec![];
        for &topology in &self.topologies {
            for &strategy in &self.strategies {
                let ks: Vec<Option<u64>> =
                    if strategy.takes_k() { self.k.iter().map(|&k| Some(k)).collect() } else { vec![None] };
                for k in ks {
                    for &n in &self.calls {
                        for load in self.loads() {
                            out.push((topology, strategy, k, n, load));
                        }
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
    /// Pings per plan.
    pub calls: u64,
    #[serde(flatten)]
    pub load: Load,
    /// Pings delivered, over every plan.
    pub succeeded: u64,
    pub rounds: u64,
    /// Median over the repeats.
    pub wall_ms: f64,
    pub k: Option<u64>,
    pub wait: Wait,
    pub retry: bool,
    pub callees: u64,
    /// Instructions of the callers' plans (each a whole call context).
    pub caller_instructions: u64,
    pub instructions_per_ping: f64,
    /// The most pings the callees executed in one round.
    pub peak_pings_per_round: u64,
    /// Cycles the run cost the caller: its balance before minus after, once
    /// everything was answered and refunded.
    pub cycles: u64,
    /// Failed pings by kind.
    pub failures: BTreeMap<FailureKind, u64>,
    /// The most calls one plan had in flight.
    pub peak_in_flight: u64,
    /// IC time per round, in ns.
    pub time_step: u64,
    pub wall_ms_p95: f64,
}

impl Row {
    /// What identifies a row across runs (for baselines).
    pub fn key(&self) -> String {
        let k = self.k.map_or(String::new(), |k| format!(" k={k}"));
        let load = match self.load {
            l if l == Load::default() => String::new(),
            l => format!(" plans={} callers={} caller_subnets={}", l.plans, l.callers, l.caller_subnets),
        };
        format!(
            "{} {}{k} n={}{load} wait={:?} callees={} retry={}",
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
    spec: &Grid,
    wasms: &CanisterWasms,
    mut progress: impl FnMut(),
) -> Result<Vec<Row>> {
    let callees = spec.callees as usize;
    let mut rows = vec![];
    for (topology, strategy, k, n, load) in spec.combinations() {
        let plan = Plan { k, wait: Some(spec.wait), ..Plan::new(strategy, n) };
        let mut walls = vec![];
        let mut first = None;
        for _ in 0..spec.repeat.max(1) {
            let mut engine = factory.start(load.subnets(topology), spec.time_step)?;
            let deployment = load::deploy(engine.as_mut(), topology, load, callees, wasms)?;
            let plan = Plan { callees: (callees > 1).then(|| deployment.callees.clone()), ..plan.clone() };
            let run = load::run(engine.as_mut(), &deployment, load, &plan, spec.retry)?;
            walls.push(run.wall);
            first.get_or_insert(run);
            progress();
        }
        let run = first.expect("at least one repeat");
        let requested = n * load.plans_in_all();
        let instructions = run.reports.iter().map(|r| r.instructions).sum::<u64>();
        let mut failures = BTreeMap::new();
        for f in run.reports.iter().flat_map(|r| &r.failures) {
            *failures.entry(f.kind).or_default() += f.count;
        }
        rows.push(Row {
            strategy,
            topology,
            calls: n,
            load,
            succeeded: run.reports.iter().map(|r| r.succeeded).sum(),
            rounds: run.rounds,
            wall_ms: ms(percentile(&mut walls, 50)),
            k,
            wait: spec.wait,
            retry: spec.retry.is_some(),
            callees: spec.callees,
            caller_instructions: instructions,
            instructions_per_ping: if requested == 0 { 0.0 } else { instructions as f64 / requested as f64 },
            peak_pings_per_round: run.peak_pings_per_round,
            cycles: u64::try_from(run.cycles).unwrap_or(u64::MAX),
            failures,
            peak_in_flight: run.reports.iter().map(|r| r.peak_in_flight).max().unwrap_or(0),
            time_step: spec.time_step.0,
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

    fn spec(args: &str) -> Grid {
        let args = ["multi_subnet", "sweep"].into_iter().chain(args.split_whitespace());
        let Some(Command::Sweep(sweep)) = Cli::try_parse_from(args).unwrap().command else { unreachable!() };
        sweep.grid()
    }

    #[test]
    fn k_multiplies_only_the_strategies_that_take_it() {
        let combos = spec("--calls 10,100 --strategies sequential,bounded --k 5,50 --topologies same-subnet")
            .combinations();
        assert_eq!(combos.len(), 2 + 2 * 2);
        assert!(combos.iter().all(|(_, s, k, _, _)| s.takes_k() == k.is_some()));
    }

    #[test]
    fn percentiles_of_repeats() {
        let mut walls: Vec<Duration> = [5, 1, 3, 2, 4].map(Duration::from_millis).to_vec();
        assert_eq!(percentile(&mut walls, 50), Duration::from_millis(3));
        assert_eq!(percentile(&mut walls, 95), Duration::from_millis(5));
        assert_eq!(percentile(&mut [Duration::from_millis(7)], 95), Duration::from_millis(7));
    }
}
