//! A call the IC refused, as the IC reports it: the reject code a canister
//! sees and the error code a user sees.

use ic_error_types::{ErrorCode, RejectCode};
use serde::{Deserialize, Serialize};

/// A refused call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reject {
    /// The interface specification's reject code.
    pub code: RejectCode,
    /// The replica's error code.
    pub error_code: ErrorCode,
    /// Why, for people.
    pub message: String,
}

impl Reject {
    /// A reject with the reject code `error_code` belongs to: on the IC an
    /// error code's leading digit is its reject code.
    pub fn new(error_code: ErrorCode, message: impl Into<String>) -> Self {
        let code = RejectCode::try_from(error_code as u64 / 100).unwrap_or(RejectCode::CanisterError);
        Self { code, error_code, message: message.into() }
    }

    /// A call to a canister that does not exist.
    pub fn canister_not_found(canister: candid::Principal) -> Self {
        Self::new(ErrorCode::CanisterNotFound, format!("Canister {canister} not found"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reject_code_is_the_error_codes_leading_digit() {
        let reject = Reject::new(ErrorCode::CanisterInvalidController, "no");
        assert_eq!(
            (reject.code, reject.error_code.to_string()),
            (RejectCode::CanisterError, "IC0512".into())
        );
        let reject = Reject::canister_not_found(candid::Principal::anonymous());
        assert_eq!(reject.code, RejectCode::DestinationInvalid);
        assert_eq!(Reject::new(ErrorCode::CanisterQueueFull, "").code, RejectCode::SysTransient);
    }
}
