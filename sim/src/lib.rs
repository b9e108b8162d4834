//! A deterministic model of the Internet Computer that executes real
//! canister wasm: subnets that run in rounds, per-pair queues with 500
//! request slots, call contexts and callbacks, rollback on trap, cycles.
//! It is a model, not the replica and not PocketIC: see the README's
//! "Simulator" section for what it models and what it does not.

mod canister;
mod code;
mod cycles;
mod floor;
mod message;
mod module;
mod sim;
mod stable;
mod stats;
mod system_api;

pub use canister::CanisterStatus;
pub use code::Recorded;
pub use floor::FloorCanister;
pub use floor::ReplayTrapped;
pub use message::{MessageId, Reject, RejectCode};
pub use sim::{ONE_SECOND_NS, RoundLimits, Sim, SimBuilder, SimConfig, SimError, UPDATE_CALL_ROUND_LIMIT};
pub use stats::{CanisterStats, RejectCounts};
