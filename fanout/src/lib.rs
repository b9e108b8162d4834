//! Fan-out for Internet Computer canisters: make many calls all at once,
//! one at a time, or in a window of `k` that waits for free slots, under
//! the IC's limit of 500 calls in flight per (caller, callee) pair; send
//! them in checked batches ([`batch`]); retry the failed ones from timers
//! with capped backoff, as jobs kept in stable memory (`job`, with the
//! feature `jobs`; which failures to retry: [`retry`]); and, on the
//! callee's side, execute each retried call once with bounded state
//! ([`once`]).
//!
//! A call that finds no free slot is refused at once, in the execution that
//! makes it (ic-cdk's `CallFailed::CallPerformFailed`), and nothing frees a
//! slot within that execution. So [`fan_out`] with a [`Pace::Window`] stops
//! starting calls after a refusal until one of its own calls answers, puts
//! the refused call back in line, and shrinks the window to what fits. With
//! nothing of its own in flight it stops, and reports the calls it did not
//! start as not attempted, for a retry later (from a timer, never in a loop).
//!
//! ```
//! use ic_fanout::{Pace, Refusal, fan_out};
//! use std::num::NonZeroUsize;
//!
//! /// What a call can fail with; `NoSlot` is a refusal.
//! #[derive(Debug, PartialEq)]
//! enum Failed { NoSlot, Rejected }
//!
//! impl Refusal for Failed {
//!     fn is_refusal(&self) -> bool {
//!         *self == Failed::NoSlot
//!     }
//! }
//!
//! # futures::executor::block_on(async {
//! let callees = ["a", "b", "c"];
//! let window = Pace::Window(NonZeroUsize::new(2).unwrap());
//! let done = fan_out(window, &callees, |callee| {
//!     let callee = callee.to_string();
//!     async move { if callee == "b" { Err(Failed::Rejected) } else { Ok(callee.len()) } }
//! })
//! .await;
//! assert_eq!(done.outcomes(), [Some(Ok(1)), Some(Err(Failed::Rejected)), Some(Ok(1))]);
//! assert!(done.peak_in_flight() <= 2);
//! # });
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod batch;
#[cfg(feature = "jobs")]
#[cfg_attr(docsrs, doc(cfg(feature = "jobs")))]
pub mod job;
pub mod once;
mod pace;
pub mod retry;

pub use pace::{FanOut, Pace, Refusal, fan_out};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
