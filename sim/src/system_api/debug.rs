//! Host functions for diagnostics: printing and trapping.

use wasmi::Error;

use super::linker::{Registry, def};
use super::memory::read;
use super::{Ctx, charge, trap};
use crate::metering::costs;

pub(super) fn register(r: &mut Registry) {
    def!(r, "debug_print", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        charge_log(&mut c, size)?;
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        c.data_mut().debug_log.push(text);
        Ok(())
    });
    def!(r, "trap", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        charge_log(&mut c, size)?;
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        trap(format!("Canister called `ic0.trap` with message: '{text}'"))
    });
}

/// The canister-log part of the cost of printing `size` bytes.
fn charge_log(c: &mut Ctx<'_>, size: i32) -> Result<(), Error> {
    let len = size as u32 as u64;
    let logged = c.data_mut().exec()?.effects.logged_bytes;
    c.data_mut().exec()?.effects.logged_bytes = logged.saturating_add(len);
    charge(c, costs::logging(len, costs::LOG_CAPACITY.saturating_sub(logged)))
}
