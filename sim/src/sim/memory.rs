//! A canister's stable memory read and written whole from outside the
//! canister, as PocketIC's `get_stable_memory` and `set_stable_memory` do.

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
