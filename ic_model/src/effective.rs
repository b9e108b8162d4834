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

/// Why no subnet takes a message routed by an [`Effective`] principal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoSubnet {
    /// The network has no subnet at all.
    InTheNetwork,
    /// No subnet has this id.
    WithId(Principal),
    /// No subnet's ranges hold this canister id.
    Hosting(Principal),
}

impl std::fmt::Display for NoSubnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InTheNetwork => write!(f, "the network has no subnet"),
            Self::WithId(id) => write!(f, "no subnet has the id {id}"),
            Self::Hosting(id) => write!(f, "no subnet hosts the canister id {id}"),
        }
    }
}
