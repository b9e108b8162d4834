//! A simulator saved between ticks ([`Sim::save`]), and restored ([`SimBuilder::restore`]).

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::canister::{Canister, CanisterSnapshot, SavedCanister, SavedCanisterSnapshot};
use crate::code::{self, CompiledModule, Metering};
use crate::error::{RestoreError, SaveError};
use crate::host_memory::HostMemory;
use crate::message::MessageId;
use crate::sim::{FaultState, IngressState, Outside, Sim, SimBuilder, SimConfig, Subnet};

/// Everything a [`Sim`] needs to resume, between ticks: plain data for any
/// serde format (the servers use postcard). Tracing and the host-memory
/// budget are not part of it: the restoring builder gives them.
#[derive(Serialize, Deserialize)]
pub struct SavedSim {
    config: SimConfig,
    subnets: Vec<Subnet>,
    /// The canisters' modules, each once.
    modules: Vec<SavedModule>,
    canisters: Vec<SavedCanister>,
    ingress: BTreeMap<MessageId, IngressState>,
    next_message: u64,
    time: u64,
    ticks: u64,
    paused_until: BTreeMap<Principal, u64>,
    faults: FaultState,
    #[serde(with = "serde_bytes")]
    root_key: Vec<u8>,
    outside: Outside,
    /// Snapshots of canisters, by canister and snapshot id.
    snapshots: Vec<(Principal, Vec<u8>, SavedCanisterSnapshot)>,
}

/// A module as installed, compiled again on restore.
#[derive(Serialize, Deserialize)]
struct SavedModule {
    #[serde(with = "serde_bytes")]
    wasm: Vec<u8>,
    metering: Metering,
}

impl SavedSim {
    /// The version of this layout, for the header of a file that holds one:
    /// bumped whenever any saved type changes.
    pub const FORMAT: u32 = 10;
}

/// The modules a saved simulator keeps, each once (canisters that run the
/// same module, and their snapshots, share it), by metering and bytes.
#[derive(Default)]
struct ModuleNumbers<'s> {
    modules: Vec<SavedModule>,
    numbered: BTreeMap<(Metering, &'s [u8]), usize>,
}

impl<'s> ModuleNumbers<'s> {
    fn number(&mut self, module: &'s CompiledModule) -> usize {
        let modules = &mut self.modules;
        *self.numbered.entry((module.metering(), module.wasm())).or_insert_with(|| {
            modules.push(SavedModule { wasm: module.wasm().to_vec(), metering: module.metering() });
            modules.len() - 1
        })
    }
}

impl Sim {
    /// Everything needed to resume this simulator between ticks/messages.
    pub fn save(&self) -> Result<SavedSim, SaveError> {
        let mut numbers = ModuleNumbers::default();
        let canisters = self
            .canisters
            .values()
            .map(|canister| canister.save(|module| numbers.number(module)))
            .collect::<Result<_, _>>()?;
        let snapshots = self
            .snapshots
            .iter()
            .map(|((canister, id), snapshot)| (*canister, id.clone(), snapshot.save(|m| numbers.number(m))))
            .collect();
        Ok(SavedSim {
            config: self.config,
            subnets: self.subnets.clone(),
            modules: numbers.modules,
            canisters,
            ingress: self.ingress.clone(),
            next_message: self.next_message,
            time: self.time,
            ticks: self.ticks,
            paused_until: self.paused_until.clone(),
            faults: self.faults.clone(),
            root_key: self.root_key.clone(),
            outside: self.outside.clone(),
            snapshots,
        })
    }
}

impl SimBuilder {
    /// A simulator resumed from `saved`, using this builder's host-memory
    /// budget (`with_host_memory`/`with_host_memory_budget`) and tracing; it
    /// refuses if subnets or a config were also given to the builder, or if
    /// the state does not fit the host-memory budget.
    pub fn restore(self, saved: SavedSim) -> Result<Sim, RestoreError> {
        if !self.subnet_ids.is_empty() || self.configured {
            return Err(RestoreError(
                "its subnets and configuration are the saved ones: give the builder neither".into(),
            ));
        }
        let host_memory = self.host_memory.unwrap_or_else(|| HostMemory::new(self.config.host_memory_budget));
        let modules = saved
            .modules
            .into_iter()
            .map(|m| code::compile(&m.wasm, m.metering))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| RestoreError(format!("a saved module does not compile: {e}")))?;
        let mut sim = Sim {
            engine: code::engine(),
            config: SimConfig { host_memory_budget: host_memory.limit(), ..saved.config },
            host_memory,
            subnets: saved.subnets,
            canisters: BTreeMap::new(),
            ingress: saved.ingress,
            next_message: saved.next_message,
            time: saved.time,
            ticks: saved.ticks,
            paused_until: saved.paused_until,
            faults: saved.faults,
            tracing: self.tracing,
            root_key: saved.root_key,
            chain_keys: Default::default(),
            executions: 0,
            outside: saved.outside,
            snapshots: BTreeMap::new(),
        };
        for (canister, id, snapshot) in saved.snapshots {
            sim.snapshots.insert((canister, id), CanisterSnapshot::from_saved(snapshot, &modules)?);
        }
        for canister in saved.canisters {
            let (id, subnet) = (canister.id, canister.subnet);
            let Some(s) = sim.subnets.get_mut(subnet) else {
                return Err(RestoreError(format!("canister {id} is on subnet {subnet}, which is not saved")));
            };
            s.canisters.insert(id);
            let state = sim.new_system_state(id, subnet, vec![]);
            let canister = Canister::from_saved(canister, state, &sim.engine, &modules, sim.tracing)?;
            sim.canisters.insert(id, canister);
        }
        Ok(sim)
    }
}
