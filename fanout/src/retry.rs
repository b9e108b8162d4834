//! When a failed call may be tried again ([`Retry`], from ic-cdk's
//! `CallFailed`), and how long to wait first ([`Backoff`]: doubling, with a
//! cap on one wait and on all of them).

use candid::{CandidType, Deserialize, Principal};
use ic_cdk::call::{CallFailed, RejectCode};
use std::fmt;
use std::ops::RangeInclusive;
use std::time::Duration;

/// Whether a failed call may be tried again.
///
/// ```
/// use ic_cdk::call::{CallFailed, CallPerformFailed, CallRejected, RejectCode};
/// use ic_fanout::retry::Retry;
///
/// let callee = candid::Principal::from_slice(&[1]);
/// let timed_out = CallFailed::CallRejected(CallRejected::with_rejection(
///     RejectCode::SysUnknown as u32,
///     "deadline expired".into(),
/// ));
/// assert_eq!(Retry::of(&CallFailed::CallPerformFailed(CallPerformFailed), callee), Retry::Always);
/// assert_eq!(Retry::of(&timed_out, callee), Retry::IfIdempotent);
/// assert!(Retry::IfIdempotent.allows(true) && !Retry::IfIdempotent.allows(false));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// The call cannot have executed: it was not performed (no free slot),
    /// the system says it did not reach the callee (`SYS_TRANSIENT`), or
    /// the callee was stopped or stopping.
    Always,
    /// It may have executed: the outcome is unknown (`SYS_UNKNOWN`, a
    /// bounded wait that timed out), or the callee failed (`CANISTER_ERROR`,
    /// which rolls back only what ran since its last await). Safe to retry
    /// only when the callee executes each call once (see [`crate::once`]).
    IfIdempotent,
    /// Waiting does not help: the caller lacks cycles, the callee rejected
    /// the call on purpose (`CANISTER_REJECT`) or does not exist
    /// (`DESTINATION_INVALID`), or the system gave up (`SYS_FATAL`).
    Never,
}

impl Retry {
    /// Classifies a failed call to `callee`.
    pub fn of(error: &CallFailed, callee: Principal) -> Self {
        match error {
            CallFailed::CallPerformFailed(_) => Self::Always,
            CallFailed::InsufficientLiquidCycleBalance(_) => Self::Never,
            CallFailed::CallRejected(rejected) => match rejected.reject_code() {
                Ok(RejectCode::SysTransient) => Self::Always,
                Ok(RejectCode::CanisterError) if names_stopped_callee(rejected.reject_message(), callee) => {
                    Self::Always
                }
                Ok(RejectCode::SysUnknown | RejectCode::CanisterError) => Self::IfIdempotent,
                Ok(RejectCode::SysFatal | RejectCode::DestinationInvalid | RejectCode::CanisterReject) => {
                    Self::Never
                }
                // A code newer than this crate: nothing says it is safe.
                Err(_) => Self::Never,
            },
        }
    }

    /// Whether a call that failed this way is tried again, when the callee
    /// executes each call once (`idempotent`) or not.
    pub fn allows(self, idempotent: bool) -> bool {
        match self {
            Self::Always => true,
            Self::IfIdempotent => idempotent,
            Self::Never => false,
        }
    }
}

/// Whether a `CANISTER_ERROR` reject message says that `callee` was stopped
/// or stopping, so the request never reached it. The replica's stream
/// handler (`generate_reject_response_for` in dfinity/ic
/// `rs/messaging/src/routing/stream_handler.rs`) words it exactly
/// `"Canister <id> is stopped"` or `"Canister <id> is stopping"`.
pub fn names_stopped_callee(message: &str, callee: Principal) -> bool {
    message
        .strip_prefix("Canister ")
        .and_then(|rest| rest.strip_suffix(" is stopped").or_else(|| rest.strip_suffix(" is stopping")))
        .is_some_and(|id| id == callee.to_text())
}

/// Waits between attempts: `first` before the first retry, doubling with
/// every further attempt, for at most `max_attempts` attempts in all. Waits
/// count whole milliseconds (a job keeps `first` in them).
///
/// Capped at [`Backoff::MAX_ONE`] (4 days) for one wait and
/// [`Backoff::MAX_TOTAL`] (7 days) for all of them added up: without
/// caps, 20 attempts from a 1-hour backoff wait about 60 years.
///
/// ```
/// use ic_fanout::retry::Backoff;
/// use std::time::Duration;
///
/// let backoff = Backoff { max_attempts: 4, first: Duration::from_millis(100) };
/// assert_eq!([2, 3, 4].map(|attempt| backoff.delay(attempt).as_millis()), [100, 200, 400]);
/// assert_eq!((backoff.longest(), backoff.total()), (Duration::from_millis(400), Duration::from_millis(700)));
/// assert!(backoff.check().is_ok());
/// ```
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(from = "StoredBackoff")]
pub struct Backoff {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// The wait before the first retry.
    pub first: Duration,
}

/// How a [`Backoff`] is encoded (in a job kept in stable memory): as before
/// it took a `Duration`, so jobs kept then still decode.
#[derive(CandidType, Deserialize)]
struct StoredBackoff {
    max_attempts: u32,
    first_ms: u64,
}

impl From<StoredBackoff> for Backoff {
    fn from(StoredBackoff { max_attempts, first_ms }: StoredBackoff) -> Self {
        Self { max_attempts, first: Duration::from_millis(first_ms) }
    }
}

impl CandidType for Backoff {
    fn _ty() -> candid::types::Type {
        StoredBackoff::_ty()
    }

    fn idl_serialize<S: candid::types::Serializer>(&self, serializer: S) -> Result<(), S::Error> {
        let first_ms = u64::try_from(self.first_ms()).unwrap_or(u64::MAX);
        StoredBackoff { max_attempts: self.max_attempts, first_ms }.idl_serialize(serializer)
    }
}

/// A day in milliseconds.
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

/// `ms` milliseconds, or [`Duration::MAX`] if more.
fn millis(ms: u128) -> Duration {
    match u64::try_from(ms / 1000) {
        Ok(secs) => Duration::from_secs(secs) + Duration::from_millis((ms % 1000) as u64),
        Err(_) => Duration::MAX,
    }
}

impl Backoff {
    /// What `max_attempts` may be.
    pub const MAX_ATTEMPTS: RangeInclusive<u32> = 2..=20;
    /// The cap on one wait, the last and longest: 4 days. Doubling waits
    /// add up to less than twice the last, so a cap under 3.5 days would
    /// leave the week's cap nothing to refuse; at 4 days either can bind.
    pub const MAX_ONE: Duration = Duration::from_millis(4 * DAY_MS);
    /// The cap on every wait added up: 7 days.
    pub const MAX_TOTAL: Duration = Duration::from_millis(7 * DAY_MS);

    /// The first wait in whole milliseconds.
    fn first_ms(&self) -> u128 {
        self.first.as_millis()
    }

    /// The wait before attempt number `attempt` (2 for the first retry);
    /// [`Duration::MAX`] if longer.
    pub fn delay(&self, attempt: u32) -> Duration {
        millis(self.first_ms().saturating_mul(1 << Self::doublings(attempt)))
    }

    /// The last wait, before attempt `max_attempts`: the longest (zero with
    /// no retry); [`Duration::MAX`] if longer.
    pub fn longest(&self) -> Duration {
        millis(self.longest_ms())
    }

    fn longest_ms(&self) -> u128 {
        if self.max_attempts < 2 {
            return 0;
        }
        self.first_ms().saturating_mul(1 << Self::doublings(self.max_attempts))
    }

    /// Every wait added up; [`Duration::MAX`] if longer.
    pub fn total(&self) -> Duration {
        millis(self.total_ms())
    }

    fn total_ms(&self) -> u128 {
        let retries = u128::from(self.max_attempts.saturating_sub(1));
        if retries == 0 {
            return 0;
        }
        // The waits double `d` times, 1 + 2 + ... + 2^d = 2^(d + 1) - 1
        // times the first; any later ones stay at 2^d times it.
        let d = Self::doublings(self.max_attempts);
        let doubling = (1u128 << (d + 1)) - 1;
        let flat = (retries - u128::from(d) - 1) << d;
        self.first_ms().saturating_mul(doubling + flat)
    }

    /// The longest `first` that keeps `max_attempts` attempts within both
    /// caps, in whole milliseconds: what to pass instead when a backoff is
    /// over one.
    pub fn largest_first(max_attempts: u32) -> Duration {
        let unit = Self { max_attempts, first: Duration::from_millis(1) };
        let largest = (Self::MAX_ONE.as_millis() / unit.longest_ms().max(1))
            .min(Self::MAX_TOTAL.as_millis() / unit.total_ms().max(1));
        millis(largest)
    }

    /// Checks the attempts and both caps, then that the first wait is at
    /// least 1 ms.
    pub fn check(&self) -> Result<(), BackoffError> {
        let max_attempts = self.max_attempts;
        if !Self::MAX_ATTEMPTS.contains(&max_attempts) {
            return Err(BackoffError::Attempts(max_attempts));
        }
        // The caps before zero: their messages say what to pass.
        if self.longest_ms() > Self::MAX_ONE.as_millis() {
            return Err(BackoffError::OneOverCap { backoff: *self, longest: self.longest() });
        }
        if self.total_ms() > Self::MAX_TOTAL.as_millis() {
            return Err(BackoffError::TotalOverCap { backoff: *self, total: self.total() });
        }
        if self.first_ms() == 0 {
            return Err(BackoffError::FirstUnderOneMs);
        }
        Ok(())
    }

    /// How many times the wait has doubled by attempt `attempt`; at most 20,
    /// so that no delay overflows.
    fn doublings(attempt: u32) -> u32 {
        attempt.saturating_sub(2).min(20)
    }
}

/// Why [`Backoff::check`] refused a backoff; each message says what to pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackoffError {
    /// `max_attempts` is outside [`Backoff::MAX_ATTEMPTS`].
    Attempts(u32),
    /// The last wait is over [`Backoff::MAX_ONE`].
    OneOverCap {
        /// The backoff refused.
        backoff: Backoff,
        /// Its last wait.
        longest: Duration,
    },
    /// The waits add up to more than [`Backoff::MAX_TOTAL`].
    TotalOverCap {
        /// The backoff refused.
        backoff: Backoff,
        /// Its waits added up.
        total: Duration,
    },
    /// `first` is under 1 ms: a retry would come at once, not after a wait.
    FirstUnderOneMs,
}

impl fmt::Display for BackoffError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Attempts(attempts) => write!(
                f,
                "max_attempts = {attempts}: allowed are {} to {}",
                Backoff::MAX_ATTEMPTS.start(),
                Backoff::MAX_ATTEMPTS.end()
            ),
            Self::OneOverCap { backoff: Backoff { max_attempts, first }, longest } => write!(
                f,
                "first = {first:?} doubled up to attempt {max_attempts} makes a last wait of {longest:?}, \
                 over the cap of {:?} (4 days) on one wait: pass first = {:?} or less with max_attempts = \
                 {max_attempts}, or fewer attempts",
                Backoff::MAX_ONE,
                Backoff::largest_first(max_attempts)
            ),
            Self::TotalOverCap { backoff: Backoff { max_attempts, first }, total } => write!(
                f,
                "max_attempts = {max_attempts} with first = {first:?} waits {total:?} in all, over the cap \
                 of {:?} (7 days) on a whole schedule: pass first = {:?} or less with max_attempts = \
                 {max_attempts}, or fewer attempts",
                Backoff::MAX_TOTAL,
                Backoff::largest_first(max_attempts)
            ),
            Self::FirstUnderOneMs => write!(f, "first is under 1 ms: the first wait must be at least 1 ms"),
        }
    }
}

impl std::error::Error for BackoffError {}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_cdk::call::{CallRejected, InsufficientLiquidCycleBalance};

    fn rejected(code: u32, message: &str) -> CallFailed {
        CallFailed::CallRejected(CallRejected::with_rejection(code, message.into()))
    }

    #[test]
    fn every_failure_has_its_class() {
        let callee = Principal::from_slice(&[1]);
        let stopped = format!("Canister {callee} is stopped");
        let cases = [
            (
                CallFailed::InsufficientLiquidCycleBalance(InsufficientLiquidCycleBalance {
                    available: 0,
                    required: 1,
                }),
                Retry::Never,
            ),
            (rejected(RejectCode::SysFatal as u32, ""), Retry::Never),
            (rejected(RejectCode::SysTransient as u32, ""), Retry::Always),
            (rejected(RejectCode::DestinationInvalid as u32, ""), Retry::Never),
            (rejected(RejectCode::CanisterReject as u32, ""), Retry::Never),
            (rejected(RejectCode::CanisterError as u32, "trapped"), Retry::IfIdempotent),
            (rejected(RejectCode::CanisterError as u32, &stopped), Retry::Always),
            (rejected(RejectCode::SysUnknown as u32, ""), Retry::IfIdempotent),
            (rejected(99, ""), Retry::Never),
        ];
        for (error, class) in cases {
            assert_eq!(Retry::of(&error, callee), class, "{error}");
        }
        let other = Principal::from_slice(&[2]);
        assert_eq!(
            Retry::of(&rejected(RejectCode::CanisterError as u32, &stopped), other),
            Retry::IfIdempotent
        );
    }

    #[test]
    fn the_longest_wait_and_the_total_add_up_the_doublings() {
        let b = |max_attempts, first_ms| Backoff { max_attempts, first: Duration::from_millis(first_ms) };
        let p = b(5, 100);
        assert_eq!((p.longest_ms(), p.total_ms()), (800, 1_500));
        assert_eq!(p.longest(), p.delay(5));
        assert_eq!(p.total(), (2..=5).map(|a| p.delay(a)).sum::<Duration>());
        assert_eq!((b(1, 100).longest(), b(1, 100).total()), (Duration::ZERO, Duration::ZERO));
        // Past 20 doublings the wait stays put, as delay has it.
        assert_eq!(b(24, 1).total_ms(), (1 << 21) - 1 + (1 << 20) * 2);
        let most = b(u32::MAX, u64::MAX);
        assert_eq!(most.longest_ms(), u128::from(u64::MAX) << 20);
        assert!(most.total_ms() > most.longest_ms());
        assert_eq!(most.longest(), Duration::MAX);
    }

    #[test]
    fn a_backoff_is_encoded_as_before_it_took_a_duration() {
        let backoff = Backoff { max_attempts: 3, first: Duration::from_millis(1_500) };
        let old = StoredBackoff { max_attempts: 3, first_ms: 1_500 };
        let bytes = candid::encode_one(backoff).unwrap();
        assert_eq!(bytes, candid::encode_one(old).unwrap());
        assert_eq!(candid::decode_one::<Backoff>(&bytes).unwrap(), backoff);
    }

    #[test]
    fn the_caps_are_four_days_and_a_week_and_bind_at_the_largest_first_wait() {
        assert_eq!(
            (Backoff::MAX_ONE.as_millis(), Backoff::MAX_TOTAL.as_millis()),
            (345_600_000, 604_800_000)
        );
        // One retry: the one-wait cap binds; five attempts: the week's.
        assert_eq!(Backoff::largest_first(3), Duration::from_millis(172_800_000));
        for max_attempts in Backoff::MAX_ATTEMPTS {
            let largest = Backoff::largest_first(max_attempts);
            assert!(largest >= Duration::from_millis(1), "{max_attempts}");
            assert_eq!(Backoff { max_attempts, first: largest }.check(), Ok(()));
            let over = Backoff { max_attempts, first: largest + Duration::from_millis(1) };
            assert!(
                matches!(
                    over.check(),
                    Err(BackoffError::OneOverCap { .. } | BackoffError::TotalOverCap { .. })
                ),
                "{max_attempts}"
            );
        }
        let ms = |first_ms| Duration::from_millis(first_ms);
        assert_eq!(Backoff { max_attempts: 1, first: ms(1) }.check(), Err(BackoffError::Attempts(1)));
        assert_eq!(Backoff { max_attempts: 21, first: ms(1) }.check(), Err(BackoffError::Attempts(21)));
        let sub_ms = Backoff { max_attempts: 2, first: Duration::from_micros(999) };
        assert_eq!(sub_ms.check(), Err(BackoffError::FirstUnderOneMs));
    }

    #[test]
    fn each_class_allows_a_retry_only_as_its_name_says() {
        let classes = [Retry::Always, Retry::IfIdempotent, Retry::Never];
        assert_eq!(classes.map(|class| class.allows(true)), [true, true, false]);
        assert_eq!(classes.map(|class| class.allows(false)), [true, false, false]);
    }

    #[test]
    fn a_stopping_callee_is_named_as_a_stopped_one_is() {
        let callee = Principal::from_slice(&[1]);
        assert!(names_stopped_callee(&format!("Canister {callee} is stopping"), callee));
        assert!(!names_stopped_callee("Canister trapped", callee));
    }

    #[test]
    fn a_refused_backoff_says_what_to_pass() {
        let too_long = Backoff { max_attempts: 20, first: Duration::from_secs(60 * 60) };
        let err = too_long.check().unwrap_err().to_string();
        assert!(err.contains("pass first = 1.153s or less"), "{err}");
        let err = Backoff { max_attempts: 1, first: Duration::from_secs(1) }.check().unwrap_err();
        assert_eq!(err.to_string(), "max_attempts = 1: allowed are 2 to 20");
        let refused = Backoff { max_attempts: 20, first: Duration::MAX };
        assert_eq!(refused.delay(20), Duration::MAX, "saturates rather than overflows");
    }
}
