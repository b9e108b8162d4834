//! This project's own endpoints beside PocketIC's, under
//! `/instances/<id>/_/`: what only the simulator models. PocketIC's clients
//! never call them; a test reaches them with any HTTP client (or
//! `multi_subnet`'s own). `latency`: how many rounds a message takes to
//! another subnet, by a named profile or a number, at any time.

use serde::{Deserialize, Serialize};

use crate::errors::ApiError;
use crate::instance::Instance;

/// The most rounds a message may take between subnets: beyond this a test
/// only waits longer.
pub const MAX_XNET_LATENCY_ROUNDS: u64 = 1_000;

/// A latency profile by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Inducted at the next round: PocketIC's rounds (the default).
    PocketIc,
    /// `sim::MAINNET_XNET_LATENCY_ROUNDS` rounds each way.
    Mainnet,
    /// Any other number of rounds.
    Custom,
}

/// `POST /instances/<id>/_/latency`: a named profile or a number of rounds.
#[derive(Debug, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum SetLatency {
    Profile { profile: Profile },
    Rounds { xnet_latency_rounds: u64 },
}

/// What `GET /instances/<id>/_/latency` answers.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    pub profile: Profile,
    pub xnet_latency_rounds: u64,
}

pub fn latency(instance: &Instance) -> Latency {
    let rounds = instance.engine.config().xnet_latency_rounds;
    let profile = match rounds {
        0 => Profile::PocketIc,
        sim::MAINNET_XNET_LATENCY_ROUNDS => Profile::Mainnet,
        _ => Profile::Custom,
    };
    Latency { profile, xnet_latency_rounds: rounds }
}

pub fn set_latency(instance: &mut Instance, set: SetLatency) -> Result<Latency, ApiError> {
    let rounds = match set {
        SetLatency::Profile { profile: Profile::PocketIc } => 0,
        SetLatency::Profile { profile: Profile::Mainnet } => sim::MAINNET_XNET_LATENCY_ROUNDS,
        SetLatency::Profile { profile: Profile::Custom } => {
            return Err(ApiError::bad_request("a custom latency is given as {\"xnet_latency_rounds\": N}"));
        }
        SetLatency::Rounds { xnet_latency_rounds } if xnet_latency_rounds > MAX_XNET_LATENCY_ROUNDS => {
            return Err(ApiError::bad_request(format!(
                "xnet_latency_rounds {xnet_latency_rounds} is more than {MAX_XNET_LATENCY_ROUNDS}"
            )));
        }
        SetLatency::Rounds { xnet_latency_rounds } => xnet_latency_rounds,
    };
    instance.engine.set_xnet_latency_rounds(rounds);
    Ok(latency(instance))
}
