//! Host functions for diagnostics: printing and trapping; what was printed.

use std::collections::VecDeque;
use wasmi::Error;

use super::linker::{Registry, Word, def};
use super::memory::read;
use super::{Ctx, charge, trap_with};
use crate::message::ErrorCode;
use crate::metering::costs;

pub(super) fn register<I: Word>(r: &mut Registry) {
    def!(r, "debug_print", |c: Ctx<'_>, src: I, size: I| -> Result<(), Error> {
        charge_log(&mut c, size)?;
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        let time = c.data_mut().exec()?.context.time;
        c.data_mut().debug_log.push(time, text);
        Ok(())
    });
    def!(r, "trap", |c: Ctx<'_>, src: I, size: I| -> Result<(), Error> {
        charge_log(&mut c, size)?;
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        trap_with(ErrorCode::CanisterCalledTrap, format!("Canister called `ic0.trap` with message: '{text}'"))
    });
}

/// The canister-log part of the cost of printing `size` bytes.
fn charge_log(c: &mut Ctx<'_>, size: impl Word) -> Result<(), Error> {
    let len = size.to_u64();
    let logged = c.data_mut().exec()?.effects.logged_bytes;
    c.data_mut().exec()?.effects.logged_bytes = logged.saturating_add(len);
    charge(c, costs::logging(len, costs::LOG_CAPACITY.saturating_sub(logged)))
}

/// What a canister printed with `ic0.debug_print`: the newest records that
/// fit in [`costs::LOG_CAPACITY`] bytes, older ones dropped, as the
/// replica's canister log keeps its newest records. A canister that prints
/// on every message thus costs the same memory after a million as after a
/// hundred.
#[derive(Debug, Default)]
pub struct DebugLog {
    records: VecDeque<LogRecord>,
    bytes: u64,
    /// The index the next record gets: indices keep counting as old
    /// records are dropped, as the replica's do.
    next_idx: u64,
}

/// One line of a canister's log, as `fetch_canister_logs` answers it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LogRecord {
    /// Its place in the log since the canister was created.
    pub idx: u64,
    /// When it was printed: the time of the message that printed it.
    pub timestamp_nanos: u64,
    /// What was printed.
    pub content: String,
}

impl DebugLog {
    /// What a line takes of the capacity: its bytes, and at least one, so
    /// that empty lines are bounded too.
    fn size(line: &str) -> u64 {
        (line.len() as u64).max(1)
    }

    /// Logs `line`, printed at `time`.
    pub fn push(&mut self, time: u64, line: String) {
        let record = LogRecord { idx: self.next_idx, timestamp_nanos: time, content: line };
        self.next_idx += 1;
        self.keep(record);
    }

    /// Keeps `record` as it was logged (a saved log restored).
    pub fn keep(&mut self, record: LogRecord) {
        // Saturating: a saved index is read from a file.
        self.next_idx = self.next_idx.max(record.idx.saturating_add(1));
        self.bytes += Self::size(&record.content);
        self.records.push_back(record);
        while self.bytes > costs::LOG_CAPACITY {
            let oldest = self.records.pop_front().expect("the bytes are its records'");
            self.bytes -= Self::size(&oldest.content);
        }
    }

    /// Oldest first.
    pub fn records(&self) -> impl Iterator<Item = &LogRecord> {
        self.records.iter()
    }

    /// What was printed, oldest first.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.records.iter().map(|record| record.content.as_str())
    }
}
