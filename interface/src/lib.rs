//! The wire and API types that the caller, the callee and the harness share:
//! plans and how jobs retry them, reports and failure kinds, the callee's
//! batches and their acknowledgements, and the limits. Nothing here calls
//! the system API, so the harness links this natively instead of a
//! canister; it shares ic-fanout's vocabulary of refusals and retries (and
//! so links ic-cdk, whose types those name).
//!
//! The wire types (those that derive `CandidType`) keep their Rust doc
//! comments few and short, and are documented in the canisters' `.did`
//! files: candid's derive copies every doc comment of a type into a table
//! that its encoder rebuilds on every encode, so each line of doc text costs
//! instructions in every message that sends or receives the type.

mod ping;
mod plan;
mod report;

pub use ping::{
    Acknowledged, EXECUTED, EXECUTED_EARLIER, OncePing, Outcome, PingBatch, PlainPingBatch,
    batch_acknowledgement,
};
pub use plan::{Plan, RetryPolicy, Strategy, Wait};
pub use report::{FailureCount, FailureKind, Report};

/// The most pings one request may ask for (`sequential_calls`,
/// `parallel_calls`, a plan). Larger runs belong in several requests: one
/// message's instruction limit and the caller's cycles both grow with `n`.
pub const MAX_CALLS: u64 = 10_000;

/// The most pings one batched call of a plan may carry (its `k`).
pub const MAX_BATCH: u64 = 1_000;

/// The most callees one plan may spread over.
pub const MAX_CALLEES: usize = 16;
