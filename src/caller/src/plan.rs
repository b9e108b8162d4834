//! Running a plan: the checks it passes first ([`validate`]), the calls it
//! makes at which pace, and the tally of their outcomes. Plain data and
//! rules, unit-tested natively; `lib.rs` runs plans.

use candid::{CandidType, Deserialize, Principal};
use interface::{
    FailureCount, FailureKind, MAX_BATCH, MAX_CALLEES, MAX_CALLS, Outcome, Plan, RetryPolicy, Strategy, Wait,
};
use std::collections::BTreeMap;
use std::num::NonZeroUsize;

use crate::guards::{self, CALLEE_ENV_VAR, CallCount};

/// How the calls of one pass are paced: the library's paces.
pub use ic_fanout::Pace;
use ic_fanout::job::Failed;
use ic_fanout::retry::{Backoff, BackoffError};

/// Why the caller refuses a request: its `Display` is the reject message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "n = {0} is more than the maximum of {MAX_CALLS} calls per request: \
         split the run into several requests of at most {MAX_CALLS}"
    )]
    TooManyCalls(u64),
    #[error("k = 0: k must be at least 1")]
    KZero,
    #[error("bounded needs k, the most calls in flight (1 or more)")]
    WindowMissing,
    #[error("batched needs k, the pings per call (1 to {MAX_BATCH})")]
    BatchSizeMissing,
    #[error("k = {0} pings per call is more than the maximum of {MAX_BATCH}")]
    BatchTooLarge(u64),
    #[error("k = {k} applies to bounded and batched only; leave it out for {strategy:?}")]
    KNotApplicable { k: u64, strategy: Strategy },
    #[error("callees is empty: name at least one callee, or leave it out")]
    NoCallees,
    #[error("{0} callees is more than the maximum of {MAX_CALLEES}")]
    TooManyCallees(usize),
    #[error("{0} is this caller canister itself: pass the id of the callee canister")]
    CallerAsCallee(Principal),
    #[error("{callee} is {what}, which can never be a callee: pass a canister id, such as the callee's")]
    NotACanister { callee: Principal, what: &'static str },
    #[error("callee not set: call setup_callee(principal) first")]
    CalleeNotSet,
    #[error("{CALLEE_ENV_VAR} = {text:?} is not a principal ({reason}): call setup_callee(principal)")]
    CalleeEnvVarNotAPrincipal { text: String, reason: String },
    #[error(
        "retry.max_attempts = {0}: allowed are {low} to {high}",
        low = Backoff::MAX_ATTEMPTS.start(),
        high = Backoff::MAX_ATTEMPTS.end()
    )]
    MaxAttempts(u32),
    #[error(
        "retry.backoff_ms = {0}: allowed are 1 to {high} (4 days)",
        high = Backoff::MAX_ONE.as_millis()
    )]
    Backoff(u64),
    #[error(
        "retry: backoff_ms = {backoff_ms} doubled up to attempt {max_attempts} makes a last backoff of \
         {longest_ms} ms, over the cap of {cap} ms (4 days) on one backoff: pass backoff_ms = {largest} \
         or less with max_attempts = {max_attempts}, or fewer attempts",
        cap = Backoff::MAX_ONE.as_millis(),
        largest = Backoff::largest_first(*max_attempts).as_millis()
    )]
    BackoffOverCap { max_attempts: u32, backoff_ms: u64, longest_ms: u128 },
    #[error(
        "retry: max_attempts = {max_attempts} with backoff_ms = {backoff_ms} waits {schedule_ms} ms in all, \
         over the cap of {cap} ms (7 days) on a job's whole schedule: pass backoff_ms = {largest} or less \
         with max_attempts = {max_attempts}, or fewer attempts",
        cap = Backoff::MAX_TOTAL.as_millis(),
        largest = Backoff::largest_first(*max_attempts).as_millis()
    )]
    ScheduleOverCap { max_attempts: u32, backoff_ms: u64, schedule_ms: u128 },
    #[error("timeout_seconds applies to bounded-wait calls only")]
    TimeoutWithUnboundedWait,
    #[error(
        "timeout_seconds = {0}: allowed are {low} to {high}",
        low = Plan::TIMEOUT_SECONDS.start(),
        high = Plan::TIMEOUT_SECONDS.end()
    )]
    Timeout(u32),
}

/// The library checks the policy; the messages name the caller's fields.
impl From<BackoffError> for PlanError {
    fn from(error: BackoffError) -> Self {
        match error {
            BackoffError::Attempts(attempts) => Self::MaxAttempts(attempts),
            BackoffError::OneOverCap { backoff: Backoff { max_attempts, first }, longest } => {
                Self::BackoffOverCap { max_attempts, backoff_ms: ms(first), longest_ms: longest.as_millis() }
            }
            BackoffError::TotalOverCap { backoff: Backoff { max_attempts, first }, total } => {
                Self::ScheduleOverCap { max_attempts, backoff_ms: ms(first), schedule_ms: total.as_millis() }
            }
            BackoffError::FirstUnderOneMs => Self::Backoff(0),
        }
    }
}

/// `d` in whole milliseconds, as the caller's fields count them.
fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
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

impl ValidPlan {
    /// The calls of the first pass: one ping each, or batches of `k`.
    pub fn calls(&self) -> Vec<CallId> {
        let n = self.n.get();
        let calls = match self.strategy {
            Strategy::Batched => n.div_ceil(self.k),
            _ => n,
        };
        (0..calls).map(|index| self.call(index)).collect()
    }

    /// Call number `index` (below the number of calls).
    pub fn call(&self, index: u64) -> CallId {
        match self.strategy {
            Strategy::Batched => CallId { index, pings: self.k.min(self.n.get() - index * self.k) },
            _ => CallId { index, pings: 1 },
        }
    }

    /// The first ping a call carries (its nonce is the job's first plus
    /// this): pings 0 to n - 1, so that a job's nonces stay in the n it
    /// reserved. (Only a batch carries k; a bounded plan's k is its window.)
    pub fn first_ping(&self, call: CallId) -> u64 {
        match self.strategy {
            Strategy::Batched => call.index * self.k,
            _ => call.index,
        }
    }

    pub fn pace(&self) -> Pace {
        match self.strategy {
            Strategy::Sequential => Pace::ONE_AT_A_TIME,
            Strategy::Parallel | Strategy::Batched => Pace::AllAtOnce,
            Strategy::Bounded => Pace::Window(NonZeroUsize::new(self.k as usize).expect("k >= 1: checked")),
        }
    }
}

/// Checks a plan before any call is made. `default_callee` is consulted
/// only when the plan names no callees.
pub fn validate(
    plan: Plan,
    retry: Option<RetryPolicy>,
    default_callee: impl FnOnce() -> Result<Principal, PlanError>,
    this_canister: Principal,
) -> Result<ValidPlan, PlanError> {
    let n = CallCount::new(plan.n)?;
    let k = match (plan.strategy, plan.k) {
        (_, Some(0)) => return Err(PlanError::KZero),
        (Strategy::Bounded, None) => return Err(PlanError::WindowMissing),
        (Strategy::Batched, None) => return Err(PlanError::BatchSizeMissing),
        (Strategy::Batched, Some(k)) if k > MAX_BATCH => return Err(PlanError::BatchTooLarge(k)),
        (strategy, Some(k)) if strategy.takes_k() => k,
        (strategy, Some(k)) => return Err(PlanError::KNotApplicable { k, strategy }),
        (_, None) => 1,
    };
    let callees = match plan.callees {
        None => vec![default_callee()?],
        Some(callees) if callees.is_empty() => {
            return Err(PlanError::NoCallees);
        }
        Some(callees) if callees.len() > MAX_CALLEES => {
            return Err(PlanError::TooManyCallees(callees.len()));
        }
        Some(callees) => {
            callees.into_iter().map(|c| guards::check_callee(c, this_canister)).collect::<Result<_, _>>()?
        }
    };
    if let Some(policy) = retry {
        policy.backoff().check().map_err(PlanError::from)?;
    }
    let wait = plan.wait.unwrap_or_default();
    match (wait, plan.timeout_seconds) {
        (Wait::Unbounded, Some(_)) => return Err(PlanError::TimeoutWithUnboundedWait),
        (_, Some(t)) if !Plan::TIMEOUT_SECONDS.contains(&t) => return Err(PlanError::Timeout(t)),
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

/// Which call of a run: its number and the pings it carries.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallId {
    pub index: u64,
    pub pings: u64,
}

/// A job's calls are numbered by index.
impl From<CallId> for u64 {
    fn from(call: CallId) -> Self {
        call.index
    }
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
    /// The calls that failed or were not made, for a job's schedule.
    pub failed: Vec<Failed>,
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
    }

    pub fn failures(&self) -> Vec<FailureCount> {
        self.failures.iter().map(|(&kind, &count)| FailureCount { kind, count }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use interface::Acknowledged;

    /// A canister id (an opaque id, class 1) numbered `byte`.
    fn principal(byte: u8) -> Principal {
        let mut id = [byte; 10];
        id[9] = 0x01;
        Principal::from_slice(&id)
    }

    #[test]
    fn retry_policies_and_timeouts_are_checked() {
        let policy = RetryPolicy { max_attempts: 3, backoff_ms: 1000, idempotent: false };
        let with = |timeout_seconds, wait| Plan { timeout_seconds, wait, ..Plan::new(Strategy::Parallel, 1) };
        let check_with = |p, retry| validate(p, retry, || Ok(principal(2)), principal(1));
        assert!(check_with(with(Some(10), None), Some(policy)).is_ok());
        let err = check_with(with(None, None), Some(RetryPolicy { max_attempts: 1, ..policy }))
            .unwrap_err()
            .to_string();
        assert!(err.contains("2 to 20"), "{err}");
        let err = check_with(with(None, None), Some(RetryPolicy { backoff_ms: 0, ..policy }))
            .unwrap_err()
            .to_string();
        assert!(err.contains("backoff_ms"), "{err}");
        assert!(check(with(Some(301), None)).unwrap_err().to_string().contains("1 to 300"));
        assert!(
            check(with(Some(10), Some(Wait::Unbounded))).unwrap_err().to_string().contains("bounded-wait")
        );
    }

    /// The caps, each at its figure and one past it, with a policy that only
    /// that cap refuses.
    #[test]
    fn retry_policies_past_a_cap_are_refused_naming_it() {
        let retry = |max_attempts, backoff_ms| {
            validate(
                Plan::new(Strategy::Parallel, 1),
                Some(RetryPolicy { max_attempts, backoff_ms, idempotent: false }),
                || Ok(principal(2)),
                principal(1),
            )
            .map(|_| ())
        };
        // One retry: its backoff is the last.
        assert_eq!(retry(2, 345_600_000), Ok(()));
        let err = retry(2, 345_600_001).unwrap_err();
        assert_eq!(
            err,
            PlanError::BackoffOverCap { max_attempts: 2, backoff_ms: 345_600_001, longest_ms: 345_600_001 }
        );
        assert_eq!(
            err.to_string(),
            "retry: backoff_ms = 345600001 doubled up to attempt 2 makes a last backoff of 345600001 ms, \
             over the cap of 345600000 ms (4 days) on one backoff: pass backoff_ms = 345600000 or less with \
             max_attempts = 2, or fewer attempts"
        );
        // Two retries, 6 days in all: the last backoff alone is over.
        assert_eq!(retry(3, 172_800_000), Ok(()));
        assert!(matches!(
            retry(3, 172_800_001),
            Err(PlanError::BackoffOverCap { longest_ms: 345_600_002, .. })
        ));
        // Four retries, the last 3.73 days: exactly a week in all, then 15 ms more.
        assert_eq!(retry(5, 40_320_000), Ok(()));
        let err = retry(5, 40_320_001).unwrap_err();
        assert_eq!(
            err,
            PlanError::ScheduleOverCap { max_attempts: 5, backoff_ms: 40_320_001, schedule_ms: 604_800_015 }
        );
        assert_eq!(
            err.to_string(),
            "retry: max_attempts = 5 with backoff_ms = 40320001 waits 604800015 ms in all, over the cap of \
             604800000 ms (7 days) on a job's whole schedule: pass backoff_ms = 40320000 or less with \
             max_attempts = 5, or fewer attempts"
        );
        // The case: 20 attempts from an hour, about 60 years in all.
        let err = retry(20, 3_600_000).unwrap_err().to_string();
        assert!(
            err.contains("cap of 345600000 ms (4 days)") && err.contains("backoff_ms = 1153 or less"),
            "{err}"
        );
        // The most attempts with the largest backoff they allow.
        assert_eq!(retry(20, ms(Backoff::largest_first(20))), Ok(()));
    }

    fn check(p: Plan) -> Result<ValidPlan, PlanError> {
        validate(p, None, || Ok(principal(2)), principal(1))
    }

    #[test]
    fn defaults_are_the_stored_callee_and_bounded_wait() {
        let v = check(Plan::new(Strategy::Parallel, 10)).unwrap();
        assert_eq!((v.k, v.wait, v.callees), (1, Wait::Bounded, vec![principal(2)]));
        assert_eq!((v.retry, v.timeout_seconds), (None, None));
    }

    #[test]
    fn k_is_required_where_it_means_something_and_refused_elsewhere() {
        assert!(check(Plan::new(Strategy::Bounded, 10)).unwrap_err().to_string().contains("bounded needs k"));
        assert!(check(Plan::new(Strategy::Batched, 10)).unwrap_err().to_string().contains("batched needs k"));
        assert!(
            check(Plan::new(Strategy::Sequential, 10).with_k(3))
                .unwrap_err()
                .to_string()
                .contains("bounded and batched only")
        );
        assert_eq!(check(Plan::new(Strategy::Bounded, 10).with_k(3)).unwrap().k, 3);
    }

    #[test]
    fn k_zero_and_oversized_batches_are_refused() {
        for s in [Strategy::Sequential, Strategy::Parallel, Strategy::Bounded, Strategy::Batched] {
            assert!(check(Plan::new(s, 10).with_k(0)).unwrap_err().to_string().contains("k = 0"));
        }
        let err = check(Plan::new(Strategy::Batched, 10).with_k(MAX_BATCH + 1)).unwrap_err().to_string();
        assert!(err.contains(&MAX_BATCH.to_string()), "{err}");
    }

    #[test]
    fn n_over_the_maximum_is_refused() {
        assert!(
            check(Plan::new(Strategy::Parallel, MAX_CALLS + 1)).unwrap_err().to_string().contains("maximum")
        );
    }

    #[test]
    fn callees_are_checked_and_the_default_is_not_consulted_when_given() {
        let mut p = Plan::new(Strategy::Parallel, 10);
        p.callees = Some(vec![principal(3), principal(4)]);
        let v = validate(p.clone(), None, || panic!("consulted"), principal(1)).unwrap();
        assert_eq!(v.callees, vec![principal(3), principal(4)]);
        p.callees = Some(vec![]);
        assert!(check(p.clone()).unwrap_err().to_string().contains("callees is empty"));
        p.callees = Some(vec![principal(1)]);
        assert!(check(p.clone()).unwrap_err().to_string().contains("itself"));
        p.callees = Some(vec![principal(3); MAX_CALLEES + 1]);
        assert!(check(p).unwrap_err().to_string().contains("maximum of 16"));
    }

    #[test]
    fn without_any_callee_the_documented_message() {
        let err =
            validate(Plan::new(Strategy::Parallel, 1), None, || Err(PlanError::CalleeNotSet), principal(1));
        assert_eq!(err.unwrap_err(), PlanError::CalleeNotSet);
    }

    #[test]
    fn a_plans_calls_carry_every_ping_once_at_its_pace() {
        let batched = check(Plan::new(Strategy::Batched, 25).with_k(10)).unwrap();
        let pings: Vec<u64> = batched.calls().iter().map(|c| c.pings).collect();
        assert_eq!(pings, [10, 10, 5]);
        assert_eq!(batched.first_ping(batched.calls()[2]), 20);
        assert_eq!(batched.pace(), Pace::AllAtOnce);
        assert_eq!(check(Plan::new(Strategy::Sequential, 3)).unwrap().pace(), Pace::ONE_AT_A_TIME);
        let seven = Pace::Window(NonZeroUsize::new(7).unwrap());
        assert_eq!(check(Plan::new(Strategy::Bounded, 3).with_k(7)).unwrap().pace(), seven);
        assert_eq!(check(Plan::new(Strategy::Parallel, 3)).unwrap().calls().len(), 3);
    }

    /// A job reserves n nonces: its pings must carry exactly those.
    #[test]
    fn the_pings_of_every_strategy_are_numbered_0_to_n_minus_1() {
        for (strategy, k) in [
            (Strategy::Sequential, None),
            (Strategy::Parallel, None),
            (Strategy::Bounded, Some(7)),
            (Strategy::Batched, Some(7)),
        ] {
            let plan = check(Plan { k, ..Plan::new(strategy, 25) }).unwrap();
            let plan = &plan;
            let pings: Vec<u64> = plan
                .calls()
                .iter()
                .flat_map(|&call| (0..call.pings).map(move |i| plan.first_ping(call) + i))
                .collect();
            assert_eq!(pings, (0..25).collect::<Vec<_>>(), "{strategy:?}");
        }
    }

    #[test]
    fn the_tally_counts_pings_calls_and_failures_by_kind() {
        let mut t = Tally::default();
        let call = |index| CallId { index, pings: 1 };
        t.record(CallId { index: 0, pings: 5 }, Ok(Acknowledged { now: 4, earlier: 1 }));
        t.record(call(1), Err(FailureKind::CallPerformFailed));
        t.record(call(2), Err(FailureKind::CallPerformFailed));
        t.record(call(3), Err(FailureKind::SysUnknown));
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
