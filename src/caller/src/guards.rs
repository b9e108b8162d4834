//! The caller's rules on who may do what, and with which arguments. Plain
//! functions of their inputs, so they are unit-tested natively; `lib.rs` feeds
//! them what the system API says.

use candid::{CandidType, Deserialize, Principal};
use interface::MAX_CALLS;

use crate::plan::PlanError;

/// The canister environment variable that icp-cli sets to the callee's id.
pub const CALLEE_ENV_VAR: &str = "PUBLIC_CANISTER_ID:callee";

/// A number of calls that is within [`MAX_CALLS`].
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallCount(u64);

impl CallCount {
    pub fn new(n: u64) -> Result<Self, PlanError> {
        if n > MAX_CALLS {
            return Err(PlanError::TooManyCalls(n));
        }
        Ok(Self(n))
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

/// Configuration and cycle-spending endpoints are for controllers only.
pub fn require_controller(caller: Principal, caller_is_controller: bool) -> Result<(), String> {
    if caller_is_controller {
        Ok(())
    } else {
        Err(format!("only a controller of this canister may call this method; {caller} is not one"))
    }
}

/// A callee must be some other canister: calling ourselves would measure
/// nothing of inter-canister messaging, and a principal that is no canister
/// id (the management canister, the anonymous principal, a user's
/// self-authenticating one) can never answer a `ping`: every plan would
/// fail all its calls with `DestinationInvalid`.
pub fn check_callee(callee: Principal, this_canister: Principal) -> Result<Principal, PlanError> {
    if callee == this_canister {
        return Err(PlanError::CallerAsCallee(callee));
    }
    // The class is the id's last byte (the interface specification's
    // "Principals"): canister ids are opaque ids, class 1.
    let not_a_canister = match callee.as_slice() {
        [] => Some("the management canister"),
        [0x04] => Some("the anonymous principal"),
        [.., 0x02] => Some("a self-authenticating (user) principal"),
        [.., 0x01] => None,
        _ => Some("not a canister id"),
    };
    match not_a_canister {
        Some(what) => Err(PlanError::NotACanister { callee, what }),
        None => Ok(callee),
    }
}

/// Which callee to call: the one stored by `setup_callee` wins; otherwise the
/// one icp-cli put in [`CALLEE_ENV_VAR`]. `from_env` is only consulted when
/// nothing is stored.
pub fn resolve_callee(
    stored: Option<Principal>,
    from_env: impl FnOnce() -> Option<String>,
) -> Result<Principal, PlanError> {
    if let Some(callee) = stored {
        return Ok(callee);
    }
    match from_env() {
        Some(text) => Principal::from_text(text.trim())
            .map_err(|e| PlanError::CalleeEnvVarNotAPrincipal { reason: e.to_string(), text }),
        None => Err(PlanError::CalleeNotSet),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A canister id (an opaque id, class 1) numbered `byte`.
    fn principal(byte: u8) -> Principal {
        let mut id = [byte; 10];
        id[9] = 0x01;
        Principal::from_slice(&id)
    }

    #[test]
    fn call_count_accepts_up_to_the_maximum() {
        assert_eq!(CallCount::new(0).unwrap().get(), 0);
        assert_eq!(CallCount::new(MAX_CALLS).unwrap().get(), MAX_CALLS);
    }

    #[test]
    fn call_count_beyond_the_maximum_names_the_maximum() {
        let err = CallCount::new(MAX_CALLS + 1).unwrap_err().to_string();
        assert!(err.contains("10000"), "{err}");
        assert!(err.contains("10001"), "{err}");
    }

    #[test]
    fn only_controllers_pass() {
        assert!(require_controller(principal(1), true).is_ok());
        let err = require_controller(principal(1), false).unwrap_err();
        assert!(err.contains("only a controller"), "{err}");
        assert!(err.contains(&principal(1).to_text()), "{err}");
    }

    #[test]
    fn the_caller_itself_is_refused_as_callee() {
        assert_eq!(check_callee(principal(2), principal(1)), Ok(principal(2)));
        assert!(check_callee(principal(1), principal(1)).unwrap_err().to_string().contains("itself"));
    }

    #[test]
    fn only_a_canister_id_can_be_a_callee() {
        let user = Principal::self_authenticating(b"a user's public key");
        let derived = Principal::from_slice(&[7, 7, 0x03]);
        for (callee, what) in [
            (Principal::management_canister(), "the management canister"),
            (Principal::anonymous(), "the anonymous principal"),
            (user, "a self-authenticating (user) principal"),
            (derived, "not a canister id"),
        ] {
            let err = check_callee(callee, principal(1)).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "{callee} is {what}, which can never be a callee: pass a canister id, such as the callee's"
                )
            );
        }
        let canister = Principal::from_text("rrkah-fqaaa-aaaaa-aaaaq-cai").unwrap();
        assert_eq!(check_callee(canister, principal(1)), Ok(canister));
    }

    #[test]
    fn stored_callee_wins_over_the_environment_which_is_not_read() {
        let resolved = resolve_callee(Some(principal(1)), || panic!("environment read"));
        assert_eq!(resolved, Ok(principal(1)));
    }

    #[test]
    fn environment_is_the_fallback() {
        let text = principal(3).to_text();
        assert_eq!(resolve_callee(None, || Some(text)), Ok(principal(3)));
    }

    #[test]
    fn neither_source_gives_the_documented_message() {
        assert_eq!(
            resolve_callee(None, || None).map_err(|e| e.to_string()),
            Err("callee not set: call setup_callee(principal) first".to_string())
        );
    }

    #[test]
    fn a_malformed_environment_value_is_reported() {
        let err = resolve_callee(None, || Some("not a principal".into())).unwrap_err().to_string();
        assert!(err.contains(CALLEE_ENV_VAR), "{err}");
    }
}
