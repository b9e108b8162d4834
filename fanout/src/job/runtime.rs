//! What runs a job: its first pass in the call context that starts it,
//! its retries from ic-cdk-timers timers, set again after an upgrade.

use candid::CandidType;
use ic_stable_structures::Memory;
use serde::de::DeserializeOwned;
use std::cell::RefCell;
use std::future::Future;
use std::thread::LocalKey;
use std::time::Duration;

use super::{Failed, Job, JobId, Jobs, Pass, Policy, Schedule};
use crate::retry::BackoffError;

/// What a kind of job calls, and where its jobs are kept. Implement it on a
/// type of your own (see the [module](super) example).
pub trait Work: 'static {
    /// Your state of one job: what it calls, what you tally of it.
    type State: CandidType + DeserializeOwned;
    /// The memory its jobs are kept in.
    type Memory: Memory;

    /// The store of this kind of job, in a `thread_local!`.
    fn jobs() -> &'static LocalKey<RefCell<Jobs<Self::State, Self::Memory>>>;

    /// Makes the calls of one `pass` of job `id`, whose state is `state`
    /// as the pass starts, and returns the ones that failed
    /// ([`Failed::from_fan_out`]). Tally what you keep of the pass into
    /// your state (with [`Jobs::update`]) before returning: `state` is a
    /// copy, and other passes of the job may have run meanwhile.
    ///
    /// Keep what runs before its first call from trapping: a retry pass
    /// runs in its timer's execution, which a trap there rolls back whole,
    /// and ic-cdk-timers does not run that timer again, so the job would
    /// wait until [`rearm`] at the next upgrade.
    fn pass(id: JobId, state: Self::State, pass: Pass) -> impl Future<Output = Vec<Failed>>;

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
/// # use ic_fanout::job::{Failed, JobId, Jobs, Pass, Work};
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
/// #     async fn pass(_id: JobId, _users: Vec<Principal>, _pass: Pass) -> Vec<Failed> {
/// #         vec![]
/// #     }
/// # }
/// use ic_fanout::{job::{self, Policy}, retry::{Backoff, BackoffError}};
/// use std::time::Duration;
/// // In an update method: starts the job, and returns its id at once.
/// fn notify_all(users: Vec<Principal>) -> JobId {
///     let policy = Policy { backoff: Backoff { max_attempts: 5, first: Duration::from_secs(1) }, idempotent: false };
///     job::start::<Notify>(users, Some(policy)).expect("the backoff is within the caps")
/// }
/// let refused = Policy { backoff: Backoff { max_attempts: 5, first: Duration::ZERO }, idempotent: false };
/// assert_eq!(job::start::<Notify>(vec![], Some(refused)), Err(BackoffError::FirstUnderOneMs));
/// assert!(Notify::jobs().with(|jobs| jobs.borrow().is_empty()), "nothing is started");
/// ```
pub fn start<W: Work>(state: W::State, policy: Option<Policy>) -> Result<JobId, BackoffError> {
    if let Some(policy) = policy {
        policy.backoff.check()?;
    }
    let job = Job { schedule: Schedule::new(policy, ic_cdk::api::time()), state };
    let (id, job) = W::jobs().with(|j| {
        let mut jobs = j.borrow_mut();
        let id = jobs.insert(job);
        // Read back, as the store keeps it: `insert` took the state.
        (id, jobs.get(id).expect("the job just kept"))
    });
    ic_cdk::futures::spawn(run_pass::<W>(id, job.state, Pass::First));
    Ok(id)
}

/// Call in `post_upgrade`, and only there: every unfinished job's timer
/// again, which an upgrade drops. A pass running at the upgrade lost its
/// call context and never reports; its calls are neither retried nor
/// counted. (Elsewhere it would count passes still running as lost.)
///
/// ```no_run
/// # use candid::Principal;
/// # use ic_fanout::job::{Failed, JobId, Jobs, Pass, Work};
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
/// #     async fn pass(_id: JobId, _users: Vec<Principal>, _pass: Pass) -> Vec<Failed> {
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
    let ids: Vec<JobId> = W::jobs().with(|j| j.borrow().unfinished.keys().map(JobId::from).collect());
    for id in ids {
        step::<W, _>(id, |schedule| schedule.after_upgrade(now));
    }
}

async fn run_pass<W: Work>(id: JobId, state: W::State, pass: Pass) {
    // Dropped unfinished when the pass's call context is (a trap in one of
    // its callbacks cancels every task of that call): the pass is lost.
    struct Running<W: Work>(JobId, std::marker::PhantomData<W>);
    impl<W: Work> Drop for Running<W> {
        fn drop(&mut self) {
            let now = ic_cdk::api::time();
            step::<W, _>(self.0, |schedule| schedule.pass_lost(now));
        }
    }
    let running = Running::<W>(id, std::marker::PhantomData);
    let failed = W::pass(id, state, pass.clone()).await;
    std::mem::forget(running);
    let now = ic_cdk::api::time();
    step::<W, _>(id, |schedule| schedule.absorb(&pass, failed, now));
}

/// Changes job `id`'s schedule with `f`, keeps it, and arms the timer for
/// its next due retry; `None` if the job is not kept.
fn step<W: Work, R>(id: JobId, f: impl FnOnce(&mut Schedule) -> R) -> Option<R> {
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
fn arm<W: Work>(jobs: &mut Jobs<W::State, W::Memory>, id: JobId, due: u64) {
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
async fn retry<W: Work>(id: JobId, armed: u64) {
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
        Some(due) if !due.is_empty() => run_pass::<W>(id, job.state, Pass::Retry(due)).await,
        _ => {}
    }
}
