//! Jobs: fan-outs that retry from timers, kept in stable memory.
//!
//! A job's first pass makes its calls in the call context that starts it.
//! The calls that failed in a way its [`Policy`] retries wait out a
//! [`Backoff`](crate::retry::Backoff) and are made again from an ic-cdk-timers timer, never in a
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
//! use ic_fanout::job::{self, Failed, JobId, Jobs, Pass, Policy, Work};
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
//!     async fn pass(_id: JobId, users: Vec<Principal>, pass: Pass) -> Vec<Failed> {
//!         let items = pass.items(users.len() as u64);
//!         let window = Pace::Window(NonZeroUsize::new(400).unwrap());
//!         let call = |&i: &u64| Call::bounded_wait(users[i as usize], "notify").into_future();
//!         let done = fan_out(window, &items, call).await;
//!         Failed::from_fan_out(&items, &done, |i, error| Retry::of(error, users[i as usize]))
//!     }
//! }
//!
//! // In an update method: starts the job, and returns its id at once.
//! fn notify_all(users: Vec<Principal>) -> JobId {
//!     let policy = Policy { backoff: Backoff { max_attempts: 5, first: Duration::from_secs(1) }, idempotent: false };
//!     job::start::<Notify>(users, Some(policy)).expect("the backoff is within the caps")
//! }
//!
//! // In `post_upgrade`: the timers, which an upgrade drops, set again.
//! fn post_upgrade() {
//!     job::rearm::<Notify>();
//! }
//! ```

mod runtime;
mod schedule;
mod store;

pub use runtime::{Work, rearm, start};
pub use schedule::{Failed, Pass, Pending, Policy, Schedule};
pub use store::{Job, JobId, Jobs};
