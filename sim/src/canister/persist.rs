//! A canister saved between messages, and resumed from what was saved.

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use wasmi::Engine;

use super::call_context::{CallContext, Callback};
use super::rollback::Installed;
use super::traps::TrapInjector;
use super::{Canister, CanisterStatus};
use crate::code::{Code, CompiledModule, MemoryImage, SavedSnapshot};
use crate::error::{RestoreError, SaveError};
use crate::message::{CallContextId, CallbackId, Message};
use crate::stable::{MAX_PAGES, PAGE_SIZE, StableMemory};
use crate::stats::CanisterStats;
use crate::system_api::LogRecord;
use crate::system_api::SystemState;

/// A canister between messages: all of it but the engine's handles, which
/// are rebuilt, and its trace, which is not state.
#[derive(Serialize, Deserialize)]
pub struct SavedCanister {
    pub id: Principal,
    pub subnet: usize,
    status: CanisterStatus,
    controllers: Vec<Principal>,
    env_vars: BTreeMap<String, String>,
    balance: u128,
    freezing_reserve: u128,
    stable: MemoryImage,
    in_flight: BTreeMap<Principal, u32>,
    global_timer: u64,
    canister_version: u64,
    #[serde(with = "serde_bytes")]
    certified_data: Vec<u8>,
    wasm_memory_limit: u64,
    debug_log: Vec<LogRecord>,
    code: Option<SavedCode>,
    call_contexts: BTreeMap<CallContextId, CallContext>,
    callbacks: BTreeMap<CallbackId, Callback>,
    next_id: u64,
    queue: VecDeque<Message>,
    stats: CanisterStats,
    traps: Option<TrapInjector>,
    certified_data_changed: bool,
}

/// Installed code: its module, by its index among the saved simulator's
/// (canisters that run the same module share it), and its instance's state.
#[derive(Serialize, Deserialize)]
struct SavedCode {
    module: usize,
    instance: SavedSnapshot,
}

impl Canister {
    /// The canister as it is between messages; `module_index` numbers the
    /// module its code runs.
    pub fn save<'a>(
        &'a self,
        module_index: impl FnOnce(&'a CompiledModule) -> usize,
    ) -> Result<SavedCanister, SaveError> {
        let state = self.store.data();
        assert!(state.exec.is_none() && state.tape.is_none(), "a canister is saved between messages");
        let code = match &self.code {
            Some(installed) => {
                let instance = installed
                    .code
                    .save(&self.store)
                    .map_err(|e| SaveError(format!("canister {}: {e}", self.id)))?;
                Some(SavedCode { module: module_index(&installed.code.module), instance })
            }
            None => None,
        };
        Ok(SavedCanister {
            id: self.id,
            subnet: self.subnet,
            status: self.status,
            controllers: state.controllers.clone(),
            env_vars: state.env_vars.clone(),
            balance: state.balance,
            freezing_reserve: state.freezing_reserve,
            stable: MemoryImage::of(state.stable.bytes()),
            in_flight: state.in_flight.clone(),
            global_timer: state.global_timer,
            canister_version: state.canister_version,
            certified_data: state.certified_data.clone(),
            wasm_memory_limit: state.wasm_memory_limit,
            debug_log: state.debug_log.records().cloned().collect(),
            code,
            call_contexts: self.call_contexts.clone(),
            callbacks: self.callbacks.clone(),
            next_id: self.next_id,
            queue: self.queue.clone(),
            stats: self.stats.clone(),
            traps: self.traps.clone(),
            certified_data_changed: self.certified_data_changed,
        })
    }

    /// The canister `saved` was, in `state` (a new canister's, with its
    /// network and limits); `modules` are the saved simulator's, compiled.
    /// Its memories take from the budget, and must fit.
    pub fn from_saved(
        saved: SavedCanister,
        mut state: SystemState,
        engine: &Engine,
        modules: &[Rc<CompiledModule>],
        tracing: bool,
    ) -> Result<Self, RestoreError> {
        let id = saved.id;
        let fail = |e: String| RestoreError(format!("canister {id}: {e}"));
        saved.stable.check(PAGE_SIZE as usize).map_err(|e| fail(format!("stable memory: {e}")))?;
        if saved.stable.len() as u64 > MAX_PAGES * PAGE_SIZE {
            return Err(fail(format!("its stable memory is larger than {MAX_PAGES} pages")));
        }
        state.stable = StableMemory::from_bytes(saved.stable.to_memory());
        state.hold_stable().map_err(|e| fail(e.to_string()))?;
        state.controllers = saved.controllers;
        state.env_vars = saved.env_vars;
        state.balance = saved.balance;
        state.freezing_reserve = saved.freezing_reserve;
        state.in_flight = saved.in_flight;
        state.global_timer = saved.global_timer;
        state.canister_version = saved.canister_version;
        state.certified_data = saved.certified_data;
        state.wasm_memory_limit = saved.wasm_memory_limit;
        for record in saved.debug_log {
            state.debug_log.keep(record);
        }
        let mut canister = Canister::new(engine, saved.subnet, state, tracing);
        if let Some(code) = saved.code {
            let module =
                modules.get(code.module).ok_or_else(|| fail(format!("no module {}", code.module)))?;
            let (code, checkpoint) = Code::resume(&mut canister.store, module.clone(), code.instance)
                .map_err(|e| fail(e.to_string()))?;
            canister.code =
                Some(Installed { code, checkpoint, log: vec![], instructions_since_checkpoint: 0 });
        }
        canister.status = saved.status;
        canister.call_contexts = saved.call_contexts;
        canister.callbacks = saved.callbacks;
        canister.next_id = saved.next_id;
        canister.queue = saved.queue;
        canister.stats = saved.stats;
        canister.traps = saved.traps;
        canister.certified_data_changed = saved.certified_data_changed;
        Ok(canister)
    }
}
