//! Host functions for diagnostics: printing and trapping; what was printed.

use std::collections::VecDeque;
use wasmi::Error;

use super::linker::{Registry, Word, def};
use super::memory::read;
use super::{Ctx, charge, trap};
use crate::metering::costs;

pub(super) fn register<I: Word>(r: &mut Registry) {
    def!(r, "debug_print", |c: Ctx<'_>, src: I, size: I| -> Result<(), Error> {
        charge_log(&mut c, size)?;
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        c.data_mut().debug_log.push(text);
        Ok(())
    });
    def!(r, "trap", |c: Ctx<'_>, src: I, size: I| -> Result<(), Error> {
        charge_log(&mut c, size)?;
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        trap(format!("Canister called `ic0.trap` with message: '{text}'"))
    });
}

/// The canister-log part of the cost of printing `size` bytes.
fn charge_log(c: &mut Ctx<'_>, size: impl Word) -> Result<(), Error> {
    let len = size.to_u64();
    let logged = c.data_mut().exec()?.effects.logged_bytes;
    c.data_mut().exec()?.effects.logged_bytes = logged.saturating_add(len);
    charge(c, costs::logging(len, costs::LOG_CAPACITY.saturating_sub(logged)))
}

/// What a canister printed with `ic0.debug_print`: the newest lines that
/// fit in [`costs::LOG_CAPACITY`] bytes, older ones dropped, as the
/// replica's canister log keeps its newest records. A canister that prints
/// on every message thus costs the same memory after a million as after a
/// hundred.
#[derive(Debug, Default)]
pub struct DebugLog {
    lines: VecDeque<String>,
    bytes: u64,
}

impl DebugLog {
    /// What a line takes of the capacity: its bytes, and at least one, so
    /// that empty lines are bounded too.
    fn size(line: &str) -> u64 {
        (line.len() as u64).max(1)
    }

    pub fn push(&mut self, line: String) {
        self.bytes += Self::size(&line);
        self.lines.push_back(line);
        while self.bytes > costs::LOG_CAPACITY {
            let oldest = self.lines.pop_front().expect("the bytes are its lines'");
            self.bytes -= Self::size(&oldest);
        }
    }

    /// Oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str)
    }
}
