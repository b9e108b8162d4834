//! A canister's code: the compiled module, its instances, running an entry point.
//!
//! An instance runs either live, against the system API, or in playback,
//! where every `ic0` import answers from a recorded tape (see
//! [`TapeEvent`](crate::system_api::TapeEvent)). Playback is how a trap is
//! rolled back (re-run the messages since the last checkpoint) and what the
//! benchmark's floor runs.

mod cache;
mod instance;
mod replay;
mod run;
mod snapshot;

pub use cache::{compile, engine};
pub use instance::{Code, CompiledModule, Metering};
pub use replay::{Recorded, Replayer};
pub use run::{CANNOT_GROW, Entry, out_of_instructions};
pub use snapshot::{MemoryImage, SavedSnapshot, Snapshot};
