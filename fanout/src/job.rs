//! Jobs: fan-outs that retry from timers, kept in stable memory.
//!
//! A job's first pass makes its calls in the call context that starts it.
//! The calls that failed in a way its [`Policy`] retries wait out a
//! [`Backoff`] and are made again from an ic-cdk-timers timer, never in a
//! loop; a call gives up after `max_attempts`. Timers run outside the call
//! context that started the job, so a job is polled (its [`Schedule`] and
//! your state, from [`Jobs::get`]), not awaited.
//!
//! You describe the job's calls with [`Work`]; the crate keeps each job
//! ([`Job`]: its schedule and your state) in a `StableBTreeMap`, so jobs
//! survive upgrades without upgrade hooks; [`rearm`] in `post_upgrade`
//! sets their timers again, which an upgrade drops.
//!
//! ```no_run
//! use candid::Principal;
//! use ic_cdk::call::Call;
//! use ic_fanout::job::{self, Failed, Jobs, Pass, Policy, Work};
//! use ic_fanout::retry::{Backoff, Retry};
//! use ic_fanout::{Pace, fan_out};
//! use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
//! use ic_stable_structures::DefaultMemoryImpl;
//! use std::{cell::RefCell, future::IntoFuture, num::NonZeroUsize, thread::LocalKey, time::Duration};
//!
//! type Memory = VirtualMemory<DefaultMemoryImpl>;
//! thread_local! {
//!     static MEMORY: MemoryManager<DefaultMemoryImpl> = MemoryManager::init(DefaultMemoryImpl::default());
//!     static JOBS: RefCell<Jobs<Vec<Principal>, Memory>> = RefCell::new(Jobs::init(
//!         MEMORY.with(|m| m.get(MemoryId::new(0))),
//!         MEMORY.with(|m| m.get(MemoryId::new(1))),
//!         100, // finished jobs kept
//!     ));
//! }
//!
//! /// A job that calls `notify` on every canister in its state.
//! struct Notify;
//!
//! impl Work for Notify {
//!     type State = Vec<Principal>;
//!     type Memory = Memory;
//!
//!     fn jobs() -> &'static LocalKey<RefCell<Jobs<Vec<Principal>, Memory>>> {
//!         &JOBS
//!     }
//!
//!     async fn pass(id: u64, pass: Pass) -> Vec<Failed> {
//!         let users = JOBS.with(|j| j.borrow().get(id).expect("a running job is kept").state);
//!         let items = pass.items(users.len() as u64);
//!         let window = Pace::Window(NonZeroUsize::new(400).unwrap());
//!         let call = |&i: &u64| Call::bounded_wait(users[i as usize], "notify").into_future();
//!         let done = fan_out(window, &items, call).await;
//!         let failed = done.failed().map(|(n, e)| Failed::new(items[n], Retry::of(e, users[items[n] as usize])));
//!         failed.chain(done.not_attempted().map(|n| Failed::not_attempted(items[n]))).collect()
//!     }
//! }
//!
//! // In an update method: starts the job, and returns its id at once.
//! fn notify_all(users: Vec<Principal>) -> u64 {
//!     let policy = Policy { backoff: Backoff { max_attempts: 5, first: Duration::from_secs(1) }, idempotent: false };
//!     job::start::<Notify>(users, Some(policy)).expect("the backoff is within the caps")
//! }
//!
//! // In `post_upgrade`: the timers, which an upgrade drops, set again.
//! fn post_upgrade() {
//!     job::rearm::<Notify>();
//! }
//! ```

use candid::{CandidType, Deserialize};
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableBTreeMap, Storable};
use serde::de::DeserializeOwned;
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::thread::LocalKey;
use std::time::Duration;

use crate::retry::{Backoff, BackoffError, Retry};
use ic_cdk_timers::TimerId;

/// How a job retries: when ([`Backoff`]), and whether the callee executes
/// each call once, which makes retrying calls that may have executed safe
/// ([`Retry::IfIdempotent`]).
///
/// ```
/// use ic_fanout::{job::Policy, retry::Backoff};
/// # use std::time::Duration;
/// let policy = Policy { backoff: Backoff { max_attempts: 3, first: Duration::from_millis(500) }, idempotent: true };
/// assert!(policy.backoff.check().is_ok());
/// ```
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// When, and how many times.
    pub backoff: Backoff,
    /// The callee executes each call once (it is tagged with a nonce).
    pub idempotent: bool,
}

/// One call of a job waiting for its next attempt.
///
/// ```
/// let pending = ic_fanout::job::Pending { item: 3, attempt: 2, due: 1_000 };
/// assert_eq!(pending.attempt, 2);
/// ```
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
///
/// ```
/// use ic_fanout::{job::Failed, retry::Retry};
/// assert_eq!(Failed::new(4, Retry::Always).attempted, true);
/// assert_eq!(Failed::not_attempted(5).retry, Retry::Always);
/// ```
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
    ///
    /// ```
    /// use ic_fanout::{job::Failed, retry::Retry};
    /// let failed = Failed::new(3, Retry::IfIdempotent);
    /// assert_eq!((failed.item, failed.retry, failed.attempted), (3, Retry::IfIdempotent, true));
    /// ```
    pub fn new(item: u64, retry: Retry) -> Self {
        Self { item, retry, attempted: true }
    }

    /// Call `item` was not made.
    ///
    /// ```
    /// # use ic_fanout::job::Failed;
    /// let skipped = Failed::not_attempted(5);
    /// assert!(!skipped.attempted, "not made, so it keeps its attempt");
    /// assert!(skipped.retry.allows(false), "and may be made whether or not the callee is idempotent");
    /// ```
    pub fn not_attempted(item: u64) -> Self {
        Self { item, retry: Retry::Always, attempted: false }
    }
}

/// The calls one pass makes.
///
/// ```
/// use ic_fanout::job::{Pass, Pending};
/// assert_eq!(Pass::First.items(3), [0, 1, 2]);
/// let retry = Pass::Retry(vec![Pending { item: 7, attempt: 2, due: 0 }]);
/// assert_eq!(retry.items(3), [7]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Every call of the job, its first attempt.
    First,
    /// The calls whose retry is due.
    Retry(Vec<Pending>),
}

impl Pass {
    /// The numbers of the calls this pass makes, of a job of `calls`.
    ///
    /// ```
    /// use ic_fanout::job::{Pass, Pending};
    /// assert!(Pass::First.items(0).is_empty());
    /// let due = [4, 1].map(|item| Pending { item, attempt: 2, due: 0 });
    /// assert_eq!(Pass::Retry(due.to_vec()).items(10), [4, 1], "the due calls only, in their order");
    /// ```
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
    ///
    /// ```
    /// use ic_fanout::job::Schedule;
    /// let schedule = Schedule::new(None, 42);
    /// assert_eq!((schedule.started_at(), schedule.policy()), (42, None));
    /// assert_eq!(schedule.finished_at(), None, "its first pass is running");
    /// ```
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
    ///
    /// ```
    /// use ic_fanout::job::{Failed, Pass, Policy, Schedule};
    /// use ic_fanout::retry::{Backoff, Retry};
    /// # use std::time::Duration;
    /// let policy = Policy { backoff: Backoff { max_attempts: 3, first: Duration::from_millis(1) }, idempotent: false };
    /// let mut schedule = Schedule::new(Some(policy), 0);
    /// schedule.absorb(&Pass::First, [Failed::new(0, Retry::IfIdempotent), Failed::not_attempted(1)], 5);
    /// assert_eq!(schedule.given_up(), 1, "call 0 may have executed, and the callee is not idempotent");
    /// assert_eq!(schedule.waiting()[0].attempt, 1, "call 1 was not made: it keeps its attempt");
    /// ```
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
    ///
    /// ```
    /// # use ic_fanout::job::Schedule;
    /// let mut schedule = Schedule::new(None, 0);
    /// schedule.pass_lost(3);
    /// assert_eq!(schedule.finished_at(), Some(3));
    /// ```
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
    ///
    /// ```
    /// use ic_fanout::job::{Pending, Schedule};
    /// let waiting = [(0, 30), (1, 10), (2, 20)].map(|(item, due)| Pending { item, attempt: 2, due });
    /// let mut schedule = Schedule::resume(None, 0, waiting.to_vec(), 0, None);
    /// assert_eq!(schedule.take_due(25, 1), [Pending { item: 1, attempt: 2, due: 10 }], "1 of the 2 due");
    /// assert_eq!((schedule.retries(), schedule.waiting().len()), (1, 2));
    /// ```
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
    ///
    /// ```
    /// # use ic_fanout::job::Schedule;
    /// let mut schedule = Schedule::new(None, 0);
    /// assert_eq!(schedule.finished_at(), None, "its first pass is running");
    /// schedule.after_upgrade(9);
    /// assert_eq!(schedule.finished_at(), Some(9), "the pass was lost, and no call waits");
    /// ```
    pub fn after_upgrade(&mut self, now: u64) {
        self.passes_running = 0;
        self.finish_if_done(now);
    }

    /// When the next retry is due, if one is waiting.
    ///
    /// ```
    /// use ic_fanout::job::{Pending, Schedule};
    /// assert_eq!(Schedule::new(None, 0).next_due(), None);
    /// let waiting = [(0, 30), (1, 10)].map(|(item, due)| Pending { item, attempt: 2, due });
    /// assert_eq!(Schedule::resume(None, 0, waiting.to_vec(), 0, None).next_due(), Some(10));
    /// ```
    pub fn next_due(&self) -> Option<u64> {
        self.waiting.iter().map(|p| p.due).min()
    }

    /// A schedule kept some other way (by an earlier version of your
    /// canister, say), brought in with no pass running.
    ///
    /// ```
    /// use ic_fanout::job::{Pending, Schedule};
    /// let waiting = vec![Pending { item: 2, attempt: 3, due: 50 }];
    /// let schedule = Schedule::resume(None, 10, waiting, 4, None);
    /// assert_eq!((schedule.next_due(), schedule.retries()), (Some(50), 4));
    /// ```
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
    ///
    /// ```
    /// use ic_fanout::{job::{Policy, Schedule}, retry::Backoff};
    /// # use std::time::Duration;
    /// let policy = Policy { backoff: Backoff { max_attempts: 3, first: Duration::from_millis(500) }, idempotent: true };
    /// assert_eq!(Schedule::new(Some(policy), 0).policy(), Some(policy));
    /// assert_eq!(Schedule::new(None, 0).policy(), None, "nothing is retried");
    /// ```
    pub fn policy(&self) -> Option<Policy> {
        self.policy
    }

    /// IC time (ns) the job started.
    ///
    /// ```
    /// # use ic_fanout::job::Schedule;
    /// let mut schedule = Schedule::new(None, 1_000);
    /// schedule.pass_lost(2_000);
    /// assert_eq!(schedule.started_at(), 1_000, "still when it started, not when it finished");
    /// ```
    pub fn started_at(&self) -> u64 {
        self.started_at
    }

    /// IC time (ns) it finished: no pass running, no call waiting.
    ///
    /// ```
    /// use ic_fanout::job::{Failed, Pass, Schedule};
    /// use ic_fanout::retry::Retry;
    /// let mut schedule = Schedule::new(None, 0);
    /// schedule.absorb(&Pass::First, [Failed::new(0, Retry::Always)], 7);
    /// assert_eq!(schedule.finished_at(), Some(7), "with no policy, its failed call does not wait");
    /// ```
    pub fn finished_at(&self) -> Option<u64> {
        self.finished_at
    }

    /// Calls made again so far.
    ///
    /// ```
    /// use ic_fanout::job::{Pending, Schedule};
    /// let waiting = [0, 1].map(|item| Pending { item, attempt: 2, due: 10 });
    /// let mut schedule = Schedule::resume(None, 0, waiting.to_vec(), 0, None);
    /// assert_eq!(schedule.retries(), 0, "a waiting call is not counted yet");
    /// schedule.take_due(10, 500);
    /// assert_eq!(schedule.retries(), 2);
    /// ```
    pub fn retries(&self) -> u64 {
        self.retries
    }

    /// Failed calls it will not make again.
    ///
    /// ```
    /// use ic_fanout::job::{Failed, Pass, Policy, Schedule};
    /// use ic_fanout::retry::{Backoff, Retry};
    /// # use std::time::Duration;
    /// let policy = Policy { backoff: Backoff { max_attempts: 3, first: Duration::from_millis(1) }, idempotent: true };
    /// let mut schedule = Schedule::new(Some(policy), 0);
    /// schedule.absorb(&Pass::First, [Failed::new(0, Retry::Never), Failed::new(1, Retry::Always)], 0);
    /// assert_eq!((schedule.given_up(), schedule.waiting().len()), (1, 1));
    /// ```
    pub fn given_up(&self) -> u64 {
        self.given_up
    }

    /// Calls waiting for another attempt.
    ///
    /// ```
    /// use ic_fanout::job::{Failed, Pass, Pending, Policy, Schedule};
    /// use ic_fanout::retry::{Backoff, Retry};
    /// # use std::time::Duration;
    /// let policy = Policy { backoff: Backoff { max_attempts: 3, first: Duration::from_millis(2) }, idempotent: false };
    /// let mut schedule = Schedule::new(Some(policy), 0);
    /// schedule.absorb(&Pass::First, [Failed::new(4, Retry::Always)], 1_000);
    /// assert_eq!(schedule.waiting(), [Pending { item: 4, attempt: 2, due: 1_000 + 2_000_000 }]);
    /// ```
    pub fn waiting(&self) -> &[Pending] {
        &self.waiting
    }
}

/// A job as kept: its schedule, and your state (what it calls, and what
/// you tally).
///
/// ```
/// use ic_fanout::job::{Job, Schedule};
/// let job = Job { schedule: Schedule::new(None, 0), state: "notify 3 canisters".to_string() };
/// assert_eq!(job.schedule.finished_at(), None);
/// ```
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq)]
pub struct Job<S> {
    /// When its calls are made.
    pub schedule: Schedule,
    /// Yours.
    pub state: S,
}

impl<S: CandidType + DeserializeOwned> Storable for Job<S> {
    const BOUND: Bound = Bound::Unbounded;

    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.encode())
    }

    fn into_bytes(self) -> Vec<u8> {
        self.encode()
    }

    fn from_bytes(bytes: Cow<'_, [u8]>) -> Self {
        candid::decode_one(&bytes).expect("a job this crate stored decodes")
    }
}

impl<S: CandidType> Job<S> {
    fn encode(&self) -> Vec<u8> {
        candid::encode_one(self).expect("a job encodes")
    }
}

/// Every job, by id, in stable memory: at most a number of them, beyond
/// which the oldest finished ones are forgotten (an unfinished one never
/// is, so bound how many your canister starts).
///
/// ```
/// use ic_fanout::job::{Job, Jobs, Schedule};
/// use ic_stable_structures::VectorMemory;
///
/// let mut jobs: Jobs<u32, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 1);
/// let first = jobs.insert(Job { schedule: Schedule::new(None, 0), state: 7 });
/// jobs.update(first, |job| job.schedule.absorb(&ic_fanout::job::Pass::First, [], 5));
/// let second = jobs.insert(Job { schedule: Schedule::new(None, 9), state: 8 });
/// assert_eq!((first, second), (1, 2));
/// assert_eq!(jobs.get(first), None, "finished, so forgotten when the next started");
/// assert_eq!(jobs.unfinished().map(|(id, _)| id).collect::<Vec<_>>(), [2]);
/// ```
pub struct Jobs<S: CandidType + DeserializeOwned, M: Memory> {
    jobs: StableBTreeMap<u64, Job<S>, M>,
    unfinished: StableBTreeMap<u64, (), M>,
    kept: u64,
    /// Jobs with a retry timer set: when it fires, and the timer. Timers do
    /// not survive upgrades, so neither does this.
    armed: BTreeMap<u64, (u64, TimerId)>,
}

impl<S: CandidType + DeserializeOwned, M: Memory> Jobs<S, M> {
    /// The jobs kept in `jobs` and `unfinished` (two memories of their own,
    /// e.g. from a `MemoryManager`), or none if they are new; at most
    /// `kept` are kept, unless more are unfinished (or the newest, which is
    /// always kept, has finished).
    ///
    /// ```
    /// use ic_fanout::job::{Job, Jobs, Schedule};
    /// use ic_stable_structures::VectorMemory;
    /// let (memory, unfinished) = (VectorMemory::default(), VectorMemory::default());
    /// let mut jobs = Jobs::init(memory.clone(), unfinished.clone(), 100);
    /// let id = jobs.insert(Job { schedule: Schedule::new(None, 0), state: 7u32 });
    /// let again: Jobs<u32, _> = Jobs::init(memory, unfinished, 100); // after an upgrade, say
    /// assert_eq!(again.get(id).map(|job| job.state), Some(7));
    /// ```
    pub fn init(jobs: M, unfinished: M, kept: u64) -> Self {
        Self {
            jobs: StableBTreeMap::init(jobs),
            unfinished: StableBTreeMap::init(unfinished),
            kept,
            armed: BTreeMap::new(),
        }
    }

    /// Keeps `job` under the next id (1 for the first), and returns it.
    /// Ids are never reused, as the newest job is never forgotten.
    ///
    /// ```
    /// # use ic_fanout::job::{Job, Jobs, Schedule};
    /// # use ic_stable_structures::VectorMemory;
    /// let mut jobs: Jobs<u8, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 1);
    /// let ids = [10, 20].map(|state| jobs.insert(Job { schedule: Schedule::new(None, 0), state }));
    /// assert_eq!(ids, [1, 2]);
    /// assert_eq!(jobs.len(), 2, "over `kept`, but neither has finished");
    /// ```
    pub fn insert(&mut self, job: Job<S>) -> u64 {
        let id = self.jobs.last_key_value().map_or(1, |(last, _)| last + 1);
        self.put(id, job);
        while self.jobs.len() > self.kept {
            // Never the newest, finished or not: its id gives the next.
            let oldest = self.jobs.keys().find(|old| *old != id && !self.unfinished.contains_key(old));
            let Some(oldest) = oldest else { break };
            self.jobs.remove(&oldest);
        }
        id
    }

    /// Keeps `job` under `id`, replacing any kept there: for bringing in
    /// jobs kept some other way before.
    ///
    /// ```
    /// # use ic_fanout::job::{Job, Jobs, Schedule};
    /// # use ic_stable_structures::VectorMemory;
    /// let mut jobs: Jobs<u8, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 100);
    /// jobs.put(41, Job { schedule: Schedule::resume(None, 0, vec![], 3, Some(9)), state: 0 });
    /// let next = jobs.insert(Job { schedule: Schedule::new(None, 10), state: 1 });
    /// assert_eq!(next, 42, "ids go on after it");
    /// assert_eq!(jobs.unfinished().count(), 1, "job 41 came in finished");
    /// ```
    pub fn put(&mut self, id: u64, job: Job<S>) {
        match job.schedule.finished_at {
            None => self.unfinished.insert(id, ()),
            Some(_) => self.unfinished.remove(&id),
        };
        self.jobs.insert(id, job);
    }

    /// Job `id`, unless it was never started or is forgotten.
    ///
    /// ```
    /// # use ic_fanout::job::{Job, Jobs, Schedule};
    /// # use ic_stable_structures::VectorMemory;
    /// let mut jobs = Jobs::init(VectorMemory::default(), VectorMemory::default(), 100);
    /// let id = jobs.insert(Job { schedule: Schedule::new(None, 0), state: "ping".to_string() });
    /// assert_eq!(jobs.get(id).unwrap().state, "ping");
    /// assert_eq!(jobs.get(id + 1), None, "never started");
    /// ```
    pub fn get(&self, id: u64) -> Option<Job<S>> {
        self.jobs.get(&id)
    }

    /// Changes job `id` with `f`, if it is kept.
    ///
    /// ```
    /// # use ic_fanout::job::{Job, Jobs, Schedule};
    /// # use ic_stable_structures::VectorMemory;
    /// let mut jobs: Jobs<u32, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 100);
    /// let id = jobs.insert(Job { schedule: Schedule::new(None, 0), state: 0 });
    /// assert_eq!(jobs.update(id, |job| std::mem::replace(&mut job.state, 5)), Some(0));
    /// assert_eq!(jobs.get(id).unwrap().state, 5, "kept");
    /// assert_eq!(jobs.update(id + 1, |job| job.state), None, "not kept");
    /// ```
    pub fn update<R>(&mut self, id: u64, f: impl FnOnce(&mut Job<S>) -> R) -> Option<R> {
        let mut job = self.jobs.get(&id)?;
        let result = f(&mut job);
        self.put(id, job);
        Some(result)
    }

    /// The jobs not finished yet, oldest first.
    ///
    /// ```
    /// # use ic_fanout::job::{Job, Jobs, Schedule};
    /// # use ic_stable_structures::VectorMemory;
    /// let mut jobs: Jobs<u8, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 100);
    /// let running = || Job { schedule: Schedule::new(None, 0), state: 0 };
    /// let finished = Job { schedule: Schedule::resume(None, 0, vec![], 0, Some(5)), state: 0 };
    /// let ids = [jobs.insert(running()), jobs.insert(finished), jobs.insert(running())];
    /// assert_eq!(jobs.unfinished().map(|(id, _)| id).collect::<Vec<_>>(), [ids[0], ids[2]]);
    /// ```
    pub fn unfinished(&self) -> impl Iterator<Item = (u64, Job<S>)> + '_ {
        self.unfinished.keys().filter_map(|id| Some((id, self.jobs.get(&id)?)))
    }

    /// How many jobs are kept.
    ///
    /// ```
    /// # use ic_fanout::job::{Job, Jobs, Schedule};
    /// # use ic_stable_structures::VectorMemory;
    /// let mut jobs: Jobs<u8, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 2);
    /// for _ in 0..3 {
    ///     jobs.insert(Job { schedule: Schedule::resume(None, 0, vec![], 0, Some(1)), state: 0 });
    /// }
    /// assert_eq!(jobs.len(), 2, "the oldest finished one is forgotten");
    /// ```
    pub fn len(&self) -> u64 {
        self.jobs.len()
    }

    /// Whether none is.
    ///
    /// ```
    /// # use ic_fanout::job::{Job, Jobs, Schedule};
    /// # use ic_stable_structures::VectorMemory;
    /// let mut jobs: Jobs<u8, _> = Jobs::init(VectorMemory::default(), VectorMemory::default(), 100);
    /// assert!(jobs.is_empty());
    /// jobs.insert(Job { schedule: Schedule::new(None, 0), state: 0 });
    /// assert!(!jobs.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

/// What a kind of job calls, and where its jobs are kept. Implement it on a
/// type of your own (see the [module](self) example).
///
/// ```
/// # use ic_fanout::job::{Failed, Jobs, Pass, Work};
/// # use ic_stable_structures::VectorMemory;
/// # use std::{cell::RefCell, thread::LocalKey};
/// # thread_local! {
/// #     static JOBS: RefCell<Jobs<u64, VectorMemory>> =
/// #         RefCell::new(Jobs::init(VectorMemory::default(), VectorMemory::default(), 10));
/// # }
/// struct Ping; // its state: how many canisters to ping
/// impl Work for Ping {
///     type State = u64;
///     type Memory = VectorMemory;
///     fn jobs() -> &'static LocalKey<RefCell<Jobs<u64, VectorMemory>>> { &JOBS }
///     async fn pass(_id: u64, _pass: Pass) -> Vec<Failed> { vec![] } // see the module example
///     fn retry_window(_state: &u64) -> usize { 100 } // 100 retries a timer, not 500
/// }
/// assert_eq!(Ping::retry_window(&2_000), 100);
/// ```
pub trait Work: 'static {
    /// Your state of one job: what it calls, what you tally of it.
    type State: CandidType + DeserializeOwned;
    /// The memory its jobs are kept in.
    type Memory: Memory;

    /// The store of this kind of job, in a `thread_local!`.
    fn jobs() -> &'static LocalKey<RefCell<Jobs<Self::State, Self::Memory>>>;

    /// Makes the calls of one `pass` of job `id`, and returns the ones that
    /// failed. Tally what you keep of the pass into your state (with
    /// [`Jobs::update`]) before returning.
    ///
    /// Keep what runs before its first call from trapping: a retry pass
    /// runs in its timer's execution, which a trap there rolls back whole,
    /// and ic-cdk-timers does not run that timer again, so the job would
    /// wait until [`rearm`] at the next upgrade.
    fn pass(id: u64, pass: Pass) -> impl Future<Output = Vec<Failed>>;

    /// The most retries one timer takes; the rest wait for the next timer,
    /// which is set at once when they are due (so passes of one job may
    /// overlap: pace the calls within a pass). The default, 500, is what
    /// the IC queues per (caller, callee) pair. Called with no borrow of the
    /// store held.
    fn retry_window(_state: &Self::State) -> usize {
        500
    }
}

/// Starts a job with `state`: its first pass runs in this call context
/// (from `ic_cdk::futures::spawn`), its retries from timers. Returns its
/// id, or why `policy` is refused (nothing is started then).
///
/// ```
/// # use candid::Principal;
/// # use ic_fanout::job::{Failed, Jobs, Pass, Work};
/// # use ic_stable_structures::VectorMemory;
/// # use std::{cell::RefCell, thread::LocalKey};
/// # thread_local! {
/// #     static JOBS: RefCell<Jobs<Vec<Principal>, VectorMemory>> =
/// #         RefCell::new(Jobs::init(VectorMemory::default(), VectorMemory::default(), 10));
/// # }
/// # struct Notify;
/// # impl Work for Notify {
/// #     type State = Vec<Principal>;
/// #     type Memory = VectorMemory;
/// #     fn jobs() -> &'static LocalKey<RefCell<Jobs<Vec<Principal>, VectorMemory>>> {
/// #         &JOBS
/// #     }
/// #     async fn pass(_id: u64, _pass: Pass) -> Vec<Failed> {
/// #         vec![]
/// #     }
/// # }
/// use ic_fanout::{job::{self, Policy}, retry::{Backoff, BackoffError}};
/// use std::time::Duration;
/// // In an update method: starts the job, and returns its id at once.
/// fn notify_all(users: Vec<Principal>) -> u64 {
///     let policy = Policy { backoff: Backoff { max_attempts: 5, first: Duration::from_secs(1) }, idempotent: false };
///     job::start::<Notify>(users, Some(policy)).expect("the backoff is within the caps")
/// }
/// let refused = Policy { backoff: Backoff { max_attempts: 5, first: Duration::ZERO }, idempotent: false };
/// assert_eq!(job::start::<Notify>(vec![], Some(refused)), Err(BackoffError::FirstUnderOneMs));
/// assert!(Notify::jobs().with(|jobs| jobs.borrow().is_empty()), "nothing is started");
/// ```
pub fn start<W: Work>(state: W::State, policy: Option<Policy>) -> Result<u64, BackoffError> {
    if let Some(policy) = policy {
        policy.backoff.check()?;
    }
    let job = Job { schedule: Schedule::new(policy, ic_cdk::api::time()), state };
    let id = W::jobs().with(|j| j.borrow_mut().insert(job));
    ic_cdk::futures::spawn(run_pass::<W>(id, Pass::First));
    Ok(id)
}

/// Call in `post_upgrade`, and only there: every unfinished job's timer
/// again, which an upgrade drops. A pass running at the upgrade lost its
/// call context and never reports; its calls are neither retried nor
/// counted. (Elsewhere it would count passes still running as lost.)
///
/// ```no_run
/// # use candid::Principal;
/// # use ic_fanout::job::{Failed, Jobs, Pass, Work};
/// # use ic_stable_structures::VectorMemory;
/// # use std::{cell::RefCell, thread::LocalKey};
/// # thread_local! {
/// #     static JOBS: RefCell<Jobs<Vec<Principal>, VectorMemory>> =
/// #         RefCell::new(Jobs::init(VectorMemory::default(), VectorMemory::default(), 10));
/// # }
/// # struct Notify;
/// # impl Work for Notify {
/// #     type State = Vec<Principal>;
/// #     type Memory = VectorMemory;
/// #     fn jobs() -> &'static LocalKey<RefCell<Jobs<Vec<Principal>, VectorMemory>>> {
/// #         &JOBS
/// #     }
/// #     async fn pass(_id: u64, _pass: Pass) -> Vec<Failed> {
/// #         vec![]
/// #     }
/// # }
/// #[ic_cdk::post_upgrade]
/// fn post_upgrade() {
///     ic_fanout::job::rearm::<Notify>();
/// }
/// ```
pub fn rearm<W: Work>() {
    let now = ic_cdk::api::time();
    let ids: Vec<u64> = W::jobs().with(|j| j.borrow().unfinished.keys().collect());
    for id in ids {
        step::<W, _>(id, |schedule| schedule.after_upgrade(now));
    }
}

async fn run_pass<W: Work>(id: u64, pass: Pass) {
    // Dropped unfinished when the pass's call context is (a trap in one of
    // its callbacks cancels every task of that call): the pass is lost.
    struct Running<W: Work>(u64, std::marker::PhantomData<W>);
    impl<W: Work> Drop for Running<W> {
        fn drop(&mut self) {
            let now = ic_cdk::api::time();
            step::<W, _>(self.0, |schedule| schedule.pass_lost(now));
        }
    }
    let running = Running::<W>(id, std::marker::PhantomData);
    let failed = W::pass(id, pass.clone()).await;
    std::mem::forget(running);
    let now = ic_cdk::api::time();
    step::<W, _>(id, |schedule| schedule.absorb(&pass, failed, now));
}

/// Changes job `id`'s schedule with `f`, keeps it, and arms the timer for
/// its next due retry; `None` if the job is not kept.
fn step<W: Work, R>(id: u64, f: impl FnOnce(&mut Schedule) -> R) -> Option<R> {
    W::jobs().with(|j| {
        let mut jobs = j.borrow_mut();
        let mut job = jobs.get(id)?;
        let result = f(&mut job.schedule);
        let due = job.schedule.next_due();
        jobs.put(id, job);
        if let Some(due) = due {
            arm::<W>(&mut jobs, id, due);
        }
        Some(result)
    })
}

/// Sets a timer for job `id`'s retry due at `due`, unless one fires by
/// then; a later one is cleared, so one timer at most waits per job.
fn arm<W: Work>(jobs: &mut Jobs<W::State, W::Memory>, id: u64, due: u64) {
    match jobs.armed.get(&id) {
        Some(&(armed, _)) if armed <= due => return,
        Some(&(_, later)) => ic_cdk_timers::clear_timer(later),
        None => {}
    }
    let delay = Duration::from_nanos(due.saturating_sub(ic_cdk::api::time()));
    let timer = ic_cdk_timers::set_timer(delay, retry::<W>(id, due));
    jobs.armed.insert(id, (due, timer));
}

/// Runs from the timer set for `armed`: the due retries, then the next
/// timer.
async fn retry<W: Work>(id: u64, armed: u64) {
    let job = W::jobs().with(|j| {
        let mut jobs = j.borrow_mut();
        if jobs.armed.get(&id).is_some_and(|&(due, _)| due == armed) {
            jobs.armed.remove(&id);
        }
        jobs.get(id)
    });
    let Some(job) = job else { return };
    let window = W::retry_window(&job.state);
    let now = ic_cdk::api::time();
    match step::<W, _>(id, |schedule| schedule.take_due(now, window)) {
        Some(due) if !due.is_empty() => run_pass::<W>(id, Pass::Retry(due)).await,
        _ => {}
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
    fn take_due_keeps_to_the_window() {
        let mut s = Schedule::new(Some(POLICY), 0);
        s.absorb(&Pass::First, (0..4).map(|i| Failed::new(i, Retry::Always)), 0);
        assert_eq!(s.take_due(u64::MAX, 3).len(), 3);
        assert_eq!(s.waiting.len(), 1);
    }
}
