//! A canister that tells every user canister something, with a job: the
//! "notify every user canister" pattern. Each notice carries a nonce that
//! the receiver (`notified`, the other half of this example) acts on once,
//! so a notice whose answer was lost (`SYS_UNKNOWN`) is sent again safely.
//! The job retries from timers until every receiver has the notice, or a
//! notice has used its attempts or the backoff's total time, and it
//! survives upgrades (a pass running at an upgrade without a stop is lost).
//!
//! ```sh
//! cargo build --release --target wasm32-unknown-unknown --target-dir target/wasm \
//!   -p ic-fanout --example notify_all --example notified
//! ```
//!
//! Tested on the simulator with 2,000 receivers on 4 subnets, under traps,
//! stops and dropped responses: `multi_subnet/tests/it/notify_all.rs` in the
//! workspace this crate is developed in.

use candid::{CandidType, Deserialize, Principal};
use ic_cdk::api::{canister_version, is_controller, msg_caller};
use ic_cdk::call::{Call, CallFailed};
use ic_fanout::job::{self, Failed, JobId, Jobs, Pass, Policy, Work};
use ic_fanout::once::Nonces;
use ic_fanout::retry::{Backoff, Retry};
use ic_fanout::{Pace, Refusal, fan_out};
use ic_stable_structures::DefaultMemoryImpl;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};
use std::cell::RefCell;
use std::num::NonZeroUsize;
use std::thread::LocalKey;
use std::time::Duration;

type Memory = VirtualMemory<DefaultMemoryImpl>;

thread_local! {
    static MEMORY: MemoryManager<DefaultMemoryImpl> = MemoryManager::init(DefaultMemoryImpl::default());
    static JOBS: RefCell<Jobs<Notification, Memory>> = RefCell::new(Jobs::init(
        MEMORY.with(|m| m.get(MemoryId::new(0))),
        MEMORY.with(|m| m.get(MemoryId::new(1))),
        100,
    ));
    /// Not kept across upgrades: the version they bring starts a new range.
    static NONCES: RefCell<Nonces> = RefCell::new(Nonces::default());
}

/// The most receivers one notification may have.
const MAX_RECEIVERS: usize = 10_000;

/// Calls in flight at once per pass: each reserves cycles and queue space
/// until answered, so a pass to 10,000 canisters goes out 500 at a time.
const WINDOW: NonZeroUsize = NonZeroUsize::new(500).expect("not zero");

/// Up to 10 attempts, 1 s before the first retry, doubling: about 8.5
/// minutes of waiting in all. Idempotent, as each receiver acts on a nonce once.
const POLICY: Policy =
    Policy { backoff: Backoff { max_attempts: 10, first: Duration::from_secs(1) }, idempotent: true };

/// One notification: its receivers, its message, and what the job tallies.
#[derive(CandidType, Deserialize)]
struct Notification {
    receivers: Vec<Principal>,
    message: String,
    /// The one nonce its notices carry (from [`Nonces`], so no two
    /// notifications share one, even across a reinstall).
    nonce: u64,
    delivered: u64,
    /// Of those, the receivers that had acted on it before (an answer lost
    /// on its way back, and the notice sent again).
    delivered_earlier: u64,
}

/// What a receiver's `notify` takes.
#[derive(CandidType, Deserialize)]
struct Notice {
    nonce: u64,
    /// No notice below it will come again: the receiver forgets those.
    floor: u64,
    message: String,
}

/// The floor every receiver is sent: one for all of them, as each
/// notification may call thousands (see [`Nonces::floor`]).
fn floor() -> u64 {
    JOBS.with(|j| Nonces::floor(j.borrow().unfinished().map(|(_, job)| job.state.nonce)))
}

/// How a notice fails.
enum NoticeFailed {
    Call(CallFailed),
    /// The answer is not a receiver's: sending again will not help.
    NotAReceiver,
}

impl Refusal for NoticeFailed {
    fn is_refusal(&self) -> bool {
        matches!(self, Self::Call(error) if error.is_refusal())
    }
}

/// Notifications, as jobs.
struct Notify;

impl Work for Notify {
    type State = Notification;
    type Memory = Memory;

    fn jobs() -> &'static LocalKey<RefCell<Jobs<Notification, Memory>>> {
        &JOBS
    }

    async fn pass(id: JobId, notification: Notification, pass: Pass) -> Vec<Failed> {
        let Notification { receivers, message, nonce, .. } = notification;
        let notice = Notice { nonce, floor: floor(), message };
        let arg = candid::encode_one(&notice).expect("a notice encodes");
        let items = pass.items(receivers.len() as u64);
        let notify = |&i: &u64| {
            let call = Call::bounded_wait(receivers[i as usize], "notify").with_raw_args(&arg);
            async move {
                let reply = call.await.map_err(NoticeFailed::Call)?;
                reply.candid::<bool>().map_err(|_| NoticeFailed::NotAReceiver)
            }
        };
        let done = fan_out(Pace::Window(WINDOW), &items, notify).await;

        let delivered = done.succeeded().count() as u64;
        let earlier = done.succeeded().filter(|&(_, &now)| !now).count() as u64;
        let failed = Failed::from_fan_out(&items, &done, |i, error| match error {
            NoticeFailed::Call(error) => Retry::of(error, receivers[i as usize]),
            NoticeFailed::NotAReceiver => Retry::Never,
        });
        JOBS.with(|j| {
            j.borrow_mut().update(id, |job| {
                job.state.delivered += delivered;
                job.state.delivered_earlier += earlier;
            })
        });
        failed
    }
}

/// What `notify_all` takes.
#[derive(CandidType, Deserialize)]
struct NotifyAll {
    receivers: Vec<Principal>,
    message: String,
}

/// How a notification goes.
#[derive(CandidType)]
struct Progress {
    receivers: u64,
    delivered: u64,
    delivered_earlier: u64,
    /// Receivers whose notice waits for another attempt.
    waiting: u64,
    /// Receivers whose notice will not be sent again.
    given_up: u64,
    retries: u64,
    finished: bool,
}

fn caller_is_controller() -> Result<(), String> {
    match is_controller(&msg_caller()) {
        true => Ok(()),
        false => Err("only a controller of this canister may send notifications".into()),
    }
}

/// Starts notifying `receivers`, and returns the job's id at once;
/// `job_status` tells how it goes.
#[ic_cdk::update(guard = "caller_is_controller")]
fn notify_all(NotifyAll { receivers, message }: NotifyAll) -> u64 {
    if receivers.is_empty() || receivers.len() > MAX_RECEIVERS {
        ic_cdk::trap(format!(
            "{} receivers: name 1 to {MAX_RECEIVERS}, and split a longer list into several notifications",
            receivers.len()
        ));
    }
    let nonce = NONCES.with(|n| n.borrow_mut().reserve(canister_version(), 1));
    let nonce = nonce.unwrap_or_else(|e| ic_cdk::trap(e.to_string()));
    let notification = Notification { receivers, message, nonce, delivered: 0, delivered_earlier: 0 };
    job::start::<Notify>(notification, Some(POLICY)).expect("POLICY is within the caps").into()
}

#[ic_cdk::query]
fn job_status(id: u64) -> Option<Progress> {
    let job = JOBS.with(|j| j.borrow().get(id.into()))?;
    let (s, schedule) = (job.state, job.schedule);
    Some(Progress {
        receivers: s.receivers.len() as u64,
        delivered: s.delivered,
        delivered_earlier: s.delivered_earlier,
        waiting: schedule.waiting().len() as u64,
        given_up: schedule.given_up(),
        retries: schedule.retries(),
        finished: schedule.finished_at().is_some(),
    })
}

#[ic_cdk::post_upgrade]
fn post_upgrade() {
    job::rearm::<Notify>();
}
