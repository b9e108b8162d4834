//! The simulated IC's API, shaped like PocketIC's.
//!
//! Create canisters on subnets, install code, submit ingress messages,
//! `tick()`, read their status.

use candid::Principal;
use std::collections::{BTreeMap, BTreeSet};

use crate::bench::Traced;
use crate::canister::{Canister, CanisterSnapshot, CanisterStatus, InstallMode, Installation};
use crate::code::{self, Recorded};
use crate::host_memory::HostMemory;
use crate::message::MessageId;
use crate::stats::CanisterStats;
use crate::system_api::{ApiLimits, Hosting, LogRecord, SystemState};

mod config;
mod faults;
mod ingress;
mod memory;
mod outside;
mod query_graph;
mod routing;
mod scheduler;

pub use crate::canister::TrapRate;
pub use crate::error::SimError;
pub use config::{
    MAINNET_XNET_LATENCY_ROUNDS, ONE_SECOND_NS, RoundLimits, SimBuilder, SimConfig, UPDATE_CALL_ROUND_LIMIT,
};
pub(crate) use faults::FaultState;
pub use faults::{Action, Event, Faults, Stall, Traps};
pub(crate) use ingress::IngressState;
pub(crate) use outside::Outside;
pub use outside::OutsideCall;
pub use query_graph::{
    INSTRUCTION_OVERHEAD_PER_QUERY_CALL, MAX_QUERY_CALL_DEPTH, MAX_QUERY_CALL_GRAPH_INSTRUCTIONS,
};
pub(crate) use routing::Subnet;
pub use routing::{IDS_PER_SUBNET, IdRanges, canister_id, canister_number};

/// The simulated IC.
pub struct Sim {
    pub(crate) engine: wasmi::Engine,
    /// What the canisters hold of the host's memory.
    pub(crate) host_memory: HostMemory,
    pub(crate) config: SimConfig,
    /// In ascending order of id bytes: the order of a tick.
    pub(crate) subnets: Vec<Subnet>,
    pub(crate) canisters: BTreeMap<Principal, Canister>,
    pub(crate) ingress: BTreeMap<MessageId, IngressState>,
    pub(crate) next_message: u64,
    pub(crate) time: u64,
    pub(crate) ticks: u64,
    /// Fault injection: canisters that execute nothing before the given tick.
    pub(crate) paused_until: BTreeMap<Principal, u64>,
    /// Fault injection: seeded traps, events, stalls and dropped responses.
    pub(crate) faults: FaultState,
    pub(crate) tracing: bool,
    /// The network's root key (DER), which `ic0.root_key_copy` gives.
    pub(crate) root_key: Vec<u8>,
    /// The chain keys the network holds, by name, which the
    /// `ic0.cost_sign_with_*` functions price (a model answers the calls).
    pub(crate) chain_keys: BTreeSet<String>,
    /// Messages executed since it was built or restored (not saved).
    pub(crate) executions: u64,
    /// Canisters hosted outside, and the calls to them waiting for answers.
    pub(crate) outside: Outside,
    /// Snapshots of canisters, by canister and snapshot id.
    pub(crate) snapshots: BTreeMap<(Principal, Vec<u8>), CanisterSnapshot>,
}

/// The IC's root key (DER): what the replica gives `ic0.root_key_copy`
/// when its topology names no root subnet (`IC_ROOT_KEY`), and so the
/// simulator until a network that signs sets its own
/// ([`Sim::set_root_key`]).
pub const IC_ROOT_KEY: [u8; 133] = hex_literal(
    b"308182301d060d2b0601040182dc7c0503010201060c2b0601040182dc7c05030201036100814c0e6ec71fab583b08bd81373c255c3c371b2e84863c98a4f1e08b74235d14fb5d9c0cd546d9685f913a0c0b2cc5341583bf4b4392e467db96d65b9bb4cb717112f8472e0d5a4d14505ffd7484b01291091c5f87b98883463f98091a0baaae",
);

const fn hex_literal<const N: usize>(hex: &[u8]) -> [u8; N] {
    const fn digit(c: u8) -> u8 {
        match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => panic!("not a hex digit"),
        }
    }
    assert!(hex.len() == 2 * N, "two digits a byte");
    let mut bytes = [0; N];
    let mut i = 0;
    while i < N {
        bytes[i] = digit(hex[2 * i]) << 4 | digit(hex[2 * i + 1]);
        i += 1;
    }
    bytes
}

/// The settings the simulator keeps and enforces, as `update_settings`
/// changes them: each that is given replaces the canister's.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// Who may install, stop, delete and configure it.
    pub controllers: Option<Vec<Principal>>,
    /// The whole set.
    pub env_vars: Option<BTreeMap<String, String>>,
    /// Bytes of wasm memory past which installs, updates and timers trap
    /// (0: none); 3 GiB for a new canister, as on the replica.
    pub wasm_memory_limit: Option<u64>,
}

impl Settings {
    fn apply(self, state: &mut SystemState) {
        if let Some(controllers) = self.controllers {
            state.controllers = controllers;
        }
        if let Some(env_vars) = self.env_vars {
            state.env_vars = env_vars;
        }
        if let Some(limit) = self.wasm_memory_limit {
            state.wasm_memory_limit = limit;
        }
    }
}

/// What is still open across the simulated IC ([`Sim::outstanding`]): all
/// zero once every message has been answered and every callback has run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outstanding {
    /// Ingress messages not answered yet.
    pub ingress: usize,
    /// Call contexts open on any canister.
    pub call_contexts: usize,
    /// Request slots held: calls performed whose response was not consumed.
    pub calls_in_flight: u64,
    /// Messages in queues, pools and streams, not executed yet.
    pub messages: usize,
}

impl Sim {
    /// Subnet ids in ascending byte order; `create_canister` takes an index into it.
    pub fn subnets(&self) -> Vec<Principal> {
        self.subnets.iter().map(|s| s.id).collect()
    }

    /// IC time now, in ns since the epoch.
    pub fn time(&self) -> u64 {
        self.time
    }

    /// Ticks executed so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Moves IC time on by `ns` (it stops at the largest time there is).
    pub fn advance_time(&mut self, ns: u64) {
        self.time = self.time.saturating_add(ns);
    }

    /// Fault injection: during the next `ticks` ticks the canister executes
    /// nothing and nothing is inducted for it: what is sent to it waits in
    /// the streams (so its bounded-wait calls can time out before their
    /// responses arrive).
    pub fn pause_canister(&mut self, id: Principal, ticks: u64) {
        self.paused_until.insert(id, self.ticks.saturating_add(ticks));
    }

    fn canister(&self, id: Principal) -> Result<&Canister, SimError> {
        self.canisters.get(&id).ok_or(SimError::CanisterNotFound(id))
    }

    fn canister_mut(&mut self, id: Principal) -> Result<&mut Canister, SimError> {
        self.canisters.get_mut(&id).ok_or(SimError::CanisterNotFound(id))
    }

    /// Bytes of the host-memory budget held now (see
    /// [`SimConfig::host_memory_budget`]), by its canisters and those of
    /// every simulator that shares the budget: never more than the budget.
    pub fn host_memory_used(&self) -> u64 {
        self.host_memory.used()
    }

    /// Creates an empty canister on subnet `subnet` (an index into [`Sim::subnets`]).
    pub fn create_canister(
        &mut self,
        subnet: usize,
        controllers: Vec<Principal>,
    ) -> Result<Principal, SimError> {
        self.create_canister_with(subnet, Settings { controllers: Some(controllers), ..Settings::default() })
    }

    /// Creates an empty canister on subnet `subnet` with `settings` (no
    /// controllers given: none); its version is 0.
    pub fn create_canister_with(&mut self, subnet: usize, settings: Settings) -> Result<Principal, SimError> {
        let id = self.create(subnet, settings.controllers.clone().unwrap_or_default())?;
        settings.apply(self.canister_mut(id)?.system_state_mut());
        Ok(id)
    }

    fn create(&mut self, subnet: usize, controllers: Vec<Principal>) -> Result<Principal, SimError> {
        let Some(s) = self.subnets.get_mut(subnet) else {
            return Err(SimError::NoSuchSubnet { index: subnet, subnets: self.subnets.len() });
        };
        // Each subnet numbers new canisters from its own range, as on the
        // IC, past any id a canister was created with.
        let id = loop {
            if s.next_canister >= s.ids.capacity() {
                return Err(SimError::SubnetFull { index: subnet, ids: s.ids.capacity() });
            }
            let id = canister_id(s.ids.allocation.start() + s.next_canister);
            s.next_canister += 1;
            if !self.canisters.contains_key(&id) {
                break id;
            }
        };
        Ok(self.insert_new(id, subnet, controllers))
    }

    /// Creates an empty canister with the id `id` on subnet `subnet` (an
    /// index), whose ranges must hold it, with `settings`: a canister
    /// created with a specified id.
    pub fn create_canister_with_id(
        &mut self,
        subnet: usize,
        id: Principal,
        settings: Settings,
    ) -> Result<Principal, SimError> {
        let subnets = self.subnets.len();
        let s = self.subnets.get(subnet).ok_or(SimError::NoSuchSubnet { index: subnet, subnets })?;
        if !canister_number(id).is_some_and(|number| s.ids.holds(number)) {
            return Err(SimError::NotInRange { id, subnet: s.id });
        }
        if self.canisters.contains_key(&id) || self.outside.host_of(&id).is_some() {
            return Err(SimError::IdTaken(id));
        }
        self.insert_new(id, subnet, settings.controllers.clone().unwrap_or_default());
        settings.apply(self.canister_mut(id)?.system_state_mut());
        Ok(id)
    }

    fn insert_new(&mut self, id: Principal, subnet: usize, controllers: Vec<Principal>) -> Principal {
        self.subnets[subnet].canisters.insert(id);
        let state = self.new_system_state(id, subnet, controllers);
        let canister = Canister::new(&self.engine, subnet, state, self.tracing);
        self.canisters.insert(id, canister);
        id
    }

    /// Each subnet's id and the canister ids it holds, in the subnets' order.
    pub fn subnet_ranges(&self) -> Vec<(Principal, IdRanges)> {
        self.subnets.iter().map(|s| (s.id, s.ids.clone())).collect()
    }

    /// A new canister's system state, on subnet `subnet` (an index).
    pub(crate) fn new_system_state(
        &self,
        id: Principal,
        subnet: usize,
        controllers: Vec<Principal>,
    ) -> SystemState {
        let limits = ApiLimits {
            queue_capacity: self.config.queue_capacity,
            max_instructions_per_message: self.config.max_instructions_per_message,
        };
        let mut state =
            SystemState::new(id, controllers, self.config.initial_cycles, limits, &self.host_memory);
        state.network = Hosting {
            subnet: self.subnets[subnet].id,
            subnet_size: crate::cycles::SUBNET_SIZE as u32,
            root_key: self.root_key.clone(),
            chain_keys: self.chain_keys.clone(),
        };
        state
    }

    /// From now on subnet `subnet` assigns no id numbered below `number`
    /// (counting from the first of its allocation range): on the IC, system
    /// canisters hold the first ids of the first subnet's range. At most the
    /// whole allocation range may be reserved.
    pub fn reserve_canister_ids(&mut self, subnet: usize, number: u64) -> Result<(), SimError> {
        let subnets = self.subnets.len();
        let s = self.subnets.get_mut(subnet).ok_or(SimError::NoSuchSubnet { index: subnet, subnets })?;
        if number > s.ids.capacity() {
            return Err(SimError::SubnetFull { index: subnet, ids: s.ids.capacity() });
        }
        s.next_canister = s.next_canister.max(number);
        Ok(())
    }

    /// Installs `wasm` and runs `canister_init(arg)`; `sender` is the caller
    /// the hook sees (`ic0.msg_caller`). Who may install is the model's to
    /// check, not the simulator's.
    pub fn install_canister(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), SimError> {
        self.canister(id)?;
        self.install_code(id, wasm, arg, sender, InstallMode::Install)
    }

    /// Upgrades to `wasm`, keeping stable memory; `sender` is the caller the
    /// upgrade hooks see.
    pub fn upgrade_canister(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), SimError> {
        self.canister(id)?;
        self.install_code(id, wasm, arg, sender, InstallMode::Upgrade)
    }

    fn install_code(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: Vec<u8>,
        sender: Principal,
        mode: InstallMode,
    ) -> Result<(), SimError> {
        let module = code::compile(wasm, code::Metering::Replica)?;
        let (engine, time) = (self.engine.clone(), self.time);
        let canister = self.canisters.get_mut(&id).expect("checked");
        let subnet = canister.subnet();
        for output in canister.install(&engine, Installation { module, arg, sender, mode, time })? {
            self.route(subnet, output);
        }
        Ok(())
    }

    /// Stops the canister: it takes no new calls, and once its open call
    /// contexts have closed (ticking until they have) it is stopped.
    pub fn stop_canister(&mut self, id: Principal) -> Result<(), SimError> {
        self.canister_mut(id)?.stop();
        for _ in 0..UPDATE_CALL_ROUND_LIMIT {
            if self.canister(id)?.status() == CanisterStatus::Stopped {
                return Ok(());
            }
            self.tick();
        }
        Err(SimError::DidNotStop { canister: id, rounds: UPDATE_CALL_ROUND_LIMIT })
    }

    /// Starts a stopping or stopped canister: it takes calls again.
    pub fn start_canister(&mut self, id: Principal) -> Result<(), SimError> {
        self.canister_mut(id)?.start();
        Ok(())
    }

    /// Deletes a canister. Calls to it then fail with DESTINATION_INVALID.
    /// That only a stopped canister may be deleted is the model's rule; the
    /// simulator refuses only a canister with open call contexts
    /// ([`SimError::OpenCallContexts`]), whose callers would otherwise never
    /// be answered and whose calls would hold their slots for good.
    pub fn delete_canister(&mut self, id: Principal) -> Result<(), SimError> {
        if self.canister(id)?.open_call_contexts() > 0 {
            return Err(SimError::OpenCallContexts(id));
        }
        self.remove_canister(id);
        Ok(())
    }

    /// Removes a canister that has no open call contexts.
    fn remove_canister(&mut self, id: Principal) {
        let mut canister = self.canisters.remove(&id).expect("checked");
        self.snapshots.retain(|(of, _), _| *of != id);
        let subnet = canister.subnet();
        self.subnets[subnet].canisters.remove(&id);
        for message in canister.uninstall() {
            self.deliver(subnet, message);
        }
    }

    /// Sets a canister environment variable (as icp-cli's `PUBLIC_CANISTER_ID:<name>`).
    pub fn set_env_var(&mut self, id: Principal, name: &str, value: &str) -> Result<(), SimError> {
        self.canister_mut(id)?.system_state_mut().env_vars.insert(name.into(), value.into());
        Ok(())
    }

    /// `update_settings` as far as the simulator keeps settings (each if
    /// given); a change is a new canister version, as on the IC. Who may
    /// change them is the model's to check.
    pub fn update_settings(&mut self, id: Principal, change: Settings) -> Result<(), SimError> {
        let state = self.canister_mut(id)?.system_state_mut();
        change.apply(state);
        state.canister_version += 1;
        Ok(())
    }

    /// The canister's controllers: data the simulator keeps (for
    /// `ic0.is_controller`), not a rule it enforces.
    pub fn controllers(&self, id: Principal) -> Result<&[Principal], SimError> {
        Ok(&self.canister(id)?.system_state().controllers)
    }

    /// The canister's environment variables, by name.
    pub fn env_vars(&self, id: Principal) -> Result<&BTreeMap<String, String>, SimError> {
        Ok(&self.canister(id)?.system_state().env_vars)
    }

    /// The canister's version (`ic0.canister_version`): installs, settings
    /// changes and committed executions so far.
    pub fn canister_version(&self, id: Principal) -> Result<u64, SimError> {
        Ok(self.canister(id)?.system_state().canister_version)
    }

    /// Every canister's id, in ascending order.
    pub fn canister_ids(&self) -> impl Iterator<Item = Principal> + '_ {
        self.canisters.keys().copied()
    }

    /// The module the canister runs, if any.
    pub fn wasm_module(&self, id: Principal) -> Result<Option<&[u8]>, SimError> {
        Ok(self.canister(id)?.wasm_module())
    }

    /// The size in bytes of the canister's wasm memory (its heap).
    pub fn wasm_memory_size(&self, id: Principal) -> Result<u64, SimError> {
        Ok(self.canister(id)?.wasm_memory_size())
    }

    /// The cycles a canister must keep: its liquid balance is what lies
    /// above. (The replica derives this from the freezing threshold in
    /// seconds and the canister's idle burn rate; the model takes the result.)
    pub fn set_frozen_reserve_cycles(&mut self, id: Principal, cycles: u128) -> Result<(), SimError> {
        self.canister_mut(id)?.system_state_mut().freezing_reserve = cycles;
        Ok(())
    }

    /// Adds `amount` to the canister's balance (it stops at the largest
    /// there is); returns the new balance.
    pub fn add_cycles(&mut self, id: Principal, amount: u128) -> Result<u128, SimError> {
        let canister = self.canister_mut(id)?;
        canister.system_state_mut().credit(amount);
        Ok(canister.system_state().balance)
    }

    /// Takes up to `amount` from the canister's balance; returns the new
    /// balance.
    pub fn remove_cycles(&mut self, id: Principal, amount: u128) -> Result<u128, SimError> {
        let state = self.canister_mut(id)?.system_state_mut();
        state.balance = state.balance.saturating_sub(amount);
        Ok(state.balance)
    }

    /// The canister's balance in cycles.
    pub fn cycle_balance(&self, id: Principal) -> Result<u128, SimError> {
        Ok(self.canister(id)?.system_state().balance)
    }

    /// Messages executed since the simulator was built or restored: it
    /// grows whenever a canister's state may have changed, which is what a
    /// network's checkpoints watch.
    pub fn executions(&self) -> u64 {
        self.executions
    }

    /// What the simulator saw the canister do.
    pub fn stats(&self, id: Principal) -> Result<&CanisterStats, SimError> {
        Ok(self.canister(id)?.stats())
    }

    /// The size of a canister's stable memory in bytes (what the replica's
    /// `canister_status` counts as `stable_memory_size`).
    pub fn stable_memory_size(&self, id: Principal) -> Result<u64, SimError> {
        Ok(self.canister(id)?.system_state().stable.size())
    }

    /// The network's root key (DER) from now on, for every canister
    /// (`ic0.root_key_copy`): a network that signs its state sets its own.
    pub fn set_root_key(&mut self, der: Vec<u8>) {
        for canister in self.canisters.values_mut() {
            canister.system_state_mut().network.root_key = der.clone();
        }
        self.root_key = der;
    }

    /// From now on a message to another subnet takes `rounds` to be
    /// inducted there (see [`SimConfig::xnet_latency_rounds`]); those
    /// already on their way arrive when they were due.
    pub fn set_xnet_latency_rounds(&mut self, rounds: u64) {
        self.config.xnet_latency_rounds = rounds;
    }

    /// From now on the network holds the chain keys `names` (each for every
    /// algorithm), as the `ic0.cost_sign_with_*` functions see them. Not
    /// saved with the simulator: the model that answers the calls sets them.
    pub fn set_chain_keys(&mut self, names: BTreeSet<String>) {
        for canister in self.canisters.values_mut() {
            canister.system_state_mut().network.chain_keys = names.clone();
        }
        self.chain_keys = names;
    }

    /// The network's root key (DER), as `ic0.root_key_copy` gives it.
    pub fn root_key(&self) -> &[u8] {
        &self.root_key
    }

    /// What the canister certified (`ic0.certified_data_set`), at most 32 bytes.
    pub fn certified_data(&self, id: Principal) -> Result<&[u8], SimError> {
        Ok(&self.canister(id)?.system_state().certified_data)
    }

    /// The canisters whose certified data changed since the last call (a
    /// network writes them into its state tree at the end of a round).
    pub fn take_certified_data_changes(&mut self) -> Vec<Principal> {
        self.canisters
            .values_mut()
            .filter_map(|c| c.take_certified_data_change().then_some(c.system_state().id))
            .collect()
    }

    /// Calls from `caller` to `callee` that hold a request slot: performed,
    /// and their response not yet consumed.
    pub fn calls_in_flight(&self, caller: Principal, callee: Principal) -> u32 {
        self.canisters
            .get(&caller)
            .and_then(|c| c.system_state().in_flight.get(&callee).copied())
            .unwrap_or(0)
    }

    /// Whether a message waits to be executed or delivered: the next tick
    /// has work (a call that waits only for its deadline does not count).
    /// Unlike [`Sim::outstanding`] it does not look at answered ingress
    /// messages, so it stays cheap however many there are.
    pub fn busy(&self) -> bool {
        self.subnets.iter().any(|s| s.waiting() > 0)
            || self.canisters.values().any(|c| c.queued() > 0)
            || self.outside.new_calls() > 0
    }

    /// The request slots each (caller, callee) pair holds (calls performed
    /// whose responses have not been consumed, out of
    /// [`SimConfig::queue_capacity`]), and the most it held at any point of
    /// the last round: (caller, callee, now, peak), for the pairs that held
    /// any.
    pub fn pairs_in_flight(&self) -> Vec<(Principal, Principal, u32, u32)> {
        let pairs = self.canisters.iter().flat_map(|(&caller, canister)| {
            let state = canister.system_state();
            let now = |callee| state.in_flight.get(callee).copied().unwrap_or(0);
            state
                .round_peak
                .iter()
                .map(move |(callee, &peak)| (caller, *callee, now(callee), peak.max(now(callee))))
        });
        pairs.filter(|&(_, _, _, peak)| peak > 0).collect()
    }

    /// What is still open: unanswered ingress, call contexts, held slots
    /// and messages not yet executed.
    pub fn outstanding(&self) -> Outstanding {
        let canisters = self.canisters.values();
        Outstanding {
            ingress: self.ingress.values().filter(|s| matches!(s, IngressState::Processing)).count(),
            call_contexts: canisters.clone().map(Canister::open_call_contexts).sum(),
            calls_in_flight: canisters
                .clone()
                .flat_map(|c| c.system_state().in_flight.values())
                .map(|&n| u64::from(n))
                .sum(),
            messages: canisters.map(Canister::queued).sum::<usize>()
                + self.subnets.iter().map(Subnet::waiting).sum::<usize>(),
        }
    }

    /// What the canister printed with `ic0.debug_print`, oldest first: the
    /// newest lines that fit in 4 KiB, as the replica's canister log keeps.
    pub fn debug_log(&self, id: Principal) -> Result<Vec<&str>, SimError> {
        Ok(self.canister(id)?.system_state().debug_log.lines().collect())
    }

    /// The canister's log as `fetch_canister_logs` answers it: what
    /// [`Sim::debug_log`] holds, each line with its index and time.
    pub fn canister_log(&self, id: Principal) -> Result<Vec<LogRecord>, SimError> {
        Ok(self.canister(id)?.system_state().debug_log.records().cloned().collect())
    }
}

impl Traced for Sim {
    fn take_trace(&mut self, id: Principal) -> Result<Vec<Recorded>, SimError> {
        self.canister_mut(id)?.take_trace().ok_or(SimError::TracingOff)
    }
}
