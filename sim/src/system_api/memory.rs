//! Memory helpers: host functions read and write linear memory (on the tape).
//!
//! Addresses and sizes are the spec's `I` ([`Word`]): `i32` in a wasm32
//! module, `i64` in a wasm64 one; both are read as unsigned.

use wasmi::{Error, Memory};

use super::linker::Word;
use super::tape::TapeEvent;
use super::{Ctx, SystemState, trap};

pub(super) fn memory(caller: &Ctx<'_>) -> Result<Memory, Error> {
    match caller.data().memory {
        Some(memory) => Ok(memory),
        None => trap("the module has no memory"),
    }
}

pub(super) fn range(ptr: u64, len: u64, size: usize) -> Result<std::ops::Range<usize>, Error> {
    match ptr.checked_add(len) {
        Some(end) if end <= size as u64 => Ok(ptr as usize..end as usize),
        _ => trap(format!("memory access out of bounds: {ptr}+{len} > {size}")),
    }
}

/// Reads `len` bytes at `ptr` of the canister's memory.
pub(super) fn read(caller: &Ctx<'_>, ptr: impl Word, len: impl Word) -> Result<Vec<u8>, Error> {
    let memory = memory(caller)?;
    let data = memory.data(caller);
    Ok(data[range(ptr.to_u64(), len.to_u64(), data.len())?].to_vec())
}

pub(super) fn read_string(
    caller: &Ctx<'_>,
    ptr: impl Word,
    len: impl Word,
    what: &str,
) -> Result<String, Error> {
    String::from_utf8(read(caller, ptr, len)?).or_else(|_| trap(format!("{what} is not valid UTF-8")))
}

/// The `*_copy(dst, offset, size)` pattern: copies `source[offset..offset+size]`
/// to `data[dst..]`, trapping when either range is out of bounds.
pub(super) fn copy_slice<I: Word>(
    data: &mut [u8],
    source: &[u8],
    dst: I,
    offset: I,
    size: I,
) -> Result<(), Error> {
    let from = range(offset.to_u64(), size.to_u64(), source.len())?;
    let to = range(dst.to_u64(), size.to_u64(), data.len())?;
    data[to].copy_from_slice(&source[from]);
    Ok(())
}

pub(super) fn copy_out<I: Word>(
    caller: &mut Ctx<'_>,
    dst: I,
    offset: I,
    size: I,
    source: &[u8],
) -> Result<(), Error> {
    let memory = memory(caller)?;
    let (data, state) = memory.data_and_store_mut(caller);
    copy_slice(data, source, dst, offset, size)?;
    record_write(state, data, dst.to_u64(), size.to_u64());
    Ok(())
}

/// Puts what a host function wrote (in bounds: checked) on the tape.
pub(super) fn record_write(state: &mut SystemState, data: &[u8], dst: u64, size: u64) {
    if let Some(tape) = state.tape.as_mut() {
        let at = dst as usize;
        tape.push(TapeEvent::Write { dst, bytes: data[at..at + size as usize].to_vec() });
    }
}

pub(super) fn write(caller: &mut Ctx<'_>, dst: impl Word, bytes: &[u8]) -> Result<(), Error> {
    copy_out(caller, dst.to_u64() as i64, 0, bytes.len() as i64, bytes)
}

pub(super) fn write_u128(caller: &mut Ctx<'_>, dst: impl Word, value: u128) -> Result<(), Error> {
    write(caller, dst, &value.to_le_bytes())
}

pub(super) fn u128_of(high: i64, low: i64) -> u128 {
    (u128::from(high as u64) << 64) | u128::from(low as u64)
}
