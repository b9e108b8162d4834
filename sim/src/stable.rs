//! Stable memory with an undo log.
//!
//! Every write goes through the system API, so remembering what it
//! overwrote makes a rollback cost only what the message wrote, however
//! large the memory is.

pub const PAGE_SIZE: u64 = 64 * 1024;
/// The model's limit (the replica allows hundreds of GiB).
pub const MAX_PAGES: u64 = 16 * 1024;

/// An access past the end of stable memory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("stable memory access out of bounds: {offset}+{len} > {size}")]
pub struct OutOfBounds {
    offset: u64,
    len: u64,
    size: usize,
}

#[derive(Clone, Default)]
pub struct StableMemory {
    bytes: Vec<u8>,
    /// (offset, overwritten bytes) since the last checkpoint, oldest first.
    undo: Vec<(u64, Vec<u8>)>,
    pages_at_checkpoint: u64,
    /// Writes below this many pages are logged: the size at the checkpoint
    /// or at the largest [`Mark`] since (bytes above are truncated away).
    logged_pages: u64,
}

/// A point after the last checkpoint that [`StableMemory::rollback_to`]
/// returns to, for an execution inside a composite query's evaluation,
/// which keeps what the ones before it wrote.
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    undo: usize,
    pages: u64,
}

impl StableMemory {
    /// A memory of `bytes` (whole pages), checkpointed: its undo log is
    /// not part of a saved state.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let pages_at_checkpoint = bytes.len() as u64 / PAGE_SIZE;
        Self { bytes, undo: vec![], pages_at_checkpoint, logged_pages: pages_at_checkpoint }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The size in bytes.
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    pub fn pages(&self) -> u64 {
        self.bytes.len() as u64 / PAGE_SIZE
    }

    /// Returns the previous size in pages, or -1 (as u64::MAX) if the
    /// memory cannot grow that much.
    pub fn grow(&mut self, pages: u64) -> i64 {
        let old = self.pages();
        match old.checked_add(pages) {
            Some(new) if new <= MAX_PAGES => {
                self.bytes.resize((new * PAGE_SIZE) as usize, 0);
                old as i64
            }
            _ => -1,
        }
    }

    fn range(&self, offset: u64, len: u64) -> Result<std::ops::Range<usize>, OutOfBounds> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes.len() as u64 => Ok(offset as usize..end as usize),
            _ => Err(OutOfBounds { offset, len, size: self.bytes.len() }),
        }
    }

    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>, OutOfBounds> {
        Ok(self.bytes[self.range(offset, len)?].to_vec())
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<(), OutOfBounds> {
        let range = self.range(offset, data.len() as u64)?;
        // Bytes beyond the checkpoint's (or a mark's) size are dropped by
        // truncation instead.
        let logged_end = (self.logged_pages * PAGE_SIZE) as usize;
        if range.start < logged_end {
            let end = range.end.min(logged_end);
            self.undo.push((offset, self.bytes[range.start..end].to_vec()));
        }
        self.bytes[range].copy_from_slice(data);
        Ok(())
    }

    /// Makes the current contents the state a rollback returns to.
    pub fn checkpoint(&mut self) {
        self.undo.clear();
        self.pages_at_checkpoint = self.pages();
        self.logged_pages = self.pages_at_checkpoint;
    }

    /// Returns to the last checkpoint.
    pub fn rollback(&mut self) {
        self.rollback_to(Mark { undo: 0, pages: self.pages_at_checkpoint });
    }

    /// The current contents, as a point to roll back to without losing
    /// what was written since the checkpoint.
    pub fn mark(&mut self) -> Mark {
        self.logged_pages = self.logged_pages.max(self.pages());
        Mark { undo: self.undo.len(), pages: self.pages() }
    }

    /// Returns to `mark`; a later rollback still returns to the checkpoint.
    pub fn rollback_to(&mut self, mark: Mark) {
        for (offset, old) in self.undo.drain(mark.undo..).rev() {
            self.bytes[offset as usize..offset as usize + old.len()].copy_from_slice(&old);
        }
        self.bytes.truncate((mark.pages * PAGE_SIZE) as usize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollback_undoes_writes_and_growth() {
        let mut s = StableMemory::default();
        assert_eq!(s.grow(1), 0);
        s.write(10, b"kept").unwrap();
        s.checkpoint();
        s.write(8, b"overwritten").unwrap();
        assert_eq!(s.grow(2), 1);
        s.write(PAGE_SIZE + 5, b"new page").unwrap();
        s.write(PAGE_SIZE - 2, b"spans").unwrap();
        s.rollback();
        assert_eq!(s.pages(), 1);
        assert_eq!(s.read(8, 8).unwrap(), b"\0\0kept\0\0");
        assert_eq!(s.read(PAGE_SIZE - 2, 2).unwrap(), b"\0\0");
    }

    #[test]
    fn a_rollback_to_a_mark_keeps_what_came_before_it() {
        let mut s = StableMemory::default();
        assert_eq!(s.grow(1), 0);
        s.checkpoint();
        s.write(0, b"first").unwrap();
        assert_eq!(s.grow(1), 1);
        s.write(PAGE_SIZE, b"grown").unwrap();
        let mark = s.mark();
        s.write(0, b"later").unwrap();
        s.write(PAGE_SIZE, b"again").unwrap();
        assert_eq!(s.grow(1), 2);
        s.rollback_to(mark);
        assert_eq!((s.pages(), s.read(0, 5).unwrap()), (2, b"first".to_vec()));
        assert_eq!(s.read(PAGE_SIZE, 5).unwrap(), b"grown");
        s.rollback();
        assert_eq!((s.pages(), s.read(0, 5).unwrap()), (1, vec![0; 5]));
    }

    #[test]
    fn out_of_bounds_is_an_error() {
        let mut s = StableMemory::default();
        assert!(s.write(0, b"x").is_err());
        assert!(s.read(u64::MAX, 2).is_err());
        assert_eq!(s.grow(MAX_PAGES + 1), -1);
    }
}
