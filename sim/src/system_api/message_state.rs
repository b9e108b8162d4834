//! Message state: what a running message reads and what it did so far.

use candid::Principal;
use std::collections::BTreeMap;

use crate::message::{Payload, RejectCode};

/// A call between `call_new` and `call_perform`.
#[derive(Clone, Debug)]
pub struct NewCall {
    pub callee: Principal,
    pub method: String,
    pub reply: (u64, u64),
    pub reject: (u64, u64),
    pub cleanup: Option<(u64, u64)>,
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
    /// The module's start function, which the replica runs as `canister_start`.
    Start,
    Init,
    PreUpgrade,
    PostUpgrade,
    Update,
    /// A query method called by an update call or another canister: run
    /// in replicated mode, its state changes discarded.
    ReplicatedQuery,
    Query,
    InspectMessage,
    ReplyCallback,
    RejectCallback,
    Cleanup,
    GlobalTimer,
    Heartbeat,
    /// `canister_composite_query <name>`: a non-replicated query that may
    /// call other canisters' queries on its subnet.
    CompositeQuery,
    CompositeReplyCallback,
    CompositeRejectCallback,
    CompositeCleanup,
}

impl EntryKind {
    /// The replica's name for the mode (`ApiType::as_str`), as its traps
    /// print it.
    pub fn mode(self) -> &'static str {
        match self {
            EntryKind::Start => "start",
            // The replica runs `canister_post_upgrade` as an init.
            EntryKind::Init | EntryKind::PostUpgrade => "init",
            EntryKind::PreUpgrade => "pre upgrade",
            EntryKind::Update => "update",
            EntryKind::ReplicatedQuery => "replicated query",
            EntryKind::Query => "non replicated query",
            EntryKind::InspectMessage => "inspect message",
            EntryKind::ReplyCallback => "reply callback",
            EntryKind::RejectCallback => "reject callback",
            EntryKind::Cleanup => "cleanup",
            EntryKind::GlobalTimer => "global timer",
            EntryKind::Heartbeat => "heartbeat",
            EntryKind::CompositeQuery => "composite query",
            EntryKind::CompositeReplyCallback => "composite reply callback",
            EntryKind::CompositeRejectCallback => "composite reject callback",
            EntryKind::CompositeCleanup => "composite cleanup",
        }
    }
}

impl EntryKind {
    /// Whether growth past the `wasm_memory_limit` setting traps here: in
    /// the replica, for installs and updates, not for queries, callbacks,
    /// timers or `canister_pre_upgrade`.
    pub fn within_wasm_memory_limit(self) -> bool {
        matches!(self, EntryKind::Start | EntryKind::Init | EntryKind::PostUpgrade | EntryKind::Update)
    }

    /// Whether a committed execution of this kind is a new canister
    /// version (`should_bump_canister_version` in the replica). Hooks are
    /// not: their install bumps it once.
    pub fn bumps_canister_version(self) -> bool {
        matches!(
            self,
            EntryKind::Update
                | EntryKind::ReplyCallback
                | EntryKind::RejectCallback
                | EntryKind::Cleanup
                | EntryKind::GlobalTimer
                | EntryKind::Heartbeat
        )
    }

    /// Whether it runs on every node and its result goes through consensus
    /// (`ic0.in_replicated_execution`): all but queries answered by one node.
    pub fn is_replicated(self) -> bool {
        !matches!(
            self,
            EntryKind::Query
                | EntryKind::CompositeQuery
                | EntryKind::CompositeReplyCallback
                | EntryKind::CompositeRejectCallback
                | EntryKind::CompositeCleanup
        )
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
    /// Instructions the message may use: at most this, lowered to the
    /// canister's limit when it starts.
    pub instruction_limit: u64,
    /// The deadline of a bounded-wait call (ns since the epoch) in its
    /// callee's method and its caller's callbacks; 0 for any other.
    pub deadline: u64,
    /// A certificate of the subnet's certified state (CBOR), which the
    /// replica gives a non-replicated query.
    pub data_certificate: Option<Vec<u8>>,
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
                EntryKind::Update
                    | EntryKind::ReplicatedQuery
                    | EntryKind::Query
                    | EntryKind::ReplyCallback
                    | EntryKind::RejectCallback
                    | EntryKind::CompositeQuery
                    | EntryKind::CompositeReplyCallback
                    | EntryKind::CompositeRejectCallback
            ),
            cycles_available: 0,
            cycles_refunded: 0,
            prepayment: 0,
            time,
            call_context_instructions: 0,
            instruction_limit: u64::MAX,
            deadline: 0,
            data_certificate: None,
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
    /// Cycles the cycles minting canister minted.
    pub cycles_minted: u128,
    /// `call_perform`s that returned non-zero, per callee.
    pub calls_refused: BTreeMap<Principal, u64>,
    /// `canister_inspect_message` accepted the message.
    pub accepted: bool,
    /// Bytes this execution wrote to the canister log (for its charge).
    pub logged_bytes: u64,
    /// What `certified_data_set` set last.
    pub certified_data: Option<Vec<u8>>,
    /// 4 KiB pages of stable memory this execution wrote (for its charge).
    pub dirty_stable_pages: std::collections::BTreeSet<u64>,
}

/// The running message: what it reads and what it did so far.
#[derive(Debug)]
pub struct Execution {
    pub context: MessageContext,
    pub effects: Effects,
}

impl Execution {
    /// The balance the message sees, given the committed one.
    pub fn balance(&self, committed: u128) -> u128 {
        (committed - self.context.prepayment)
            .saturating_add(self.effects.cycles_accepted)
            .saturating_add(self.effects.cycles_minted)
            - self.effects.cycles_withdrawn
    }

    pub fn can_reply(&self) -> bool {
        self.context.may_reply && self.effects.response.is_none()
    }
}
