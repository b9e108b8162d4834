//! What a round stands for: PocketIC's (a message to another subnet is
//! inducted at the next round, time moves 1 ns a round) or mainnet's (each
//! message to another subnet travels a few rounds, and a round lasts about
//! a second), so that rounds can be read as mainnet seconds.

use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;

pub use sim::MAINNET_XNET_LATENCY_ROUNDS;

/// About one block a second on application subnets (the same threads; less
/// after the notarization-delay reductions of forum thread 35956).
pub const MAINNET_ROUND_SECONDS: f64 = 1.0;

/// How far IC time moves per round, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct TimeStep(pub u64);

impl TimeStep {
    /// PocketIC's own: 1 ns per round.
    pub const POCKET_IC: TimeStep = TimeStep(1);
    /// Mainnet-like: about a second per round.
    pub const ONE_SECOND: TimeStep = TimeStep(1_000_000_000);
    /// The largest step the harness takes: an hour of IC time per round.
    pub const MAX: TimeStep = TimeStep(3_600 * 1_000_000_000);
}

/// Which rounds a run counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileName {
    /// PocketIC's rounds: a cross-subnet round trip costs one tick.
    PocketIc,
    /// Mainnet's: every cross-subnet hop takes --xnet-latency-rounds, a round --round-seconds.
    Mainnet,
}

/// The profile options of a command.
#[derive(Clone, Debug, Args)]
pub struct ProfileArgs {
    /// Whose rounds: PocketIC's, or mainnet's (the simulator's, in process or through --pocket-ic-url).
    #[arg(long, value_enum, default_value_t = ProfileName::PocketIc)]
    pub profile: ProfileName,

    /// With --profile mainnet: rounds from sending a message to another subnet to its induction [default: 2].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub xnet_latency_rounds: Option<u64>,

    /// With --profile mainnet: how long a round lasts, in seconds [default: 1].
    #[arg(long, value_parser = round_seconds)]
    pub round_seconds: Option<f64>,
}

fn round_seconds(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.001..=60.0).contains(&s) => Ok(s),
        _ => Err(format!("{text} is not a round duration between 0.001 and 60 seconds")),
    }
}

/// A profile, resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Profile {
    PocketIc,
    Mainnet { xnet_latency_rounds: u64, round_seconds: f64 },
}

impl Profile {
    /// Mainnet with the published defaults.
    pub const MAINNET: Profile = Profile::Mainnet {
        xnet_latency_rounds: MAINNET_XNET_LATENCY_ROUNDS,
        round_seconds: MAINNET_ROUND_SECONDS,
    };

    /// IC time per round.
    pub fn time_step(self) -> TimeStep {
        match self {
            Profile::PocketIc => TimeStep::POCKET_IC,
            Profile::Mainnet { round_seconds, .. } => TimeStep((round_seconds * 1e9) as u64),
        }
    }

    pub fn xnet_latency_rounds(self) -> u64 {
        match self {
            Profile::PocketIc => 0,
            Profile::Mainnet { xnet_latency_rounds, .. } => xnet_latency_rounds,
        }
    }

    /// What `rounds` would take on mainnet, under the mainnet profile.
    pub fn mainnet_seconds(self, rounds: u64) -> Option<f64> {
        match self {
            Profile::PocketIc => None,
            Profile::Mainnet { round_seconds, .. } => Some(rounds as f64 * round_seconds),
        }
    }
}

impl ProfileArgs {
    pub fn profile(&self) -> Result<Profile> {
        Ok(match self.profile {
            ProfileName::PocketIc if self.xnet_latency_rounds.is_some() || self.round_seconds.is_some() => {
                bail!("--xnet-latency-rounds and --round-seconds apply to --profile mainnet")
            }
            ProfileName::PocketIc => Profile::PocketIc,
            ProfileName::Mainnet => Profile::Mainnet {
                xnet_latency_rounds: self.xnet_latency_rounds.unwrap_or(MAINNET_XNET_LATENCY_ROUNDS),
                round_seconds: self.round_seconds.unwrap_or(MAINNET_ROUND_SECONDS),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mainnet_seconds_are_rounds_times_the_round_duration_and_only_on_mainnet() {
        let mainnet = Profile::Mainnet { xnet_latency_rounds: 2, round_seconds: 0.5 };
        assert_eq!(mainnet.mainnet_seconds(361), Some(180.5));
        assert_eq!(Profile::PocketIc.mainnet_seconds(361), None);
        assert_eq!(mainnet.time_step(), TimeStep(500_000_000));
        assert_eq!((Profile::PocketIc.xnet_latency_rounds(), Profile::MAINNET.xnet_latency_rounds()), (0, 2));
    }
}
