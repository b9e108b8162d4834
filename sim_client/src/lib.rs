//! Latency and seeded faults for tests on this project's simulator
//! (`multi_subnet serve`, `pocket-ic-sim`), from the pocket-ic client.
//!
//! The simulator serves PocketIC's REST API and, beside it, endpoints of
//! its own under `/instances/<id>/_/`: how many rounds a message takes to
//! another subnet, which faults happen (seeded), and what became of every
//! call. [`SimulatorExt`] (and [`nonblocking::SimulatorExt`]) adds them to
//! a `pocket_ic::PocketIc`, with the `client` feature (on by default;
//! without it, [`api`]'s JSON types alone, for servers):
//!
//! ```no_run
//! use ic_sim_client::SimulatorExt;
//! use ic_sim_client::api::{FaultSpec, SetLatency};
//! # fn test(pic: pocket_ic::PocketIc, callee: candid::Principal) -> Result<(), ic_sim_client::Error> {
//! pic.set_latency(SetLatency::MAINNET)?;
//! pic.inject_faults(&FaultSpec::seeded(7).trap_chance(callee, 0.1))?;
//! // ... the test's calls ...
//! let report = pic.faults_report()?;
//! assert_eq!(report.outstanding.total(), 0, "nothing lost");
//! # Ok(()) }
//! ```
//!
//! A PocketIC server has no such endpoints: there every method fails with
//! [`Error::NotServed`].

pub mod api;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
pub mod nonblocking;

#[cfg(feature = "client")]
pub use client::{Error, SimulatorExt};

/// The README's examples, compiled as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
