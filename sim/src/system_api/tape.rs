//! The tape: what host functions showed the canister, to replay it exactly.

use wasmi::Error;

use super::SystemState;

/// What a host function did that the canister can see: the bytes it wrote
/// into linear memory, and then its return value. Replaying a message's
/// tape reproduces its execution exactly, without the system state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TapeEvent {
    Write {
        dst: u64,
        bytes: Vec<u8>,
    },
    /// Ends every host call; the value is 0 for functions without a result.
    Return(i64),
}

/// A host function's result, recorded on the tape when recording is on.
pub(super) trait HostResult {
    type Value;
    fn recorded(self, state: &mut SystemState) -> Result<Self::Value, Error>;
}

/// What a host function may return, as the tape keeps it.
pub trait TapeValue: Copy {
    fn as_i64(self) -> i64;
}

impl TapeValue for () {
    fn as_i64(self) -> i64 {
        0
    }
}

impl TapeValue for i32 {
    fn as_i64(self) -> i64 {
        i64::from(self)
    }
}

impl TapeValue for i64 {
    fn as_i64(self) -> i64 {
        self
    }
}

impl<T: TapeValue> HostResult for T {
    type Value = T;
    fn recorded(self, state: &mut SystemState) -> Result<T, Error> {
        if let Some(tape) = state.tape.as_mut() {
            tape.push(TapeEvent::Return(self.as_i64()));
        }
        Ok(self)
    }
}

impl<T: TapeValue> HostResult for Result<T, Error> {
    type Value = T;
    fn recorded(self, state: &mut SystemState) -> Result<T, Error> {
        self?.recorded(state)
    }
}
