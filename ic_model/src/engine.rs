//! What the IC model needs of the engine beneath it, the one that executes
//! canisters: ingress messages, queries and rounds; creating and
//! configuring canisters, installing code, cycles, and what a canister's
//! status reports; saving its state. The simulator is one (`sim::Sim`, with
//! the `sim` feature); another engine could sit under the same model.

use candid::Principal;
use ic_management_canister_types::{CanisterLogRecord, CanisterSettings};
use ic_sim_client::api::{FaultReport, FaultSpec};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeSet;

use crate::{CanisterCall, Reject, SubnetRanges};

/// What the engine knows of a canister for `canister_status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineStatus {
    /// Its cycles balance.
    pub cycles: u128,
    /// Its wasm (heap) memory.
    pub wasm_memory_bytes: u64,
    /// Its stable memory.
    pub stable_memory_bytes: u64,
    /// Bumped by every install, upgrade and settings change, as on the IC.
    pub version: u64,
    /// Its environment variables, by name.
    pub environment_variables: Vec<(String, String)>,
}

/// A call from one of the engine's canisters to a canister the model hosts
/// (the management canister, a system canister), waiting for the model's
/// answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallToModel {
    /// Names the call for its answer.
    pub id: u64,
    /// The canister that called.
    pub caller: Principal,
    /// The model's canister it called.
    pub callee: Principal,
    /// The method called.
    pub method: String,
    /// The candid argument.
    pub arg: Vec<u8>,
    /// The cycles attached.
    pub cycles: u128,
    /// The subnet the call was delivered on: the callee's, or, for the
    /// management canister (on every subnet), the caller's.
    pub subnet: Principal,
}

/// Calls from one canister to another performed and not answered yet: the
/// request slots the pair holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CallsInFlight {
    /// The canister that called.
    pub caller: Principal,
    /// The canister called.
    pub callee: Principal,
    /// How many.
    pub calls: u32,
    /// The most at any point of the last round: calls within a subnet can
    /// fill and free the slots within one round.
    pub peak_last_round: u32,
}

/// An engine that executes canisters. A refusal is the [`Reject`] the IC
/// gives for the same refusal: the engine classifies its own failures.
pub trait Engine {
    /// The engine's state between rounds, as [`Engine::save`] takes it.
    type Saved: Serialize + DeserializeOwned + Send + 'static;

    /// What the engine is, in one line, for every report and server to say.
    fn description(&self) -> String;
    /// The version of [`Engine::Saved`]'s layout, bumped when it changes.
    fn saved_format() -> String;
    /// The engine's state, between rounds.
    fn save(&self) -> Result<Self::Saved, String>;
    /// The engine [`Engine::save`] saved.
    fn restore(saved: Self::Saved) -> Result<Self, String>
    where
        Self: Sized;

    /// Submits an ingress message to a canister of the engine's; its id for
    /// [`Engine::ingress_status`], or the reject when it is refused before
    /// execution.
    fn submit_call(&mut self, call: CanisterCall) -> Result<u64, Reject>;
    /// The outcome of an ingress message; `None` while it runs.
    fn ingress_status(&self, id: u64) -> Option<Result<Vec<u8>, Reject>>;
    /// Forgets an answered ingress message; `false` if it still runs.
    fn forget_ingress(&mut self, id: u64) -> bool;
    /// A query, on the latest state, that reads `data_certificate`.
    fn query(&mut self, call: CanisterCall, data_certificate: Option<Vec<u8>>) -> Result<Vec<u8>, Reject>;
    /// Whether messages wait to be executed.
    fn busy(&self) -> bool;
    /// How many messages it has executed since it was built or restored.
    fn executions(&self) -> u64;
    /// Moves its time on by `ns`.
    fn advance_time(&mut self, ns: u64);
    /// Rounds executed so far.
    fn rounds(&self) -> u64;
    /// The request slots each (caller, callee) pair may hold.
    fn queue_capacity(&self) -> u32;
    /// The pairs that hold request slots now.
    fn calls_in_flight(&self) -> Vec<CallsInFlight>;

    /// The subnets, in the engine's order.
    fn subnets(&self) -> Vec<Principal>;
    /// The canister ids each subnet assigns.
    fn subnet_ranges(&self) -> Vec<SubnetRanges>;
    /// The network's time, in ns since the epoch.
    fn time(&self) -> u64;
    /// A new empty canister on `subnet`, controlled by `controllers`,
    /// holding `cycles` (`None`: what the engine gives a new canister), with
    /// what of `settings` the engine enforces; its id is `specified_id` if
    /// given (which `subnet`'s ranges hold), else the subnet's next.
    fn create_canister(
        &mut self,
        subnet: Principal,
        controllers: Vec<Principal>,
        settings: &CanisterSettings,
        cycles: Option<u128>,
        specified_id: Option<Principal>,
    ) -> Result<Principal, Reject>;
    /// Installs `wasm` (replacing code and memory) or, with `upgrade`,
    /// upgrades to it, running its init or upgrade hooks with `arg`; the
    /// hooks see `sender` as their caller. The engine checks no
    /// permissions: the model has.
    fn install_code(
        &mut self,
        canister: Principal,
        sender: Principal,
        wasm: &[u8],
        arg: Vec<u8>,
        upgrade: bool,
    ) -> Result<(), Reject>;
    /// The canister's stable memory, all its pages.
    fn stable_memory(&self, canister: Principal) -> Result<Vec<u8>, Reject>;
    /// Replaces the canister's stable memory with `data`, grown with zeros
    /// to whole pages; unchanged if it does not fit.
    fn set_stable_memory(&mut self, canister: Principal, data: Vec<u8>) -> Result<(), Reject>;
    /// Takes a snapshot of the canister's module and memories, kept under
    /// `snapshot_id` (replacing one kept under it); its size in bytes.
    fn take_snapshot(&mut self, canister: Principal, snapshot_id: Vec<u8>) -> Result<u64, Reject>;
    /// Puts the snapshot `snapshot_id` in place of the canister's module and
    /// memories, and bumps its version.
    fn load_snapshot(&mut self, canister: Principal, snapshot_id: &[u8]) -> Result<(), Reject>;
    /// Forgets the snapshot `snapshot_id`.
    fn delete_snapshot(&mut self, canister: Principal, snapshot_id: &[u8]) -> Result<(), Reject>;
    /// Applies what of `settings` the engine enforces (who may is the
    /// model's to check).
    fn update_settings(&mut self, canister: Principal, settings: &CanisterSettings) -> Result<(), Reject>;
    /// Lets the canister take calls again.
    fn start_canister(&mut self, canister: Principal) -> Result<(), Reject>;
    /// Stops the canister once its open call contexts close.
    fn stop_canister(&mut self, canister: Principal) -> Result<(), Reject>;
    /// Deletes the canister, its cycles with it. That it must be stopped is
    /// the model's rule; the engine may refuse one with open call contexts.
    fn delete_canister(&mut self, canister: Principal) -> Result<(), Reject>;
    /// Adds `cycles` to the canister's balance.
    fn deposit_cycles(&mut self, canister: Principal, cycles: u128) -> Result<(), Reject>;
    /// What `canister_status` reports that the engine keeps.
    fn status(&self, canister: Principal) -> Result<EngineStatus, Reject>;
    /// The canister's log (what it printed), oldest first, as
    /// `fetch_canister_logs` answers it.
    fn canister_log(&self, canister: Principal) -> Result<Vec<CanisterLogRecord>, Reject>;
    /// The canister's certified data (empty if it has none).
    fn certified_data(&self, canister: Principal) -> Vec<u8>;
    /// The canisters whose certified data changed since the last call.
    fn take_certified_data_changes(&mut self) -> Vec<Principal>;
    /// The root key (DER) canisters are told to verify certificates with.
    fn set_root_key(&mut self, der: Vec<u8>);
    /// The chain keys the network holds, by name, which canisters see in
    /// the `ic0.cost_sign_with_*` functions.
    fn set_chain_keys(&mut self, names: BTreeSet<String>);
    /// The rounds a message takes to reach another subnet (0: it is
    /// inducted there in the next round, as on PocketIC).
    fn xnet_latency_rounds(&self) -> u64;
    /// Turns on `spec`'s faults, rounds counted from now, replacing any
    /// before; why not, if the spec names what the engine does not have.
    fn inject_faults(&mut self, spec: FaultSpec) -> Result<(), String>;
    /// What the injected faults did, and what is still open.
    fn fault_report(&self) -> FaultReport;
    /// What an HTTPS outcall of `request_bytes` costs that may take
    /// `max_response_bytes`, as the subnet prices it (`ic0.cost_http_request`).
    fn http_request_fee(&self, request_bytes: u64, max_response_bytes: u64) -> u128;
    /// Executes one round on every subnet.
    fn execute_round(&mut self);
    /// From now on the engine routes calls to `canister` through `subnet`
    /// for the model to answer ([`Engine::calls_to_model`]).
    fn route_to_model(&mut self, canister: Principal, subnet: Principal) -> Result<(), Reject>;
    /// From now on the engine routes calls to `canister` for the model to
    /// answer on every subnet, as the IC's management canister is: a call
    /// stays on its caller's subnet, and its answer comes back from there.
    fn route_to_model_on_every_subnet(&mut self, canister: Principal) -> Result<(), Reject>;
    /// Calls to the model's canisters made since the last time.
    fn calls_to_model(&mut self) -> Vec<CallToModel>;
    /// The model's answer to call `id`: the reply or reject goes back to the
    /// caller with the cycles it did not accept.
    fn answer_call(&mut self, id: u64, result: Result<Vec<u8>, Reject>, accepted_cycles: u128);
}
