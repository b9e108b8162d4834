//! What a run reports: pings delivered, and the ones that failed, by kind.

use candid::{CandidType, Deserialize, Nat, Principal};
use ic_error_types::RejectCode;
use ic_fanout::retry::{Retry, names_stopped_callee};
use serde::Serialize;

/// Why pings failed: their call was not performed (`CallPerformFailed`,
/// `InsufficientLiquidCycleBalance`) or never made (`NotAttempted`), was
/// rejected (one kind per reject code, and `CalleeStopped`), or was answered
/// with something that is not the expected reply.
#[derive(CandidType, Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
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
    /// Every kind, in the order reports list them.
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
        Retry::from(self).allows(idempotent)
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
            Some(RejectCode::CanisterError) if names_stopped_callee(message, callee) => Self::CalleeStopped,
            Some(RejectCode::CanisterError) => Self::CanisterError,
            Some(RejectCode::SysUnknown) => Self::SysUnknown,
            None => Self::OtherReject,
        }
    }
}

/// The library's classes, which jobs retry by: see [`FailureKind::retryable`].
impl From<FailureKind> for Retry {
    fn from(kind: FailureKind) -> Self {
        use FailureKind::*;
        match kind {
            CallPerformFailed | SysTransient | NotAttempted | CalleeStopped => Retry::Always,
            SysUnknown | CanisterError | BadAcknowledgement => Retry::IfIdempotent,
            InsufficientLiquidCycleBalance
            | SysFatal
            | DestinationInvalid
            | CanisterReject
            | OtherReject
            | CandidDecodeFailed => Retry::Never,
        }
    }
}

/// Refused calls are the ones [`FailureKind::not_performed`] names.
impl ic_fanout::Refusal for FailureKind {
    fn is_refusal(&self) -> bool {
        self.not_performed()
    }
}

/// Pings that failed in one way.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
pub struct FailureCount {
    pub kind: FailureKind,
    /// Pings, not calls: a failed batched call counts every ping it carried.
    pub count: u64,
}

/// What a run of a plan did.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // Documented in the .did: see the crate doc.
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

impl Report {
    /// Pings that failed as `kind`.
    pub fn failed(&self, kind: FailureKind) -> u64 {
        self.failures.iter().find(|f| f.kind == kind).map_or(0, |f| f.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(byte: u8) -> Principal {
        Principal::from_slice(&[byte; 10])
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
}
