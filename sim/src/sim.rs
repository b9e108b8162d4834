//! Subnets, rounds and message routing, behind an API shaped like
//! PocketIC's: create canisters on subnets, install code, submit ingress
//! messages, `tick()`, read their status.

use candid::Principal;
use std::collections::{BTreeMap, BTreeSet};

use crate::canister::{Canister, CanisterStatus, InstallMode, Output};
use crate::code::{self, Recorded};
use crate::error::SimError;
use crate::message::{Ingress, Message, MessageId, Payload, Reject, RejectCode};
use crate::stats::CanisterStats;
use crate::system_api::ApiLimits;

/// A round's instruction budget and the scheduler's overheads, as in the
/// replica's `SchedulerConfig` for application subnets
/// (`rs/config/src/subnet_config.rs`). Instructions here are wasmi's fuel,
/// which is not the replica's count, so same-subnet round counts are
/// approximate; cross-subnet ones do not depend on them.
#[derive(Clone, Copy, Debug)]
pub struct RoundLimits {
    /// Instructions one round may execute.
    pub max_instructions_per_round: u64,
    /// No message starts once less than this is left of the round.
    pub max_instructions_per_slice: u64,
    /// Charged for every message execution.
    pub overhead_per_execution: u64,
    /// Charged for every canister that executes in a scheduler iteration.
    pub overhead_per_canister: u64,
    /// Charged for every canister on the subnet after each iteration.
    pub overhead_per_canister_for_finalization: u64,
}

impl Default for RoundLimits {
    fn default() -> Self {
        Self {
            max_instructions_per_round: 4_000_000_000,
            max_instructions_per_slice: 2_000_000_000,
            overhead_per_execution: 2_000_000,
            overhead_per_canister: 8_000_000,
            overhead_per_canister_for_finalization: 12_000,
        }
    }
}

/// The model's parameters.
#[derive(Clone, Copy, Debug)]
pub struct SimConfig {
    /// Requests in flight per (caller, callee) pair (`DEFAULT_QUEUE_CAPACITY`).
    pub queue_capacity: u32,
    /// IC time at the first round, in ns since the epoch.
    pub start_time_ns: u64,
    /// How far time moves per tick (PocketIC: 1 ns).
    pub time_step_ns: u64,
    /// Cycles a new canister starts with (PocketIC: 100 T).
    pub initial_cycles: u128,
    pub round_limits: RoundLimits,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 500,
            start_time_ns: 1_767_225_600_000_000_000, // 2026-01-01T00:00:00Z
            time_step_ns: 1,
            initial_cycles: 100_000_000_000_000,
            round_limits: RoundLimits::default(),
        }
    }
}

/// One second of IC time: a mainnet-like time step.
pub const ONE_SECOND_NS: u64 = 1_000_000_000;

/// PocketIC's `update_call` gives up after this many rounds.
pub const UPDATE_CALL_ROUND_LIMIT: u64 = 100;

struct Subnet {
    id: Principal,
    canisters: BTreeSet<Principal>,
    /// Ingress messages submitted since the subnet's last round.
    ingress_pool: Vec<Message>,
    /// Messages from other subnets' streams, inducted at its next round.
    inbound: Vec<Message>,
    next_canister: u64,
}

enum IngressState {
    Processing,
    Completed(Payload),
}

/// The simulated IC.
pub struct Sim {
    engine: wasmi::Engine,
    config: SimConfig,
    /// In ascending order of id bytes: the order of a tick.
    subnets: Vec<Subnet>,
    canisters: BTreeMap<Principal, Canister>,
    ingress: BTreeMap<MessageId, IngressState>,
    next_message: u64,
    time: u64,
    ticks: u64,
    /// Fault injection: canisters that execute nothing before the given tick.
    paused_until: BTreeMap<Principal, u64>,
    tracing: bool,
}

/// Builds a [`Sim`] with the given subnets.
pub struct SimBuilder {
    subnet_ids: Vec<Principal>,
    config: SimConfig,
    tracing: bool,
}

impl SimBuilder {
    /// Adds an application subnet with a generated id.
    pub fn with_subnet(mut self) -> Self {
        let n = self.subnet_ids.len() as u64;
        let low = (n as u8).wrapping_mul(37).wrapping_add(11);
        let mut bytes = [low; 29];
        // Beyond 256 subnets the higher bytes of n tell the ids apart.
        for (i, high) in (n >> 8).to_le_bytes().into_iter().enumerate() {
            bytes[27 - i] ^= high;
        }
        bytes[28] = 2;
        self.subnet_ids.push(Principal::from_slice(&bytes));
        self
    }

    /// Adds an application subnet with id `id`.
    pub fn with_subnet_id(mut self, id: Principal) -> Self {
        self.subnet_ids.push(id);
        self
    }

    /// How far time moves per tick: PocketIC's 1 ns by default,
    /// [`ONE_SECOND_NS`] for mainnet-like time.
    pub fn with_time_step(mut self, ns: u64) -> Self {
        self.config.time_step_ns = ns;
        self
    }

    /// Keeps every committed execution of every canister, for
    /// [`Sim::take_trace`] (the benchmark's floor replays them).
    pub fn with_tracing(mut self) -> Self {
        self.tracing = true;
        self
    }

    pub fn with_config(mut self, config: SimConfig) -> Self {
        self.config = config;
        self
    }

    pub fn build(self) -> Sim {
        let mut ids = self.subnet_ids;
        ids.sort_by(|a, b| a.as_slice().cmp(b.as_slice()));
        ids.dedup();
        let subnets = ids
            .into_iter()
            .map(|id| Subnet {
                id,
                canisters: BTreeSet::new(),
                ingress_pool: vec![],
                inbound: vec![],
                next_canister: 0,
            })
            .collect();
        Sim {
            engine: code::engine(),
            config: self.config,
            subnets,
            canisters: BTreeMap::new(),
            ingress: BTreeMap::new(),
            next_message: 0,
            time: self.config.start_time_ns,
            ticks: 0,
            paused_until: BTreeMap::new(),
            tracing: self.tracing,
        }
    }
}

impl Sim {
    pub fn builder() -> SimBuilder {
        SimBuilder { subnet_ids: vec![], config: SimConfig::default(), tracing: false }
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    /// Subnet ids in ascending byte order; `create_canister` takes an index into it.
    pub fn subnets(&self) -> Vec<Principal> {
        self.subnets.iter().map(|s| s.id).collect()
    }

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

    fn is_paused(&self, id: &Principal) -> bool {
        self.paused_until.get(id).is_some_and(|&until| self.ticks <= until)
    }

    fn canister(&self, id: Principal) -> Result<&Canister, SimError> {
        self.canisters.get(&id).ok_or(SimError::CanisterNotFound(id))
    }

    fn canister_mut(&mut self, id: Principal) -> Result<&mut Canister, SimError> {
        self.canisters.get_mut(&id).ok_or(SimError::CanisterNotFound(id))
    }

    /// For management operations: only controllers may do them.
    fn controlled(&mut self, id: Principal, sender: Principal) -> Result<&mut Canister, SimError> {
        let canister = self.canister_mut(id)?;
        if !canister.system_state().controllers.contains(&sender) {
            return Err(SimError::NotAController { canister: id, sender });
        }
        Ok(canister)
    }

    // ----- Canister management -----

    /// Creates an empty canister on subnet `subnet` (an index into [`Sim::subnets`]).
    pub fn create_canister(
        &mut self,
        subnet: usize,
        controllers: Vec<Principal>,
    ) -> Result<Principal, SimError> {
        let Some(s) = self.subnets.get_mut(subnet) else {
            return Err(SimError::NoSuchSubnet { index: subnet, subnets: self.subnets.len() });
        };
        // Each subnet allocates from its own range, as on the IC.
        let index = ((subnet as u64) << 20) + s.next_canister;
        s.next_canister += 1;
        let mut bytes = index.to_be_bytes().to_vec();
        bytes.extend([1, 1]);
        let id = Principal::from_slice(&bytes);
        s.canisters.insert(id);
        let limits = ApiLimits { queue_capacity: self.config.queue_capacity };
        let canister = Canister::new(
            &self.engine,
            id,
            subnet,
            controllers,
            self.config.initial_cycles,
            limits,
            self.tracing,
        );
        self.canisters.insert(id, canister);
        Ok(id)
    }

    /// Installs `wasm` and runs `canister_init(arg)`.
    pub fn install_canister(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), SimError> {
        self.install(id, wasm, arg, sender, InstallMode::Install)
    }

    /// Upgrades to `wasm`, keeping stable memory.
    pub fn upgrade_canister(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: Vec<u8>,
        sender: Principal,
    ) -> Result<(), SimError> {
        self.install(id, wasm, arg, sender, InstallMode::Upgrade)
    }

    fn install(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: Vec<u8>,
        sender: Principal,
        mode: InstallMode,
    ) -> Result<(), SimError> {
        self.controlled(id, sender)?;
        let module = code::compile(wasm)?;
        let (engine, time) = (self.engine.clone(), self.time);
        let canister = self.canisters.get_mut(&id).expect("checked");
        let subnet = canister.subnet();
        for output in canister.install(&engine, module, arg, sender, mode, time)? {
            self.route(subnet, output);
        }
        Ok(())
    }

    /// Stops the canister: it takes no new calls, and once its open call
    /// contexts have closed (ticking until they have) it is stopped.
    pub fn stop_canister(&mut self, id: Principal, sender: Principal) -> Result<(), SimError> {
        self.controlled(id, sender)?.stop();
        for _ in 0..UPDATE_CALL_ROUND_LIMIT {
            if self.canister(id)?.status() == CanisterStatus::Stopped {
                return Ok(());
            }
            self.tick();
        }
        Err(SimError::DidNotStop { canister: id, rounds: UPDATE_CALL_ROUND_LIMIT })
    }

    pub fn start_canister(&mut self, id: Principal, sender: Principal) -> Result<(), SimError> {
        self.controlled(id, sender)?.start();
        Ok(())
    }

    /// Deletes a stopped canister. Calls to it then fail with DESTINATION_INVALID.
    pub fn delete_canister(&mut self, id: Principal, sender: Principal) -> Result<(), SimError> {
        if self.controlled(id, sender)?.status() != CanisterStatus::Stopped {
            return Err(SimError::NotStopped(id));
        }
        let mut canister = self.canisters.remove(&id).expect("checked");
        let subnet = canister.subnet();
        self.subnets[subnet].canisters.remove(&id);
        for message in canister.uninstall() {
            self.deliver(subnet, message);
        }
        Ok(())
    }

    /// Sets a canister environment variable (as icp-cli's `PUBLIC_CANISTER_ID:<name>`).
    pub fn set_env_var(
        &mut self,
        id: Principal,
        sender: Principal,
        name: &str,
        value: &str,
    ) -> Result<(), SimError> {
        self.controlled(id, sender)?.system_state_mut().env_vars.insert(name.into(), value.into());
        Ok(())
    }

    /// The cycles a canister must keep: its liquid balance is what lies
    /// above. (The replica derives this from the freezing threshold in
    /// seconds and the canister's idle burn rate; the model takes the result.)
    pub fn set_frozen_reserve_cycles(
        &mut self,
        id: Principal,
        sender: Principal,
        cycles: u128,
    ) -> Result<(), SimError> {
        self.controlled(id, sender)?.system_state_mut().freezing_reserve = cycles;
        Ok(())
    }

    pub fn add_cycles(&mut self, id: Principal, amount: u128) -> Result<u128, SimError> {
        let canister = self.canister_mut(id)?;
        canister.system_state_mut().credit(amount);
        Ok(canister.system_state().balance)
    }

    pub fn cycle_balance(&self, id: Principal) -> Result<u128, SimError> {
        Ok(self.canister(id)?.system_state().balance)
    }

    pub fn stats(&self, id: Principal) -> Result<&CanisterStats, SimError> {
        Ok(self.canister(id)?.stats())
    }

    /// The committed executions of a canister since it was created (or since
    /// the last call), if the simulator was built `with_tracing`.
    pub fn take_trace(&mut self, id: Principal) -> Result<Vec<Recorded>, SimError> {
        self.canister_mut(id)?.take_trace().ok_or(SimError::TracingOff)
    }

    /// Calls from `caller` to `callee` that hold a request slot: performed,
    /// and their response not yet consumed.
    pub fn calls_in_flight(&self, caller: Principal, callee: Principal) -> u32 {
        self.canisters
            .get(&caller)
            .and_then(|c| c.system_state().in_flight.get(&callee).copied())
            .unwrap_or(0)
    }

    /// What the canister printed with `ic0.debug_print`.
    pub fn debug_log(&self, id: Principal) -> Result<&[String], SimError> {
        Ok(&self.canister(id)?.system_state().debug_log)
    }

    // ----- Ingress -----

    /// Submits an update call. It is inducted in the next round of the
    /// canister's subnet. `canister_inspect_message` may refuse it here.
    pub fn submit_call(
        &mut self,
        id: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<MessageId, Reject> {
        let time = self.time;
        let canister = self.canisters.get_mut(&id).ok_or_else(|| not_found(id))?;
        canister.inspect(sender, method, arg.clone(), time)?;
        let message_id = MessageId(self.next_message);
        self.next_message += 1;
        let subnet = canister.subnet();
        let ingress = Ingress { id: message_id, sender, receiver: id, method: method.into(), arg };
        self.subnets[subnet].ingress_pool.push(Message::Ingress(ingress));
        self.ingress.insert(message_id, IngressState::Processing);
        Ok(message_id)
    }

    /// `None` while the message is being processed.
    pub fn ingress_status(&self, id: MessageId) -> Option<Result<Vec<u8>, Reject>> {
        match self.ingress.get(&id)? {
            IngressState::Processing => None,
            IngressState::Completed(Payload::Reply(data)) => Some(Ok(data.clone())),
            IngressState::Completed(Payload::Reject(reject)) => Some(Err(reject.clone())),
        }
    }

    /// Submits and ticks until the answer, like PocketIC's `update_call`
    /// (which gives up after [`UPDATE_CALL_ROUND_LIMIT`] rounds).
    pub fn update_call(
        &mut self,
        id: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject> {
        let message = self.submit_call(id, sender, method, arg)?;
        for _ in 0..UPDATE_CALL_ROUND_LIMIT {
            self.tick();
            if let Some(outcome) = self.ingress_status(message) {
                return outcome;
            }
        }
        Err(Reject {
            code: RejectCode::SysUnknown,
            message: format!("no answer to {method} after {UPDATE_CALL_ROUND_LIMIT} rounds"),
        })
    }

    /// Runs a query; nothing it does is kept.
    pub fn query_call(
        &mut self,
        id: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Reject> {
        let time = self.time;
        let canister = self.canisters.get_mut(&id).ok_or_else(|| not_found(id))?;
        match canister.query(sender, method, arg, time) {
            Payload::Reply(data) => Ok(data),
            Payload::Reject(reject) => Err(reject),
        }
    }

    // ----- Rounds -----

    /// One round on every subnet, in ascending subnet-id order.
    pub fn tick(&mut self) {
        self.time = self.time.saturating_add(self.config.time_step_ns);
        self.ticks += 1;
        for subnet in 0..self.subnets.len() {
            self.execute_round(subnet);
        }
    }

    /// Expire overdue bounded-wait calls, induct what the other subnets
    /// sent and the ingress submitted, then execute iteration after
    /// iteration until nothing is left or the round's budget is spent.
    /// Messages between canisters of this subnet are inducted after each
    /// iteration and run in the next one, so a same-subnet call and its
    /// callback can complete within one round.
    fn execute_round(&mut self, subnet: usize) {
        let time = self.time;
        for id in &self.subnets[subnet].canisters {
            self.canisters.get_mut(id).expect("on this subnet").expire_callbacks(time);
        }
        let inbound = std::mem::take(&mut self.subnets[subnet].inbound);
        let ingress = std::mem::take(&mut self.subnets[subnet].ingress_pool);
        for message in inbound.into_iter().chain(ingress) {
            self.deliver(subnet, message);
        }
        let limits = self.config.round_limits;
        // A message may start while the round has used at most this much
        // (the replica's `max_instructions_per_round - max_slice + 1`).
        let start_limit = limits
            .max_instructions_per_round
            .saturating_sub(limits.max_instructions_per_slice)
            .saturating_add(1);
        let finalization = limits
            .overhead_per_canister_for_finalization
            .saturating_mul(self.subnets[subnet].canisters.len() as u64);
        let mut used = 0;
        // Timers are looked at in a round's first iteration only.
        let mut timers = true;
        while used < start_limit {
            let active: Vec<Principal> = self.subnets[subnet]
                .canisters
                .iter()
                .filter(|id| self.canisters[id].has_work(time, timers) && !self.is_paused(id))
                .copied()
                .collect();
            if active.is_empty() {
                break;
            }
            let mut outputs = vec![];
            for id in active {
                let canister = self.canisters.get_mut(&id).expect("on this subnet");
                used = used.saturating_add(limits.overhead_per_canister);
                // What was inducted before this iteration, plus a due timer.
                for _ in 0..canister.queued().max(1) {
                    if used >= start_limit {
                        break;
                    }
                    let executed = canister.execute_next(time, timers);
                    outputs.extend(executed.outputs);
                    used = used
                        .saturating_add(executed.instructions)
                        .saturating_add(limits.overhead_per_execution);
                }
            }
            used = used.saturating_add(finalization);
            timers = false;
            for output in outputs {
                self.route(subnet, output);
            }
        }
    }

    /// Sends an output from a canister on `from` to where it goes.
    fn route(&mut self, from: usize, output: Output) {
        let message = match output {
            Output::IngressCompleted(id, payload) => {
                self.ingress.insert(id, IngressState::Completed(payload));
                return;
            }
            Output::Request(request) => Message::Request(request),
            Output::Response(response) => Message::Response(response),
        };
        match self.canisters.get(&message.receiver()).map(Canister::subnet) {
            Some(to) if to == from => self.deliver(from, message),
            Some(to) => self.subnets[to].inbound.push(message),
            // No such canister: induction on `from` answers for it.
            None => self.deliver(from, message),
        }
    }

    /// Puts a message in its receiver's queue, or answers it when the
    /// receiver does not exist.
    fn deliver(&mut self, subnet: usize, message: Message) {
        if self.is_paused(&message.receiver()) {
            self.subnets[subnet].inbound.push(message);
            return;
        }
        if let Some(canister) = self.canisters.get_mut(&message.receiver()) {
            canister.enqueue(message);
            return;
        }
        match message {
            Message::Request(r) => {
                let response = r.rejected(not_found(r.receiver));
                self.route(subnet, Output::Response(response));
            }
            Message::Ingress(m) => {
                self.ingress.insert(m.id, IngressState::Completed(Payload::Reject(not_found(m.receiver))));
            }
            // Nobody is left to execute the callback.
            Message::Response(_) => {}
        }
    }
}

/// What a message to a canister that does not exist gets.
fn not_found(id: Principal) -> Reject {
    Reject { code: RejectCode::DestinationInvalid, message: format!("Canister {id} not found") }
}
