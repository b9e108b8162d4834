//! A call the IC refused, as the replica reports it: the error code a user
//! sees, the reject code a canister sees (the error code's leading digit, so
//! the two never disagree) and a message. The simulator makes every reject
//! with its error code, and the IC model and every adapter pass the same
//! type on; each adapter converts it to its wire format at its edge.

use serde::{Deserialize, Serialize};
use std::fmt;
use strum::IntoEnumIterator;

pub use ic_error_types::{ErrorCode, RejectCode};

/// A refused call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reject {
    /// Why, for programs: the replica's error code; it implies the reject
    /// code ([`Reject::code`]).
    pub error_code: ErrorCode,
    /// Why, for people.
    pub message: String,
}

impl Reject {
    /// A reject with the replica's `error_code`.
    pub fn new(error_code: ErrorCode, message: impl Into<String>) -> Self {
        Self { error_code, message: message.into() }
    }

    /// The interface specification's reject code: on the IC an error
    /// code's leading digit is its reject code.
    pub fn code(&self) -> RejectCode {
        RejectCode::from(self.error_code)
    }

    /// A reject only a canister sees, which gets its reject code and
    /// message: the error code is one of `code`'s own, which never leaves
    /// the IC (an outcall's failure, for one).
    pub fn of_code(code: RejectCode, message: impl Into<String>) -> Self {
        let error_code = ErrorCode::iter()
            .find(|&error_code| RejectCode::from(error_code) == code)
            .expect("every reject code has error codes");
        Self::new(error_code, message)
    }

    /// A call to a canister that does not exist.
    pub fn canister_not_found(canister: impl fmt::Display) -> Self {
        Self::new(ErrorCode::CanisterNotFound, format!("Canister {canister} not found"))
    }
}

/// The error code numbered `number` (301 for `IC0301`), if this version of
/// `ic-error-types` knows it: for an adapter that reads error codes from
/// another crate's copy of the enum.
pub fn error_code(number: u64) -> Option<ErrorCode> {
    ErrorCode::iter().find(|&code| code as u64 == number)
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = self.code();
        write!(f, "{code} ({}): {}", code as u32, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reject_code_is_the_error_codes_leading_digit() {
        for error_code in ErrorCode::iter() {
            let reject = Reject::new(error_code, "");
            assert_eq!(reject.code() as u64, error_code as u64 / 100, "{error_code}");
        }
        let reject = Reject::new(ErrorCode::CanisterInvalidController, "no");
        assert_eq!(
            (reject.code(), reject.error_code.to_string()),
            (RejectCode::CanisterError, "IC0512".into())
        );
        assert_eq!(Reject::canister_not_found("x").code(), RejectCode::DestinationInvalid);
        assert_eq!(Reject::new(ErrorCode::CanisterQueueFull, "").code(), RejectCode::SysTransient);
    }

    #[test]
    fn an_error_code_is_found_by_its_number() {
        assert_eq!(error_code(536), Some(ErrorCode::CanisterMethodNotFound));
        assert_eq!(error_code(401), None);
    }

    #[test]
    fn it_reads_as_the_simulators_rejects_always_did() {
        let reject = Reject::new(ErrorCode::CanisterCalledTrap, "oops");
        assert_eq!(reject.to_string(), "CANISTER_ERROR (5): oops");
    }
}
