//! Memory helpers: host functions read and write linear memory (on the tape).

use wasmi::{Error, Memory};

use super::tape::TapeEvent;
use super::{Ctx, SystemState, trap};

pub(super) fn memory(caller: &Ctx<'_>) -> Result<Memory, Error> {
    match caller.data().memory {
        Some(memory) => Ok(memory),
        None => trap("the module has no memory"),
    }
}

pub(super) fn range(ptr: i32, len: i32, size: usize) -> Result<std::ops::Range<usize>, Error> {
    let (ptr, len) = (ptr as u32 as usize, len as u32 as usize);
    match ptr.checked_add(len) {
        Some(end) if end <= size => Ok(ptr..end),
        _ => trap(format!("memory access out of bounds: {ptr}+{len} > {size}")),
    }
}

/// Reads `len` bytes at `ptr` of the canister's memory.
pub(super) fn read(caller: &Ctx<'_>, ptr: i32, len: i32) -> Result<Vec<u8>, Error> {
    let memory = memory(caller)?;
    let data = memory.data(caller);
    Ok(data[range(ptr, len, data.len())?].to_vec())
}

pub(super) fn read_string(caller: &Ctx<'_>, ptr: i32, len: i32, what: &str) -> Result<String, Error> {
    String::from_utf8(read(caller, ptr, len)?).or_else(|_| trap(format!("{what} is not valid UTF-8")))
}

/// The `*_copy(dst, offset, size)` pattern: copies `source[offset..offset+size]`
/// to `data[dst..]`, trapping when either range is out of bounds.
pub(super) fn copy_slice(
    data: &mut [u8],
    source: &[u8],
    dst: i32,
    offset: i32,
    size: i32,
) -> Result<(), Error> {
    let from = range(offset, size, source.len())?;
    let to = range(dst, size, data.len())?;
    data[to].copy_from_slice(&source[from]);
    Ok(())
}

pub(super) fn copy_out(
    caller: &mut Ctx<'_>,
    dst: i32,
    offset: i32,
    size: i32,
    source: &[u8],
) -> Result<(), Error> {
    let memory = memory(caller)?;
    let (data, state) = memory.data_and_store_mut(caller);
    copy_slice(data, source, dst, offset, size)?;
    record_write(state, data, dst, size);
    Ok(())
}

pub(super) fn record_write(state: &mut SystemState, data: &[u8], dst: i32, size: i32) {
    if let Some(tape) = state.tape.as_mut() {
        let at = dst as u32 as usize;
        tape.push(TapeEvent::Write { dst: dst as u32, bytes: data[at..at + size as u32 as usize].to_vec() });
    }
}

pub(super) fn write(caller: &mut Ctx<'_>, dst: i32, bytes: &[u8]) -> Result<(), Error> {
    copy_out(caller, dst, 0, bytes.len() as i32, bytes)
}

pub(super) fn write_u128(caller: &mut Ctx<'_>, dst: i32, value: u128) -> Result<(), Error> {
    write(caller, dst, &value.to_le_bytes())
}

pub(super) fn u128_of(high: i64, low: i64) -> u128 {
    (u128::from(high as u64) << 64) | u128::from(low as u64)
}
