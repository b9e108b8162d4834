//! The tape: what host functions showed the canister, to replay it exactly.

use wasmi::Error;

use super::SystemState;

/// What a host function did that the canister can see: the bytes it wrote
/// into linear memory, and then its return value. Replaying a message's
/// tape reproduces its execution exactly, without the system state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TapeEvent {
    Write {
        dst: u32,
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

macro_rules! host_result {
    ($($t:ty => |$v:ident| $as_i64:expr),*) => {$(
        impl HostResult for $t {
            type Value = $t;
            fn recorded(self, state: &mut SystemState) -> Result<$t, Error> {
                if let Some(tape) = state.tape.as_mut() {
                    let $v = self;
                    tape.push(TapeEvent::Return($as_i64));
                }
                Ok(self)
            }
        }
        impl HostResult for Result<$t, Error> {
            type Value = $t;
            fn recorded(self, state: &mut SystemState) -> Result<$t, Error> {
                self?.recorded(state)
            }
        }
    )*};
}

host_result!(() => |_v| 0, i32 => |v| i64::from(v), i64 => |v| v);
