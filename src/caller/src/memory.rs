//! Stable memory: one region per piece of persistent state, all ids here.

use ic_stable_structures::DefaultMemoryImpl;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};

pub type Memory = VirtualMemory<DefaultMemoryImpl>;

/// The stored callee.
pub const CALLEE: MemoryId = MemoryId::new(0);
/// The jobs while an upgrade is under way.
pub const JOBS: MemoryId = MemoryId::new(1);
// A new piece of persistent state takes the next id.

thread_local! {
    static MEMORY_MANAGER: MemoryManager<DefaultMemoryImpl> =
        MemoryManager::init(DefaultMemoryImpl::default());
}

pub fn region(id: MemoryId) -> Memory {
    MEMORY_MANAGER.with(|m| m.get(id))
}
