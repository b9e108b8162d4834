//! A canister's snapshot ([`CanisterSnapshot`]): its module and memories at
//! one point, as the management canister's `take_canister_snapshot` keeps
//! them; loading one puts them back.

use serde::{Deserialize, Serialize};
use std::rc::Rc;
use wasmi::Engine;

use super::Canister;
use super::rollback::Installed;
use crate::code::{Code, CompiledModule, MemoryImage, SavedSnapshot};
use crate::error::{RestoreError, SimError};
use crate::stable::StableMemory;
use crate::system_api;

/// What a snapshot holds: the module and its instance's memory and
/// globals (none for a canister without code), stable memory, certified
/// data and the global timer.
#[derive(Clone)]
pub struct CanisterSnapshot {
    code: Option<(Rc<CompiledModule>, SavedSnapshot)>,
    stable: MemoryImage,
    certified_data: Vec<u8>,
    global_timer: u64,
}

/// A snapshot as a saved simulator keeps it: its module by its index among
/// the saved simulator's.
#[derive(Serialize, Deserialize)]
pub struct SavedCanisterSnapshot {
    code: Option<(usize, SavedSnapshot)>,
    stable: MemoryImage,
    #[serde(with = "serde_bytes")]
    certified_data: Vec<u8>,
    global_timer: u64,
}

impl CanisterSnapshot {
    /// Its size as the replica counts it: module, heap and stable memory.
    pub fn size(&self) -> u64 {
        let code =
            self.code.as_ref().map_or(0, |(module, instance)| module.wasm().len() + instance.memory_len());
        (code + self.stable.len()) as u64
    }

    /// The snapshot as a saved simulator keeps it; `module_index` numbers
    /// its module.
    pub fn save<'a>(
        &'a self,
        module_index: impl FnOnce(&'a CompiledModule) -> usize,
    ) -> SavedCanisterSnapshot {
        SavedCanisterSnapshot {
            code: self.code.as_ref().map(|(module, instance)| (module_index(module), instance.clone())),
            stable: self.stable.clone(),
            certified_data: self.certified_data.clone(),
            global_timer: self.global_timer,
        }
    }

    /// The snapshot `saved` was; `modules` are the saved simulator's.
    pub fn from_saved(
        saved: SavedCanisterSnapshot,
        modules: &[Rc<CompiledModule>],
    ) -> Result<Self, RestoreError> {
        let code = match saved.code {
            Some((index, instance)) => {
                let module = modules.get(index).ok_or_else(|| RestoreError(format!("no module {index}")))?;
                Some((module.clone(), instance))
            }
            None => None,
        };
        let (stable, certified_data, global_timer) = (saved.stable, saved.certified_data, saved.global_timer);
        Ok(Self { code, stable, certified_data, global_timer })
    }
}

impl Canister {
    /// A snapshot of the canister as it is between messages.
    pub fn take_snapshot(&self) -> Result<CanisterSnapshot, SimError> {
        let code = match &self.code {
            Some(installed) => {
                let instance =
                    installed.code.save(&self.store).map_err(|e| SimError::InvalidWasm(e.to_string()))?;
                Some((installed.code.module.clone(), instance))
            }
            None => None,
        };
        let state = self.store.data();
        Ok(CanisterSnapshot {
            code,
            stable: MemoryImage::of(state.stable.bytes()),
            certified_data: state.certified_data.clone(),
            global_timer: state.global_timer,
        })
    }

    /// Puts `snapshot`'s module and memories in place of the canister's, in
    /// a new store, and bumps its version; its settings, cycles and queue
    /// stay. A canister with calls still open must be stopped first; if the
    /// snapshot's memory does not fit the host-memory budget, the canister
    /// is as it was.
    pub fn load_snapshot(&mut self, engine: &Engine, snapshot: &CanisterSnapshot) -> Result<(), SimError> {
        if !self.call_contexts.is_empty() {
            return Err(SimError::OpenCallContexts(self.id));
        }
        let mut state = system_api::take_state(&mut self.store);
        state.memory = None;
        state.counter = None;
        let mut store = system_api::new_store(engine, state);
        let code = match &snapshot.code {
            Some((module, instance)) => match Code::resume(&mut store, module.clone(), instance.clone()) {
                Ok((code, checkpoint)) => {
                    Some(Installed { code, checkpoint, log: vec![], instructions_since_checkpoint: 0 })
                }
                Err(e) => {
                    let state = system_api::take_state(&mut store);
                    system_api::put_state(&mut self.store, state);
                    if let Some(installed) = &self.code {
                        installed.code.bind(self.store.data_mut());
                    }
                    return Err(SimError::InvalidWasm(format!("the snapshot does not load: {e}")));
                }
            },
            None => None,
        };
        let state = store.data_mut();
        state.stable = StableMemory::from_bytes(snapshot.stable.to_memory());
        // Its size was reached within the budget when it was taken.
        state.settle_stable();
        state.certified_data = snapshot.certified_data.clone();
        state.global_timer = snapshot.global_timer;
        state.canister_version += 1;
        self.store = store;
        self.code = code;
        self.certified_data_changed = true;
        Ok(())
    }
}
