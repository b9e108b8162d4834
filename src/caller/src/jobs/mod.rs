//! Jobs: plans that retry. A job's first pass runs like a plan; the calls
//! that failed in a way that is safe to retry wait out a backoff and are
//! tried again from a timer, never in a tight loop. Timers run outside the
//! call context that started the job, so a job is polled with
//! `job_status`, not awaited.

use candid::{CandidType, Deserialize};
use std::collections::BTreeMap;

use interface::{FailureCount, FailureKind, Report, RetryPolicy};

use crate::plan::{CallId, Tally, ValidPlan};

pub mod runtime;

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
    /// `opt`, so that jobs saved by v0.1.0, which have none, still load.
    pub delivered_earlier: Option<u64>,
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
    /// The nonce of its first ping, when its pings carry nonces (see
    /// [`NonceRange`]); ping `i` carries this plus `i`.
    pub first_nonce: Option<u64>,
}

impl Job {
    pub fn new(plan: ValidPlan, first_nonce: Option<u64>, now: u64, balance: u128) -> Self {
        Self {
            plan,
            started_at: now,
            balance_at_start: balance,
            succeeded: 0,
            delivered_earlier: None,
            calls: 0,
            failures: BTreeMap::new(),
            retries: 0,
            peak_in_flight: 0,
            instructions: 0,
            passes_running: 1,
            waiting: vec![],
            finished_at: None,
            first_nonce,
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
        self.delivered_earlier = Some(self.delivered_earlier.unwrap_or(0) + tally.delivered_earlier);
        self.calls += tally.calls;
        self.peak_in_flight = self.peak_in_flight.max(tally.peak_in_flight);
        self.instructions += instructions;
        for (kind, count) in &tally.failures {
            *self.failures.entry(*kind).or_default() += count;
        }
        if let Some(policy) = self.policy() {
            for &(call, kind) in &tally.failed {
                // A ping that was not attempted keeps its attempt for later.
                let attempt = attempt_of(call) + u32::from(kind != FailureKind::NotAttempted);
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
    pub fn after_upgrade(&mut self, id: u64, now: u64) {
        self.passes_running = 0;
        // Jobs saved by v0.1.0 kept no nonce: it was their id times 2^32.
        if self.plan.retry.is_some_and(|r| r.idempotent) {
            self.first_nonce.get_or_insert(id << 32);
        }
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
            delivered_earlier: self.delivered_earlier.unwrap_or(0),
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

/// The floor the calls of idempotent jobs carry: the lowest nonce an
/// unfinished job may still send. A finished job sends none again, and a
/// new job's nonces are above every earlier job's ([`NonceRange`]), so no
/// nonce below it is ever sent again, and the callee forgets those below.
pub fn nonce_floor<'a>(jobs: impl IntoIterator<Item = &'a Job>) -> u64 {
    jobs.into_iter()
        .filter(|job| job.finished_at.is_none())
        .filter_map(|job| job.first_nonce)
        .min()
        .unwrap_or(0)
}

/// The nonces a caller's idempotent jobs tag their pings with. The callee
/// keeps a nonce it executed until this caller's floor passes it; so a
/// nonce must never repeat for this caller, even after a reinstall, which
/// wipes the caller's memory and restarts its job ids. Each job reserves one nonce per
/// ping from a range that starts at `canister_version` x 2^40:
/// `canister_version` grows with every install, reinstall, upgrade and
/// settings change and is never reset, so an installation never reaches a
/// range that a later version starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NonceRange {
    /// The next nonce not yet reserved in this installation.
    next: u64,
}

/// Nonces one canister version can reserve.
pub const NONCES_PER_VERSION: u64 = 1 << 40;

impl NonceRange {
    /// Reserves `n` nonces at canister version `version`; the first of them.
    pub fn reserve(&mut self, version: u64, n: u64) -> Result<u64, String> {
        let (Some(start), Some(end)) = (
            version.checked_mul(NONCES_PER_VERSION),
            version.checked_add(1).and_then(|v| v.checked_mul(NONCES_PER_VERSION)),
        ) else {
            return Err(format!("canister version {version} leaves no nonces for idempotent jobs"));
        };
        let first = self.next.max(start);
        if end - first < n {
            return Err(format!(
                "this canister version ({version}) has reserved all its {NONCES_PER_VERSION} nonces; upgrade the caller to start more idempotent jobs"
            ));
        }
        self.next = first + n;
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guards::CallCount;
    use candid::Principal;
    use interface::{Acknowledged, Strategy, Wait};

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
        Job::new(plan, None, 1_000, 50)
    }

    fn tally(outcomes: &[Result<u64, FailureKind>]) -> Tally {
        let mut t = Tally::default();
        for (i, &o) in outcomes.iter().enumerate() {
            t.record(CallId { index: i as u64, pings: 1 }, o.map(Acknowledged::now));
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
        j.after_upgrade(1, 7_000);
        assert_eq!((j.passes_running, j.finished_at), (0, Some(7_000)));
        let mut waiting = job(Some(POLICY));
        waiting.absorb(&tally(&[Err(FailureKind::CallPerformFailed)]), |_| 1, 0, 2_000);
        waiting.after_upgrade(1, 7_000);
        assert_eq!(waiting.finished_at, None, "its retries still come");
    }

    #[test]
    fn a_ping_that_was_not_attempted_keeps_its_attempt() {
        let mut j = job(Some(RetryPolicy { max_attempts: 2, ..POLICY }));
        let mut t = Tally::default();
        t.not_attempted(CallId { index: 0, pings: 1 });
        j.absorb(&t, |_| 1, 0, 0);
        assert_eq!(j.waiting[0].attempt, 1);
        assert_eq!(j.waiting[0].due, POLICY.backoff_ns(2), "it still waits out a backoff");
        for _ in 0..5 {
            let due = j.take_due(u64::MAX, 10);
            j.absorb(&t, |_| due[0].attempt, 0, 0);
        }
        assert_eq!(j.waiting.len(), 1, "never attempted, never given up");
    }

    #[test]
    fn the_floor_is_the_first_nonce_of_the_oldest_unfinished_job() {
        let with_nonce = |first, finished: Option<u64>| Job {
            first_nonce: first,
            finished_at: finished,
            ..job(Some(POLICY))
        };
        let jobs = [
            with_nonce(Some(10), Some(1)),
            with_nonce(Some(30), None),
            with_nonce(None, None),
            with_nonce(Some(20), None),
        ];
        assert_eq!(nonce_floor(&jobs), 20, "a finished job's nonces are never sent again");
        assert_eq!(nonce_floor(&jobs[..1]), 0, "nothing unfinished: no promise");
    }

    #[test]
    fn take_due_respects_the_window() {
        let mut j = job(Some(POLICY));
        j.absorb(&tally(&[Err(FailureKind::CallPerformFailed); 4]), |_| 1, 0, 0);
        assert_eq!(j.take_due(u64::MAX, 3).len(), 3);
        assert_eq!(j.waiting.len(), 1);
    }

    #[test]
    fn nonce_ranges_never_repeat_across_versions() {
        let mut nonces = NonceRange::default();
        assert_eq!(nonces.reserve(1, 10), Ok(NONCES_PER_VERSION));
        assert_eq!(nonces.reserve(1, 10), Ok(NONCES_PER_VERSION + 10));
        // A reinstall forgets the range but not the version, which grew.
        let mut reinstalled = NonceRange::default();
        assert_eq!(reinstalled.reserve(2, 10), Ok(2 * NONCES_PER_VERSION));
        // A settings change keeps the range but grows the version: the next
        // range starts past everything before.
        assert_eq!(nonces.reserve(3, 1), Ok(3 * NONCES_PER_VERSION));
    }

    #[test]
    fn a_used_up_or_overflowing_range_is_refused() {
        let mut nonces = NonceRange::default();
        assert_eq!(nonces.reserve(1, NONCES_PER_VERSION), Ok(NONCES_PER_VERSION));
        let err = nonces.reserve(1, 1).unwrap_err();
        assert!(err.contains("upgrade the caller"), "{err}");
        assert!(nonces.reserve(1 << 24, 1).unwrap_err().contains("leaves no nonces"));
        assert!(nonces.reserve(u64::MAX, 1).is_err());
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
        waiting: Vec<Pending>,
        finished_at: Option<u64>,
    }

    #[test]
    fn jobs_saved_by_v0_1_0_load_after_an_upgrade() {
        let old = job(Some(RetryPolicy { idempotent: true, ..POLICY }));
        let saved = JobV0_1 {
            plan: old.plan.clone(),
            started_at: 1,
            balance_at_start: 2,
            succeeded: 3,
            calls: 4,
            failures: BTreeMap::from([(FailureKind::SysUnknown, 1)]),
            retries: 5,
            peak_in_flight: 6,
            instructions: 7,
            passes_running: 0,
            waiting: vec![Pending { call: CallId { index: 9, pings: 1 }, attempt: 2, due: 10 }],
            finished_at: None,
        };
        let mut loaded: Job = candid::decode_one(&candid::encode_one(saved).unwrap()).unwrap();
        assert_eq!((loaded.succeeded, loaded.delivered_earlier, loaded.first_nonce), (3, None, None));
        assert_eq!(loaded.report(12, 0).delivered_earlier, 0);
        loaded.after_upgrade(7, 11);
        assert_eq!(loaded.first_nonce, Some(7 << 32), "its nonces stay the ones it used");
    }
}
