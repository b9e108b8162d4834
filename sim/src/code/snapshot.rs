//! An instance's state: snapshots for checkpoints and rollback, and saving and resuming one.

use serde::{Deserialize, Serialize};
use std::rc::Rc;
use wasmi::errors::MemoryError;
use wasmi::{AsContext, AsContextMut, F32, F64, Store, Val, ValType};

use super::{Code, CompiledModule};
use crate::module::WasmError;
use crate::system_api::{self, SystemState};

/// An instance's state: linear memory and mutable globals.
#[derive(Clone, Default)]
pub struct Snapshot {
    memory: MemoryImage,
    globals: Vec<Val>,
}

/// Linear memory as a snapshot keeps it: its size, and only the pages that
/// are not all zeros, so that a checkpoint costs what the canister wrote,
/// not what it declared. (A saved stable memory too.)
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct MemoryImage {
    len: usize,
    /// The indices of the pages kept, ascending.
    pages: Vec<u32>,
    /// Their bytes, one [`IMAGE_PAGE`] after another.
    #[serde(with = "serde_bytes")]
    bytes: Vec<u8>,
}

/// An OS page: a wasm page (64 KiB) is 16 of them.
const IMAGE_PAGE: usize = 4096;

const WASM_PAGE: usize = 65536;

/// A restored [`MemoryImage`] that [`MemoryImage::of`] could not have made.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("its image of a memory of {len} bytes is malformed")]
pub struct MalformedImage {
    /// The size of the memory it claims to be an image of.
    len: usize,
}

/// A mutable global that holds a value no saved state can keep.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("its mutable global {index} holds a {ty:?} value, which cannot be saved")]
pub struct UnsavableGlobal {
    /// Its place among the module's mutable globals.
    index: usize,
    /// The type of its value (a reference).
    ty: ValType,
}

/// Why a saved instance could not be resumed ([`Code::resume`]).
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// Its saved memory is not a memory image.
    #[error(transparent)]
    Malformed(#[from] MalformedImage),
    /// Its module does not instantiate.
    #[error("{0}")]
    Instantiate(#[from] WasmError),
    /// Its saved globals are not its module's mutable globals.
    #[error("its saved globals do not match its module's")]
    Globals,
    /// Its saved memory is smaller than the module's initial memory.
    #[error("its saved memory is smaller than its module declares")]
    MemoryTooSmall,
    /// Growing its memory to the saved size passed the host-memory budget:
    /// the budget's refusal.
    #[error("{0}")]
    OverBudget(String),
    /// Its memory did not grow to the saved size.
    #[error("its memory: {0}")]
    Grow(MemoryError),
}

impl MemoryImage {
    pub fn of(memory: &[u8]) -> Self {
        // Queries snapshot every time: one scan finds the pages, and their
        // bytes are copied once, into a buffer of their size.
        let pages: Vec<u32> = memory
            .chunks(IMAGE_PAGE)
            .enumerate()
            .filter(|(_, page)| !is_zero(page))
            .map(|(i, _)| i as u32)
            .collect();
        let mut bytes = Vec::with_capacity(pages.len() * IMAGE_PAGE);
        for &i in &pages {
            let start = i as usize * IMAGE_PAGE;
            bytes.extend_from_slice(&memory[start..memory.len().min(start + IMAGE_PAGE)]);
        }
        Self { len: memory.len(), pages, bytes }
    }

    /// The size of the memory it is an image of.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether [`MemoryImage::of`] could have made it of a memory of
    /// `page`-byte pages: a restored one comes from a file.
    pub fn check(&self, page: usize) -> Result<(), MalformedImage> {
        let in_range = self.pages.iter().all(|&i| (i as usize + 1) * IMAGE_PAGE <= self.len);
        let ascending = self.pages.windows(2).all(|w| w[0] < w[1]);
        if !self.len.is_multiple_of(page)
            || !in_range
            || !ascending
            || self.bytes.len() != self.pages.len() * IMAGE_PAGE
        {
            return Err(MalformedImage { len: self.len });
        }
        Ok(())
    }

    /// The memory it is an image of.
    pub fn to_memory(&self) -> Vec<u8> {
        let mut memory = vec![0; self.len];
        self.write_to(&mut memory);
        memory
    }

    /// Writes the image over `memory`, which is as long.
    fn write_to(&self, memory: &mut [u8]) {
        let mut kept = self.pages.iter().zip(self.bytes.chunks(IMAGE_PAGE)).peekable();
        for (i, page) in memory.chunks_mut(IMAGE_PAGE).enumerate() {
            match kept.next_if(|(j, _)| **j as usize == i) {
                Some((_, bytes)) => page.copy_from_slice(bytes),
                None if !is_zero(page) => page.fill(0),
                None => {}
            }
        }
    }
}

/// An instance's state as a saved simulator keeps it.
#[derive(Clone, Serialize, Deserialize)]
pub struct SavedSnapshot {
    memory: MemoryImage,
    globals: Vec<SavedVal>,
}

impl SavedSnapshot {
    /// The bytes of its linear memory.
    pub fn memory_len(&self) -> usize {
        self.memory.len
    }
}

/// A mutable global's value, floats as their bits. Validation leaves
/// numbers only: reference-typed globals and SIMD are refused.
#[derive(Clone, Serialize, Deserialize)]
enum SavedVal {
    I32(i32),
    I64(i64),
    F32(u32),
    F64(u64),
}

impl SavedVal {
    fn of(value: &Val) -> Option<Self> {
        match *value {
            Val::I32(v) => Some(Self::I32(v)),
            Val::I64(v) => Some(Self::I64(v)),
            Val::F32(v) => Some(Self::F32(v.to_bits())),
            Val::F64(v) => Some(Self::F64(v.to_bits())),
            _ => None,
        }
    }
}

impl From<SavedVal> for Val {
    fn from(value: SavedVal) -> Self {
        match value {
            SavedVal::I32(v) => Val::I32(v),
            SavedVal::I64(v) => Val::I64(v),
            SavedVal::F32(bits) => Val::F32(F32::from_bits(bits)),
            SavedVal::F64(bits) => Val::F64(F64::from_bits(bits)),
        }
    }
}

/// Folds instead of stopping at the first non-zero byte, which the
/// compiler vectorises.
fn is_zero(page: &[u8]) -> bool {
    page.iter().fold(0, |acc, &b| acc | b) == 0
}

impl Code {
    pub fn snapshot(&self, store: impl AsContext) -> Snapshot {
        Snapshot {
            memory: MemoryImage::of(self.memory.data(store.as_context())),
            globals: self.globals.iter().map(|g| g.get(&store)).collect(),
        }
    }

    /// Puts `snapshot` into this instance. Linear memory cannot shrink: the
    /// instance's memory must not be larger than the snapshot's.
    pub fn load(&self, mut store: impl AsContextMut, snapshot: &Snapshot) {
        let missing = snapshot.memory.len - self.memory.data_size(&store);
        if missing > 0 {
            self.memory
                .grow(&mut store, (missing / 65536) as u64)
                .expect("the snapshot's size was reached before");
        }
        snapshot.memory.write_to(self.memory.data_mut(store.as_context_mut()));
        for (global, value) in self.globals.iter().zip(&snapshot.globals) {
            global.set(&mut store, value.clone()).expect("same type");
        }
    }

    /// The instance's state, to save; refused if a mutable global holds a
    /// reference (a store handle).
    pub fn save(&self, store: impl AsContext) -> Result<SavedSnapshot, UnsavableGlobal> {
        let Snapshot { memory, globals } = self.snapshot(store);
        let globals = globals
            .iter()
            .enumerate()
            .map(|(index, value)| SavedVal::of(value).ok_or(UnsavableGlobal { index, ty: value.ty() }))
            .collect::<Result<_, _>>()?;
        Ok(SavedSnapshot { memory, globals })
    }

    /// A live instance of `module` in `saved`'s state, built as
    /// [`Code::restore`] builds one (no code runs), and that state as a
    /// checkpoint. Unlike there, the memory may not fit the budget.
    pub fn resume(
        store: &mut Store<SystemState>,
        module: Rc<CompiledModule>,
        saved: SavedSnapshot,
    ) -> Result<(Self, Snapshot), ResumeError> {
        saved.memory.check(WASM_PAGE)?;
        let code = Code::instantiate(store, module)?;
        let globals: Vec<Val> = saved.globals.into_iter().map(Val::from).collect();
        let types_match = globals.len() == code.globals.len()
            && code.globals.iter().zip(&globals).all(|(g, v)| g.ty(&*store).content() == v.ty());
        if !types_match {
            return Err(ResumeError::Globals);
        }
        let missing =
            saved.memory.len.checked_sub(code.memory_len(&*store)).ok_or(ResumeError::MemoryTooSmall)?;
        if missing > 0 {
            store.data_mut().limiter.take_refusal();
            code.memory.grow(&mut *store, (missing / WASM_PAGE) as u64).map_err(|e| {
                match store.data_mut().limiter.take_refusal() {
                    Some(refusal) => ResumeError::OverBudget(refusal),
                    None => ResumeError::Grow(e),
                }
            })?;
        }
        let snapshot = Snapshot { memory: saved.memory, globals };
        code.load(&mut *store, &snapshot);
        Ok((code, snapshot))
    }

    /// Returns a live instance to `snapshot`. Linear memory cannot shrink:
    /// if it grew past the snapshot's, a fresh instance in a fresh store
    /// takes its place (a store frees an instance only when it is dropped).
    pub fn restore(&mut self, store: &mut Store<SystemState>, snapshot: &Snapshot) {
        if self.memory_len(&*store) > snapshot.memory.len {
            *store = system_api::move_to_new_store(store);
            // The old instance's memory is free, and the snapshot's size
            // was reached within the budget before.
            *self = Code::instantiate(store, self.module.clone()).expect("the module instantiated before");
        }
        self.load(store, snapshot);
    }
}
