//! Host functions over stable memory.

use wasmi::Error;

use super::linker::{Registry, Word, def};
use super::memory::{read, write};
use super::{CanisterTrap, Ctx, charge};
use crate::code::CANNOT_GROW;
use crate::host_memory::{Bytes, STABLE_MEMORY_COPIES};
use crate::message::ErrorCode;
use crate::metering::costs::{DIRTY_PAGE, OS_PAGE_SIZE};
use crate::stable::{MAX_PAGES, PAGE_SIZE};

pub(super) fn register(r: &mut Registry) {
    def!(r, "stable64_size", |c: Ctx<'_>| -> i64 { c.data().stable.pages() as i64 });
    def!(r, "stable64_grow", |c: Ctx<'_>, pages: i64| -> Result<i64, Error> { grow(&mut c, pages as u64) });
    def!(r, "stable64_write", |c: Ctx<'_>, offset: i64, src: i64, size: i64| -> Result<(), Error> {
        write_from_heap(&mut c, offset as u64, src, size)
    });
    def!(r, "stable64_read", |c: Ctx<'_>, dst: i64, offset: i64, size: i64| -> Result<(), Error> {
        read_to_heap(&mut c, dst, offset as u64, size as u64)
    });
}

/// The 32-bit stable memory API, which the replica still links for wasm32
/// modules: the same memory and charges, in 32-bit numbers. (Its traps
/// for a stable memory past 4 GiB cannot happen here: the model's stable
/// memory stops at [`MAX_PAGES`].)
pub(super) fn register_wasm32_only(r: &mut Registry) {
    def!(r, "stable_size", |c: Ctx<'_>| -> i32 { c.data().stable.pages() as i32 });
    def!(r, "stable_grow", |c: Ctx<'_>, pages: i32| -> Result<i32, Error> {
        Ok(grow(&mut c, u64::from(pages as u32))? as i32)
    });
    def!(r, "stable_write", |c: Ctx<'_>, offset: i32, src: i32, size: i32| -> Result<(), Error> {
        write_from_heap(&mut c, u64::from(offset as u32), src, size)
    });
    def!(r, "stable_read", |c: Ctx<'_>, dst: i32, offset: i32, size: i32| -> Result<(), Error> {
        read_to_heap(&mut c, dst, u64::from(offset as u32), u64::from(size as u32))
    });
}

/// Grows stable memory by `pages`; the old size in pages, or -1.
fn grow(c: &mut Ctx<'_>, pages: u64) -> Result<i64, Error> {
    let state = c.data_mut();
    // Past the model's limit `grow` refuses (-1) and costs nothing;
    // past the budget, a trap, as for linear memory (see `host_memory`).
    if pages <= MAX_PAGES - state.stable.pages() {
        let more = pages * PAGE_SIZE * STABLE_MEMORY_COPIES;
        if !state.stable_held.try_add(more) {
            let what = format!("growing stable memory by {}", Bytes(pages * PAGE_SIZE));
            let why = state.stable_held.budget().refusal(&what, more, STABLE_MEMORY_COPIES);
            return Err(
                CanisterTrap::new(ErrorCode::CanisterOutOfMemory, format!("{CANNOT_GROW} {why}")).into()
            );
        }
    }
    Ok(state.stable.grow(pages))
}

fn write_from_heap<I: Word>(c: &mut Ctx<'_>, offset: u64, src: I, size: I) -> Result<(), Error> {
    let bytes = read(c, src, size)?;
    c.data_mut().stable.write(offset, &bytes).map_err(CanisterTrap::from)?;
    charge_dirty_pages(c, offset, size.to_u64())
}

fn read_to_heap<I: Word>(c: &mut Ctx<'_>, dst: I, offset: u64, size: u64) -> Result<(), Error> {
    let bytes = c.data().stable.read(offset, size).map_err(CanisterTrap::from)?;
    write(c, dst, &bytes)
}

/// The replica charges each 4 KiB page a message writes, once.
fn charge_dirty_pages(c: &mut Ctx<'_>, offset: u64, size: u64) -> Result<(), Error> {
    if size == 0 {
        return Ok(());
    }
    let pages = offset / OS_PAGE_SIZE..=(offset + size - 1) / OS_PAGE_SIZE;
    let dirty = &mut c.data_mut().exec()?.effects.dirty_stable_pages;
    let new = pages.filter(|&page| dirty.insert(page)).count() as u64;
    charge(c, new * DIRTY_PAGE)
}
