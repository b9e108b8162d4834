//! This project's own endpoints beside PocketIC's, under
//! `/instances/<id>/_/`: what only the simulator models. PocketIC's clients
//! never call them; `ic-sim-client` (`sim_client/`) does, and its `api`
//! module holds their JSON bodies. `latency`: how many rounds a message
//! takes to another subnet, by a named profile or a number, at any time.
//! `faults`: seeded faults, turned on, reported on, and turned off, as
//! `ic_model::Engine` reads them for every path.

use ic_sim_client::api::{Latency, NamedProfile, Profile, SetLatency};
use sim::Sim;

/// The most rounds a message may take between subnets: beyond this a test
/// only waits longer.
pub const MAX_XNET_LATENCY_ROUNDS: u64 = 1_000;

/// The simulator's latency, as `GET /instances/<id>/_/latency` answers it.
pub fn latency(sim: &Sim) -> Latency {
    let rounds = sim.config().xnet_latency_rounds;
    let profile = match rounds {
        0 => Profile::PocketIc,
        sim::MAINNET_XNET_LATENCY_ROUNDS => Profile::Mainnet,
        _ => Profile::Custom,
    };
    Latency { profile, xnet_latency_rounds: rounds }
}

/// Sets the simulator's latency, or says why not (and changes nothing).
pub fn set_latency(sim: &mut Sim, set: SetLatency) -> Result<Latency, String> {
    let rounds = match set {
        SetLatency::Profile { profile: NamedProfile::PocketIc } => 0,
        SetLatency::Profile { profile: NamedProfile::Mainnet } => sim::MAINNET_XNET_LATENCY_ROUNDS,
        SetLatency::Rounds { xnet_latency_rounds } if xnet_latency_rounds > MAX_XNET_LATENCY_ROUNDS => {
            return Err(format!(
                "xnet_latency_rounds {xnet_latency_rounds} is more than {MAX_XNET_LATENCY_ROUNDS}"
            ));
        }
        SetLatency::Rounds { xnet_latency_rounds } => xnet_latency_rounds,
    };
    sim.set_xnet_latency_rounds(rounds);
    Ok(latency(sim))
}
