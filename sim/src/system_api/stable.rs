//! Host functions over stable memory.

use wasmi::Error;

use super::linker::{Registry, def};
use super::memory::{read, write};
use super::{CanisterTrap, Ctx, charge};
use crate::code::CANNOT_GROW;
use crate::host_memory::{Bytes, STABLE_MEMORY_COPIES};
use crate::metering::costs::{DIRTY_PAGE, OS_PAGE_SIZE};
use crate::stable::{MAX_PAGES, PAGE_SIZE};

pub(super) fn register(r: &mut Registry) {
    def!(r, "stable64_size", |c: Ctx<'_>| -> i64 { c.data().stable.pages() as i64 });
    def!(r, "stable64_grow", |c: Ctx<'_>, pages: i64| -> Result<i64, Error> {
        let state = c.data_mut();
        let pages = pages as u64;
        // Past the model's limit `grow` refuses (-1) and costs nothing;
        // past the budget, a trap, as for linear memory (see `host_memory`).
        if pages <= MAX_PAGES - state.stable.pages() {
            let more = pages * PAGE_SIZE * STABLE_MEMORY_COPIES;
            if !state.stable_held.try_add(more) {
                let what = format!("growing stable memory by {}", Bytes(pages * PAGE_SIZE));
                let why = state.stable_held.budget().refusal(&what, more, STABLE_MEMORY_COPIES);
                return Err(CanisterTrap(format!("{CANNOT_GROW} {why}")).into());
            }
        }
        Ok(state.stable.grow(pages))
    });
    def!(r, "stable64_write", |c: Ctx<'_>, offset: i64, src: i64, size: i64| -> Result<(), Error> {
        let bytes = read(&c, src as i32, size as i32)?;
        c.data_mut().stable.write(offset as u64, &bytes).map_err(CanisterTrap::from)?;
        charge_dirty_pages(&mut c, offset as u64, size as u64)
    });
    def!(r, "stable64_read", |c: Ctx<'_>, dst: i64, offset: i64, size: i64| -> Result<(), Error> {
        let bytes = c.data().stable.read(offset as u64, size as u64).map_err(CanisterTrap::from)?;
        write(&mut c, dst as i32, &bytes)
    });
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
