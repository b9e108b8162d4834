//! Host functions over stable memory.

use wasmi::Error;

use super::CanisterTrap;
use super::linker::{Registry, def};
use super::memory::{read, write};

pub(super) fn register(r: &mut Registry) {
    def!(r, "stable64_size", |c: Ctx<'_>| -> i64 { c.data().stable.pages() as i64 });
    def!(r, "stable64_grow", |c: Ctx<'_>, pages: i64| -> i64 { c.data_mut().stable.grow(pages as u64) });
    def!(r, "stable64_write", |c: Ctx<'_>, offset: i64, src: i64, size: i64| -> Result<(), Error> {
        let bytes = read(&c, src as i32, size as i32)?;
        c.data_mut().stable.write(offset as u64, &bytes).map_err(CanisterTrap::from)?;
        Ok(())
    });
    def!(r, "stable64_read", |c: Ctx<'_>, dst: i64, offset: i64, size: i64| -> Result<(), Error> {
        let bytes = c.data().stable.read(offset as u64, size as u64).map_err(CanisterTrap::from)?;
        write(&mut c, dst as i32, &bytes)
    });
}
