//! Host functions that make calls, `call_new` to `call_perform`.

use candid::Principal;

use crate::cycles;
use crate::message::{ErrorCode, Reject, RejectCode, Request};
use wasmi::Error;

use super::linker::{Contexts, Registry, Word, def};
use super::memory::{read, read_string, u128_of};
use super::message_state::NewCall;
use super::{EntryKind, Execution, PerformedCall, SystemState, outside_a_message, trap};

/// The entry kinds that may make calls (U CQ Ry Rt CRy CRt T).
const MAY_CALL: Contexts = Contexts::only(&[
    EntryKind::Update,
    EntryKind::ReplyCallback,
    EntryKind::RejectCallback,
    EntryKind::GlobalTimer,
    EntryKind::Heartbeat,
    EntryKind::CompositeQuery,
    EntryKind::CompositeReplyCallback,
    EntryKind::CompositeRejectCallback,
]);

/// The entry kinds that may attach cycles to a call (U Ry Rt T): a
/// composite query's calls carry none.
pub(super) const MAY_ATTACH_CYCLES: Contexts = Contexts::only(&[
    EntryKind::Update,
    EntryKind::ReplyCallback,
    EntryKind::RejectCallback,
    EntryKind::GlobalTimer,
    EntryKind::Heartbeat,
]);

pub(super) fn register<I: Word>(r: &mut Registry) {
    def!(r, "call_new" in MAY_CALL, |c: Ctx<'_>,
                      callee_src: I,
                      callee_size: I,
                      name_src: I,
                      name_size: I,
                      reply_fun: I,
                      reply_env: I,
                      reject_fun: I,
                      reject_env: I|
     -> Result<(), Error> {
        let callee = read(&c, callee_src, callee_size)?;
        let callee =
            Principal::try_from_slice(&callee).or_else(|_| trap("call_new: callee is not a principal"))?;
        let method = read_string(&c, name_src, name_size, "call_new: method name")?;
        c.data_mut().exec()?.effects.new_call = Some(NewCall {
            callee,
            method,
            reply: (reply_fun.to_u64(), reply_env.to_u64()),
            reject: (reject_fun.to_u64(), reject_env.to_u64()),
            cleanup: None,
            arg: vec![],
            cycles: 0,
            timeout_seconds: None,
        });
        Ok(())
    });
    def!(r, "call_on_cleanup", |c: Ctx<'_>, fun: I, env: I| -> Result<(), Error> {
        match c.data_mut().exec()?.effects.new_call.as_mut() {
            Some(call) if call.cleanup.is_none() => {
                call.cleanup = Some((fun.to_u64(), env.to_u64()));
                Ok(())
            }
            Some(_) => trap("call_on_cleanup called twice for one call"),
            None => trap("call_on_cleanup called without call_new"),
        }
    });
    def!(r, "call_data_append", |c: Ctx<'_>, src: I, size: I| -> Result<(), Error> {
        // As the replica: first a call under construction, then the size, then the memory.
        match c.data_mut().exec()?.effects.new_call.as_ref() {
            Some(call) => within_the_local_limit(call, size.to_u64())?,
            None => return trap("call_data_append called without call_new"),
        }
        let bytes = read(&c, src, size)?;
        let call = c.data_mut().exec()?.effects.new_call.as_mut().expect("looked at above");
        call.arg.extend_from_slice(&bytes);
        Ok(())
    });
    def!(r, "call_with_best_effort_response", |c: Ctx<'_>, timeout: i32| -> Result<(), Error> {
        match c.data_mut().exec()?.effects.new_call.as_mut() {
            Some(call) if call.timeout_seconds.is_none() => {
                call.timeout_seconds = Some((timeout as u32).min(MAX_CALL_TIMEOUT_SECONDS));
                Ok(())
            }
            Some(_) => trap("call_with_best_effort_response called twice for one call"),
            None => trap("call_with_best_effort_response called without call_new"),
        }
    });
    def!(r, "call_cycles_add128" in MAY_ATTACH_CYCLES, |c: Ctx<'_>, high: i64, low: i64| -> Result<(), Error> {
        add_cycles(c.data_mut(), u128_of(high, low))
    });
    def!(r, "call_perform", |c: Ctx<'_>| -> Result<i32, Error> { call_perform(c.data_mut()) });
}

/// Attaches `amount` cycles to the call under construction.
pub(super) fn add_cycles(state: &mut SystemState, amount: u128) -> Result<(), Error> {
    let liquid = state.liquid_balance_seen();
    let effects = &mut state.exec()?.effects;
    let Some(call) = effects.new_call.as_mut() else {
        return trap("call_cycles_add128 called without call_new");
    };
    if amount > liquid {
        return trap(format!("call_cycles_add128: {amount} cycles is more than the liquid balance {liquid}"));
    }
    call.cycles += amount;
    effects.cycles_withdrawn += amount;
    Ok(())
}

/// The longest a bounded-wait call may wait.
pub const MAX_CALL_TIMEOUT_SECONDS: u32 = 300;

/// The largest request (method name and argument together) that may go to
/// a canister on another subnet: the replica's
/// `MAX_INTER_CANISTER_PAYLOAD_IN_BYTES` (`rs/types/src/messages.rs`), 2 MiB.
pub const MAX_INTER_CANISTER_PAYLOAD_IN_BYTES: usize = 2 << 20;

/// How much larger a request may be while it is built, which is as large as
/// it may be to a canister on the same subnet: the replica's
/// `MULTIPLIER_MAX_SIZE_LOCAL_SUBNET`
/// (`rs/embedders/src/wasmtime_embedder/system_api.rs`), so 10 MiB.
pub const MULTIPLIER_MAX_SIZE_LOCAL_SUBNET: usize = 5;

/// `ic0.call_data_append` traps when the request would pass 10 MiB, with
/// the replica's words (`RequestInPrep::extend_method_payload`,
/// `rs/embedders/src/wasmtime_embedder/system_api/request_in_prep.rs`),
/// wherever the callee is. The replica applies the 2 MiB limit for other
/// subnets only when it routes the request, and so does the simulator:
/// [`too_large_for_another_subnet`].
fn within_the_local_limit(call: &NewCall, size: u64) -> Result<(), Error> {
    let limit = (MAX_INTER_CANISTER_PAYLOAD_IN_BYTES * MULTIPLIER_MAX_SIZE_LOCAL_SUBNET) as u64;
    let payload_size = (call.method.len() + call.arg.len()) as u64 + size;
    if payload_size <= limit {
        return Ok(());
    }
    trap(format!(
        "Canister violated contract: Request to {}:{} has a payload size of {payload_size}, which exceeds the allowed limit of {limit}.",
        call.callee, call.method
    ))
}

/// The answer to a performed request whose method name and argument pass
/// 2 MiB when it is routed to another subnet: it never leaves, and its
/// caller gets this reject instead, as from the replica's stream builder
/// (`StreamBuilderImpl::build_streams_impl`,
/// `rs/messaging/src/routing/stream_builder.rs`). `call_perform` has
/// returned 0, so the canister sees it in its reject callback.
pub fn too_large_for_another_subnet(request: &Request) -> Option<Reject> {
    let size = request.method.len() + request.arg.len();
    (size > MAX_INTER_CANISTER_PAYLOAD_IN_BYTES).then(|| {
        let message = format!(
            "Canister {} violated contract: attempted to send a message of size {size} exceeding the limit {MAX_INTER_CANISTER_PAYLOAD_IN_BYTES}",
            request.sender
        );
        Reject::new(ErrorCode::CanisterContractViolation, message)
    })
}

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
        *effects.calls_refused.entry(call.callee).or_default() += 1;
        return Ok(RejectCode::SysTransient as i32);
    }
    effects.cycles_withdrawn += prepayment;
    *effects.slots_taken.entry(call.callee).or_default() += 1;
    effects.performed.push(PerformedCall { call, prepayment });
    Ok(0)
}
