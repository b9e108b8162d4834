//! A plan (how to fan out, and how much) and its report (what happened).
//! Plain data and rules, unit-tested natively; `lib.rs` runs plans.

use candid::{CandidType, Deserialize, Nat, Principal};
use ic_cdk::call::RejectCode;
use std::collections::BTreeMap;

pub use crate::guards::MAX_CALLS;
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

/// What one call's answer acknowledged: pings executed by this call, and
/// pings whose nonce the callee had executed before (an earlier attempt of
/// the same job delivered them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Acknowledged {
    pub now: u64,
    pub earlier: u64,
}

impl Acknowledged {
    pub fn now(pings: u64) -> Self {
        Self { now: pings, earlier: 0 }
    }
}

/// How one call ended: what it acknowledged, or why it failed.
pub type Outcome = Result<Acknowledged, FailureKind>;

/// Reads `ping_batch`'s answer for a batch of `count` pings: exactly one
/// known result byte per ping, or the whole batch is `BadAcknowledgement`
/// (a callee that answers otherwise cannot be trusted for any of them).
pub fn batch_acknowledgement(results: &[u8], count: u64) -> Outcome {
    if results.len() as u64 != count {
        return Err(FailureKind::BadAcknowledgement);
    }
    let mut acknowledged = Acknowledged::default();
    for &result in results {
        match result {
            EXECUTED => acknowledged.now += 1,
            EXECUTED_EARLIER => acknowledged.earlier += 1,
            _ => return Err(FailureKind::BadAcknowledgement),
        }
    }
    Ok(acknowledged)
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

/// How the calls of one pass are paced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// Every call at once; those that find no slot fail.
    AllAtOnce,
    /// At most this many in flight (1: one after another).
    Window(u64),
}

impl ValidPlan {
    /// The calls of the first pass: one ping each, or batches of `k`.
    pub fn calls(&self) -> Vec<CallId> {
        let n = self.n.get();
        match self.strategy {
            Strategy::Batched => (0..n.div_ceil(self.k))
                .map(|i| CallId { index: i, pings: self.k.min(n - i * self.k) })
                .collect(),
            _ => (0..n).map(|index| CallId { index, pings: 1 }).collect(),
        }
    }

    /// The first ping a call carries (its nonce is the job's first plus this).
    pub fn first_ping(&self, call: CallId) -> u64 {
        call.index * self.k
    }

    pub fn pace(&self) -> Pace {
        match self.strategy {
            Strategy::Sequential => Pace::Window(1),
            Strategy::Parallel | Strategy::Batched => Pace::AllAtOnce,
            Strategy::Bounded => Pace::Window(self.k),
        }
    }
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

/// Why pings failed: their call was not performed (`CallPerformFailed`,
/// `InsufficientLiquidCycleBalance`) or never made (`NotAttempted`), was
/// rejected (one kind per reject code, and `CalleeStopped`), or was answered
/// with something that is not the expected reply.
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
    /// No call was made: a window found no free slot with nothing of its
    /// own in flight to wait for, and stopped.
    NotAttempted,
    /// The callee's answer did not acknowledge the batch ping by ping.
    BadAcknowledgement,
    /// `CANISTER_ERROR` because the callee is stopped or stopping: the
    /// request never reached it, so the ping did not execute.
    CalleeStopped,
}

impl FailureKind {
    pub const ALL: [FailureKind; 13] = [
        Self::CallPerformFailed,
        Self::InsufficientLiquidCycleBalance,
        Self::SysFatal,
        Self::SysTransient,
        Self::DestinationInvalid,
        Self::CanisterReject,
        Self::CanisterError,
        Self::SysUnknown,
        Self::OtherReject,
        Self::CandidDecodeFailed,
        Self::NotAttempted,
        Self::BadAcknowledgement,
        Self::CalleeStopped,
    ];

    /// What it means, for a reader of a report.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::CallPerformFailed => {
                "no request slot was free (500 per caller-callee pair), so the call was not made"
            }
            Self::InsufficientLiquidCycleBalance => {
                "every call in flight reserves its largest possible cost until it is answered (about 42.1 G cycles for a ping on a 13-node subnet: 260 K + 1 K per request byte + 1 K x 2 MiB of response + 5 M + 40 G for the callback), and the caller's liquid balance had no room for another; liquid balance / 42.1 G bounds the calls in flight"
            }
            Self::SysFatal => "SYS_FATAL reject",
            Self::SysTransient => "SYS_TRANSIENT reject: the request did not reach the callee; safe to retry",
            Self::DestinationInvalid => "DESTINATION_INVALID reject: the callee does not exist",
            Self::CanisterReject => "CANISTER_REJECT: the callee rejected the call",
            Self::CanisterError => "CANISTER_ERROR: the callee trapped or could not run the method",
            Self::SysUnknown => "SYS_UNKNOWN: the call's deadline passed; the ping may or may not have run",
            Self::OtherReject => "a reject code this version does not know",
            Self::CandidDecodeFailed => "the reply was not the candid the caller expects",
            Self::NotAttempted => {
                "no call was made: a window found no free slot with nothing of its own in flight to wait for, and stopped (a job retries these)"
            }
            Self::BadAcknowledgement => "the callee's answer did not acknowledge the batch ping by ping",
            Self::CalleeStopped => {
                "the callee was stopped or stopping: the ping did not run (a job retries these)"
            }
        }
    }

    /// Safe to try again later. Always when the ping cannot have executed:
    /// the call was not performed or never made, the system says the callee
    /// did not get it (`SYS_TRANSIENT`, as ic-cdk's `is_clean_reject`
    /// classifies it), or the callee was stopped. When the callee executes
    /// every ping once (`idempotent`), also where it may have run: the
    /// outcome is unknown (`SYS_UNKNOWN`), the callee trapped or otherwise
    /// failed (`CANISTER_ERROR`: a trap rolls its ping back, and a nonce
    /// keeps a ping that did run from running twice), or it answered a batch
    /// badly. Never `InsufficientLiquidCycleBalance`: that needs cycles, not
    /// time; nor rejects the callee chose or that name a missing callee.
    pub fn retryable(self, idempotent: bool) -> bool {
        match self {
            Self::CallPerformFailed | Self::SysTransient | Self::NotAttempted | Self::CalleeStopped => true,
            Self::SysUnknown | Self::CanisterError | Self::BadAcknowledgement => idempotent,
            _ => false,
        }
    }

    /// The call was refused before it left the canister, so a slot or
    /// cycles were missing: nothing is in flight for it.
    pub fn not_performed(self) -> bool {
        matches!(self, Self::CallPerformFailed | Self::InsufficientLiquidCycleBalance)
    }

    /// Classifies a reject from `callee`. The replica's stream handler
    /// (`generate_reject_response_for` in dfinity/ic
    /// `rs/messaging/src/routing/stream_handler.rs`) rejects a request to a
    /// stopped or stopping canister with `CANISTER_ERROR` and exactly
    /// "Canister <id> is stopped" or "Canister <id> is stopping": that code
    /// with that message, for this callee, is `CalleeStopped`.
    pub fn from_reject(code: Option<RejectCode>, message: &str, callee: Principal) -> Self {
        match code {
            Some(RejectCode::SysFatal) => Self::SysFatal,
            Some(RejectCode::SysTransient) => Self::SysTransient,
            Some(RejectCode::DestinationInvalid) => Self::DestinationInvalid,
            Some(RejectCode::CanisterReject) => Self::CanisterReject,
            Some(RejectCode::CanisterError)
                if message == format!("Canister {callee} is stopped")
                    || message == format!("Canister {callee} is stopping") =>
            {
                Self::CalleeStopped
            }
            Some(RejectCode::CanisterError) => Self::CanisterError,
            Some(RejectCode::SysUnknown) => Self::SysUnknown,
            None => Self::OtherReject,
        }
    }
}

/// Pings that failed in one way.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct FailureCount {
    pub kind: FailureKind,
    /// Pings, not calls: a failed batched call counts every ping it carried.
    pub count: u64,
}

/// What a run of a plan did.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// Pings the plan asked for.
    pub requested: u64,
    /// Pings the callees acknowledged. For a plan, `requested` is
    /// `succeeded` plus the failures' counts.
    pub succeeded: u64,
    /// Of `succeeded`: pings whose callee answered that it had executed
    /// them already (their nonce was seen): an earlier attempt of the same
    /// job delivered them, whose answer was lost.
    pub delivered_earlier: u64,
    /// Inter-canister calls attempted, refused ones included (a batched
    /// call carries several pings).
    pub calls: u64,
    /// Failed pings by kind (for a job, every failed attempt).
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
    pub delivered_earlier: u64,
    pub calls: u64,
    /// Failed pings by kind.
    pub failures: BTreeMap<FailureKind, u64>,
    pub peak_in_flight: u64,
    /// The calls that failed, and why.
    pub failed: Vec<(CallId, FailureKind)>,
}

impl Tally {
    /// One call's outcome: the pings it had acknowledged, or why it failed.
    pub fn record(&mut self, call: CallId, outcome: Outcome) {
        self.calls += 1;
        match outcome {
            Ok(acknowledged) => {
                self.succeeded += acknowledged.now + acknowledged.earlier;
                self.delivered_earlier += acknowledged.earlier;
            }
            Err(kind) => self.fail(call, kind),
        }
    }

    /// A call that was never made.
    pub fn not_attempted(&mut self, call: CallId) {
        self.fail(call, FailureKind::NotAttempted);
    }

    fn fail(&mut self, call: CallId, kind: FailureKind) {
        *self.failures.entry(kind).or_default() += call.pings;
        self.failed.push((call, kind));
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
    fn clean_failures_are_retried_and_the_ones_that_may_have_run_only_when_idempotent() {
        assert!(FailureKind::CallPerformFailed.retryable(false));
        assert!(FailureKind::SysTransient.retryable(false));
        assert!(!FailureKind::SysUnknown.retryable(false));
        assert!(FailureKind::SysUnknown.retryable(true));
        for kind in [FailureKind::NotAttempted, FailureKind::CalleeStopped] {
            assert!(kind.retryable(false), "{kind:?}: it never executed");
        }
        for kind in [FailureKind::CanisterError, FailureKind::BadAcknowledgement] {
            assert!(!kind.retryable(false) && kind.retryable(true), "{kind:?}: it may have executed");
        }
        for kind in [FailureKind::CanisterReject, FailureKind::DestinationInvalid] {
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
    fn every_kind_is_listed_once_and_says_what_it_means() {
        let names: std::collections::BTreeSet<String> =
            FailureKind::ALL.iter().map(|k| format!("{k:?}")).collect();
        assert_eq!(names.len(), FailureKind::ALL.len());
        assert!(FailureKind::ALL.iter().all(|k| !k.meaning().is_empty()));
        assert!(FailureKind::InsufficientLiquidCycleBalance.meaning().contains("42.1 G"));
    }

    #[test]
    fn reject_codes_map_to_kinds() {
        let callee = principal(7);
        let kind = |code, message: &str| FailureKind::from_reject(code, message, callee);
        assert_eq!(kind(Some(RejectCode::DestinationInvalid), "x"), FailureKind::DestinationInvalid);
        assert_eq!(kind(Some(RejectCode::SysUnknown), "x"), FailureKind::SysUnknown);
        assert_eq!(kind(None, "x"), FailureKind::OtherReject);
        assert_eq!(kind(Some(RejectCode::CanisterError), "trapped"), FailureKind::CanisterError);
    }

    #[test]
    fn the_replicas_stopped_rejects_are_callee_stopped_and_nothing_else_is() {
        let callee = principal(7);
        let kind = |code, message: String| FailureKind::from_reject(Some(code), &message, callee);
        for state in ["stopped", "stopping"] {
            let message = format!("Canister {callee} is {state}");
            assert_eq!(kind(RejectCode::CanisterError, message.clone()), FailureKind::CalleeStopped);
            assert_eq!(
                kind(RejectCode::CanisterReject, message),
                FailureKind::CanisterReject,
                "the code too"
            );
            let another = format!("Canister {} is {state}", principal(8));
            assert_eq!(
                kind(RejectCode::CanisterError, another),
                FailureKind::CanisterError,
                "this callee only"
            );
        }
        let trapped = format!("Error from Canister {callee}: Canister {callee} is stopped, it said");
        assert_eq!(
            kind(RejectCode::CanisterError, trapped),
            FailureKind::CanisterError,
            "no substring guess"
        );
    }

    #[test]
    fn batch_acknowledgements_must_match_the_batch_ping_by_ping() {
        let ack = |bytes: &[u8], count| batch_acknowledgement(bytes, count);
        assert_eq!(ack(&[EXECUTED, EXECUTED_EARLIER, EXECUTED], 3), Ok(Acknowledged { now: 2, earlier: 1 }));
        for (bytes, count) in
            [(&[][..], 100), (&[EXECUTED; 50][..], 5), (&[EXECUTED, 0][..], 2), (&[9][..], 1)]
        {
            assert_eq!(ack(bytes, count), Err(FailureKind::BadAcknowledgement), "{bytes:?} for {count}");
        }
    }

    #[test]
    fn a_plans_calls_carry_every_ping_once_at_its_pace() {
        let batched = check(plan(Strategy::Batched, 25, Some(10))).unwrap();
        let pings: Vec<u64> = batched.calls().iter().map(|c| c.pings).collect();
        assert_eq!(pings, [10, 10, 5]);
        assert_eq!(batched.first_ping(batched.calls()[2]), 20);
        assert_eq!(batched.pace(), Pace::AllAtOnce);
        assert_eq!(check(plan(Strategy::Sequential, 3, None)).unwrap().pace(), Pace::Window(1));
        assert_eq!(check(plan(Strategy::Bounded, 3, Some(7))).unwrap().pace(), Pace::Window(7));
        assert_eq!(check(plan(Strategy::Parallel, 3, None)).unwrap().calls().len(), 3);
    }

    #[test]
    fn the_tally_counts_pings_calls_and_failures_by_kind() {
        let mut t = Tally::default();
        let call = |index| CallId { index, pings: 1 };
        t.record(CallId { index: 0, pings: 5 }, Ok(Acknowledged { now: 4, earlier: 1 }));
        t.record(call(1), Err(FailureKind::CallPerformFailed));
        t.record(call(2), Err(FailureKind::CallPerformFailed));
        t.record(call(3), Err(FailureKind::SysUnknown));
        assert_eq!(t.failed.len(), 3);
        assert_eq!((t.succeeded, t.delivered_earlier, t.calls), (5, 1, 4));
        assert_eq!(
            t.failures(),
            vec![
                FailureCount { kind: FailureKind::CallPerformFailed, count: 2 },
                FailureCount { kind: FailureKind::SysUnknown, count: 1 }
            ]
        );
    }
}
