//! A canister's memories from outside the canister: stable memory read and
//! written whole, as PocketIC's `get_stable_memory` and
//! `set_stable_memory` do, and snapshots of its module and memories.

use candid::Principal;

use super::Sim;
use crate::error::SimError;
use crate::stable::{MAX_PAGES, PAGE_SIZE, StableMemory};

impl Sim {
    /// A canister's stable memory: all its pages.
    pub fn stable_memory(&self, id: Principal) -> Result<Vec<u8>, SimError> {
        Ok(self.canister(id)?.system_state().stable.bytes().to_vec())
    }

    /// Replaces a canister's stable memory with `data`, grown with zeros to
    /// whole pages, if that fits the page limit and the host-memory budget;
    /// otherwise the memory is as it was.
    pub fn set_stable_memory(&mut self, id: Principal, mut data: Vec<u8>) -> Result<(), SimError> {
        let pages = (data.len() as u64).div_ceil(PAGE_SIZE);
        if pages > MAX_PAGES {
            return Err(SimError::StableMemoryTooLarge { pages, max: MAX_PAGES });
        }
        data.resize((pages * PAGE_SIZE) as usize, 0);
        let state = self.canister_mut(id)?.system_state_mut();
        let old = std::mem::replace(&mut state.stable, StableMemory::from_bytes(data));
        state.stable_held.set(0);
        if let Err(over) = state.hold_stable() {
            state.stable = old;
            state.settle_stable();
            return Err(SimError::OverBudget(over.to_string()));
        }
        Ok(())
    }
}

impl Sim {
    /// Takes a snapshot of the canister as it is between messages, kept
    /// under `snapshot_id` (replacing one kept under it); answers its size.
    /// Who may, and how many each canister keeps, is the model's to check.
    pub fn take_canister_snapshot(&mut self, id: Principal, snapshot_id: Vec<u8>) -> Result<u64, SimError> {
        let snapshot = self.canister(id)?.take_snapshot()?;
        let size = snapshot.size();
        self.snapshots.insert((id, snapshot_id), snapshot);
        Ok(size)
    }

    /// Puts the canister's snapshot `snapshot_id` in place of its module and
    /// memories (see [`crate::Sim::take_canister_snapshot`]).
    pub fn load_canister_snapshot(&mut self, id: Principal, snapshot_id: &[u8]) -> Result<(), SimError> {
        let snapshot = self
            .snapshots
            .get(&(id, snapshot_id.to_vec()))
            .ok_or_else(|| SimError::NoSuchSnapshot { canister: id, snapshot: snapshot_id.to_vec() })?
            .clone();
        let engine = self.engine.clone();
        self.canister_mut(id)?.load_snapshot(&engine, &snapshot)
    }

    /// Forgets the canister's snapshot `snapshot_id`.
    pub fn delete_canister_snapshot(&mut self, id: Principal, snapshot_id: &[u8]) -> Result<(), SimError> {
        self.snapshots
            .remove(&(id, snapshot_id.to_vec()))
            .map(|_| ())
            .ok_or_else(|| SimError::NoSuchSnapshot { canister: id, snapshot: snapshot_id.to_vec() })
    }
}
