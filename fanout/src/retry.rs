//! When a failed call may be tried again ([`Retry`], from ic-cdk's
//! `CallFailed`), and how long to wait first ([`Backoff`]: doubling, with a
//! cap on one wait and on all of them).

use candid::{CandidType, Deserialize, Principal};
use ic_cdk::call::{CallFailed, RejectCode};
use std::fmt;
use std::ops::RangeInclusive;

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
    ///
    /// ```
    /// use ic_cdk::call::{CallFailed, CallRejected, RejectCode};
    /// # use ic_fanout::retry::Retry;
    /// let callee = candid::Principal::from_slice(&[1]);
    /// let canister_error = |message: String| {
    ///     CallFailed::CallRejected(CallRejected::with_rejection(RejectCode::CanisterError as u32, message))
    /// };
    /// let stopped = canister_error(format!("Canister {callee} is stopped"));
    /// assert_eq!(Retry::of(&stopped, callee), Retry::Always, "it never reached the callee");
    /// assert_eq!(Retry::of(&canister_error("trapped".into()), callee), Retry::IfIdempotent);
    /// ```
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
    ///
    /// ```
    /// # use ic_fanout::retry::Retry;
    /// let classes = [Retry::Always, Retry::IfIdempotent, Retry::Never];
    /// assert_eq!(classes.map(|class| class.allows(true)), [true, true, false]);
    /// assert_eq!(classes.map(|class| class.allows(false)), [true, false, false]);
    /// ```
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
///
/// ```
/// let callee = candid::Principal::from_slice(&[1]);
/// let message = format!("Canister {callee} is stopping");
/// assert!(ic_fanout::retry::names_stopped_callee(&message, callee));
/// assert!(!ic_fanout::retry::names_stopped_callee("Canister trapped", callee));
/// ```
pub fn names_stopped_callee(message: &str, callee: Principal) -> bool {
    message
        .strip_prefix("Canister ")
        .and_then(|rest| rest.strip_suffix(" is stopped").or_else(|| rest.strip_suffix(" is stopping")))
        .is_some_and(|id| id == callee.to_text())
}

/// Waits between attempts: `first_ms` before the first retry, doubling with
/// every further attempt, for at most `max_attempts` attempts in all.
///
/// Capped at [`Backoff::MAX_ONE_MS`] (4 days) for one wait and
/// [`Backoff::MAX_TOTAL_MS`] (7 days) for all of them added up: without
/// caps, 20 attempts from a 1-hour backoff wait about 60 years.
///
/// ```
/// use ic_fanout::retry::Backoff;
///
/// let backoff = Backoff { max_attempts: 4, first_ms: 100 };
/// assert_eq!([2, 3, 4].map(|attempt| backoff.delay_ns(attempt)), [100_000_000, 200_000_000, 400_000_000]);
/// assert_eq!((backoff.longest_ms(), backoff.total_ms()), (400, 700));
/// assert!(backoff.check().is_ok());
/// ```
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    /// The wait before the first retry.
    pub first_ms: u64,
}

/// A day in milliseconds.
const DAY_MS: u64 = 24 * 60 * 60 * 1000;

impl Backoff {
    /// What `max_attempts` may be.
    ///
    /// ```
    /// # use ic_fanout::retry::Backoff;
    /// assert_eq!(Backoff::MAX_ATTEMPTS, 2..=20);
    /// assert!(Backoff { max_attempts: 20, first_ms: 1 }.check().is_ok());
    /// assert!(Backoff { max_attempts: 21, first_ms: 1 }.check().is_err());
    /// ```
    pub const MAX_ATTEMPTS: RangeInclusive<u32> = 2..=20;
    /// The cap on one wait, the last and longest: 4 days. Doubling waits
    /// add up to less than twice the last, so a cap under 3.5 days would
    /// leave the week's cap nothing to refuse; at 4 days either can bind.
    ///
    /// ```
    /// # use ic_fanout::retry::{Backoff, BackoffError};
    /// let two_days = 2 * 24 * 60 * 60 * 1000;
    /// assert_eq!(Backoff::MAX_ONE_MS, 2 * two_days);
    /// let over = Backoff { max_attempts: 3, first_ms: two_days + 1 }; // waits 2 days, then just over 4
    /// assert!(matches!(over.check(), Err(BackoffError::OneOverCap { .. })));
    /// ```
    pub const MAX_ONE_MS: u64 = 4 * DAY_MS;
    /// The cap on every wait added up: 7 days.
    ///
    /// ```
    /// # use ic_fanout::retry::{Backoff, BackoffError};
    /// let day = 24 * 60 * 60 * 1000;
    /// assert_eq!(Backoff::MAX_TOTAL_MS, 7 * day);
    /// assert!(Backoff { max_attempts: 4, first_ms: day }.check().is_ok(), "1 + 2 + 4 days: just within");
    /// let over = Backoff { max_attempts: 5, first_ms: day / 2 }; // 0.5 + 1 + 2 + 4 days
    /// assert!(matches!(over.check(), Err(BackoffError::TotalOverCap { .. })));
    /// ```
    pub const MAX_TOTAL_MS: u64 = 7 * DAY_MS;

    /// The wait before attempt number `attempt` (2 for the first retry).
    ///
    /// ```
    /// # use ic_fanout::retry::Backoff;
    /// let backoff = Backoff { max_attempts: 3, first_ms: 250 };
    /// assert_eq!(backoff.delay_ns(3), 500_000_000, "twice first_ms, in nanoseconds");
    /// let refused = Backoff { max_attempts: 20, first_ms: u64::MAX };
    /// assert_eq!(refused.delay_ns(20), u64::MAX, "saturates rather than overflows");
    /// ```
    pub fn delay_ns(&self, attempt: u32) -> u64 {
        self.first_ms.saturating_mul(1_000_000).saturating_mul(1 << Self::doublings(attempt))
    }

    /// The last wait, before attempt `max_attempts`: the longest (0 with no
    /// retry). In u128, which holds it for any backoff, even a refused one.
    ///
    /// ```
    /// # use ic_fanout::retry::Backoff;
    /// assert_eq!(Backoff { max_attempts: 1, first_ms: 500 }.longest_ms(), 0, "no retry, no wait");
    /// let refused = Backoff { max_attempts: 20, first_ms: u64::MAX };
    /// assert_eq!(refused.longest_ms(), u128::from(u64::MAX) << 18, "18 doublings, past u64");
    /// ```
    pub fn longest_ms(&self) -> u128 {
        if self.max_attempts < 2 {
            return 0;
        }
        u128::from(self.first_ms) << Self::doublings(self.max_attempts)
    }

    /// Every wait added up.
    ///
    /// ```
    /// # use ic_fanout::retry::Backoff;
    /// let backoff = Backoff { max_attempts: 4, first_ms: 1_000 };
    /// assert_eq!(backoff.total_ms(), 1_000 + 2_000 + 4_000, "three retries");
    /// assert_eq!(Backoff { max_attempts: 1, ..backoff }.total_ms(), 0, "none");
    /// ```
    pub fn total_ms(&self) -> u128 {
        let retries = u128::from(self.max_attempts.saturating_sub(1));
        if retries == 0 {
            return 0;
        }
        // The waits double `d` times, 1 + 2 + ... + 2^d = 2^(d + 1) - 1
        // times the first; any later ones stay at 2^d times it.
        let d = Self::doublings(self.max_attempts);
        let doubling = (1u128 << (d + 1)) - 1;
        let flat = (retries - u128::from(d) - 1) << d;
        u128::from(self.first_ms) * (doubling + flat)
    }

    /// The largest `first_ms` that keeps `max_attempts` attempts within both
    /// caps: what to pass instead when a backoff is over one.
    ///
    /// ```
    /// # use ic_fanout::retry::Backoff;
    /// assert_eq!(Backoff::largest_first_ms(2), Backoff::MAX_ONE_MS);
    /// assert_eq!(Backoff::largest_first_ms(5), 40_320_000); // the week binds
    /// ```
    pub fn largest_first_ms(max_attempts: u32) -> u64 {
        let unit = Self { max_attempts, first_ms: 1 };
        let largest = (u128::from(Self::MAX_ONE_MS) / unit.longest_ms().max(1))
            .min(u128::from(Self::MAX_TOTAL_MS) / unit.total_ms().max(1));
        // At most MAX_ONE_MS, so it fits.
        largest as u64
    }

    /// Checks the attempts and both caps, then that the first wait is not 0.
    ///
    /// ```
    /// # use ic_fanout::retry::{Backoff, BackoffError};
    /// let too_long = Backoff { max_attempts: 20, first_ms: 60 * 60 * 1000 };
    /// let err = too_long.check().unwrap_err();
    /// assert!(matches!(err, BackoffError::OneOverCap { .. }));
    /// assert!(err.to_string().contains("pass first_ms = 1153 or less"), "{err}");
    /// ```
    pub fn check(&self) -> Result<(), BackoffError> {
        let Self { max_attempts, first_ms } = *self;
        if !Self::MAX_ATTEMPTS.contains(&max_attempts) {
            return Err(BackoffError::Attempts(max_attempts));
        }
        // The caps before zero: their messages say what to pass.
        let longest_ms = self.longest_ms();
        if longest_ms > u128::from(Self::MAX_ONE_MS) {
            return Err(BackoffError::OneOverCap { backoff: *self, longest_ms });
        }
        let total_ms = self.total_ms();
        if total_ms > u128::from(Self::MAX_TOTAL_MS) {
            return Err(BackoffError::TotalOverCap { backoff: *self, total_ms });
        }
        if first_ms == 0 {
            return Err(BackoffError::FirstZero);
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
///
/// ```
/// use ic_fanout::retry::{Backoff, BackoffError};
/// let err = Backoff { max_attempts: 1, first_ms: 1_000 }.check().unwrap_err();
/// assert_eq!(err, BackoffError::Attempts(1));
/// assert_eq!(err.to_string(), "max_attempts = 1: allowed are 2 to 20");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackoffError {
    /// `max_attempts` is outside [`Backoff::MAX_ATTEMPTS`].
    Attempts(u32),
    /// The last wait is over [`Backoff::MAX_ONE_MS`].
    OneOverCap {
        /// The backoff refused.
        backoff: Backoff,
        /// Its last wait.
        longest_ms: u128,
    },
    /// The waits add up to more than [`Backoff::MAX_TOTAL_MS`].
    TotalOverCap {
        /// The backoff refused.
        backoff: Backoff,
        /// Its waits added up.
        total_ms: u128,
    },
    /// `first_ms` is 0: a retry would come at once, not after a wait.
    FirstZero,
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
            Self::OneOverCap { backoff: Backoff { max_attempts, first_ms }, longest_ms } => write!(
                f,
                "first_ms = {first_ms} doubled up to attempt {max_attempts} makes a last wait of {longest_ms} ms, \
                 over the cap of {} ms (4 days) on one wait: pass first_ms = {} or less with max_attempts = \
                 {max_attempts}, or fewer attempts",
                Backoff::MAX_ONE_MS,
                Backoff::largest_first_ms(max_attempts)
            ),
            Self::TotalOverCap { backoff: Backoff { max_attempts, first_ms }, total_ms } => write!(
                f,
                "max_attempts = {max_attempts} with first_ms = {first_ms} waits {total_ms} ms in all, over the cap \
                 of {} ms (7 days) on a whole schedule: pass first_ms = {} or less with max_attempts = \
                 {max_attempts}, or fewer attempts",
                Backoff::MAX_TOTAL_MS,
                Backoff::largest_first_ms(max_attempts)
            ),
            Self::FirstZero => write!(f, "first_ms = 0: the first wait must be at least 1 ms"),
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
        let b = |max_attempts, first_ms| Backoff { max_attempts, first_ms };
        let p = b(5, 100);
        assert_eq!((p.longest_ms(), p.total_ms()), (800, 1_500));
        assert_eq!(p.longest_ms(), u128::from(p.delay_ns(5) / 1_000_000));
        assert_eq!(p.total_ms(), (2..=5).map(|a| u128::from(p.delay_ns(a) / 1_000_000)).sum::<u128>());
        assert_eq!((b(1, 100).longest_ms(), b(1, 100).total_ms()), (0, 0));
        // Past 20 doublings the wait stays put, as delay_ns has it.
        assert_eq!(b(24, 1).total_ms(), (1 << 21) - 1 + (1 << 20) * 2);
        let most = b(u32::MAX, u64::MAX);
        assert_eq!(most.longest_ms(), u128::from(u64::MAX) << 20);
        assert!(most.total_ms() > most.longest_ms());
    }

    #[test]
    fn the_caps_are_four_days_and_a_week_and_bind_at_the_largest_first_wait() {
        assert_eq!((Backoff::MAX_ONE_MS, Backoff::MAX_TOTAL_MS), (345_600_000, 604_800_000));
        // One retry: the one-wait cap binds; five attempts: the week's.
        assert_eq!(Backoff::largest_first_ms(3), 172_800_000);
        for max_attempts in Backoff::MAX_ATTEMPTS {
            let largest = Backoff::largest_first_ms(max_attempts);
            assert!(largest >= 1, "{max_attempts}");
            assert_eq!(Backoff { max_attempts, first_ms: largest }.check(), Ok(()));
            let over = Backoff { max_attempts, first_ms: largest + 1 };
            assert!(
                matches!(
                    over.check(),
                    Err(BackoffError::OneOverCap { .. } | BackoffError::TotalOverCap { .. })
                ),
                "{max_attempts}"
            );
        }
        assert_eq!(Backoff { max_attempts: 1, first_ms: 1 }.check(), Err(BackoffError::Attempts(1)));
        assert_eq!(Backoff { max_attempts: 21, first_ms: 1 }.check(), Err(BackoffError::Attempts(21)));
        assert_eq!(Backoff { max_attempts: 2, first_ms: 0 }.check(), Err(BackoffError::FirstZero));
    }
}
