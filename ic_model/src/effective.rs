//! How an ingress message is routed ([`Effective`]): the IC and its
//! management canister both read it.

use candid::Principal;
use serde::{Deserialize, Serialize};

/// How an ingress message is routed: by the effective canister id the
/// request names, or, for PocketIC's provisional creation, by a subnet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Effective {
    /// None named: the first subnet.
    None,
    /// A subnet, by id.
    Subnet(Principal),
    /// The subnet that hosts this canister id.
    Canister(Principal),
}
