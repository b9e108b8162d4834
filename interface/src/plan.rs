//! A plan: how to fan out, and how much; and how a job retries it.

use candid::{CandidType, Deserialize, Principal};
use serde::Serialize;
use std::ops::RangeInclusive;

#[derive(CandidType, Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
pub enum Strategy {
    /// One call at a time.
    #[serde(rename = "sequential")]
    Sequential,
    /// Every call at once.
    #[serde(rename = "parallel")]
    Parallel,
    /// At most `k` calls in flight; a new one starts as soon as any answers.
    /// A call that finds no free slot shrinks the window to the calls in
    /// flight, and its ping waits for the next answer; so a `k` above the
    /// free slots (500 per callee, less what other runs hold) delivers
    /// everything, at the pace the slots allow. With nothing of its own in
    /// flight to wait for, the plan stops and reports the pings it did not
    /// start as `NotAttempted` (a job retries them).
    #[serde(rename = "bounded")]
    Bounded,
    /// `k` pings per call, all calls at once.
    #[serde(rename = "batched")]
    Batched,
}

impl Strategy {
    /// Every strategy, in the order reports list them.
    pub const ALL: [Strategy; 4] = [Self::Sequential, Self::Parallel, Self::Bounded, Self::Batched];

    /// Its name in candid, on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sequential => "sequential",
            Self::Parallel => "parallel",
            Self::Bounded => "bounded",
            Self::Batched => "batched",
        }
    }

    /// Whether a plan needs `k` (the window or the batch size); the others refuse it.
    pub fn takes_k(self) -> bool {
        matches!(self, Self::Bounded | Self::Batched)
    }

    /// The example's endpoint that runs it with the stored callee, if it has one.
    pub fn example_endpoint(self) -> Option<&'static str> {
        match self {
            Self::Sequential => Some("sequential_calls"),
            Self::Parallel => Some("parallel_calls"),
            Self::Bounded | Self::Batched => None,
        }
    }
}

/// Bounded-wait (best-effort response, 300 s timeout) or unbounded-wait
/// (guaranteed response) calls.
#[derive(CandidType, Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
pub enum Wait {
    #[default]
    #[serde(rename = "bounded")]
    Bounded,
    #[serde(rename = "unbounded")]
    Unbounded,
}

#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
pub struct Plan {
    pub strategy: Strategy,
    /// Pings to deliver.
    pub n: u64,
    /// The window (`bounded`) or batch size (`batched`).
    pub k: Option<u64>,
    pub wait: Option<Wait>,
    /// Callees to spread the calls over, round-robin; default: the callee.
    /// Each callee has its own 500 slots, so `m` callees take up to 500 x m
    /// calls in flight, but every call in flight also reserves its largest
    /// possible cost until it is answered (for a `ping` on a 13-node subnet
    /// about 42.1 G cycles: 260 K + 1 K per request byte + 1 K x 2 MiB of
    /// response + 5 M + 40 G for the callback), so the liquid balance / 42.1 G
    /// bounds them too (about 2374 from 100 T); the rest fail as
    /// `InsufficientLiquidCycleBalance`.
    pub callees: Option<Vec<Principal>>,
    /// Bounded-wait calls: how long to wait for a response (at most 300 s,
    /// the default).
    pub timeout_seconds: Option<u32>,
}

impl Plan {
    /// What `timeout_seconds` may be.
    pub const TIMEOUT_SECONDS: RangeInclusive<u32> = 1..=300;

    /// `n` pings with `strategy`, to the stored callee, bounded-wait.
    pub fn new(strategy: Strategy, n: u64) -> Self {
        Self { strategy, n, k: None, wait: None, callees: None, timeout_seconds: None }
    }

    /// With window or batch size `k`.
    pub fn with_k(self, k: u64) -> Self {
        Self { k: Some(k), ..self }
    }
}

/// When and how often a job retries a failed call.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
pub struct RetryPolicy {
    /// Attempts per call, the first included (2 to 20).
    pub max_attempts: u32,
    /// Delay before the first retry; it doubles with every further attempt
    /// (1 ms to 4 days).
    pub backoff_ms: u64,
    /// Tag every ping with a nonce that the callee executes once, so that
    /// `SYS_UNKNOWN` (the outcome is unknown) is safe to retry too.
    pub idempotent: bool,
}

impl RetryPolicy {
    /// Its backoff, checked by [`ic_fanout::retry::Backoff::check`], whose
    /// caps and ranges apply.
    pub fn backoff(&self) -> ic_fanout::retry::Backoff {
        ic_fanout::retry::Backoff {
            max_attempts: self.max_attempts,
            first: std::time::Duration::from_millis(self.backoff_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_strategys_name_is_its_candid_name() {
        let candid_type = Strategy::ty().to_string();
        for strategy in Strategy::ALL {
            assert!(candid_type.contains(strategy.name()), "{candid_type}");
            assert_eq!(serde_json::to_string(&strategy).unwrap(), format!("\"{}\"", strategy.name()));
        }
        let with_example: Vec<_> =
            Strategy::ALL.into_iter().filter(|s| s.example_endpoint().is_some()).collect();
        assert_eq!(with_example, [Strategy::Sequential, Strategy::Parallel]);
    }
}
