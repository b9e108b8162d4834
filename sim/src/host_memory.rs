//! The host-memory budget: how much of the host's memory the canisters of
//! one simulator (or of several that share the budget) may hold, so that no
//! module can exhaust the process. [`HostMemory`] says what is counted.
//!
//! Growth past the budget traps rather than failing with -1: a trapped
//! message is rolled back, while one that went on after a refused growth
//! would be replayed without the refusal after a later trap, since the
//! budget is not part of the canister's state.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use wasmi::ResourceLimiter;
use wasmi::errors::{MemoryError, TableError};
use wasmi_core::LimiterError;

/// What a simulator's canisters may hold of the host's memory unless its
/// builder says otherwise: 8 GiB, a third of this project's 24 GiB
/// machines, enough for a canister with 2 GiB of heap.
pub const DEFAULT_HOST_MEMORY_BUDGET: u64 = 8 << 30;
/// Copies of linear memory the simulator holds: the instance (wasmi
/// allocates and zeroes all of it), its checkpoint, and the copy a rollback
/// replays on or a query runs from.
pub const LINEAR_MEMORY_COPIES: u64 = 3;
/// Copies of a table: the instance's, and the one a rollback replays on.
pub const TABLE_COPIES: u64 = 2;
/// Copies of stable memory: the bytes, the undo log of a message that
/// overwrites them, and the copy an upgrade keeps until it has succeeded.
pub const STABLE_MEMORY_COPIES: u64 = 3;
/// Host bytes per table element (wasmi keeps one untyped 64-bit cell).
pub const TABLE_ELEMENT_BYTES: u64 = 8;

/// A host-memory budget: one simulator's, or one that several simulators
/// share (a server's instances, each on a thread of its own).
///
/// The replica keeps a canister's memory as copy-on-write pages; the
/// simulator holds whole copies and counts each: linear memory three times
/// (the instance, its checkpoint, the copy a rollback replays on or a query
/// runs from), tables twice, stable memory three times (the bytes, the undo
/// log, the copy an upgrade keeps). Growth past the budget traps, as growth
/// past a full subnet's memory does ("Canister cannot grow its memory
/// usage."), and a module whose declared memory or tables do not fit is
/// refused at install.
///
/// ```
/// use sim::{HostMemory, Sim};
///
/// let budget = HostMemory::new(4 << 30);
/// let a = Sim::builder().with_host_memory(&budget).with_subnet().build();
/// let b = Sim::builder().with_host_memory(&budget).with_subnet().build();
/// assert_eq!((a.host_memory_used(), b.host_memory_used()), (budget.used(), budget.used()));
/// ```
#[derive(Clone)]
pub struct HostMemory(Arc<Budget>);

struct Budget {
    limit: u64,
    used: AtomicU64,
}

impl HostMemory {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Self(Arc::new(Budget { limit, used: AtomicU64::new(0) }))
    }

    /// Its size in bytes.
    pub fn limit(&self) -> u64 {
        self.0.limit
    }

    /// Bytes held now, by everything that shares it.
    pub fn used(&self) -> u64 {
        self.0.used.load(Ordering::Relaxed)
    }

    /// Whether `bytes` more fit now.
    pub fn fits(&self, bytes: u64) -> bool {
        self.used().checked_add(bytes).is_some_and(|total| total <= self.limit())
    }

    /// Why `bytes` (`copies` copies of what `what` grows) were refused.
    pub fn refusal(&self, what: &str, bytes: u64, copies: u64) -> OverBudget {
        OverBudget {
            what: what.into(),
            bytes: Bytes(bytes),
            copies,
            limit: Bytes(self.limit()),
            held: Bytes(self.used()),
        }
    }

    /// Takes `bytes` if they fit.
    fn take(&self, bytes: u64) -> bool {
        let limit = self.limit();
        self.0
            .used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(bytes).filter(|&total| total <= limit)
            })
            .is_ok()
    }

    /// Replaces `old` held bytes with `new`, whether or not they fit.
    fn exchange(&self, old: u64, new: u64) {
        let _ = self.0.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
            Some(used.saturating_sub(old).saturating_add(new))
        });
    }
}

impl fmt::Debug for HostMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostMemory({} of {} bytes)", self.used(), self.limit())
    }
}

/// What one holder (a store's memories and tables, a stable memory) has
/// of the budget; given back when it is dropped.
#[derive(Debug)]
pub struct Held {
    budget: HostMemory,
    bytes: u64,
}

impl Held {
    pub fn new(budget: &HostMemory) -> Self {
        Self { budget: budget.clone(), bytes: 0 }
    }

    pub fn budget(&self) -> &HostMemory {
        &self.budget
    }

    /// Takes `bytes` more if they fit.
    pub fn try_add(&mut self, bytes: u64) -> bool {
        let taken = self.budget.take(bytes);
        if taken {
            self.bytes += bytes;
        }
        taken
    }

    /// Holds exactly `bytes`, whether or not they fit: for returning to a
    /// state that was held before.
    pub fn set(&mut self, bytes: u64) {
        self.budget.exchange(self.bytes, bytes);
        self.bytes = bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.set(0);
    }
}

/// A store's limiter: growing its memories and tables takes from the
/// budget; the store gives it all back when it is dropped. It remembers why
/// it last refused, for the error an install or a trap reports.
#[derive(Debug)]
pub struct StoreLimiter {
    held: Held,
    refused: Option<String>,
    /// What the last growth took, to give back if the growth then fails.
    last: u64,
}

impl StoreLimiter {
    pub fn new(budget: &HostMemory) -> Self {
        Self { held: Held::new(budget), refused: None, last: 0 }
    }

    pub fn budget(&self) -> &HostMemory {
        self.held.budget()
    }

    /// Why growth was last refused, once.
    pub fn take_refusal(&mut self) -> Option<String> {
        self.refused.take()
    }

    /// Takes what growing from `current` to `desired` units (bytes, table
    /// elements) costs, or says why not. Growth past the memory's or table's
    /// own maximum fails (-1) before it costs anything.
    fn growing(
        &mut self,
        (current, desired, maximum): (usize, usize, Option<usize>),
        unit_bytes: u64,
        copies: u64,
        what: impl FnOnce(u64) -> String,
    ) -> Result<bool, LimiterError> {
        if maximum.is_some_and(|max| desired > max) {
            return Ok(false);
        }
        let by = (desired - current) as u64;
        let bytes = by.saturating_mul(unit_bytes).saturating_mul(copies);
        if self.held.try_add(bytes) {
            self.last = bytes;
            return Ok(true);
        }
        self.refused = Some(self.held.budget().refusal(&what(by), bytes, copies).to_string());
        Err(LimiterError::ResourceLimiterDeniedAllocation)
    }

    fn grow_failed(&mut self) {
        let held = self.held.bytes - self.last;
        self.held.set(held);
        self.last = 0;
    }
}

impl ResourceLimiter for StoreLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        max: Option<usize>,
    ) -> Result<bool, LimiterError> {
        let what = |by| format!("growing linear memory by {}", Bytes(by));
        self.growing((current, desired, max), 1, LINEAR_MEMORY_COPIES, what)
    }

    fn memory_grow_failed(&mut self, _error: &MemoryError) -> Result<(), LimiterError> {
        self.grow_failed();
        Ok(())
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        max: Option<usize>,
    ) -> Result<bool, LimiterError> {
        let what = |by| format!("a table of {by} more elements");
        self.growing((current, desired, max), TABLE_ELEMENT_BYTES, TABLE_COPIES, what)
    }

    fn table_grow_failed(&mut self, _error: &TableError) -> Result<(), LimiterError> {
        self.grow_failed();
        Ok(())
    }

    fn instances(&self) -> usize {
        1
    }

    fn tables(&self) -> usize {
        usize::MAX
    }

    fn memories(&self) -> usize {
        1
    }
}

/// Memory the budget refused: what was to grow, and what it would have taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} would take {bytes} ({copies} copies) of the simulator's host-memory budget of {limit}, of which {held} is held"
)]
pub struct OverBudget {
    /// What was to grow, as `growing stable memory by 1 MiB`.
    what: String,
    /// What it would have taken, every copy counted.
    bytes: Bytes,
    /// How many copies of it the simulator holds.
    copies: u64,
    /// The budget.
    limit: Bytes,
    /// What was held of the budget then.
    held: Bytes,
}

/// A byte count as people read it (`12 GiB`, `64 KiB`, `100 bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
        for (unit, size) in UNITS {
            if self.0 >= size {
                let whole = self.0 / size;
                let tenths = (self.0 % size) * 10 / size;
                return if tenths == 0 {
                    write!(f, "{whole} {unit}")
                } else {
                    write!(f, "{whole}.{tenths} {unit}")
                };
            }
        }
        write!(f, "{} bytes", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_take_and_give_back() {
        let budget = HostMemory::new(100);
        let mut a = Held::new(&budget);
        let mut b = Held::new(&budget);
        assert!(a.try_add(60));
        assert!(!b.try_add(41), "over the limit");
        assert!(b.try_add(40));
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        b.set(10);
        assert_eq!(budget.used(), 10);
        assert!(!budget.fits(u64::MAX), "no overflow");
    }

    #[test]
    fn a_limiter_refuses_past_the_budget_and_says_why() {
        let budget = HostMemory::new(3 << 20);
        let mut limiter = StoreLimiter::new(&budget);
        assert!(limiter.memory_growing(0, 1 << 20, None).unwrap());
        assert!(limiter.memory_growing(1 << 20, 2 << 20, None).is_err());
        let why = limiter.take_refusal().unwrap();
        assert!(why.contains("growing linear memory by 1 MiB would take 3 MiB"), "{why}");
        assert!(limiter.table_growing(0, usize::MAX, None).is_err(), "no overflow");
        assert!(!limiter.memory_growing(1 << 20, 2 << 20, Some(1 << 20)).unwrap(), "past its own maximum");
        assert_eq!(budget.used(), 3 << 20);
        limiter.memory_grow_failed(&MemoryError::OutOfSystemMemory).unwrap();
        assert_eq!(budget.used(), 0, "a growth that failed costs nothing");
        drop(limiter);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn bytes_read_as_people_read_them() {
        assert_eq!(Bytes(12 << 30).to_string(), "12 GiB");
        assert_eq!(Bytes(3 << 19).to_string(), "1.5 MiB");
        assert_eq!(Bytes(100).to_string(), "100 bytes");
    }
}
