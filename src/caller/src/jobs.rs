//! Jobs: plans that retry. A job's first pass runs like a plan; the calls
//! that failed in a way that is safe to retry wait out a backoff and are
//! tried again from a timer, never in a tight loop. Timers run outside the
//! call context that started the job, so a job is polled with
//! `job_status`, not awaited.

use candid::{CandidType, Deserialize};
use std::collections::BTreeMap;

use crate::plan::{CallId, FailureCount, FailureKind, Report, RetryPolicy, Tally, ValidPlan};

/// A call waiting for its next attempt.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    pub call: CallId,
    /// 2 for the first retry.
    pub attempt: u32,
    /// IC time (ns) before which it is not tried.
    pub due: u64,
}

/// A job's state. Plain data: it is kept across upgrades.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq)]
pub struct Job {
    pub plan: ValidPlan,
    pub started_at: u64,
    pub balance_at_start: u128,
    pub succeeded: u64,
    pub calls: u64,
    pub failures: BTreeMap<FailureKind, u64>,
    pub retries: u64,
    pub peak_in_flight: u64,
    /// Instructions of the finished passes' call contexts.
    pub instructions: u64,
    /// Passes (the first, or a retry step) still running.
    pub passes_running: u32,
    pub waiting: Vec<Pending>,
    pub finished_at: Option<u64>,
}

impl Job {
    pub fn new(plan: ValidPlan, now: u64, balance: u128) -> Self {
        Self {
            plan,
            started_at: now,
            balance_at_start: balance,
            succeeded: 0,
            calls: 0,
            failures: BTreeMap::new(),
            retries: 0,
            peak_in_flight: 0,
            instructions: 0,
            passes_running: 1,
            waiting: vec![],
            finished_at: None,
        }
    }

    fn policy(&self) -> Option<RetryPolicy> {
        self.plan.retry
    }

    /// Takes in a finished pass: its counts, and its failures, which wait
    /// for another attempt if they may have one. `attempt` is the attempt
    /// the pass made (1 for the first pass).
    pub fn absorb(&mut self, tally: &Tally, attempt_of: impl Fn(CallId) -> u32, instructions: u64, now: u64) {
        self.passes_running -= 1;
        self.succeeded += tally.succeeded;
        self.calls += tally.calls;
        self.peak_in_flight = self.peak_in_flight.max(tally.peak_in_flight);
        self.instructions += instructions;
        for (kind, count) in &tally.failures {
            *self.failures.entry(*kind).or_default() += count;
        }
        if let Some(policy) = self.policy() {
            for &(call, kind) in &tally.failed {
                let attempt = attempt_of(call) + 1;
                if kind.retryable(policy.idempotent) && attempt <= policy.max_attempts {
                    self.waiting.push(Pending { call, attempt, due: now + policy.backoff_ns(attempt) });
                }
            }
        }
        if self.passes_running == 0 && self.waiting.is_empty() {
            self.finished_at = Some(now);
        }
    }

    /// After an upgrade: a pass that was running when the canister was
    /// upgraded without being stopped lost its call context, and with it
    /// the outcome of its calls; it will never report back.
    pub fn after_upgrade(&mut self, now: u64) {
        self.passes_running = 0;
        if self.waiting.is_empty() && self.finished_at.is_none() {
            self.finished_at = Some(now);
        }
    }

    /// When the next retry is due, if any is waiting.
    pub fn next_due(&self) -> Option<u64> {
        self.waiting.iter().map(|p| p.due).min()
    }

    /// Removes up to `max` calls that are due at `now`, earliest first, and
    /// counts them as retries of a new pass.
    pub fn take_due(&mut self, now: u64, max: usize) -> Vec<Pending> {
        self.waiting.sort_by_key(|p| (p.due, p.call.index));
        let due = self.waiting.iter().take_while(|p| p.due <= now).count().min(max);
        let taken: Vec<Pending> = self.waiting.drain(..due).collect();
        if !taken.is_empty() {
            self.passes_running += 1;
            self.retries += taken.len() as u64;
        }
        taken
    }

    pub fn report(&self, now: u64, balance_now: u128) -> Report {
        Report {
            requested: self.plan.n.get(),
            succeeded: self.succeeded,
            calls: self.calls,
            failures: self.failures.iter().map(|(&kind, &count)| FailureCount { kind, count }).collect(),
            retries: self.retries,
            peak_in_flight: self.peak_in_flight,
            instructions: self.instructions,
            cycles_spent: self.balance_at_start.saturating_sub(balance_now).into(),
            time_elapsed_ns: self.finished_at.unwrap_or(now) - self.started_at,
            finished: self.finished_at.is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guards::CallCount;
    use crate::plan::{Strategy, Wait};
    use candid::Principal;

    fn job(policy: Option<RetryPolicy>) -> Job {
        let plan = ValidPlan {
            strategy: Strategy::Parallel,
            n: CallCount::new(4).unwrap(),
            k: 1,
            wait: Wait::Bounded,
            callees: vec![Principal::anonymous()],
            retry: policy,
            timeout_seconds: None,
        };
        Job::new(plan, 1_000, 50)
    }

    fn tally(outcomes: &[Result<u64, FailureKind>]) -> Tally {
        let mut t = Tally::default();
        for (i, &o) in outcomes.iter().enumerate() {
            t.record(CallId { index: i as u64, pings: 1 }, o);
        }
        t
    }

    const POLICY: RetryPolicy = RetryPolicy { max_attempts: 3, backoff_ms: 1, idempotent: false };

    #[test]
    fn retryable_failures_wait_out_the_backoff() {
        let mut j = job(Some(POLICY));
        let first =
            tally(&[Ok(1), Err(FailureKind::CallPerformFailed), Err(FailureKind::CanisterError), Ok(1)]);
        j.absorb(&first, |_| 1, 10, 2_000);
        assert_eq!(
            j.waiting,
            vec![Pending { call: CallId { index: 1, pings: 1 }, attempt: 2, due: 2_000 + 1_000_000 }]
        );
        assert_eq!(j.finished_at, None);
        assert!(j.take_due(2_000 + 999_999, 10).is_empty(), "not before the backoff");
        let due = j.take_due(2_000 + 1_000_000, 10);
        assert_eq!((due.len(), j.retries, j.passes_running), (1, 1, 1));
    }

    #[test]
    fn a_call_gives_up_after_max_attempts_and_the_job_finishes() {
        let mut j = job(Some(POLICY));
        j.absorb(&tally(&[Err(FailureKind::SysTransient)]), |_| 1, 0, 2_000);
        for attempt in 2..=3 {
            let due = j.take_due(u64::MAX, 10);
            assert_eq!(due[0].attempt, attempt);
            j.absorb(&tally(&[Err(FailureKind::SysTransient)]), |_| attempt, 0, 3_000);
        }
        assert!(j.waiting.is_empty());
        assert_eq!(j.finished_at, Some(3_000));
        let report = j.report(9_999, 40);
        assert!(report.finished);
        assert_eq!((report.retries, report.calls, report.time_elapsed_ns), (2, 3, 2_000));
        assert_eq!(report.cycles_spent, candid::Nat::from(10u32));
    }

    #[test]
    fn sys_unknown_waits_only_for_idempotent_pings() {
        for (idempotent, waiting) in [(false, 0), (true, 1)] {
            let mut j = job(Some(RetryPolicy { idempotent, ..POLICY }));
            j.absorb(&tally(&[Err(FailureKind::SysUnknown)]), |_| 1, 0, 0);
            assert_eq!(j.waiting.len(), waiting);
        }
    }

    #[test]
    fn without_a_policy_nothing_is_retried() {
        let mut j = job(None);
        j.absorb(&tally(&[Err(FailureKind::CallPerformFailed), Ok(1)]), |_| 1, 0, 5_000);
        assert!(j.waiting.is_empty());
        assert_eq!(j.report(9, 50).succeeded, 1);
        assert!(j.report(9, 50).finished);
    }

    #[test]
    fn an_upgrade_ends_passes_that_were_running() {
        let mut j = job(Some(POLICY));
        j.after_upgrade(7_000);
        assert_eq!((j.passes_running, j.finished_at), (0, Some(7_000)));
        let mut waiting = job(Some(POLICY));
        waiting.absorb(&tally(&[Err(FailureKind::CallPerformFailed)]), |_| 1, 0, 2_000);
        waiting.after_upgrade(7_000);
        assert_eq!(waiting.finished_at, None, "its retries still come");
    }

    #[test]
    fn take_due_respects_the_window() {
        let mut j = job(Some(POLICY));
        j.absorb(&tally(&[Err(FailureKind::CallPerformFailed); 4]), |_| 1, 0, 0);
        assert_eq!(j.take_due(u64::MAX, 3).len(), 3);
        assert_eq!(j.waiting.len(), 1);
    }
}
