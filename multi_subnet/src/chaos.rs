//! `multi_subnet chaos`: every strategy under every fault the simulator
//! injects, over seeds, with every ping's ledger checked per run.

use anyhow::{Context, Result, anyhow};
use candid::{Principal, encode_args};
use ic_sim_client::api::{Action, Blob, FaultSpec};
use interface::{FailureKind, Plan, Report, RetryPolicy, Strategy};
use serde::Serialize;
use std::collections::BTreeMap;

use crate::caller_client::round_limit;
use crate::engines::{Engine, EngineFactory, EngineKind, TimeStep};
use crate::report::{Format, failure_notes};
use crate::rounds::{self, RoundLimit};
use crate::scenario::{self, Deployment, Topology};
use crate::table::Table;
use canister_wasm::CanisterWasms;

/// A fault, as the simulator injects it into one run. Rounds count from
/// the round that executes the run's first message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// Nothing goes wrong: the baseline.
    None,
    /// The callee traps on 10% of its executions (seeded).
    CalleeTraps,
    /// The callee traps on every 7th execution.
    CalleeTrapsEvery7th,
    /// The callee is stopped at round 2 and started at round 6.
    CalleeStopped,
    /// The callee is stopped at round 2, upgraded at 3 and started at 4.
    CalleeUpgraded,
    /// The callee is stopped at round 2 and deleted at round 4.
    CalleeDeleted,
    /// The callee's subnet executes nothing in rounds 2 to 21 (calls time out after 10 s).
    SubnetStalled,
    /// 5% of the best-effort responses are dropped (seeded): the caller gets SYS_UNKNOWN.
    ResponsesDropped,
    /// The caller is stopped at round 2, upgraded once its calls are answered, then started;
    /// the callee traps on every 7th execution, so that a job has retries waiting meanwhile.
    CallerUpgraded,
    /// The caller's balance falls to 1 T cycles at round 1 (about 23 calls' reservations).
    CallerOutOfCycles,
}

impl Fault {
    pub const ALL: [Fault; 10] = [
        Self::None,
        Self::CalleeTraps,
        Self::CalleeTrapsEvery7th,
        Self::CalleeStopped,
        Self::CalleeUpgraded,
        Self::CalleeDeleted,
        Self::SubnetStalled,
        Self::ResponsesDropped,
        Self::CallerUpgraded,
        Self::CallerOutOfCycles,
    ];

    /// Its name on the command line and in reports.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self).expect("none skipped").get_name().to_string()
    }

    /// The faults of a run on `d`, whose IC has `subnets`: a spec as any
    /// client sends it to the simulator (`ic-sim-client`), rounds counted
    /// from the round that executes the run's first message.
    fn spec(self, seed: u64, d: &Deployment, subnets: &[Principal]) -> FaultSpec {
        let callee = d.callee();
        let upgrade = || Action::Upgrade { wasm: None, arg: Blob(encode_args(()).expect("encodes")) };
        let spec = FaultSpec::seeded(seed);
        match self {
            Self::None => spec,
            Self::CalleeTraps => spec.trap_chance(callee, 0.1),
            Self::CalleeTrapsEvery7th => spec.trap_every(callee, 7),
            Self::CalleeStopped => spec.event(callee, 2, Action::Stop).event(callee, 6, Action::Start),
            Self::CalleeUpgraded => spec.event(callee, 2, Action::Stop).event(callee, 3, upgrade()).event(
                callee,
                4,
                Action::Start,
            ),
            Self::CalleeDeleted => spec.event(callee, 2, Action::Stop).event(callee, 4, Action::Delete),
            Self::SubnetStalled => spec.stall(subnets[d.topology.subnets() - 1], 2, 20),
            Self::ResponsesDropped => spec.drop_best_effort_responses(0.05),
            Self::CallerUpgraded => spec
                .trap_every(callee, 7)
                .event(d.caller, 2, Action::Stop)
                .event(d.caller, 2, upgrade())
                .event(d.caller, 2, Action::Start),
            Self::CallerOutOfCycles => {
                spec.event(d.caller, 1, Action::RunOutOfCycles { left: 1_000_000_000_000 })
            }
        }
    }
}

/// How a run fans out: a plan, or a job that retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ChaosStrategy {
    /// 50 pings, one at a time.
    Sequential,
    /// 300 pings at once.
    Parallel,
    /// 300 pings, at most 50 in flight.
    Bounded,
    /// 300 pings, 10 per call.
    Batched,
    /// 300 pings at once as an idempotent job: up to 10 attempts, 1 s backoff.
    Job,
}

impl ChaosStrategy {
    pub const ALL: [ChaosStrategy; 5] =
        [Self::Sequential, Self::Parallel, Self::Bounded, Self::Batched, Self::Job];

    /// Its name on the command line and in reports.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self).expect("none skipped").get_name().to_string()
    }

    fn plan(self) -> Plan {
        let plan = match self {
            Self::Sequential => Plan::new(Strategy::Sequential, 50),
            Self::Parallel | Self::Job => Plan::new(Strategy::Parallel, 300),
            Self::Bounded => Plan::new(Strategy::Bounded, 300).with_k(50),
            Self::Batched => Plan::new(Strategy::Batched, 300).with_k(10),
        };
        // Short enough that a stalled subnet makes calls time out.
        Plan { timeout_seconds: Some(10), ..plan }
    }

    fn retry(self) -> Option<RetryPolicy> {
        (self == Self::Job).then_some(RetryPolicy { max_attempts: 10, backoff_ms: 1000, idempotent: true })
    }
}

/// One run's ledger.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChaosRow {
    pub fault: Fault,
    pub strategy: ChaosStrategy,
    pub seed: u64,
    pub requested: u64,
    /// Pings the caller counted as delivered.
    pub delivered: u64,
    /// Failed pings by kind (for a job, every failed attempt).
    pub failures: BTreeMap<FailureKind, u64>,
    /// Of the failures, `SYS_UNKNOWN`: the ping may or may not have run.
    pub unknown: u64,
    /// Calls made again after a failure (jobs only).
    pub retried: u64,
    /// Pings the callee counted as executed (`pings_received`, kept across upgrades).
    pub executed: u64,
    /// Pings not accounted for: neither delivered nor failed, or delivered without executing.
    pub lost: u64,
    /// Pings counted twice, or executed beyond what was delivered or unknown.
    pub double_counted: u64,
    /// Ingress, call contexts, held slots and messages still open once the IC settled.
    pub open_at_end: u64,
    /// Rounds from submission to the report.
    pub rounds: u64,
    /// What the injected events did, as the simulator logged it.
    #[serde(skip)]
    pub fault_log: Vec<String>,
}

impl ChaosRow {
    /// Why the ledger does not balance, if it does not.
    pub fn violation(&self) -> Option<String> {
        let broken = self.lost != 0 || self.double_counted != 0 || self.open_at_end != 0;
        broken.then(|| {
            format!(
                "seed {}: {} under {}: lost {}, double-counted {}, open at end {} ({self:?})",
                self.seed,
                self.strategy.name(),
                self.fault.name(),
                self.lost,
                self.double_counted,
                self.open_at_end
            )
        })
    }
}

/// The ledger of one run, from the caller's report and the callee's count.
fn ledger(report: &Report, executed: u64, idempotent: bool) -> (u64, u64) {
    let failed_attempts: u64 = report.failures.iter().map(|f| f.count).sum();
    // Every retry follows a failure: what is left failed for good. (The
    // job's calls carry one ping each, so its retries count pings.)
    let failed = failed_attempts.saturating_sub(report.retries);
    let accounted = report.succeeded + failed;
    let unknown = report.failed(FailureKind::SysUnknown);
    let lost = report.requested.saturating_sub(accounted).max(report.succeeded.saturating_sub(executed));
    let mut double_counted =
        accounted.saturating_sub(report.requested).max(executed.saturating_sub(report.succeeded + unknown));
    if idempotent {
        // Each nonce executes at most once.
        double_counted = double_counted.max(executed.saturating_sub(report.requested));
    }
    (lost, double_counted)
}

/// Rounds the IC may take to settle after a run: late responses, and requests a stall held back.
const SETTLE_ROUNDS: u64 = 1_000;

/// Runs `strategy` under `fault` with `seed` on a fresh cross-subnet
/// deployment of `engines`': the simulator, or a server of PocketIC's API
/// that serves the simulator's extensions.
pub fn run_one(
    fault: Fault,
    strategy: ChaosStrategy,
    seed: u64,
    engines: &EngineFactory,
    wasms: &CanisterWasms,
) -> Result<ChaosRow> {
    let topology = Topology::CrossSubnet;
    let mut engine = engines.start(topology.subnets(), TimeStep::ONE_SECOND)?;
    // A round in transit between subnets, so that faults catch calls on their way.
    engine.set_xnet_latency_rounds(1)?;
    let engine = engine.as_mut();
    let d = scenario::deploy(engine, topology, wasms)?;
    let subnets = engine.subnets();
    engine.inject_faults(&fault.spec(seed, &d, &subnets))?;
    let plan = strategy.plan();
    let client = d.client();
    let mut executed = 0;
    let limit = RoundLimit(round_limit(plan.n).0 + 10_000);
    let (report, rounds) = match strategy.retry() {
        None => {
            let id = client.submit_run_plan(engine, &plan)?;
            rounds::tick_until(engine, limit, |e| {
                watch(e, d.callee(), &mut executed);
                e.ingress_status(id).map(decode_report).transpose()
            })?
        }
        Some(retry) => {
            let job = client.start_job(engine, &plan, Some(retry))?;
            // Stopped for its upgrade, the caller answers no query (as on the
            // IC): ask again next round, and name the last refusal if it never answers.
            let mut refused = None;
            let polled = rounds::tick_until(engine, limit, |e| {
                watch(e, d.callee(), &mut executed);
                match client.job_status(e, job.reply) {
                    Ok(status) => Ok(status.filter(|r| r.finished)),
                    Err(err) => {
                        refused = Some(err);
                        Ok(None)
                    }
                }
            });
            let (report, rounds) = match (polled, refused) {
                (Err(err), Some(refusal)) => return Err(err.context(format!("last refusal: {refusal}"))),
                (polled, _) => polled?,
            };
            (report, rounds::RoundsToComplete(job.rounds.0 + rounds.0))
        }
    };
    let mut faults = engine.fault_report()?;
    for _ in 0..SETTLE_ROUNDS {
        if faults.outstanding.total() == 0 {
            break;
        }
        watch(engine, d.callee(), &mut executed);
        engine.tick();
        faults = engine.fault_report()?;
    }
    watch(engine, d.callee(), &mut executed);
    let (lost, double_counted) = ledger(&report, executed, strategy.retry().is_some());
    Ok(ChaosRow {
        fault,
        strategy,
        seed,
        requested: report.requested,
        delivered: report.succeeded,
        failures: report.failures.iter().map(|f| (f.kind, f.count)).collect(),
        unknown: report.failed(FailureKind::SysUnknown),
        retried: report.retries,
        executed,
        lost,
        double_counted,
        open_at_end: faults.outstanding.total(),
        rounds: rounds.0,
        fault_log: faults.log,
    })
}

/// Reads the callee's count while it exists: its last count survives its deletion.
fn watch(engine: &mut dyn Engine, callee: Principal, executed: &mut u64) {
    if let Ok(count) = scenario::pings_received(engine, callee) {
        *executed = count;
    }
}

fn decode_report(outcome: crate::engines::IngressOutcome) -> Result<Report> {
    let reply = outcome.map_err(|reject| anyhow!("the caller rejected run_plan: {reject}"))?;
    candid::decode_one(&reply).context("decoding run_plan's report")
}

/// The chaos table.
#[derive(Debug, Serialize)]
pub struct ChaosReport {
    pub engine: EngineKind,
    pub rows: Vec<ChaosRow>,
}

/// Every fault in `faults` x every strategy x seeds `1..=seeds`, on `engines`.
pub fn run(
    faults: &[Fault],
    seeds: u64,
    engines: &EngineFactory,
    wasms: &CanisterWasms,
) -> Result<ChaosReport> {
    let mut rows = vec![];
    for &fault in faults {
        for strategy in ChaosStrategy::ALL {
            for seed in 1..=seeds {
                let row = run_one(fault, strategy, seed, engines, wasms)
                    .with_context(|| format!("{} under {} (seed {seed})", strategy.name(), fault.name()))?;
                rows.push(row);
            }
        }
    }
    Ok(ChaosReport { engine: engines.kind(), rows })
}

impl ChaosReport {
    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => serde_json::to_string_pretty(self).expect("a report serialises") + "\n",
            Format::Csv => self.table(|failures| failures.join(";")).csv(),
            Format::Text => self.table(|failures| failures.join(", ")).text() + "\n" + &self.notes(),
            Format::Markdown => self.table(|failures| failures.join(", ")).markdown() + &self.notes(),
        }
    }

    /// Runs whose ledger does not balance.
    pub fn violations(&self) -> Vec<String> {
        self.rows.iter().filter_map(ChaosRow::violation).collect()
    }

    fn table(&self, join: impl Fn(Vec<String>) -> String) -> Table {
        let mut table = Table::new([
            "fault",
            "strategy",
            "seed",
            "requested",
            "delivered",
            "failed (by kind)",
            "unknown",
            "retried",
            "executed",
            "lost",
            "double-counted",
            "open at end",
            "rounds",
        ]);
        for r in &self.rows {
            let failures: Vec<String> = r.failures.iter().map(|(kind, n)| format!("{n} {kind:?}")).collect();
            table.push(vec![
                r.fault.name(),
                r.strategy.name(),
                r.seed.to_string(),
                r.requested.to_string(),
                r.delivered.to_string(),
                if failures.is_empty() { "-".into() } else { join(failures) },
                r.unknown.to_string(),
                r.retried.to_string(),
                r.executed.to_string(),
                r.lost.to_string(),
                r.double_counted.to_string(),
                r.open_at_end.to_string(),
                r.rounds.to_string(),
            ]);
        }
        table
    }

    fn notes(&self) -> String {
        let notes = failure_notes(self.rows.iter().flat_map(|r| r.failures.keys().copied()));
        if notes.is_empty() { notes } else { format!("\nFailures:\n{notes}") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interface::FailureCount;

    fn report(requested: u64, succeeded: u64, failures: &[(FailureKind, u64)], retries: u64) -> Report {
        Report {
            requested,
            succeeded,
            delivered_earlier: 0,
            calls: 0,
            failures: failures.iter().map(|&(kind, count)| FailureCount { kind, count }).collect(),
            retries,
            peak_in_flight: 0,
            instructions: 0,
            cycles_spent: 0u32.into(),
            time_elapsed_ns: 0,
            finished: true,
        }
    }

    #[test]
    fn a_balanced_ledger_has_nothing_lost_or_counted_twice() {
        let unknown = report(10, 7, &[(FailureKind::SysUnknown, 2), (FailureKind::CanisterError, 1)], 0);
        for executed in 7..=9 {
            assert_eq!(ledger(&unknown, executed, false), (0, 0), "unknown pings may have run");
        }
        let retried = report(10, 10, &[(FailureKind::SysUnknown, 4)], 4);
        assert_eq!(ledger(&retried, 10, true), (0, 0), "every failure retried");
    }

    #[test]
    fn pings_missing_from_the_ledger_or_delivered_without_running_are_lost() {
        assert_eq!(ledger(&report(10, 8, &[(FailureKind::CanisterError, 1)], 0), 8, false), (1, 0));
        assert_eq!(ledger(&report(10, 10, &[], 0), 9, false), (1, 0));
    }

    #[test]
    fn pings_counted_twice_or_run_unseen_are_double_counted() {
        assert_eq!(ledger(&report(10, 10, &[(FailureKind::CanisterError, 1)], 0), 10, false), (0, 1));
        let trapped = report(10, 9, &[(FailureKind::CanisterError, 1)], 0);
        assert_eq!(ledger(&trapped, 10, false), (0, 1), "a trap rolls its ping back");
        let job = report(10, 10, &[(FailureKind::SysUnknown, 3)], 3);
        assert_eq!(ledger(&job, 11, true), (0, 1), "a nonce runs once");
    }
}
