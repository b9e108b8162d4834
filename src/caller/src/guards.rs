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
/// nothing of inter-canister messaging.
pub fn check_callee(callee: Principal, this_canister: Principal) -> Result<Principal, PlanError> {
    if callee == this_canister {
        return Err(PlanError::CallerAsCallee(callee));
    }
    Ok(callee)
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

    fn principal(byte: u8) -> Principal {
        Principal::from_slice(&[byte; 10])
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
