//! The model's parameters, and the builder that makes a [`Sim`] with them.

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::Sim;
use super::routing::{IdRanges, Subnet};
use crate::bench::Tracing;
use crate::code;
use crate::host_memory::{DEFAULT_HOST_MEMORY_BUDGET, HostMemory};

/// A round's instruction budget, its scheduler threads and overheads, as in
/// the replica's `SchedulerConfig` for application subnets
/// (`rs/config/src/subnet_config.rs`). Instructions are counted as the
/// replica counts them (see the crate's metering).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct RoundLimits {
    /// Instructions one round may execute on one scheduler thread (the
    /// replica's doc: "on one thread").
    pub max_instructions_per_round: u64,
    /// No message starts once less than this is left of the round.
    pub max_instructions_per_slice: u64,
    /// Charged for every message execution.
    pub overhead_per_execution: u64,
    /// Charged for every canister that executes in a scheduler iteration.
    pub overhead_per_canister: u64,
    /// Charged for every canister on the subnet after each iteration.
    pub overhead_per_canister_for_finalization: u64,
    /// Scheduler threads. Each gets the round's remaining budget, so a
    /// subnet executes up to this many times one thread's budget while one
    /// canister, which runs on one thread, never gets more than one thread's.
    /// 4 on application subnets (`scheduler_cores =
    /// NUMBER_OF_EXECUTION_THREADS`, `rs/config/src/subnet_config.rs`);
    /// 1 gives the whole subnet one budget, as this simulator did before.
    pub scheduler_cores: usize,
}

impl Default for RoundLimits {
    fn default() -> Self {
        Self {
            max_instructions_per_round: 4_000_000_000,
            max_instructions_per_slice: 2_000_000_000,
            overhead_per_execution: 2_000_000,
            overhead_per_canister: 8_000_000,
            overhead_per_canister_for_finalization: 12_000,
            scheduler_cores: 4,
        }
    }
}

/// Rounds an XNet message takes from the round that sends it to the round
/// that inducts it on mainnet: "about that of an ingress message, about 2
/// consensus rounds" (DFINITY, forum.dfinity.org/t/communication-between-subnets/1766),
/// so that a request-response round trip takes 4 rounds, the lower end of
/// the 4-5 measured there and in forum thread 62931 ("at least four
/// consensus rounds at low load").
pub const MAINNET_XNET_LATENCY_ROUNDS: u64 = 2;

/// The model's parameters.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct SimConfig {
    /// Requests in flight per (caller, callee) pair (`DEFAULT_QUEUE_CAPACITY`).
    pub queue_capacity: u32,
    /// IC time at the first round, in ns since the epoch.
    pub start_time_ns: u64,
    /// How far time moves per tick (PocketIC: 1 ns).
    pub time_step_ns: u64,
    /// Cycles a new canister starts with (PocketIC: 100 T).
    pub initial_cycles: u128,
    /// Each round's instruction budget and scheduler threads.
    pub round_limits: RoundLimits,
    /// Rounds between the round that sends a message to another subnet and
    /// the first round that may induct it. 0 is PocketIC's behaviour: the
    /// receiving subnet inducts it at its next round, in the same tick if it
    /// runs later in it. On mainnet a message waits for its subnet to
    /// certify its stream and for the receiving subnet's next block to
    /// include it (`docs/replica-costs.md` has the published figures).
    pub xnet_latency_rounds: u64,
    /// Instructions one message may execute before it traps (the replica's
    /// `max_instructions_per_message`, 40 B with deterministic time
    /// slicing: `rs/config/src/subnet_config.rs`). Smaller values let tests
    /// run a canister that loops forever in little host time.
    pub max_instructions_per_message: u64,
    /// Bytes of the host's memory that the canisters may hold in all (see
    /// [`HostMemory`](crate::HostMemory): a canister's linear memory counts
    /// three times). Growth past it traps, as growth past a full subnet's
    /// memory does, and a module that does not fit is refused at install.
    pub host_memory_budget: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 500,
            start_time_ns: 1_767_225_600_000_000_000, // 2026-01-01T00:00:00Z
            time_step_ns: 1,
            initial_cycles: 100_000_000_000_000,
            round_limits: RoundLimits::default(),
            xnet_latency_rounds: 0,
            max_instructions_per_message: crate::cycles::MAX_INSTRUCTIONS_PER_MESSAGE,
            host_memory_budget: DEFAULT_HOST_MEMORY_BUDGET,
        }
    }
}

/// One second of IC time: a mainnet-like time step.
pub const ONE_SECOND_NS: u64 = 1_000_000_000;

/// PocketIC's `update_call` gives up after this many rounds.
pub const UPDATE_CALL_ROUND_LIMIT: u64 = 100;

/// Builds a [`Sim`] with the given subnets.
pub struct SimBuilder {
    /// Each subnet's id, and its canister ids if given.
    pub(crate) subnet_ids: Vec<(Principal, Option<IdRanges>)>,
    pub(crate) config: SimConfig,
    pub(crate) tracing: bool,
    pub(crate) host_memory: Option<HostMemory>,
    /// The configuration was given (other than the budget): a restore refuses it.
    pub(crate) configured: bool,
}

impl SimBuilder {
    /// Adds an application subnet with a generated id.
    pub fn with_subnet(mut self) -> Self {
        self.subnet_ids.push((self.next_id(), None));
        self
    }

    /// The id the next subnet added without one gets.
    fn next_id(&self) -> Principal {
        let n = self.subnet_ids.len() as u64;
        let low = (n as u8).wrapping_mul(37).wrapping_add(11);
        let mut bytes = [low; 29];
        // Beyond 256 subnets the higher bytes of n tell the ids apart.
        for (i, high) in (n >> 8).to_le_bytes().into_iter().enumerate() {
            bytes[27 - i] ^= high;
        }
        bytes[28] = 2;
        Principal::from_slice(&bytes)
    }

    /// Adds `n` application subnets with generated ids.
    pub fn with_subnets(self, n: usize) -> Self {
        (0..n).fold(self, |builder, _| builder.with_subnet())
    }

    /// Adds an application subnet with id `id`.
    pub fn with_subnet_id(mut self, id: Principal) -> Self {
        self.subnet_ids.push((id, None));
        self
    }

    /// Adds a subnet with a generated id that holds the canister ids `ids`.
    /// A subnet added without them holds the `i`-th block of
    /// [`IDS_PER_SUBNET`] ids, `i` its place in the subnets' order; `build`
    /// panics if two subnets' ranges overlap.
    pub fn with_subnet_holding(mut self, ids: IdRanges) -> Self {
        self.subnet_ids.push((self.next_id(), Some(ids)));
        self
    }

    /// How far time moves per tick: PocketIC's 1 ns by default,
    /// [`ONE_SECOND_NS`] for mainnet-like time.
    pub fn with_time_step(mut self, ns: u64) -> Self {
        self.config.time_step_ns = ns;
        self.configured = true;
        self
    }

    /// Rounds a message to another subnet travels before it can be inducted
    /// (see [`SimConfig::xnet_latency_rounds`]).
    pub fn with_xnet_latency_rounds(mut self, rounds: u64) -> Self {
        self.config.xnet_latency_rounds = rounds;
        self.configured = true;
        self
    }

    /// What the canisters may hold of the host's memory (see
    /// [`SimConfig::host_memory_budget`]).
    pub fn with_host_memory_budget(mut self, bytes: u64) -> Self {
        self.config.host_memory_budget = bytes;
        self.host_memory = None;
        self
    }

    /// A budget this simulator shares with others (a server's instances):
    /// it replaces [`SimConfig::host_memory_budget`].
    pub fn with_host_memory(mut self, budget: &HostMemory) -> Self {
        self.config.host_memory_budget = budget.limit();
        self.host_memory = Some(budget.clone());
        self
    }

    /// Replaces the whole configuration (an earlier `with_time_step` too).
    pub fn with_config(mut self, config: SimConfig) -> Self {
        self.config = config;
        self.configured = true;
        self
    }

    /// The simulator, at time `start_time_ns` with no canisters.
    pub fn build(self) -> Sim {
        let mut ids = self.subnet_ids;
        ids.sort_by(|a, b| a.0.as_slice().cmp(b.0.as_slice()));
        ids.dedup_by(|a, b| a.0 == b.0);
        let subnets: Vec<Subnet> = ids
            .into_iter()
            .enumerate()
            .map(|(index, (id, ids))| Subnet {
                id,
                canisters: BTreeSet::new(),
                ingress_pool: vec![],
                inbound: vec![],
                in_transit: VecDeque::new(),
                ids: ids.unwrap_or_else(|| IdRanges::block(index as u64)),
                next_canister: 0,
            })
            .collect();
        let ranges: Vec<_> = subnets.iter().flat_map(|s| s.ids.all()).collect();
        for (i, a) in ranges.iter().enumerate() {
            for b in &ranges[i + 1..] {
                assert!(
                    a.end() < b.start() || b.end() < a.start(),
                    "subnets' canister ranges overlap: {a:?} and {b:?}"
                );
            }
        }
        Sim {
            engine: code::engine(),
            host_memory: self.host_memory.unwrap_or_else(|| HostMemory::new(self.config.host_memory_budget)),
            config: self.config,
            subnets,
            canisters: BTreeMap::new(),
            ingress: BTreeMap::new(),
            next_message: 0,
            time: self.config.start_time_ns,
            ticks: 0,
            paused_until: BTreeMap::new(),
            faults: Default::default(),
            tracing: self.tracing,
            root_key: super::IC_ROOT_KEY.to_vec(),
            chain_keys: Default::default(),
            executions: 0,
            outside: Default::default(),
            snapshots: BTreeMap::new(),
        }
    }
}

impl Sim {
    /// A builder with no subnets and the default configuration.
    pub fn builder() -> SimBuilder {
        SimBuilder {
            subnet_ids: vec![],
            config: SimConfig::default(),
            tracing: false,
            host_memory: None,
            configured: false,
        }
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &SimConfig {
        &self.config
    }
}

impl Tracing for SimBuilder {
    fn with_tracing(mut self) -> Self {
        self.tracing = true;
        self
    }
}
