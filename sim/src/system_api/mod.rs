//! The `ic0` system API: host functions over a canister's [`SystemState`].
//!
//! They read the running message's [`MessageContext`] and write its
//! [`Effects`], which the canister commits only if the message does not
//! trap. Signatures are those of the `ic0` crate ic-cdk uses (wasm32:
//! `usize` is `i32`).

mod calls;
mod canister;
mod certified;
mod cost;
mod debug;
pub(crate) mod ic0;
mod linker;
mod memory;
mod message_state;
mod msg;
mod stable;
mod tape;
mod time;

use candid::Principal;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use wasmi::{Caller, Engine, Error, Global, Memory, Store, Val};

use crate::host_memory::{Bytes, Held, HostMemory, OverBudget, STABLE_MEMORY_COPIES, StoreLimiter};
use crate::message::ErrorCode;
use crate::stable::{OutOfBounds, StableMemory};

pub use calls::too_large_for_another_subnet;
pub use canister::CYCLES_MINTING_CANISTER;
pub use debug::{DebugLog, LogRecord};
pub use linker::linker;
pub use linker::{Word, has_memory64};
pub use message_state::{Effects, EntryKind, Execution, MessageContext, PerformedCall};
pub use tape::TapeEvent;

/// Why a message stopped early, with the error code the replica gives for
/// it. The message is then rolled back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanisterTrap {
    /// The replica's error code for this trap.
    pub code: ErrorCode,
    /// Its message, as the replica words it.
    pub message: String,
}

impl CanisterTrap {
    /// A trap with the replica's error `code`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }
}

impl fmt::Display for CanisterTrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl wasmi::errors::HostError for CanisterTrap {}

/// A stable memory access out of bounds: a wasm trap in the replica
/// (`TrapCode::StableMemoryOutOfBounds`).
impl From<OutOfBounds> for CanisterTrap {
    fn from(e: OutOfBounds) -> Self {
        CanisterTrap::new(ErrorCode::CanisterTrapped, e.to_string())
    }
}

impl From<CanisterTrap> for Error {
    fn from(trap: CanisterTrap) -> Self {
        Error::host(trap)
    }
}

/// A system call used against its contract: the replica's
/// `ContractViolation` (IC0504), the trap of most system calls.
fn trap<T>(message: impl Into<String>) -> Result<T, Error> {
    trap_with(ErrorCode::CanisterContractViolation, message)
}

/// A trap the replica gives `code`.
fn trap_with<T>(code: ErrorCode, message: impl Into<String>) -> Result<T, Error> {
    Err(CanisterTrap::new(code, message).into())
}

/// The parameters of the model that the system API needs.
#[derive(Clone, Copy, Debug)]
pub struct ApiLimits {
    /// Requests in flight per (caller, callee) pair.
    pub queue_capacity: u32,
    /// Instructions one message may execute.
    pub max_instructions_per_message: u64,
}

/// A new canister's `wasm_memory_limit` on the replica (`DEFAULT_WASM_MEMORY_LIMIT`).
pub const DEFAULT_WASM_MEMORY_LIMIT: u64 = 3 << 30;

/// Where a canister runs, as `ic0.subnet_self_*` and `ic0.root_key_*` show it.
#[derive(Clone, Debug)]
pub struct Hosting {
    pub subnet: Principal,
    /// Its subnet's nodes.
    pub subnet_size: u32,
    /// The network's root key (DER).
    pub root_key: Vec<u8>,
    /// The chain keys the network holds, by name.
    pub chain_keys: BTreeSet<String>,
}

impl Default for Hosting {
    fn default() -> Self {
        Self {
            subnet: Principal::management_canister(),
            subnet_size: 13,
            root_key: vec![],
            chain_keys: BTreeSet::new(),
        }
    }
}

/// The part of a canister's state that its code reaches through `ic0`.
pub struct SystemState {
    pub id: Principal,
    pub network: Hosting,
    pub controllers: Vec<Principal>,
    pub env_vars: BTreeMap<String, String>,
    pub balance: u128,
    /// Cycles the canister must keep (its freezing threshold).
    pub freezing_reserve: u128,
    /// Written at once by host functions; its undo log rolls a trap back.
    pub stable: StableMemory,
    /// Requests in flight per callee: performed and not yet answered by a
    /// consumed response.
    pub in_flight: BTreeMap<Principal, u32>,
    /// The most requests in flight per callee at any point of the last
    /// round: a same-subnet call can take and free its slot within one
    /// round, where `in_flight` between rounds shows nothing (a live
    /// view's figure; not saved).
    pub round_peak: BTreeMap<Principal, u32>,
    pub global_timer: u64,
    pub canister_version: u64,
    /// What the canister certified (`certified_data_set`), at most 32 bytes.
    pub certified_data: Vec<u8>,
    /// Wasm memory past which growth traps where the replica enforces its
    /// `wasm_memory_limit` setting; 0 for none.
    pub wasm_memory_limit: u64,
    pub limits: ApiLimits,
    pub memory: Option<Memory>,
    /// The instance's instruction counter ([`crate::metering`]), which host
    /// functions charge too.
    pub counter: Option<Global>,
    pub exec: Option<Execution>,
    /// What `ic0.debug_print` printed (the newest 4 KiB). Not an effect to
    /// drop: like the replica's canister log, it keeps what trapped
    /// executions printed.
    pub debug_log: DebugLog,
    /// The current message's tape, when recording.
    pub tape: Option<Vec<TapeEvent>>,
    /// What the store's memories and tables hold of the host-memory
    /// budget. It belongs to the store, not to the canister: it stays with
    /// the store when the state moves to another ([`move_to_new_store`]).
    pub limiter: StoreLimiter,
    /// What stable memory holds of the budget; it moves with the state.
    pub stable_held: Held,
}

impl SystemState {
    pub fn new(
        id: Principal,
        controllers: Vec<Principal>,
        balance: u128,
        limits: ApiLimits,
        budget: &HostMemory,
    ) -> Self {
        Self {
            id,
            network: Hosting::default(),
            controllers,
            env_vars: BTreeMap::new(),
            balance,
            freezing_reserve: 0,
            stable: StableMemory::default(),
            in_flight: BTreeMap::new(),
            round_peak: BTreeMap::new(),
            global_timer: 0,
            canister_version: 0,
            certified_data: vec![],
            wasm_memory_limit: DEFAULT_WASM_MEMORY_LIMIT,
            limits,
            memory: None,
            counter: None,
            exec: None,
            debug_log: DebugLog::default(),
            tape: None,
            limiter: StoreLimiter::new(budget),
            stable_held: Held::new(budget),
        }
    }

    /// Holds what stable memory's current size takes of the budget (see
    /// [`crate::host_memory`]), whether or not it fits: for a size that was
    /// reached within the budget before.
    pub fn settle_stable(&mut self) {
        self.stable_held.set(self.stable.size() * STABLE_MEMORY_COPIES);
    }

    /// Holds what stable memory takes of the budget (see
    /// [`crate::host_memory`]) if it fits: for a restored state.
    pub fn hold_stable(&mut self) -> Result<(), OverBudget> {
        let size = self.stable.size();
        let bytes = size.saturating_mul(STABLE_MEMORY_COPIES);
        if self.stable_held.try_add(bytes) {
            return Ok(());
        }
        let what = format!("stable memory of {}", Bytes(size));
        Err(self.stable_held.budget().refusal(&what, bytes, STABLE_MEMORY_COPIES))
    }

    /// The balance the running message sees (outside one, the committed one).
    pub fn balance_seen(&self) -> u128 {
        self.exec.as_ref().map_or(self.balance, |exec| exec.balance(self.balance))
    }

    pub fn liquid_balance_seen(&self) -> u128 {
        self.balance_seen().saturating_sub(self.freezing_reserve)
    }

    /// Adds cycles; a balance stops at the largest there is.
    pub fn credit(&mut self, cycles: u128) {
        self.balance = self.balance.saturating_add(cycles);
    }

    pub fn exec(&mut self) -> Result<&mut Execution, Error> {
        match self.exec.as_mut() {
            Some(exec) => Ok(exec),
            None => outside_a_message(),
        }
    }
}

/// Takes `instructions` from the running message's counter; traps as the
/// replica does when that passes the message's limit.
fn charge(c: &mut Ctx<'_>, instructions: u64) -> Result<(), Error> {
    let Some(counter) = c.data().counter else {
        return Ok(());
    };
    let left = counter.get(&*c).i64().expect("an i64");
    let left = left.saturating_sub(instructions.min(i64::MAX as u64) as i64);
    counter.set(&mut *c, Val::I64(left)).expect("a mutable i64");
    if left < 0 {
        let limit = c.data().exec.as_ref().map_or(0, |e| e.context.instruction_limit);
        return Err(crate::code::out_of_instructions(limit).into());
    }
    Ok(())
}

/// Instructions the running message has used so far, system calls included.
fn instructions_used(c: &Ctx<'_>) -> u64 {
    let limit = c.data().exec.as_ref().map_or(0, |e| e.context.instruction_limit);
    let left = c.data().counter.map_or(limit as i64, |counter| counter.get(c).i64().expect("an i64"));
    limit.saturating_sub(left.max(0) as u64)
}

fn outside_a_message<T>() -> Result<T, Error> {
    trap("system call outside a message execution")
}

type Ctx<'a> = Caller<'a, SystemState>;

/// A store for a canister's instance, whose memories and tables take from
/// the host-memory budget.
pub fn new_store(engine: &Engine, state: SystemState) -> Store<SystemState> {
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limiter);
    store
}

/// Takes the state out of `store`, leaving a placeholder, and keeps the
/// store's own charge on the host-memory budget with the store (it is
/// given back when the store and its instances are dropped).
pub fn take_state(store: &mut Store<SystemState>) -> SystemState {
    let old = store.data();
    let placeholder = SystemState::new(old.id, vec![], 0, old.limits, old.limiter.budget());
    let mut state = std::mem::replace(store.data_mut(), placeholder);
    std::mem::swap(&mut state.limiter, &mut store.data_mut().limiter);
    state
}

/// Puts `state` (from [`take_state`]) into `store`, which keeps its charge.
pub fn put_state(store: &mut Store<SystemState>, mut state: SystemState) {
    std::mem::swap(&mut state.limiter, &mut store.data_mut().limiter);
    *store.data_mut() = state;
}

/// A new, empty store with the state of `store` (whose instances are
/// dropped with it).
pub fn move_to_new_store(store: &mut Store<SystemState>) -> Store<SystemState> {
    let state = take_state(store);
    new_store(store.engine(), state)
}
