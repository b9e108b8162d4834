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
    /// What `max_attempts` may be.
    pub const MAX_ATTEMPTS: RangeInclusive<u32> = 2..=20;
    /// What `backoff_ms` may be: up to [`Self::MAX_BACKOFF_MS`], so that one
    /// retry with the longest backoff is allowed.
    pub const BACKOFF_MS: RangeInclusive<u64> = 1..=Self::MAX_BACKOFF_MS;
    /// The cap on one backoff, the last and longest: 4 days. A job should be
    /// over within [`Self::MAX_SCHEDULE_MS`], and doubling backoffs add up to
    /// less than twice the last, so a cap under 3.5 days would leave the week
    /// cap nothing to refuse; at 4 days either cap can be the one that binds.
    pub const MAX_BACKOFF_MS: u64 = 4 * DAY_MS;
    /// The cap on the whole schedule, every backoff added up: 7 days, a job
    /// should be over within a week.
    pub const MAX_SCHEDULE_MS: u64 = 7 * DAY_MS;

    /// The delay before attempt number `attempt` (2 for the first retry).
    pub fn backoff_ns(&self, attempt: u32) -> u64 {
        self.backoff_ms.saturating_mul(1_000_000).saturating_mul(1 << Self::doublings(attempt))
    }

    /// The last backoff, before attempt `max_attempts`: the longest (0 with
    /// no retry).
    pub fn longest_backoff_ms(&self) -> u128 {
        if self.max_attempts < 2 {
            return 0;
        }
        u128::from(self.backoff_ms) << Self::doublings(self.max_attempts)
    }

    /// Every backoff added up: how long a job's retries wait at most. In
    /// u128, which holds it for any policy, even one the checks refuse.
    pub fn schedule_ms(&self) -> u128 {
        let retries = u128::from(self.max_attempts.saturating_sub(1));
        if retries == 0 {
            return 0;
        }
        // The backoffs double `d` times, 1 + 2 + ... + 2^d = 2^(d + 1) - 1
        // times the first; any later ones stay at 2^d times it.
        let d = Self::doublings(self.max_attempts);
        let doubling = (1u128 << (d + 1)) - 1;
        let flat = (retries - u128::from(d) - 1) << d;
        u128::from(self.backoff_ms) * (doubling + flat)
    }

    /// The largest `backoff_ms` that keeps `max_attempts` attempts within both
    /// caps: what to pass instead when a policy exceeds one.
    pub fn largest_backoff_ms(max_attempts: u32) -> u64 {
        let unit = Self { max_attempts, backoff_ms: 1, idempotent: false };
        let largest = (u128::from(Self::MAX_BACKOFF_MS) / unit.longest_backoff_ms().max(1))
            .min(u128::from(Self::MAX_SCHEDULE_MS) / unit.schedule_ms().max(1));
        // At most MAX_BACKOFF_MS, so it fits.
        largest as u64
    }

    /// How many times the backoff has doubled by attempt `attempt`; at most
    /// 20, so that no delay overflows.
    fn doublings(attempt: u32) -> u32 {
        attempt.saturating_sub(2).min(20)
    }
}

/// A day in milliseconds.
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_per_attempt() {
        let policy = RetryPolicy { max_attempts: 5, backoff_ms: 100, idempotent: false };
        assert_eq!([2, 3, 4].map(|a| policy.backoff_ns(a)), [100_000_000, 200_000_000, 400_000_000]);
    }

    #[test]
    fn the_longest_backoff_and_the_schedule_add_up_the_doublings() {
        let policy = |max_attempts, backoff_ms| RetryPolicy { max_attempts, backoff_ms, idempotent: false };
        let p = policy(5, 100);
        assert_eq!((p.longest_backoff_ms(), p.schedule_ms()), (800, 1_500));
        assert_eq!(p.longest_backoff_ms(), u128::from(p.backoff_ns(5) / 1_000_000));
        assert_eq!(p.schedule_ms(), (2..=5).map(|a| u128::from(p.backoff_ns(a) / 1_000_000)).sum::<u128>());
        assert_eq!((policy(1, 100).longest_backoff_ms(), policy(1, 100).schedule_ms()), (0, 0));
        // Past 20 doublings the backoff stays put, as backoff_ns has it.
        assert_eq!(policy(24, 1).schedule_ms(), (1 << 21) - 1 + (1 << 20) * 2);
        let most = policy(u32::MAX, u64::MAX);
        assert_eq!(most.longest_backoff_ms(), u128::from(u64::MAX) << 20);
        assert!(most.schedule_ms() > most.longest_backoff_ms());
    }

    #[test]
    fn the_caps_are_four_days_and_a_week() {
        assert_eq!(RetryPolicy::MAX_BACKOFF_MS, 345_600_000);
        assert_eq!(RetryPolicy::MAX_SCHEDULE_MS, 604_800_000);
        assert_eq!(*RetryPolicy::BACKOFF_MS.end(), RetryPolicy::MAX_BACKOFF_MS);
        // One retry: the backoff cap binds; five attempts: the schedule's.
        assert_eq!(RetryPolicy::largest_backoff_ms(2), 345_600_000);
        assert_eq!(RetryPolicy::largest_backoff_ms(3), 172_800_000);
        assert_eq!(RetryPolicy::largest_backoff_ms(5), 40_320_000);
        for attempts in RetryPolicy::MAX_ATTEMPTS {
            assert!(RetryPolicy::largest_backoff_ms(attempts) >= 1, "{attempts}");
        }
    }

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
