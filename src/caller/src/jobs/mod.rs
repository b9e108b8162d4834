//! Jobs: plans that retry, as ic-fanout's jobs. A job's first pass runs
//! like a plan; the calls that failed in a way that is safe to retry wait
//! out a backoff and are tried again from a timer, never in a tight loop
//! (the library's `Schedule`). Timers run outside the call context that
//! started the job, so a job is polled with `job_status`, not awaited.
//! Here: what the caller keeps of a job besides its schedule, its report,
//! its nonces, and jobs saved by earlier versions.

use candid::{CandidType, Deserialize, Principal};
use ic_fanout::job::{Failed, Job, Pending, Policy, Schedule};
use ic_fanout::once::Nonces;
use std::collections::BTreeMap;

use interface::{FailureCount, FailureKind, Report, RetryPolicy};

use crate::plan::{CallId, Tally, ValidPlan};

pub mod runtime;

/// A job's plan and counts; the library keeps it with the job's schedule.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq)]
pub struct PingJob {
    pub plan: ValidPlan,
    pub balance_at_start: u128,
    pub succeeded: u64,
    pub delivered_earlier: u64,
    pub calls: u64,
    pub failures: BTreeMap<FailureKind, u64>,
    pub peak_in_flight: u64,
    /// Instructions of the finished passes' call contexts.
    pub instructions: u64,
    /// The nonce of its first ping, when its pings carry nonces (from
    /// ic-fanout's [`Nonces`]); ping `i` carries this plus `i`.
    pub first_nonce: Option<u64>,
}

impl PingJob {
    pub fn new(plan: ValidPlan, first_nonce: Option<u64>, balance: u128) -> Self {
        Self {
            plan,
            balance_at_start: balance,
            succeeded: 0,
            delivered_earlier: 0,
            calls: 0,
            failures: BTreeMap::new(),
            peak_in_flight: 0,
            instructions: 0,
            first_nonce,
        }
    }

    /// Takes in a finished pass's counts, and returns its failed calls for
    /// the schedule, each with whether it may be made again.
    pub fn absorb(&mut self, tally: Tally, instructions: u64) -> Vec<Failed> {
        self.succeeded += tally.succeeded;
        self.delivered_earlier += tally.delivered_earlier;
        self.calls += tally.calls;
        self.peak_in_flight = self.peak_in_flight.max(tally.peak_in_flight);
        self.instructions += instructions;
        for (kind, count) in &tally.failures {
            *self.failures.entry(*kind).or_default() += count;
        }
        tally.failed
    }

    pub fn report(&self, schedule: &Schedule, now: u64, balance_now: u128) -> Report {
        Report {
            requested: self.plan.n.get(),
            succeeded: self.succeeded,
            delivered_earlier: self.delivered_earlier,
            calls: self.calls,
            failures: self.failures.iter().map(|(&kind, &count)| FailureCount { kind, count }).collect(),
            retries: schedule.retries(),
            peak_in_flight: self.peak_in_flight,
            instructions: self.instructions,
            cycles_spent: self.balance_at_start.saturating_sub(balance_now).into(),
            time_elapsed_ns: schedule.finished_at().unwrap_or(now) - schedule.started_at(),
            finished: schedule.finished_at().is_some(),
        }
    }
}

/// The library's policy for a plan's retries.
pub fn policy(retry: RetryPolicy) -> Policy {
    Policy { backoff: retry.backoff(), idempotent: retry.idempotent }
}

/// A job as versions before ic-fanout's jobs saved it across an upgrade
/// (v0.1.0 had neither `delivered_earlier` nor `first_nonce`).
#[derive(CandidType, Deserialize)]
pub struct SavedJob {
    plan: ValidPlan,
    started_at: u64,
    balance_at_start: u128,
    succeeded: u64,
    delivered_earlier: Option<u64>,
    calls: u64,
    failures: BTreeMap<FailureKind, u64>,
    retries: u64,
    peak_in_flight: u64,
    instructions: u64,
    waiting: Vec<SavedPending>,
    finished_at: Option<u64>,
    first_nonce: Option<u64>,
}

#[derive(CandidType, Deserialize)]
struct SavedPending {
    call: CallId,
    attempt: u32,
    due: u64,
}

/// Every job, as those versions saved them.
#[derive(CandidType, Deserialize)]
pub struct SavedJobs {
    /// Above every id they gave.
    pub next_id: u64,
    pub jobs: BTreeMap<u64, SavedJob>,
}

impl SavedJobs {
    /// The nonce ranges ([`Nonces::PER_VERSION`] each) that v0.1.0's nonces
    /// reach into: it tagged job `id`'s pings from `id` x 2^32, and its ids
    /// are below `next_id`. The callee may hold them (or a floor above
    /// them), so new jobs must start past them.
    pub fn nonce_ranges_used(&self) -> u64 {
        self.next_id.saturating_mul(1 << 32).div_ceil(Nonces::PER_VERSION)
    }
}

impl SavedJob {
    /// The job as the library keeps it. A pass that was running at the
    /// upgrade never reports back (see `ic_fanout::job::rearm`).
    pub fn into_job(self, id: u64) -> Job<PingJob> {
        let mut first_nonce = self.first_nonce;
        // Jobs saved by v0.1.0 kept no nonce: it was their id times 2^32.
        if self.plan.retry.is_some_and(|r| r.idempotent) {
            first_nonce.get_or_insert(id << 32);
        }
        let waiting =
            self.waiting.iter().map(|p| Pending { item: p.call.index, attempt: p.attempt, due: p.due });
        let schedule = Schedule::resume(
            self.plan.retry.map(policy),
            self.started_at,
            waiting.collect(),
            self.retries,
            self.finished_at,
        );
        let state = PingJob {
            plan: self.plan,
            balance_at_start: self.balance_at_start,
            succeeded: self.succeeded,
            delivered_earlier: self.delivered_earlier.unwrap_or(0),
            calls: self.calls,
            failures: self.failures,
            peak_in_flight: self.peak_in_flight,
            instructions: self.instructions,
            first_nonce,
        };
        Job { schedule, state }
    }
}

/// The floors the calls of idempotent jobs carry, one per callee of
/// `callees`: ic-fanout's [`Nonces::floors`] over the unfinished jobs (of
/// those given) whose pings carry nonces.
pub fn nonce_floors(callees: &[Principal], unfinished: impl IntoIterator<Item = PingJob>) -> Vec<u64> {
    let unfinished: Vec<PingJob> = unfinished.into_iter().collect();
    let calling: Vec<(u64, &[Principal])> =
        unfinished.iter().filter_map(|job| Some((job.first_nonce?, &job.plan.callees[..]))).collect();
    Nonces::floors(callees, &calling)
}

/// A job reserves a nonce per ping from one version's range.
const _: () = assert!(Nonces::PER_VERSION >= interface::MAX_CALLS, "a version reserves a whole job");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guards::CallCount;
    use ic_fanout::job::Pass;
    use interface::{Acknowledged, Strategy, Wait};

    fn plan(retry: Option<RetryPolicy>) -> ValidPlan {
        ValidPlan {
            strategy: Strategy::Parallel,
            n: CallCount::new(4).unwrap(),
            k: 1,
            wait: Wait::Bounded,
            callees: vec![Principal::anonymous()],
            retry,
            timeout_seconds: None,
        }
    }

    fn job(retry: Option<RetryPolicy>) -> Job<PingJob> {
        Job { schedule: Schedule::new(retry.map(policy), 1_000), state: PingJob::new(plan(retry), None, 50) }
    }

    /// A pass's tally, made as a pass makes it.
    fn tally(outcomes: &[Result<u64, FailureKind>]) -> Tally {
        let calls = (0..outcomes.len() as u64).map(|index| CallId { index, pings: 1 }).collect();
        let outcome = |call: CallId| std::future::ready(outcomes[call.index as usize].map(Acknowledged::now));
        futures::executor::block_on(crate::fan_out::run(crate::plan::Pace::AllAtOnce, calls, outcome))
    }

    /// A pass's tally taken in, as the runtime does.
    fn absorb(job: &mut Job<PingJob>, pass: &Pass, tally: &Tally, now: u64) {
        let failed = job.state.absorb(tally.clone(), 10);
        job.schedule.absorb(pass, failed, now);
    }

    const POLICY: RetryPolicy = RetryPolicy { max_attempts: 3, backoff_ms: 1, idempotent: false };

    #[test]
    fn the_failures_safe_to_retry_wait_out_the_backoff_and_the_rest_count() {
        let mut j = job(Some(POLICY));
        let first =
            tally(&[Ok(1), Err(FailureKind::CallPerformFailed), Err(FailureKind::CanisterError), Ok(1)]);
        absorb(&mut j, &Pass::First, &first, 2_000);
        assert_eq!(j.schedule.waiting(), [Pending { item: 1, attempt: 2, due: 2_000 + 1_000_000 }]);
        assert_eq!((j.state.succeeded, j.state.calls, j.state.instructions), (2, 4, 10));
        assert_eq!(j.state.failures.get(&FailureKind::CanisterError), Some(&1));
        assert_eq!(j.schedule.finished_at(), None);
    }

    #[test]
    fn a_job_that_gave_up_reports_every_attempt_and_its_cost() {
        let mut j = job(Some(POLICY));
        absorb(&mut j, &Pass::First, &tally(&[Err(FailureKind::SysTransient)]), 2_000);
        for attempt in 2..=3 {
            let due = j.schedule.take_due(u64::MAX, 10);
            assert_eq!(due[0].attempt, attempt);
            absorb(&mut j, &Pass::Retry(due), &tally(&[Err(FailureKind::SysTransient)]), 3_000);
        }
        let report = j.state.report(&j.schedule, 9_999, 40);
        assert!(report.finished);
        assert_eq!((report.retries, report.calls, report.time_elapsed_ns), (2, 3, 2_000));
        assert_eq!(report.cycles_spent, candid::Nat::from(10u32));
    }

    #[test]
    fn sys_unknown_waits_only_for_idempotent_pings() {
        for (idempotent, waiting) in [(false, 0), (true, 1)] {
            let mut j = job(Some(RetryPolicy { idempotent, ..POLICY }));
            absorb(&mut j, &Pass::First, &tally(&[Err(FailureKind::SysUnknown)]), 0);
            assert_eq!(j.schedule.waiting().len(), waiting);
        }
    }

    #[test]
    fn a_ping_that_was_not_attempted_keeps_its_attempt() {
        let mut j = job(Some(RetryPolicy { max_attempts: 2, ..POLICY }));
        let mut t = Tally::default();
        t.not_attempted(CallId { index: 0, pings: 1 });
        t.failed.push(Failed::not_attempted(0)); // as `fan_out::run` lists it
        absorb(&mut j, &Pass::First, &t, 0);
        assert_eq!(j.schedule.waiting()[0].attempt, 1);
        for _ in 0..5 {
            let due = j.schedule.take_due(u64::MAX, 10);
            absorb(&mut j, &Pass::Retry(due), &t, 0);
        }
        assert_eq!(j.schedule.waiting().len(), 1, "never attempted, never given up");
    }

    #[test]
    fn each_callee_s_floor_is_the_lowest_first_nonce_of_the_unfinished_jobs_that_call_it() {
        let (a, b, c) =
            (Principal::from_slice(&[1]), Principal::from_slice(&[2]), Principal::from_slice(&[3]));
        let with = |first, callees: &[Principal]| {
            let base = job(Some(POLICY)).state;
            PingJob { first_nonce: first, plan: ValidPlan { callees: callees.to_vec(), ..base.plan }, ..base }
        };
        let unfinished =
            [with(Some(30), &[a, b]), with(None, &[a, b]), with(Some(20), &[a]), with(Some(40), &[b])];
        assert_eq!(nonce_floors(&[a, b, c], unfinished), [20, 30, 0], "c: no job calls it, no promise");
        assert_eq!(nonce_floors(&[a], vec![]), [0], "nothing unfinished: no promise");
    }

    #[test]
    fn after_v0_1_0_new_nonces_start_past_every_nonce_it_gave() {
        for next_id in [1, 255, 256, 257, 100_000] {
            let saved = SavedJobs { next_id, jobs: BTreeMap::new() };
            let last_v0_1_0_nonce = ((next_id - 1) << 32) + interface::MAX_CALLS - 1;
            // A version far below the ranges v0.1.0's many jobs used.
            let first = Nonces::skipping(saved.nonce_ranges_used()).reserve(2, 10).unwrap();
            assert!(first > last_v0_1_0_nonce, "next_id {next_id}: {first} <= {last_v0_1_0_nonce}");
        }
        let first = Nonces::skipping(3).reserve(2, 10).unwrap();
        assert_eq!(first, 5 * Nonces::PER_VERSION, "skipped ranges are added to the version's");
        assert!(
            Nonces::skipping(u64::MAX).reserve(1, 1).unwrap_err().to_string().contains("leaves no nonces")
        );
    }

    /// What v0.1.0's pre_upgrade saved: `Jobs { next_id, jobs }`.
    #[derive(CandidType)]
    struct JobsV0_1 {
        next_id: u64,
        jobs: BTreeMap<u64, JobV0_1>,
    }

    /// A job as v0.1.0 saved it across an upgrade.
    #[derive(CandidType)]
    struct JobV0_1 {
        plan: ValidPlan,
        started_at: u64,
        balance_at_start: u128,
        succeeded: u64,
        calls: u64,
        failures: BTreeMap<FailureKind, u64>,
        retries: u64,
        peak_in_flight: u64,
        instructions: u64,
        passes_running: u32,
        waiting: Vec<SavedPending>,
        finished_at: Option<u64>,
    }

    #[test]
    fn jobs_saved_by_v0_1_0_become_the_librarys_jobs() {
        let saved = JobV0_1 {
            plan: plan(Some(RetryPolicy { idempotent: true, ..POLICY })),
            started_at: 1,
            balance_at_start: 2,
            succeeded: 3,
            calls: 4,
            failures: BTreeMap::from([(FailureKind::SysUnknown, 1)]),
            retries: 5,
            peak_in_flight: 6,
            instructions: 7,
            passes_running: 1,
            waiting: vec![SavedPending { call: CallId { index: 9, pings: 1 }, attempt: 2, due: 10 }],
            finished_at: None,
        };
        let bytes = candid::encode_one(JobsV0_1 { next_id: 7, jobs: BTreeMap::from([(7, saved)]) }).unwrap();
        let mut loaded: SavedJobs = candid::decode_one(&bytes).unwrap();
        let job = loaded.jobs.remove(&7).unwrap().into_job(7);
        assert_eq!(job.state.first_nonce, Some(7 << 32), "its nonces stay the ones it used");
        assert_eq!(job.schedule.waiting(), [Pending { item: 9, attempt: 2, due: 10 }]);
        let report = job.state.report(&job.schedule, 12, 0);
        assert_eq!((report.succeeded, report.delivered_earlier, report.retries, report.calls), (3, 0, 5, 4));
        assert_eq!((report.time_elapsed_ns, report.finished), (11, false));
    }
}
