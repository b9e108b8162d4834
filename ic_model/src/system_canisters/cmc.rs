//! The cycles minting canister's stand-in: where icp-cli puts a canister.

use super::{CYCLES_MINTING_CANISTER, Host, Reject, reply};

/// A call of `kind` (query or update: the same answer) to the cycles
/// minting canister.
pub fn answer(host: &dyn Host, kind: &str, method: &str) -> Result<Vec<u8>, Reject> {
    match method {
        // The first subnet only, so that where icp-cli puts a canister does
        // not depend on its random choice; `--subnet` chooses another.
        "get_default_subnets" => reply(vec![host.subnets()[0]]),
        other => Err(Reject::no_method(CYCLES_MINTING_CANISTER, kind, other)),
    }
}
