//! The JSON bodies of the extension endpoints under `/instances/<id>/_/`,
//! as the server reads and answers them.

use base64::prelude::{BASE64_STANDARD, Engine as _};
use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A latency profile to ask for, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NamedProfile {
    /// A message to another subnet is inducted at the next round, as
    /// PocketIC inducts it (an instance's default).
    PocketIc,
    /// Mainnet's rounds between subnets.
    Mainnet,
}

/// The profile an instance's latency is, as [`Latency`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// PocketIC's: the next round.
    PocketIc,
    /// Mainnet's rounds between subnets.
    Mainnet,
    /// Some other number of rounds.
    Custom,
    /// A profile a newer server names that this client does not know.
    #[serde(other)]
    Unknown,
}

/// What [`set_latency`](crate::SimulatorExt::set_latency) asks for:
/// `POST /instances/<id>/_/latency`'s body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum SetLatency {
    /// `{"profile": "mainnet"}` or `{"profile": "pocket-ic"}`.
    Profile {
        /// The profile.
        profile: NamedProfile,
    },
    /// `{"xnet_latency_rounds": N}`: rounds from sending a message to
    /// another subnet to its induction there (at most 1,000).
    Rounds {
        /// The rounds.
        xnet_latency_rounds: u64,
    },
}

impl SetLatency {
    /// Mainnet's rounds between subnets.
    pub const MAINNET: SetLatency = SetLatency::Profile { profile: NamedProfile::Mainnet };
    /// PocketIC's: the next round.
    pub const POCKET_IC: SetLatency = SetLatency::Profile { profile: NamedProfile::PocketIc };
}

/// An instance's latency: `GET /instances/<id>/_/latency`'s answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    /// The profile these rounds are, if named.
    pub profile: Profile,
    /// Rounds from sending a message to another subnet to its induction.
    pub xnet_latency_rounds: u64,
}

/// What goes wrong from now on, replacing what went wrong before:
/// `POST /instances/<id>/_/faults`'s body. Rounds count from the instance's
/// round when it arrives; the same spec and seed give the same run.
///
/// ```
/// # use candid::Principal;
/// use ic_sim_client::api::{Action, FaultSpec};
/// let callee = Principal::from_slice(&[1]);
/// let spec = FaultSpec::seeded(7)
///     .trap_chance(callee, 0.1)
///     .drop_best_effort_responses(0.05)
///     .event(callee, 2, Action::Stop)
///     .event(callee, 6, Action::Start);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Seeds every random choice.
    #[serde(default)]
    pub seed: u64,
    /// Canisters whose update executions trap now and then.
    #[serde(default)]
    pub traps: Vec<TrapSpec>,
    /// The share of best-effort responses shed on their way (0 to 1): the
    /// caller gets `SYS_UNKNOWN`, as on the IC.
    #[serde(default)]
    pub drop_best_effort_responses: f64,
    /// Subnets that execute nothing for a while.
    #[serde(default)]
    pub stalls: Vec<StallSpec>,
    /// What is done to canisters, by round.
    #[serde(default)]
    pub events: Vec<EventSpec>,
}

impl FaultSpec {
    /// No fault yet, with `seed` for those added.
    pub fn seeded(seed: u64) -> Self {
        Self { seed, ..Self::default() }
    }

    /// `canister` traps on every `k`-th update execution.
    pub fn trap_every(mut self, canister: Principal, k: u64) -> Self {
        self.traps.push(TrapSpec { canister, every: Some(k), chance: None });
        self
    }

    /// `canister` traps on each update execution with probability `p`.
    pub fn trap_chance(mut self, canister: Principal, p: f64) -> Self {
        self.traps.push(TrapSpec { canister, every: None, chance: Some(p) });
        self
    }

    /// Sheds the share `p` of best-effort responses.
    pub fn drop_best_effort_responses(mut self, p: f64) -> Self {
        self.drop_best_effort_responses = p;
        self
    }

    /// `subnet` executes nothing for `rounds` rounds, `after_rounds` from now.
    pub fn stall(mut self, subnet: Principal, after_rounds: u64, rounds: u64) -> Self {
        self.stalls.push(StallSpec { subnet, after_rounds, rounds });
        self
    }

    /// `action` is done to `canister` `after_rounds` from now.
    pub fn event(mut self, canister: Principal, after_rounds: u64, action: Action) -> Self {
        self.events.push(EventSpec { canister, after_rounds, action });
        self
    }
}

/// A canister that traps on every `every`-th update execution, or on each
/// with probability `chance`: one of the two.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrapSpec {
    /// The canister that traps.
    pub canister: Principal,
    /// Traps on every `every`-th execution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<u64>,
    /// Traps on each execution with this probability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chance: Option<f64>,
}

/// A subnet that executes, inducts and expires nothing for `rounds` rounds,
/// `after_rounds` from now: what is sent to it waits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StallSpec {
    /// The subnet's id.
    pub subnet: Principal,
    /// Rounds from now to the first stalled round.
    #[serde(default)]
    pub after_rounds: u64,
    /// Rounds stalled.
    pub rounds: u64,
}

/// Something done to a canister `after_rounds` from now, as its
/// controller would. An upgrade waits for the canister's call contexts to
/// close, a deletion for it to be stopped; its later events wait behind them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventSpec {
    /// The canister it is done to.
    pub canister: Principal,
    /// Rounds from now to the round at whose start it is done.
    #[serde(default)]
    pub after_rounds: u64,
    /// What is done.
    pub action: Action,
}

/// What an event does: `"stop"`, `"start"`, `"delete"`,
/// `{"upgrade": {"wasm": base64?, "arg": base64}}` (to the module it runs
/// when the spec arrives if `wasm` is left out) or `{"run_out_of_cycles": {"left": N}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `stop_canister`.
    Stop,
    /// `start_canister`.
    Start,
    /// `delete_canister`, once stopped.
    Delete,
    /// `install_code` in upgrade mode, once its call contexts closed.
    Upgrade {
        /// The new module; if `None`, the one it runs when the spec arrives.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wasm: Option<Blob>,
        /// The upgrade argument.
        #[serde(default)]
        arg: Blob,
    },
    /// The balance falls to at most `left` cycles.
    RunOutOfCycles {
        /// The cycles left.
        left: u128,
    },
}

/// Bytes, in base64 as PocketIC's REST API sends them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Blob(pub Vec<u8>);

impl Serialize for Blob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&BASE64_STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for Blob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        BASE64_STANDARD.decode(text).map(Blob).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Blob({} bytes)", self.0.len())
    }
}

/// What became of an instance's calls: `GET /instances/<id>/_/faults`'s
/// answer. Once the instance is idle, everything in `outstanding` is zero
/// if nothing was lost.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultReport {
    /// What the events did, a line each (`round 5: stopped <id>`).
    pub log: Vec<String>,
    /// Best-effort responses shed by `drop_best_effort_responses`.
    pub dropped_responses: u64,
    /// Every canister the instance has.
    pub canisters: Vec<CanisterCalls>,
    /// What is still open.
    pub outstanding: Open,
}

impl FaultReport {
    /// One canister's counts, if the instance has it (a deleted canister's go with it).
    pub fn canister(&self, id: Principal) -> Option<&CanisterCalls> {
        self.canisters.iter().find(|c| c.canister == id)
    }
}

/// One canister's executions and calls since it was created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanisterCalls {
    /// The canister.
    pub canister: Principal,
    /// Executions that trapped, injected or not.
    pub traps: u64,
    /// Calls it made that `call_perform` accepted.
    pub calls_performed: u64,
    /// Calls `call_perform` refused (returned non-zero).
    pub calls_refused: u64,
    /// Rejects its callbacks got, by reject code (5: CANISTER_ERROR; in
    /// JSON the codes are object keys, so strings).
    pub rejects_received: BTreeMap<u64, u64>,
    /// The same per callee: each (caller, callee) pair's calls and rejects,
    /// for the first 1,000 callees it called.
    #[serde(default)]
    pub calls_to: Vec<CallsTo>,
}

/// A canister's calls to one callee.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallsTo {
    /// The callee.
    pub callee: Principal,
    /// Calls to it that `call_perform` accepted.
    pub calls_performed: u64,
    /// Calls to it that `call_perform` refused (no free slot, too few cycles).
    pub calls_refused: u64,
    /// Rejects their callbacks got, by reject code.
    pub rejects_received: BTreeMap<u64, u64>,
}

impl CallsTo {
    /// Rejects with `reject_code` (1 SYS_FATAL to 6 SYS_UNKNOWN).
    pub fn rejects(&self, reject_code: u64) -> u64 {
        self.rejects_received.get(&reject_code).copied().unwrap_or(0)
    }
}

impl CanisterCalls {
    /// Rejects with `reject_code` (1 SYS_FATAL to 6 SYS_UNKNOWN).
    pub fn rejects(&self, reject_code: u64) -> u64 {
        self.rejects_received.get(&reject_code).copied().unwrap_or(0)
    }
}

/// What is still open across the instance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Open {
    /// Ingress messages not answered yet.
    pub ingress: usize,
    /// Call contexts not answered yet.
    pub call_contexts: usize,
    /// Calls made and not answered yet.
    pub calls_in_flight: u64,
    /// Messages in queues and in transit.
    pub messages: usize,
}

impl Open {
    /// Everything open, summed: zero once the instance settled with nothing lost.
    pub fn total(&self) -> u64 {
        (self.ingress + self.call_contexts + self.messages) as u64 + self.calls_in_flight
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_spec_reads_as_the_endpoint_documents_it() {
        let callee = Principal::from_slice(&[1]);
        let spec = FaultSpec::seeded(7)
            .trap_every(callee, 7)
            .event(callee, 3, Action::Upgrade { wasm: None, arg: Blob(vec![1, 2]) })
            .event(callee, 4, Action::Stop);
        let expected = json!({
            "seed": 7,
            "traps": [{"canister": callee.to_text(), "every": 7}],
            "drop_best_effort_responses": 0.0,
            "stalls": [],
            "events": [
                {"canister": callee.to_text(), "after_rounds": 3, "action": {"upgrade": {"arg": "AQI="}}},
                {"canister": callee.to_text(), "after_rounds": 4, "action": "stop"},
            ],
        });
        assert_eq!(serde_json::to_value(&spec).unwrap(), expected);
        assert_eq!(serde_json::from_value::<FaultSpec>(expected).unwrap(), spec);
    }

    #[test]
    fn latency_is_a_profile_or_a_number() {
        assert_eq!(serde_json::to_value(SetLatency::MAINNET).unwrap(), json!({"profile": "mainnet"}));
        let rounds: SetLatency = serde_json::from_value(json!({"xnet_latency_rounds": 4})).unwrap();
        assert_eq!(rounds, SetLatency::Rounds { xnet_latency_rounds: 4 });
        assert!(serde_json::from_value::<SetLatency>(json!({"profile": "fast"})).is_err());
        assert!(
            serde_json::from_value::<SetLatency>(json!({"profile": "custom"})).is_err(),
            "rounds, not a name"
        );
        let newer: Latency =
            serde_json::from_value(json!({"profile": "testnet", "xnet_latency_rounds": 3})).unwrap();
        assert_eq!(newer.profile, Profile::Unknown, "a newer server's profile still reads");
    }
}
