//! Host functions for diagnostics: printing and trapping.

use wasmi::Error;

use super::linker::{Registry, def};
use super::memory::read;
use super::trap;

pub(super) fn register(r: &mut Registry) {
    def!(r, "debug_print", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        c.data_mut().debug_log.push(text);
        Ok(())
    });
    def!(r, "trap", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        trap(format!("Canister called `ic0.trap` with message: '{text}'"))
    });
}
