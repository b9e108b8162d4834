//! A plan (how to fan out, and how much) and its report (what happened).
//! Plain data and rules, unit-tested natively; `lib.rs` runs plans.

use candid::{CandidType, Deserialize, Nat, Principal};
use std::collections::BTreeMap;

use crate::guards::{self, CallCount};

/// The most pings one batched call may carry.
pub const MAX_BATCH: u64 = 1_000;
/// The callee's `ping_batch` argument: `count` pings, tagged with nonces
/// `first_nonce`, `first_nonce + 1`, ... if given. It answers with one
/// byte per ping.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingBatch {
    pub first_nonce: Option<u64>,
    pub count: u32,
}

/// `ping_batch` result bytes: executed now, or (a nonce seen before)
/// executed earlier. Either way the ping was delivered.
pub const EXECUTED: u8 = 1;
pub const EXECUTED_EARLIER: u8 = 2;

pub fn acknowledged(result: u8) -> bool {
    result == EXECUTED || result == EXECUTED_EARLIER
}

/// The most callees one plan may spread over.
pub const MAX_CALLEES: usize = 16;

#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// One call at a time.
    #[serde(rename = "sequential")]
    Sequential,
    /// Every call at once.
    #[serde(rename = "parallel")]
    Parallel,
    /// At most `k` calls in flight; a new one starts as soon as any answers.
    #[serde(rename = "bounded")]
    Bounded,
    /// `k` pings per call, all calls at once.
    #[serde(rename = "batched")]
    Batched,
}

/// Bounded-wait (best-effort response, 300 s timeout) or unbounded-wait
/// (guaranteed response) calls.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Wait {
    #[default]
    #[serde(rename = "bounded")]
    Bounded,
    #[serde(rename = "unbounded")]
    Unbounded,
}

#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub strategy: Strategy,
    /// Pings to deliver.
    pub n: u64,
    /// The window (`bounded`) or batch size (`batched`).
    pub k: Option<u64>,
    pub wait: Option<Wait>,
    /// Callees to spread the calls over, round-robin; default: the callee.
    pub callees: Option<Vec<Principal>>,
    /// Bounded-wait calls: how long to wait for a response (at most 300 s,
    /// the default).
    pub timeout_seconds: Option<u32>,
}

/// When and how often a job retries a failed call.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per call, the first included (2 to 20).
    pub max_attempts: u32,
    /// Delay before the first retry; it doubles with every further attempt
    /// (1 ms to 1 hour).
    pub backoff_ms: u64,
    /// Tag every ping with a nonce that the callee executes once, so that
    /// `SYS_UNKNOWN` (the outcome is unknown) is safe to retry too.
    pub idempotent: bool,
}

impl RetryPolicy {
    /// The delay before attempt number `attempt` (2 for the first retry).
    pub fn backoff_ns(&self, attempt: u32) -> u64 {
        let doublings = attempt.saturating_sub(2).min(20);
        self.backoff_ms.saturating_mul(1_000_000).saturating_mul(1 << doublings)
    }
}

/// A plan that passed [`validate`].
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ValidPlan {
    pub strategy: Strategy,
    pub n: CallCount,
    /// 1 for `sequential` and `parallel`.
    pub k: u64,
    pub wait: Wait,
    pub callees: Vec<Principal>,
    pub retry: Option<RetryPolicy>,
    pub timeout_seconds: Option<u32>,
}

/// Checks a plan before any call is made. `default_callee` is consulted
/// only when the plan names no callees.
pub fn validate(
    plan: Plan,
    retry: Option<RetryPolicy>,
    default_callee: impl FnOnce() -> Result<Principal, String>,
    this_canister: Principal,
) -> Result<ValidPlan, String> {
    let n = CallCount::new(plan.n)?;
    let k = match (plan.strategy, plan.k) {
        (_, Some(0)) => return Err("k = 0: k must be at least 1".into()),
        (Strategy::Bounded, None) => {
            return Err("bounded needs k, the most calls in flight (1 or more)".into());
        }
        (Strategy::Batched, None) => {
            return Err(format!("batched needs k, the pings per call (1 to {MAX_BATCH})"));
        }
        (Strategy::Batched, Some(k)) if k > MAX_BATCH => {
            return Err(format!("k = {k} pings per call is more than the maximum of {MAX_BATCH}"));
        }
        (Strategy::Bounded | Strategy::Batched, Some(k)) => k,
        (Strategy::Sequential | Strategy::Parallel, Some(k)) => {
            return Err(format!(
                "k = {k} applies to bounded and batched only; leave it out for {:?}",
                plan.strategy
            ));
        }
        (Strategy::Sequential | Strategy::Parallel, None) => 1,
    };
    let callees = match plan.callees {
        None => vec![default_callee()?],
        Some(callees) if callees.is_empty() => {
            return Err("callees is empty: name at least one callee, or leave it out".into());
        }
        Some(callees) if callees.len() > MAX_CALLEES => {
            return Err(format!("{} callees is more than the maximum of {MAX_CALLEES}", callees.len()));
        }
        Some(callees) => {
            callees.into_iter().map(|c| guards::check_callee(c, this_canister)).collect::<Result<_, _>>()?
        }
    };
    if let Some(policy) = retry {
        if !(2..=20).contains(&policy.max_attempts) {
            return Err(format!("retry.max_attempts = {}: allowed are 2 to 20", policy.max_attempts));
        }
        if !(1..=3_600_000).contains(&policy.backoff_ms) {
            return Err(format!(
                "retry.backoff_ms = {}: allowed are 1 to 3600000 (an hour)",
                policy.backoff_ms
            ));
        }
    }
    let wait = plan.wait.unwrap_or_default();
    match (wait, plan.timeout_seconds) {
        (Wait::Unbounded, Some(_)) => return Err("timeout_seconds applies to bounded-wait calls only".into()),
        (_, Some(t)) if !(1..=300).contains(&t) => {
            return Err(format!("timeout_seconds = {t}: allowed are 1 to 300"));
        }
        _ => {}
    }
    Ok(ValidPlan {
        strategy: plan.strategy,
        n,
        k,
        wait,
        callees,
        retry,
        timeout_seconds: plan.timeout_seconds,
    })
}

/// Why a call failed: not performed (`CallPerformFailed`,
/// `InsufficientLiquidCycleBalance`), rejected (one kind per reject code), or
/// answered with something that is not the expected reply.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailureKind {
    CallPerformFailed,
    InsufficientLiquidCycleBalance,
    SysFatal,
    SysTransient,
    DestinationInvalid,
    CanisterReject,
    CanisterError,
    SysUnknown,
    /// A reject code this version does not know.
    OtherReject,
    CandidDecodeFailed,
}

impl FailureKind {
    /// Safe to try again later: the call was not performed
    /// (`CallPerformFailed`), or the system says the callee did not get it
    /// (`SYS_TRANSIENT`), as ic-cdk's `is_clean_reject` and
    /// `is_immediately_retryable` classify them. `SYS_UNKNOWN` (it may have
    /// run) only when the callee executes every ping once (`idempotent`).
    /// Not `InsufficientLiquidCycleBalance`: that needs cycles, not time.
    pub fn retryable(self, idempotent: bool) -> bool {
        match self {
            Self::CallPerformFailed | Self::SysTransient => true,
            Self::SysUnknown => idempotent,
            _ => false,
        }
    }

    pub fn from_reject_code(code: u32) -> Self {
        match code {
            1 => Self::SysFatal,
            2 => Self::SysTransient,
            3 => Self::DestinationInvalid,
            4 => Self::CanisterReject,
            5 => Self::CanisterError,
            6 => Self::SysUnknown,
            _ => Self::OtherReject,
        }
    }
}

#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct FailureCount {
    pub kind: FailureKind,
    pub count: u64,
}

/// What a run of a plan did.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Pings the plan asked for.
    pub requested: u64,
    /// Pings the callees acknowledged.
    pub succeeded: u64,
    /// Inter-canister calls attempted (a batched call carries several pings).
    pub calls: u64,
    /// Failed calls by kind.
    pub failures: Vec<FailureCount>,
    /// Calls made again after a failure.
    pub retries: u64,
    /// The most calls performed and not yet answered at any one time.
    pub peak_in_flight: u64,
    /// Instructions of the whole call context (`call_context_instruction_counter`).
    pub instructions: u64,
    /// The balance before the run minus the balance at its end, as the
    /// canister sees them: approximate, because prepayments of the message
    /// and of calls still being answered are withdrawn at both moments.
    pub cycles_spent: Nat,
    /// IC time from the start of the run to its end (or to now, for a
    /// job that has not finished).
    pub time_elapsed_ns: u64,
    /// False while a job still has calls in flight or retries to make.
    pub finished: bool,
}

/// Which call of a run: its number and the pings it carries.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallId {
    pub index: u64,
    pub pings: u64,
}

/// Counts as the calls of a run complete.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub succeeded: u64,
    pub calls: u64,
    pub failures: BTreeMap<FailureKind, u64>,
    pub peak_in_flight: u64,
    /// The calls that failed, and why.
    pub failed: Vec<(CallId, FailureKind)>,
}

impl Tally {
    /// One call's outcome: the pings it had acknowledged, or why it failed.
    pub fn record(&mut self, call: CallId, outcome: Result<u64, FailureKind>) {
        self.calls += 1;
        match outcome {
            Ok(acknowledged) => self.succeeded += acknowledged,
            Err(kind) => {
                *self.failures.entry(kind).or_default() += 1;
                self.failed.push((call, kind));
            }
        }
    }

    pub fn failures(&self) -> Vec<FailureCount> {
        self.failures.iter().map(|(&kind, &count)| FailureCount { kind, count }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(byte: u8) -> Principal {
        Principal::from_slice(&[byte; 10])
    }

    fn plan(strategy: Strategy, n: u64, k: Option<u64>) -> Plan {
        Plan { strategy, n, k, wait: None, callees: None, timeout_seconds: None }
    }

    #[test]
    fn retry_policies_and_timeouts_are_checked() {
        let policy = RetryPolicy { max_attempts: 3, backoff_ms: 1000, idempotent: false };
        let with =
            |timeout_seconds, wait| Plan { timeout_seconds, wait, ..plan(Strategy::Parallel, 1, None) };
        let check_with = |p, retry| validate(p, retry, || Ok(principal(2)), principal(1));
        assert!(check_with(with(Some(10), None), Some(policy)).is_ok());
        let err = check_with(with(None, None), Some(RetryPolicy { max_attempts: 1, ..policy })).unwrap_err();
        assert!(err.contains("2 to 20"), "{err}");
        let err = check_with(with(None, None), Some(RetryPolicy { backoff_ms: 0, ..policy })).unwrap_err();
        assert!(err.contains("backoff_ms"), "{err}");
        assert!(check(with(Some(301), None)).unwrap_err().contains("1 to 300"));
        assert!(check(with(Some(10), Some(Wait::Unbounded))).unwrap_err().contains("bounded-wait"));
    }

    #[test]
    fn backoff_doubles_per_attempt() {
        let policy = RetryPolicy { max_attempts: 5, backoff_ms: 100, idempotent: false };
        assert_eq!([2, 3, 4].map(|a| policy.backoff_ns(a)), [100_000_000, 200_000_000, 400_000_000]);
    }

    #[test]
    fn only_clean_failures_are_retried_and_sys_unknown_only_when_idempotent() {
        assert!(FailureKind::CallPerformFailed.retryable(false));
        assert!(FailureKind::SysTransient.retryable(false));
        assert!(!FailureKind::SysUnknown.retryable(false));
        assert!(FailureKind::SysUnknown.retryable(true));
        for kind in [FailureKind::CanisterError, FailureKind::CanisterReject, FailureKind::DestinationInvalid]
        {
            assert!(!kind.retryable(true), "{kind:?}");
        }
        assert!(!FailureKind::InsufficientLiquidCycleBalance.retryable(true));
    }

    fn check(p: Plan) -> Result<ValidPlan, String> {
        validate(p, None, || Ok(principal(2)), principal(1))
    }

    #[test]
    fn defaults_are_the_stored_callee_and_bounded_wait() {
        let v = check(plan(Strategy::Parallel, 10, None)).unwrap();
        assert_eq!((v.k, v.wait, v.callees), (1, Wait::Bounded, vec![principal(2)]));
        assert_eq!((v.retry, v.timeout_seconds), (None, None));
    }

    #[test]
    fn k_is_required_where_it_means_something_and_refused_elsewhere() {
        assert!(check(plan(Strategy::Bounded, 10, None)).unwrap_err().contains("bounded needs k"));
        assert!(check(plan(Strategy::Batched, 10, None)).unwrap_err().contains("batched needs k"));
        assert!(
            check(plan(Strategy::Sequential, 10, Some(3))).unwrap_err().contains("bounded and batched only")
        );
        assert_eq!(check(plan(Strategy::Bounded, 10, Some(3))).unwrap().k, 3);
    }

    #[test]
    fn k_zero_and_oversized_batches_are_refused() {
        for s in [Strategy::Sequential, Strategy::Parallel, Strategy::Bounded, Strategy::Batched] {
            assert!(check(plan(s, 10, Some(0))).unwrap_err().contains("k = 0"));
        }
        let err = check(plan(Strategy::Batched, 10, Some(MAX_BATCH + 1))).unwrap_err();
        assert!(err.contains(&MAX_BATCH.to_string()), "{err}");
    }

    #[test]
    fn n_over_the_maximum_is_refused() {
        assert!(
            check(plan(Strategy::Parallel, guards::MAX_CALLS + 1, None)).unwrap_err().contains("maximum")
        );
    }

    #[test]
    fn callees_are_checked_and_the_default_is_not_consulted_when_given() {
        let mut p = plan(Strategy::Parallel, 10, None);
        p.callees = Some(vec![principal(3), principal(4)]);
        let v = validate(p.clone(), None, || panic!("consulted"), principal(1)).unwrap();
        assert_eq!(v.callees, vec![principal(3), principal(4)]);
        p.callees = Some(vec![]);
        assert!(check(p.clone()).unwrap_err().contains("callees is empty"));
        p.callees = Some(vec![principal(1)]);
        assert!(check(p.clone()).unwrap_err().contains("itself"));
        p.callees = Some(vec![principal(3); MAX_CALLEES + 1]);
        assert!(check(p).unwrap_err().contains("maximum of 16"));
    }

    #[test]
    fn without_any_callee_the_documented_message() {
        let err =
            validate(plan(Strategy::Parallel, 1, None), None, || Err("callee not set".into()), principal(1));
        assert_eq!(err.unwrap_err(), "callee not set");
    }

    #[test]
    fn reject_codes_map_to_kinds() {
        assert_eq!(FailureKind::from_reject_code(3), FailureKind::DestinationInvalid);
        assert_eq!(FailureKind::from_reject_code(6), FailureKind::SysUnknown);
        assert_eq!(FailureKind::from_reject_code(99), FailureKind::OtherReject);
    }

    #[test]
    fn the_tally_counts_pings_calls_and_failures_by_kind() {
        let mut t = Tally::default();
        let call = |index| CallId { index, pings: 1 };
        t.record(call(0), Ok(5));
        t.record(call(1), Err(FailureKind::CallPerformFailed));
        t.record(call(2), Err(FailureKind::CallPerformFailed));
        t.record(call(3), Err(FailureKind::SysUnknown));
        assert_eq!(t.failed.len(), 3);
        assert_eq!((t.succeeded, t.calls), (5, 4));
        assert_eq!(
            t.failures(),
            vec![
                FailureCount { kind: FailureKind::CallPerformFailed, count: 2 },
                FailureCount { kind: FailureKind::SysUnknown, count: 1 }
            ]
        );
    }
}
