//! When a job's calls are made: the plain data of a job's passes and the
//! rules of retrying, with no timers and no memory.

use candid::{CandidType, Deserialize};
use std::collections::BTreeMap;
#[cfg(test)]
use std::time::Duration;

use crate::FanOut;
use crate::retry::{Backoff, Retry};

/// How a job retries: when ([`Backoff`]), and whether the callee executes
/// each call once, which makes retrying calls that may have executed safe
/// ([`Retry::IfIdempotent`]).
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// When, and how many times.
    pub backoff: Backoff,
    /// The callee executes each call once (it is tagged with a nonce).
    pub idempotent: bool,
}

/// One call of a job waiting for its next attempt.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    /// Which call: its number in the job, from 0.
    pub item: u64,
    /// The attempt it makes next: 2 for the first retry.
    pub attempt: u32,
    /// IC time (ns) before which it is not made.
    pub due: u64,
}

/// A call of a pass that failed, and whether it may be made again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failed {
    /// Which call.
    pub item: u64,
    /// Whether it may be made again.
    pub retry: Retry,
    /// Whether it was made at all: one that was not (a window that stopped
    /// for lack of slots) keeps its attempt, and is retried whatever the
    /// attempts so far.
    pub attempted: bool,
}

impl Failed {
    /// Call `item` was made and failed.
    pub fn new(item: u64, retry: Retry) -> Self {
        Self { item, retry, attempted: true }
    }

    /// Call `item` was not made.
    pub fn not_attempted(item: u64) -> Self {
        Self { item, retry: Retry::Always, attempted: false }
    }

    /// The failed calls of a pass that made one call per item of `items`
    /// (its [`Pass::items`], or anything that converts to them) with
    /// `done`, as [`Work::pass`](super::Work::pass) returns them: each call
    /// that failed, as `retry` classifies its error, and each one not made,
    /// in the items' order.
    pub fn from_fan_out<I: Copy + Into<u64>, R, E>(
        items: &[I],
        done: &FanOut<R, E>,
        mut retry: impl FnMut(I, &E) -> Retry,
    ) -> Vec<Self> {
        let outcomes = items.iter().zip(done.outcomes());
        let failed = outcomes.filter_map(|(&item, outcome)| match outcome {
            Some(Ok(_)) => None,
            Some(Err(error)) => Some(Self::new(item.into(), retry(item, error))),
            None => Some(Self::not_attempted(item.into())),
        });
        failed.collect()
    }
}

/// The calls one pass makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Every call of the job, its first attempt.
    First,
    /// The calls whose retry is due.
    Retry(Vec<Pending>),
}

impl Pass {
    /// The numbers of the calls this pass makes, of a job of `calls`.
    pub fn items(&self, calls: u64) -> Vec<u64> {
        match self {
            Self::First => (0..calls).collect(),
            Self::Retry(due) => due.iter().map(|p| p.item).collect(),
        }
    }

    /// Each call's attempt in this pass.
    fn attempts(&self) -> impl Fn(u64) -> u32 + '_ {
        let retried: BTreeMap<u64, u32> = match self {
            Self::First => BTreeMap::new(),
            Self::Retry(due) => due.iter().map(|p| (p.item, p.attempt)).collect(),
        };
        move |item| retried.get(&item).copied().unwrap_or(1)
    }
}

/// When a job's calls are made: which wait for another attempt, and
/// whether the job has finished. Plain data, and the rules of retrying.
///
/// ```
/// use ic_fanout::job::{Failed, Pass, Policy, Schedule};
/// use ic_fanout::retry::{Backoff, Retry};
///
/// # use std::time::Duration;
/// let policy = Policy { backoff: Backoff { max_attempts: 2, first: Duration::from_millis(1) }, idempotent: false };
/// let mut schedule = Schedule::new(Some(policy), 0);
/// schedule.absorb(&Pass::First, [Failed::new(0, Retry::Always), Failed::new(1, Retry::Never)], 10);
/// assert_eq!(schedule.next_due(), Some(10 + 1_000_000), "call 0 waits 1 ms; call 1 is given up");
/// let due = schedule.take_due(u64::MAX, 100);
/// schedule.absorb(&Pass::Retry(due), [], 2_000_000);
/// assert_eq!(schedule.finished_at(), Some(2_000_000));
/// ```
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    policy: Option<Policy>,
    started_at: u64,
    passes_running: u32,
    waiting: Vec<Pending>,
    retries: u64,
    given_up: u64,
    finished_at: Option<u64>,
}

impl Schedule {
    /// A job started at `now`, its first pass running; with no policy,
    /// nothing is retried.
    pub fn new(policy: Option<Policy>, now: u64) -> Self {
        Self {
            policy,
            started_at: now,
            passes_running: 1,
            waiting: vec![],
            retries: 0,
            given_up: 0,
            finished_at: None,
        }
    }

    /// Takes in a finished pass's failures: each waits for another attempt
    /// if the policy allows one. A call that was made waits if its class
    /// allows and it has attempts left; one that was not made keeps its
    /// attempt, and waits while its next try is within the backoff's total
    /// from the job's start (so no job outlives its caps).
    pub fn absorb(&mut self, pass: &Pass, failed: impl IntoIterator<Item = Failed>, now: u64) {
        self.passes_running = self.passes_running.saturating_sub(1);
        let attempt_of = pass.attempts();
        for Failed { item, retry, attempted } in failed {
            let attempt = attempt_of(item) + u32::from(attempted);
            let waits = self.policy.and_then(|Policy { backoff, idempotent }| {
                let delay = u64::try_from(backoff.delay(attempt.max(2)).as_nanos()).unwrap_or(u64::MAX);
                let due = now.saturating_add(delay);
                let deadline = u128::from(self.started_at) + backoff.total().as_nanos();
                let in_time =
                    if attempted { attempt <= backoff.max_attempts } else { u128::from(due) <= deadline };
                (retry.allows(idempotent) && in_time).then_some(due)
            });
            match waits {
                Some(due) => self.waiting.push(Pending { item, attempt, due }),
                None => self.given_up += 1,
            }
        }
        self.finish_if_done(now);
    }

    /// A pass that will never report: its call context was dropped (a
    /// trap in one of its callbacks cancels it). Its calls are neither
    /// retried nor counted.
    pub fn pass_lost(&mut self, now: u64) {
        self.passes_running = self.passes_running.saturating_sub(1);
        self.finish_if_done(now);
    }

    fn finish_if_done(&mut self, now: u64) {
        if self.passes_running == 0 && self.waiting.is_empty() && self.finished_at.is_none() {
            self.finished_at = Some(now);
        }
    }

    /// Removes up to `max` calls that are due at `now`, earliest first, and
    /// counts them as retries of a new pass.
    pub fn take_due(&mut self, now: u64, max: usize) -> Vec<Pending> {
        self.waiting.sort_by_key(|p| (p.due, p.item));
        let due = self.waiting.iter().take_while(|p| p.due <= now).count().min(max);
        let taken: Vec<Pending> = self.waiting.drain(..due).collect();
        if !taken.is_empty() {
            self.passes_running += 1;
            self.retries += taken.len() as u64;
        }
        taken
    }

    /// After an upgrade: a pass that was running when the canister was
    /// upgraded without being stopped lost its call context, and with it
    /// the outcome of its calls; it will never report back.
    pub fn after_upgrade(&mut self, now: u64) {
        self.passes_running = 0;
        self.finish_if_done(now);
    }

    /// When the next retry is due, if one is waiting.
    pub fn next_due(&self) -> Option<u64> {
        self.waiting.iter().map(|p| p.due).min()
    }

    /// A schedule kept some other way (by an earlier version of your
    /// canister, say), brought in with no pass running.
    //
    // Hidden: only the demo caller's upgrade from its v0.1.0 (which kept
    // its jobs itself, ids and waiting calls included) needs it, to bring
    // those jobs in with `Jobs::put`; not part of the API to build on.
    #[doc(hidden)]
    pub fn resume(
        policy: Option<Policy>,
        started_at: u64,
        waiting: Vec<Pending>,
        retries: u64,
        finished_at: Option<u64>,
    ) -> Self {
        Self { policy, started_at, passes_running: 0, waiting, retries, given_up: 0, finished_at }
    }

    /// The policy it retries with.
    pub fn policy(&self) -> Option<Policy> {
        self.policy
    }

    /// IC time (ns) the job started.
    pub fn started_at(&self) -> u64 {
        self.started_at
    }

    /// IC time (ns) it finished: no pass running, no call waiting.
    pub fn finished_at(&self) -> Option<u64> {
        self.finished_at
    }

    /// Calls made again so far.
    pub fn retries(&self) -> u64 {
        self.retries
    }

    /// Failed calls it will not make again.
    pub fn given_up(&self) -> u64 {
        self.given_up
    }

    /// Calls waiting for another attempt.
    pub fn waiting(&self) -> &[Pending] {
        &self.waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: Policy =
        Policy { backoff: Backoff { max_attempts: 3, first: Duration::from_millis(1) }, idempotent: false };

    #[test]
    fn retryable_failures_wait_out_the_backoff() {
        let mut s = Schedule::new(Some(POLICY), 1_000);
        s.absorb(&Pass::First, [Failed::new(1, Retry::Always), Failed::new(2, Retry::IfIdempotent)], 2_000);
        assert_eq!(s.waiting, [Pending { item: 1, attempt: 2, due: 2_000 + 1_000_000 }]);
        assert_eq!((s.given_up, s.finished_at), (1, None));
        assert!(s.take_due(2_000 + 999_999, 10).is_empty(), "not before the backoff");
        let due = s.take_due(2_000 + 1_000_000, 10);
        assert_eq!((due.len(), s.retries, s.passes_running), (1, 1, 1));
    }

    #[test]
    fn a_call_gives_up_after_max_attempts_and_the_job_finishes() {
        let mut s = Schedule::new(Some(POLICY), 1_000);
        s.absorb(&Pass::First, [Failed::new(0, Retry::Always)], 2_000);
        for attempt in 2..=3 {
            let due = s.take_due(u64::MAX, 10);
            assert_eq!(due[0].attempt, attempt);
            s.absorb(&Pass::Retry(due), [Failed::new(0, Retry::Always)], 3_000);
        }
        assert!(s.waiting.is_empty());
        assert_eq!((s.finished_at, s.retries, s.given_up), (Some(3_000), 2, 1));
    }

    #[test]
    fn calls_that_may_have_run_wait_only_when_idempotent() {
        for (idempotent, waiting) in [(false, 0), (true, 1)] {
            let mut s = Schedule::new(Some(Policy { idempotent, ..POLICY }), 0);
            s.absorb(&Pass::First, [Failed::new(0, Retry::IfIdempotent)], 0);
            assert_eq!(s.waiting.len(), waiting);
        }
    }

    #[test]
    fn without_a_policy_nothing_is_retried() {
        let mut s = Schedule::new(None, 0);
        s.absorb(&Pass::First, [Failed::new(0, Retry::Always)], 5_000);
        assert_eq!((s.waiting.len(), s.given_up, s.finished_at), (0, 1, Some(5_000)));
    }

    #[test]
    fn an_upgrade_ends_passes_that_were_running() {
        let mut s = Schedule::new(Some(POLICY), 0);
        s.after_upgrade(7_000);
        assert_eq!((s.passes_running, s.finished_at), (0, Some(7_000)));
        let mut waiting = Schedule::new(Some(POLICY), 0);
        waiting.absorb(&Pass::First, [Failed::new(0, Retry::Always)], 2_000);
        waiting.after_upgrade(7_000);
        assert_eq!(waiting.finished_at, None, "its retries still come");
    }

    #[test]
    fn a_call_that_was_not_attempted_keeps_its_attempt() {
        let mut s = Schedule::new(
            Some(Policy { backoff: Backoff { max_attempts: 2, first: Duration::from_millis(1) }, ..POLICY }),
            0,
        );
        s.absorb(&Pass::First, [Failed::not_attempted(0)], 0);
        assert_eq!(s.waiting[0].attempt, 1);
        assert_eq!(s.waiting[0].due, 1_000_000, "it still waits out a backoff");
        for _ in 0..5 {
            let due = s.take_due(u64::MAX, 10);
            s.absorb(&Pass::Retry(due), [Failed::not_attempted(0)], 0);
        }
        assert_eq!(s.waiting.len(), 1, "never attempted, never given up");
    }

    #[test]
    fn a_call_never_attempted_is_given_up_once_its_next_try_would_pass_the_backoffs_total() {
        // 3 attempts from 1 ms: waits of 1 + 2 = 3 ms in all, from the start.
        let mut s = Schedule::new(Some(POLICY), 0);
        s.absorb(&Pass::First, [Failed::not_attempted(0)], 2_000_000);
        assert_eq!(s.waiting, [Pending { item: 0, attempt: 1, due: 3_000_000 }], "due at the deadline");
        let due = s.take_due(u64::MAX, 10);
        s.absorb(&Pass::Retry(due), [Failed::not_attempted(0)], 2_000_001);
        assert_eq!((s.waiting.len(), s.given_up, s.finished_at), (0, 1, Some(2_000_001)));
    }

    #[test]
    fn a_lost_pass_ends_the_job_unless_calls_wait() {
        let mut s = Schedule::new(Some(POLICY), 0);
        s.absorb(&Pass::First, [Failed::new(0, Retry::Always)], 0);
        let due = s.take_due(u64::MAX, 10);
        assert_eq!((due.len(), s.passes_running), (1, 1));
        s.pass_lost(5);
        assert_eq!((s.passes_running, s.finished_at, s.given_up), (0, Some(5), 0), "its call is not counted");
    }

    #[test]
    fn a_fan_out_s_failed_and_unattempted_calls_are_its_items_failed() {
        struct NoSlot;
        impl crate::Refusal for NoSlot {
            fn is_refusal(&self) -> bool {
                true
            }
        }
        let items = [4u64, 7, 9];
        let call = |&item: &u64| std::future::ready(if item == 4 { Ok(()) } else { Err(NoSlot) });
        let done = futures::executor::block_on(crate::fan_out(crate::Pace::ONE_AT_A_TIME, &items, call));
        let retry = |item, _: &NoSlot| if item == 7 { Retry::IfIdempotent } else { Retry::Never };
        let failed = Failed::from_fan_out(&items, &done, retry);
        assert_eq!(
            failed,
            [Failed::new(7, Retry::IfIdempotent), Failed::not_attempted(9)],
            "by item, not index"
        );
    }

    #[test]
    fn take_due_takes_the_earliest_first_then_the_lowest_item() {
        let mut s = Schedule::new(Some(POLICY), 0);
        s.absorb(&Pass::First, [Failed::new(1, Retry::Always), Failed::new(0, Retry::Always)], 0);
        assert_eq!(s.take_due(1_000_000, 1), [Pending { item: 0, attempt: 2, due: 1_000_000 }]);
        assert_eq!((s.retries, s.waiting.len()), (1, 1));
    }

    #[test]
    fn a_resumed_schedule_has_no_pass_running_and_keeps_what_it_was_given() {
        let waiting = vec![Pending { item: 2, attempt: 3, due: 50 }];
        let mut s = Schedule::resume(None, 10, waiting, 4, None);
        assert_eq!((s.next_due(), s.retries(), s.passes_running), (Some(50), 4, 0));
        s.take_due(50, 10);
        s.absorb(&Pass::Retry(vec![]), [], 60);
        assert_eq!(s.finished_at(), Some(60));
    }

    #[test]
    fn take_due_keeps_to_the_window() {
        let mut s = Schedule::new(Some(POLICY), 0);
        s.absorb(&Pass::First, (0..4).map(|i| Failed::new(i, Retry::Always)), 0);
        assert_eq!(s.take_due(u64::MAX, 3).len(), 3);
        assert_eq!(s.waiting.len(), 1);
    }
}
