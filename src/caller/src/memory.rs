//! Stable memory: one region per piece of persistent state, all ids here.

use ic_stable_structures::DefaultMemoryImpl;
use ic_stable_structures::memory_manager::{MemoryId, MemoryManager, VirtualMemory};

pub type Memory = VirtualMemory<DefaultMemoryImpl>;

/// The stored callee.
pub const CALLEE: MemoryId = MemoryId::new(0);
/// The jobs as versions before ic-fanout's jobs saved them during an
/// upgrade; read once, by the first `post_upgrade` of this version.
pub const SAVED_JOBS: MemoryId = MemoryId::new(1);
/// Every job (ic-fanout's `Jobs`).
pub const JOBS: MemoryId = MemoryId::new(2);
/// The ids of the unfinished ones.
pub const UNFINISHED_JOBS: MemoryId = MemoryId::new(3);
/// How many nonce ranges new jobs pass over: those that v0.1.0's jobs'
/// nonces reach into (set when its jobs are brought in).
pub const NONCE_RANGES_SKIPPED: MemoryId = MemoryId::new(4);
// A new piece of persistent state takes the next id.

thread_local! {
    static MEMORY_MANAGER: MemoryManager<DefaultMemoryImpl> =
        MemoryManager::init(DefaultMemoryImpl::default());
}

pub fn region(id: MemoryId) -> Memory {
    MEMORY_MANAGER.with(|m| m.get(id))
}
