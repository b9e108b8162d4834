//! The `ic0` system API, as host functions over a canister's
//! [`SystemState`]. Signatures are those of the `ic0` crate ic-cdk uses
//! (wasm32: `usize` is `i32`). Every effect a message has outside its own
//! linear memory is collected in [`Execution`] and applied by the canister
//! only if the message does not trap, which is how a trap undoes them.

use candid::Principal;
use std::collections::BTreeMap;
use std::fmt;
use wasmi::{Caller, Error, Linker, Memory, Val};

use crate::cycles;
use crate::message::{Payload, RejectCode};
use crate::module::WasmError;
use crate::stable::{OutOfBounds, StableMemory};

/// Why a message stopped early. The message is then rolled back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanisterTrap(pub String);

impl fmt::Display for CanisterTrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl wasmi::errors::HostError for CanisterTrap {}

impl From<OutOfBounds> for CanisterTrap {
    fn from(e: OutOfBounds) -> Self {
        CanisterTrap(e.to_string())
    }
}

impl From<CanisterTrap> for Error {
    fn from(trap: CanisterTrap) -> Self {
        Error::host(trap)
    }
}

fn trap<T>(message: impl Into<String>) -> Result<T, Error> {
    Err(Error::host(CanisterTrap(message.into())))
}

/// A call between `call_new` and `call_perform`.
#[derive(Clone, Debug)]
pub struct NewCall {
    pub callee: Principal,
    pub method: String,
    pub reply: (u32, u32),
    pub reject: (u32, u32),
    pub cleanup: Option<(u32, u32)>,
    pub arg: Vec<u8>,
    pub cycles: u128,
    pub timeout_seconds: Option<u32>,
}

/// A call that `call_perform` accepted: on commit it becomes a callback and
/// a request.
#[derive(Clone, Debug)]
pub struct PerformedCall {
    pub call: NewCall,
    pub prepayment: u128,
}

/// What kind of entry point runs; decides which system calls make sense.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    Init,
    PreUpgrade,
    PostUpgrade,
    Update,
    Query,
    InspectMessage,
    ReplyCallback,
    RejectCallback,
    Cleanup,
    GlobalTimer,
}

impl EntryKind {
    fn may_call(self) -> bool {
        matches!(self, Self::Update | Self::ReplyCallback | Self::RejectCallback | Self::GlobalTimer)
    }
}

/// What a message execution reads: fixed when it starts.
#[derive(Debug)]
pub struct MessageContext {
    pub kind: EntryKind,
    pub caller: Principal,
    pub method: String,
    /// The argument, or the reply data in a reply callback.
    pub arg: Vec<u8>,
    /// In a reject callback: the reject (code, message).
    pub reject: Option<(RejectCode, String)>,
    /// Whether the call context may answer.
    pub may_reply: bool,
    /// Attached cycles that earlier messages of the call context left unaccepted.
    pub cycles_available: u128,
    pub cycles_refunded: u128,
    /// Withdrawn for this execution before it starts: the canister does not see it.
    pub prepayment: u128,
    pub time: u64,
    /// Instructions of the call context before this message.
    pub call_context_instructions: u64,
    /// Fuel at the start of the message.
    pub fuel_limit: u64,
}

impl MessageContext {
    pub fn new(kind: EntryKind, caller: Principal, method: String, arg: Vec<u8>, time: u64) -> Self {
        Self {
            kind,
            caller,
            method,
            arg,
            reject: None,
            may_reply: matches!(
                kind,
                EntryKind::Update | EntryKind::Query | EntryKind::ReplyCallback | EntryKind::RejectCallback
            ),
            cycles_available: 0,
            cycles_refunded: 0,
            prepayment: 0,
            time,
            call_context_instructions: 0,
            fuel_limit: cycles::MAX_INSTRUCTIONS_PER_MESSAGE,
        }
    }
}

/// What a message execution does outside its memories: one commit applies
/// it, a trap drops it.
#[derive(Debug, Default)]
pub struct Effects {
    pub reply_data: Vec<u8>,
    pub response: Option<Payload>,
    pub new_call: Option<NewCall>,
    pub performed: Vec<PerformedCall>,
    /// Request slots taken, per callee.
    pub slots_taken: BTreeMap<Principal, u32>,
    pub timer: Option<u64>,
    /// Taken from the balance: attached cycles and call prepayments.
    pub cycles_withdrawn: u128,
    /// Attached cycles moved to the balance.
    pub cycles_accepted: u128,
    /// `call_perform`s that returned non-zero.
    pub calls_refused: u64,
    /// `canister_inspect_message` accepted the message.
    pub accepted: bool,
}

/// The running message: what it reads and what it did so far.
#[derive(Debug)]
pub struct Execution {
    pub context: MessageContext,
    pub effects: Effects,
}

impl Execution {
    /// The balance the message sees, given the committed one.
    fn balance(&self, committed: u128) -> u128 {
        (committed - self.context.prepayment).saturating_add(self.effects.cycles_accepted)
            - self.effects.cycles_withdrawn
    }

    fn can_reply(&self) -> bool {
        self.context.may_reply && self.effects.response.is_none()
    }
}

/// The parameters of the model that the system API needs.
#[derive(Clone, Copy, Debug)]
pub struct ApiLimits {
    /// Requests in flight per (caller, callee) pair.
    pub queue_capacity: u32,
}

/// The part of a canister's state that its code reaches through `ic0`.
pub struct SystemState {
    pub id: Principal,
    pub controllers: Vec<Principal>,
    pub env_vars: BTreeMap<String, String>,
    pub balance: u128,
    /// Cycles the canister must keep (its freezing threshold).
    pub freezing_reserve: u128,
    pub stable: StableMemory,
    /// Requests in flight per callee: performed and not yet answered by a
    /// consumed response.
    pub in_flight: BTreeMap<Principal, u32>,
    pub global_timer: u64,
    pub canister_version: u64,
    pub limits: ApiLimits,
    pub memory: Option<Memory>,
    pub exec: Option<Execution>,
    pub debug_log: Vec<String>,
    /// The current message's tape, when recording.
    pub tape: Option<Vec<TapeEvent>>,
}

impl SystemState {
    pub fn new(id: Principal, controllers: Vec<Principal>, balance: u128, limits: ApiLimits) -> Self {
        Self {
            id,
            controllers,
            env_vars: BTreeMap::new(),
            balance,
            freezing_reserve: 0,
            stable: StableMemory::default(),
            in_flight: BTreeMap::new(),
            global_timer: 0,
            canister_version: 0,
            limits,
            memory: None,
            exec: None,
            debug_log: vec![],
            tape: None,
        }
    }

    /// The balance the running message sees (outside one, the committed one).
    fn balance_seen(&self) -> u128 {
        self.exec.as_ref().map_or(self.balance, |exec| exec.balance(self.balance))
    }

    fn liquid_balance_seen(&self) -> u128 {
        self.balance_seen().saturating_sub(self.freezing_reserve)
    }

    /// Adds cycles; a balance stops at the largest there is.
    pub fn credit(&mut self, cycles: u128) {
        self.balance = self.balance.saturating_add(cycles);
    }

    fn exec(&mut self) -> Result<&mut Execution, Error> {
        match self.exec.as_mut() {
            Some(exec) => Ok(exec),
            None => outside_a_message(),
        }
    }
}

fn outside_a_message<T>() -> Result<T, Error> {
    trap("system call outside a message execution")
}

type Ctx<'a> = Caller<'a, SystemState>;

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
trait HostResult {
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

fn memory(caller: &Ctx<'_>) -> Result<Memory, Error> {
    match caller.data().memory {
        Some(memory) => Ok(memory),
        None => trap("the module has no memory"),
    }
}

fn range(ptr: i32, len: i32, size: usize) -> Result<std::ops::Range<usize>, Error> {
    let (ptr, len) = (ptr as u32 as usize, len as u32 as usize);
    match ptr.checked_add(len) {
        Some(end) if end <= size => Ok(ptr..end),
        _ => trap(format!("memory access out of bounds: {ptr}+{len} > {size}")),
    }
}

/// Reads `len` bytes at `ptr` of the canister's memory.
fn read(caller: &Ctx<'_>, ptr: i32, len: i32) -> Result<Vec<u8>, Error> {
    let memory = memory(caller)?;
    let data = memory.data(caller);
    Ok(data[range(ptr, len, data.len())?].to_vec())
}

fn read_string(caller: &Ctx<'_>, ptr: i32, len: i32, what: &str) -> Result<String, Error> {
    String::from_utf8(read(caller, ptr, len)?).or_else(|_| trap(format!("{what} is not valid UTF-8")))
}

/// The `*_copy(dst, offset, size)` pattern: copies `source[offset..offset+size]`
/// to `data[dst..]`, trapping when either range is out of bounds.
fn copy_slice(data: &mut [u8], source: &[u8], dst: i32, offset: i32, size: i32) -> Result<(), Error> {
    let from = range(offset, size, source.len())?;
    let to = range(dst, size, data.len())?;
    data[to].copy_from_slice(&source[from]);
    Ok(())
}

fn copy_out(caller: &mut Ctx<'_>, dst: i32, offset: i32, size: i32, source: &[u8]) -> Result<(), Error> {
    let memory = memory(caller)?;
    let (data, state) = memory.data_and_store_mut(caller);
    copy_slice(data, source, dst, offset, size)?;
    record_write(state, data, dst, size);
    Ok(())
}

fn record_write(state: &mut SystemState, data: &[u8], dst: i32, size: i32) {
    if let Some(tape) = state.tape.as_mut() {
        let at = dst as u32 as usize;
        tape.push(TapeEvent::Write { dst: dst as u32, bytes: data[at..at + size as u32 as usize].to_vec() });
    }
}

fn write(caller: &mut Ctx<'_>, dst: i32, bytes: &[u8]) -> Result<(), Error> {
    copy_out(caller, dst, 0, bytes.len() as i32, bytes)
}

fn write_u128(caller: &mut Ctx<'_>, dst: i32, value: u128) -> Result<(), Error> {
    write(caller, dst, &value.to_le_bytes())
}

fn u128_of(high: i64, low: i64) -> u128 {
    (u128::from(high as u64) << 64) | u128::from(low as u64)
}

fn instructions_so_far(caller: &Ctx<'_>) -> u64 {
    let limit = caller.data().exec.as_ref().map_or(0, |e| e.context.fuel_limit);
    limit.saturating_sub(caller.get_fuel().unwrap_or(0))
}

/// The `ic0` functions this model provides.
pub const SUPPORTED: &[&str] = &[
    "msg_arg_data_size",
    "msg_arg_data_copy",
    "msg_caller_size",
    "msg_caller_copy",
    "msg_method_name_size",
    "msg_method_name_copy",
    "accept_message",
    "msg_reject_code",
    "msg_reject_msg_size",
    "msg_reject_msg_copy",
    "msg_deadline",
    "msg_reply_data_append",
    "msg_reply",
    "msg_reject",
    "msg_cycles_available128",
    "msg_cycles_refunded128",
    "msg_cycles_accept128",
    "canister_self_size",
    "canister_self_copy",
    "canister_cycle_balance128",
    "canister_liquid_cycle_balance128",
    "canister_status",
    "canister_version",
    "is_controller",
    "in_replicated_execution",
    "call_new",
    "call_on_cleanup",
    "call_data_append",
    "call_with_best_effort_response",
    "call_cycles_add128",
    "call_perform",
    "cost_call",
    "stable64_size",
    "stable64_grow",
    "stable64_write",
    "stable64_read",
    "time",
    "global_timer_set",
    "performance_counter",
    "env_var_count",
    "env_var_name_size",
    "env_var_name_copy",
    "env_var_name_exists",
    "env_var_value_size",
    "env_var_value_copy",
    "debug_print",
    "trap",
];

/// The functions this model provides; anything else a module imports from
/// `ic0` traps when called (see [`link_unsupported`]).
pub fn linker(engine: &wasmi::Engine) -> Linker<SystemState> {
    let mut l = Linker::new(engine);
    let m = "ic0";
    // Defines ic0.$name and records its outcome on the tape (see `Tape`).
    macro_rules! def {
        ($name:literal, |$c:ident : Ctx<'_> $(, $p:ident : $t:ty)* $(,)?| -> $r:ty $body:block) => {
            debug_assert!(SUPPORTED.contains(&$name), concat!("ic0.", $name, " missing from SUPPORTED"));
            l.func_wrap(
                m,
                $name,
                |mut $c: Ctx<'_> $(, $p: $t)*| -> Result<<$r as HostResult>::Value, Error> {
                    #[allow(clippy::redundant_closure_call)]
                    let result: $r = (|| $body)();
                    result.recorded($c.data_mut())
                },
            )
            .expect(concat!("defining ic0.", $name));
        };
    }

    // Message arguments and caller.
    def!("msg_arg_data_size", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(c.data_mut().exec()?.context.arg.len() as i32)
    });
    def!("msg_arg_data_copy", |c: Ctx<'_>, dst: i32, off: i32, size: i32| -> Result<(), Error> {
        c.data_mut().exec()?;
        let memory = memory(&c)?;
        let (data, state) = memory.data_and_store_mut(&mut c);
        copy_slice(data, &state.exec.as_ref().expect("checked above").context.arg, dst, off, size)?;
        record_write(state, data, dst, size);
        Ok(())
    });
    def!("msg_caller_size", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(c.data_mut().exec()?.context.caller.as_slice().len() as i32)
    });
    def!("msg_caller_copy", |c: Ctx<'_>, dst: i32, off: i32, size: i32| -> Result<(), Error> {
        let bytes = c.data_mut().exec()?.context.caller.as_slice().to_vec();
        copy_out(&mut c, dst, off, size, &bytes)
    });
    def!("msg_method_name_size", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(c.data_mut().exec()?.context.method.len() as i32)
    });
    def!("msg_method_name_copy", |c: Ctx<'_>, dst: i32, off: i32, size: i32| -> Result<(), Error> {
        let name = c.data_mut().exec()?.context.method.clone().into_bytes();
        copy_out(&mut c, dst, off, size, &name)
    });
    def!("accept_message", |c: Ctx<'_>| -> Result<(), Error> {
        let exec = c.data_mut().exec()?;
        if exec.context.kind != EntryKind::InspectMessage || exec.effects.accepted {
            return trap("accept_message may be called once, in canister_inspect_message");
        }
        exec.effects.accepted = true;
        Ok(())
    });
    def!("msg_reject_code", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(c.data_mut().exec()?.context.reject.as_ref().map_or(0, |(code, _)| *code as i32))
    });
    def!("msg_reject_msg_size", |c: Ctx<'_>| -> Result<i32, Error> {
        match &c.data_mut().exec()?.context.reject {
            Some((_, msg)) => Ok(msg.len() as i32),
            None => trap("msg_reject_msg_size called outside a reject callback"),
        }
    });
    def!("msg_reject_msg_copy", |c: Ctx<'_>, dst: i32, off: i32, size: i32| -> Result<(), Error> {
        let msg = match &c.data_mut().exec()?.context.reject {
            Some((_, msg)) => msg.clone().into_bytes(),
            None => return trap("msg_reject_msg_copy called outside a reject callback"),
        };
        copy_out(&mut c, dst, off, size, &msg)
    });
    def!("msg_deadline", |c: Ctx<'_>| -> Result<i64, Error> {
        c.data_mut().exec()?;
        Ok(0)
    });

    // Replying.
    def!("msg_reply_data_append", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        let bytes = read(&c, src, size)?;
        let exec = c.data_mut().exec()?;
        if !exec.can_reply() {
            return trap("msg_reply_data_append: this call context has already replied or cannot reply");
        }
        exec.effects.reply_data.extend_from_slice(&bytes);
        Ok(())
    });
    def!("msg_reply", |c: Ctx<'_>| -> Result<(), Error> {
        let exec = c.data_mut().exec()?;
        if !exec.can_reply() {
            return trap("msg_reply: this call context has already replied or cannot reply");
        }
        let effects = &mut exec.effects;
        effects.response = Some(Payload::Reply(std::mem::take(&mut effects.reply_data)));
        Ok(())
    });
    def!("msg_reject", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        let message = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        let exec = c.data_mut().exec()?;
        if !exec.can_reply() {
            return trap("msg_reject: this call context has already replied or cannot reply");
        }
        exec.effects.response = Some(Payload::reject(RejectCode::CanisterReject, message));
        Ok(())
    });

    // Cycles of the message.
    def!("msg_cycles_available128", |c: Ctx<'_>, dst: i32| -> Result<(), Error> {
        let exec = c.data_mut().exec()?;
        let available = exec.context.cycles_available - exec.effects.cycles_accepted;
        write_u128(&mut c, dst, available)
    });
    def!("msg_cycles_refunded128", |c: Ctx<'_>, dst: i32| -> Result<(), Error> {
        let refunded = c.data_mut().exec()?.context.cycles_refunded;
        write_u128(&mut c, dst, refunded)
    });
    def!("msg_cycles_accept128", |c: Ctx<'_>, high: i64, low: i64, dst: i32| -> Result<(), Error> {
        let exec = c.data_mut().exec()?;
        let amount = u128_of(high, low).min(exec.context.cycles_available - exec.effects.cycles_accepted);
        exec.effects.cycles_accepted += amount;
        write_u128(&mut c, dst, amount)
    });

    // The canister itself.
    def!("canister_self_size", |c: Ctx<'_>| -> i32 { c.data().id.as_slice().len() as i32 });
    def!("canister_self_copy", |c: Ctx<'_>, dst: i32, off: i32, size: i32| -> Result<(), Error> {
        let bytes = c.data().id.as_slice().to_vec();
        copy_out(&mut c, dst, off, size, &bytes)
    });
    def!("canister_cycle_balance128", |c: Ctx<'_>, dst: i32| -> Result<(), Error> {
        let balance = c.data().balance_seen();
        write_u128(&mut c, dst, balance)
    });
    def!("canister_liquid_cycle_balance128", |c: Ctx<'_>, dst: i32| -> Result<(), Error> {
        let liquid = c.data().liquid_balance_seen();
        write_u128(&mut c, dst, liquid)
    });
    def!("canister_status", |c: Ctx<'_>| -> i32 {
        let _ = &c;
        1
    });
    def!("canister_version", |c: Ctx<'_>| -> i64 { c.data().canister_version as i64 });
    def!("is_controller", |c: Ctx<'_>, src: i32, size: i32| -> Result<i32, Error> {
        let bytes = read(&c, src, size)?;
        let principal =
            Principal::try_from_slice(&bytes).or_else(|_| trap("is_controller: not a principal"))?;
        Ok(i32::from(c.data().controllers.contains(&principal)))
    });
    def!("in_replicated_execution", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(i32::from(c.data_mut().exec()?.context.kind != EntryKind::Query))
    });

    // Calls.
    def!("call_new", |c: Ctx<'_>,
                      callee_src: i32,
                      callee_size: i32,
                      name_src: i32,
                      name_size: i32,
                      reply_fun: i32,
                      reply_env: i32,
                      reject_fun: i32,
                      reject_env: i32|
     -> Result<(), Error> {
        let callee = read(&c, callee_src, callee_size)?;
        let callee =
            Principal::try_from_slice(&callee).or_else(|_| trap("call_new: callee is not a principal"))?;
        let method = read_string(&c, name_src, name_size, "call_new: method name")?;
        let exec = c.data_mut().exec()?;
        if !exec.context.kind.may_call() {
            return trap(format!("call_new cannot be called in {:?}", exec.context.kind));
        }
        exec.effects.new_call = Some(NewCall {
            callee,
            method,
            reply: (reply_fun as u32, reply_env as u32),
            reject: (reject_fun as u32, reject_env as u32),
            cleanup: None,
            arg: vec![],
            cycles: 0,
            timeout_seconds: None,
        });
        Ok(())
    });
    def!("call_on_cleanup", |c: Ctx<'_>, fun: i32, env: i32| -> Result<(), Error> {
        match c.data_mut().exec()?.effects.new_call.as_mut() {
            Some(call) if call.cleanup.is_none() => {
                call.cleanup = Some((fun as u32, env as u32));
                Ok(())
            }
            Some(_) => trap("call_on_cleanup called twice for one call"),
            None => trap("call_on_cleanup called without call_new"),
        }
    });
    def!("call_data_append", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        let bytes = read(&c, src, size)?;
        match c.data_mut().exec()?.effects.new_call.as_mut() {
            Some(call) => {
                call.arg.extend_from_slice(&bytes);
                Ok(())
            }
            None => trap("call_data_append called without call_new"),
        }
    });
    def!("call_with_best_effort_response", |c: Ctx<'_>, timeout: i32| -> Result<(), Error> {
        match c.data_mut().exec()?.effects.new_call.as_mut() {
            Some(call) if call.timeout_seconds.is_none() => {
                call.timeout_seconds = Some((timeout as u32).min(MAX_CALL_TIMEOUT_SECONDS));
                Ok(())
            }
            Some(_) => trap("call_with_best_effort_response called twice for one call"),
            None => trap("call_with_best_effort_response called without call_new"),
        }
    });
    def!("call_cycles_add128", |c: Ctx<'_>, high: i64, low: i64| -> Result<(), Error> {
        let amount = u128_of(high, low);
        let state = c.data_mut();
        let liquid = state.liquid_balance_seen();
        let effects = &mut state.exec()?.effects;
        let Some(call) = effects.new_call.as_mut() else {
            return trap("call_cycles_add128 called without call_new");
        };
        if amount > liquid {
            return trap(format!(
                "call_cycles_add128: {amount} cycles is more than the liquid balance {liquid}"
            ));
        }
        call.cycles += amount;
        effects.cycles_withdrawn += amount;
        Ok(())
    });
    def!("call_perform", |c: Ctx<'_>| -> Result<i32, Error> { call_perform(c.data_mut()) });
    def!("cost_call", |c: Ctx<'_>, method_len: i64, payload_len: i64, dst: i32| -> Result<(), Error> {
        write_u128(&mut c, dst, cycles::call_prepayment(method_len as u64, payload_len as u64))
    });

    // Stable memory.
    def!("stable64_size", |c: Ctx<'_>| -> i64 { c.data().stable.pages() as i64 });
    def!("stable64_grow", |c: Ctx<'_>, pages: i64| -> i64 { c.data_mut().stable.grow(pages as u64) });
    def!("stable64_write", |c: Ctx<'_>, offset: i64, src: i64, size: i64| -> Result<(), Error> {
        let bytes = read(&c, src as i32, size as i32)?;
        c.data_mut().stable.write(offset as u64, &bytes).map_err(CanisterTrap::from)?;
        Ok(())
    });
    def!("stable64_read", |c: Ctx<'_>, dst: i64, offset: i64, size: i64| -> Result<(), Error> {
        let bytes = c.data().stable.read(offset as u64, size as u64).map_err(CanisterTrap::from)?;
        write(&mut c, dst as i32, &bytes)
    });

    // Time, timers, counters.
    def!("time", |c: Ctx<'_>| -> Result<i64, Error> { Ok(c.data_mut().exec()?.context.time as i64) });
    def!("global_timer_set", |c: Ctx<'_>, timestamp: i64| -> Result<i64, Error> {
        let previous = c.data().global_timer;
        let exec = c.data_mut().exec()?;
        let previous = exec.effects.timer.unwrap_or(previous);
        exec.effects.timer = Some(timestamp as u64);
        Ok(previous as i64)
    });
    def!("performance_counter", |c: Ctx<'_>, counter: i32| -> Result<i64, Error> {
        let now = instructions_so_far(&c);
        let before = c.data().exec.as_ref().map_or(0, |e| e.context.call_context_instructions);
        match counter {
            0 => Ok(now as i64),
            1 => Ok((before + now) as i64),
            _ => trap(format!("performance_counter: unknown counter type {counter}")),
        }
    });

    // Environment variables.
    def!("env_var_count", |c: Ctx<'_>| -> i32 { c.data().env_vars.len() as i32 });
    def!("env_var_name_size", |c: Ctx<'_>, index: i32| -> Result<i32, Error> {
        match c.data().env_vars.keys().nth(index as u32 as usize) {
            Some(name) => Ok(name.len() as i32),
            None => trap(format!("env_var_name_size: no variable at index {index}")),
        }
    });
    def!("env_var_name_copy", |c: Ctx<'_>, index: i32, dst: i32, off: i32, size: i32| -> Result<(), Error> {
        let Some(name) = c.data().env_vars.keys().nth(index as u32 as usize).cloned() else {
            return trap(format!("env_var_name_copy: no variable at index {index}"));
        };
        copy_out(&mut c, dst, off, size, name.as_bytes())
    });
    def!("env_var_name_exists", |c: Ctx<'_>, src: i32, size: i32| -> Result<i32, Error> {
        let name = read_string(&c, src, size, "env_var_name_exists: name")?;
        Ok(i32::from(c.data().env_vars.contains_key(&name)))
    });
    def!("env_var_value_size", |c: Ctx<'_>, src: i32, size: i32| -> Result<i32, Error> {
        let name = read_string(&c, src, size, "env_var_value_size: name")?;
        match c.data().env_vars.get(&name) {
            Some(value) => Ok(value.len() as i32),
            None => trap(format!("env_var_value_size: no variable {name:?}")),
        }
    });
    def!("env_var_value_copy", |c: Ctx<'_>,
                                src: i32,
                                size: i32,
                                dst: i32,
                                off: i32,
                                len: i32|
     -> Result<(), Error> {
        let name = read_string(&c, src, size, "env_var_value_copy: name")?;
        let Some(value) = c.data().env_vars.get(&name).cloned() else {
            return trap(format!("env_var_value_copy: no variable {name:?}"));
        };
        copy_out(&mut c, dst, off, len, value.as_bytes())
    });

    // Diagnostics.
    def!("debug_print", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        c.data_mut().debug_log.push(text);
        Ok(())
    });
    def!("trap", |c: Ctx<'_>, src: i32, size: i32| -> Result<(), Error> {
        let text = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        trap(format!("Canister called `ic0.trap` with message: '{text}'"))
    });
    l
}

/// The longest a bounded-wait call may wait.
pub const MAX_CALL_TIMEOUT_SECONDS: u32 = 300;

/// Returns 0 and keeps the call when a request slot to the callee is free and
/// the liquid balance covers the prepayment; otherwise returns 2
/// (SYS_TRANSIENT), gives back the attached cycles, and no callback will run.
fn call_perform(state: &mut SystemState) -> Result<i32, Error> {
    let liquid = state.liquid_balance_seen();
    let SystemState { in_flight, limits, exec, .. } = state;
    let Some(Execution { effects, .. }) = exec else {
        return outside_a_message();
    };
    let Some(call) = effects.new_call.take() else {
        return trap("call_perform called without call_new");
    };
    let committed = in_flight.get(&call.callee).copied().unwrap_or(0);
    let taken = committed + effects.slots_taken.get(&call.callee).copied().unwrap_or(0);
    let prepayment = cycles::call_prepayment(call.method.len() as u64, call.arg.len() as u64);
    if taken >= limits.queue_capacity || liquid < prepayment {
        // The attached cycles stay with the caller.
        effects.cycles_withdrawn -= call.cycles;
        effects.calls_refused += 1;
        return Ok(RejectCode::SysTransient as i32);
    }
    effects.cycles_withdrawn += prepayment;
    *effects.slots_taken.entry(call.callee).or_default() += 1;
    effects.performed.push(PerformedCall { call, prepayment });
    Ok(0)
}

/// Defines every `ic0` import of `module` that [`linker`] lacks as a
/// function that traps with `ic0.<name> is not supported by the simulator`,
/// so such a module still loads.
pub fn link_unsupported(linker: &mut Linker<SystemState>, module: &wasmi::Module) -> Result<(), WasmError> {
    for import in module.imports() {
        let (module, name) = (import.module().to_string(), import.name().to_string());
        if module != "ic0" {
            return Err(WasmError::ForeignImport { module, name });
        }
        let wasmi::ExternType::Func(ty) = import.ty() else {
            return Err(WasmError::NotAFunction { module, name });
        };
        if SUPPORTED.contains(&import.name()) {
            continue;
        }
        linker
            .func_new("ic0", import.name(), ty.clone(), move |_c, _params: &[Val], _results: &mut [Val]| {
                trap(format!("ic0.{name} is not supported by the simulator"))
            })
            .map_err(|e| WasmError::Link(e.to_string()))?;
    }
    Ok(())
}
