//! Host functions of the message: argument, caller, cycles, and its answer.

use crate::message::{ErrorCode, Payload};
use wasmi::Error;

use super::linker::{Contexts, Registry, Word, def};
use super::memory::{copy_out, copy_slice, memory, read, record_write, u128_of, write_u128};
use super::{EntryKind, trap};

const ACCEPT_ONCE: &str = "accept_message may be called once, in canister_inspect_message";
const INSPECT: Contexts = Contexts::only(&[EntryKind::InspectMessage]).refusing_with(ACCEPT_ONCE);
/// Where the spec allows `msg_caller_info_*`: U RQ NRQ CQ Ry Rt C F.
const CALLER_INFO: Contexts = Contexts::only(&[
    EntryKind::Update,
    EntryKind::ReplicatedQuery,
    EntryKind::Query,
    EntryKind::CompositeQuery,
    EntryKind::ReplyCallback,
    EntryKind::RejectCallback,
    EntryKind::Cleanup,
    EntryKind::InspectMessage,
]);

pub(super) fn register<I: Word>(r: &mut Registry) {
    def!(r, "msg_arg_data_size", |c: Ctx<'_>| -> Result<I, Error> {
        Ok(I::of_len(c.data_mut().exec()?.context.arg.len()))
    });
    def!(r, "msg_arg_data_copy", |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        c.data_mut().exec()?;
        let memory = memory(&c)?;
        let (data, state) = memory.data_and_store_mut(&mut c);
        copy_slice(data, &state.exec.as_ref().expect("checked above").context.arg, dst, off, size)?;
        record_write(state, data, dst.to_u64(), size.to_u64());
        Ok(())
    });
    def!(r, "msg_caller_size", |c: Ctx<'_>| -> Result<I, Error> {
        Ok(I::of_len(c.data_mut().exec()?.context.caller.as_slice().len()))
    });
    def!(r, "msg_caller_copy", |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        let bytes = c.data_mut().exec()?.context.caller.as_slice().to_vec();
        copy_out(&mut c, dst, off, size, &bytes)
    });
    // The sim's messages carry no sender info (the HTTP interface accepts
    // none), so each is empty, as the replica's for a call without one.
    def!(r, "msg_caller_info_data_size" in CALLER_INFO, |c: Ctx<'_>| -> I { I::of_len(0) });
    def!(r, "msg_caller_info_data_copy" in CALLER_INFO, |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        copy_out(&mut c, dst, off, size, &[])
    });
    def!(r, "msg_caller_info_signer_size" in CALLER_INFO, |c: Ctx<'_>| -> I { I::of_len(0) });
    def!(r, "msg_caller_info_signer_copy" in CALLER_INFO, |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        copy_out(&mut c, dst, off, size, &[])
    });
    def!(r, "msg_method_name_size", |c: Ctx<'_>| -> Result<I, Error> {
        Ok(I::of_len(c.data_mut().exec()?.context.method.len()))
    });
    def!(r, "msg_method_name_copy", |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        let name = c.data_mut().exec()?.context.method.clone().into_bytes();
        copy_out(&mut c, dst, off, size, &name)
    });
    def!(r, "accept_message" in INSPECT, |c: Ctx<'_>| -> Result<(), Error> {
        let exec = c.data_mut().exec()?;
        if exec.effects.accepted {
            return trap(ACCEPT_ONCE);
        }
        exec.effects.accepted = true;
        Ok(())
    });
    def!(r, "msg_reject_code", |c: Ctx<'_>| -> Result<i32, Error> {
        Ok(c.data_mut().exec()?.context.reject.as_ref().map_or(0, |(code, _)| *code as i32))
    });
    def!(r, "msg_reject_msg_size", |c: Ctx<'_>| -> Result<I, Error> {
        match &c.data_mut().exec()?.context.reject {
            Some((_, msg)) => Ok(I::of_len(msg.len())),
            None => trap("msg_reject_msg_size called outside a reject callback"),
        }
    });
    def!(r, "msg_reject_msg_copy", |c: Ctx<'_>, dst: I, off: I, size: I| -> Result<(), Error> {
        let msg = match &c.data_mut().exec()?.context.reject {
            Some((_, msg)) => msg.clone().into_bytes(),
            None => return trap("msg_reject_msg_copy called outside a reject callback"),
        };
        copy_out(&mut c, dst, off, size, &msg)
    });
    def!(r, "msg_deadline", |c: Ctx<'_>| -> Result<i64, Error> {
        Ok(c.data_mut().exec()?.context.deadline as i64)
    });

    def!(r, "msg_reply_data_append", |c: Ctx<'_>, src: I, size: I| -> Result<(), Error> {
        let bytes = read(&c, src, size)?;
        let exec = c.data_mut().exec()?;
        if !exec.can_reply() {
            return trap("msg_reply_data_append: this call context has already replied or cannot reply");
        }
        let limit = max_reply_bytes(exec.context.kind);
        let payload_size = exec.effects.reply_data.len() + bytes.len();
        if payload_size > limit {
            // The replica's words: `ic0_msg_reply_data_append` in rs/system_api/src/lib.rs
            // raises a ContractViolation, which it shows with this prefix.
            return trap(format!(
                "Canister violated contract: ic0.msg_reply_data_append: application payload size ({payload_size}) cannot be larger than {limit}."
            ));
        }
        exec.effects.reply_data.extend_from_slice(&bytes);
        Ok(())
    });
    def!(r, "msg_reply", |c: Ctx<'_>| -> Result<(), Error> {
        let exec = c.data_mut().exec()?;
        if !exec.can_reply() {
            return trap("msg_reply: this call context has already replied or cannot reply");
        }
        let effects = &mut exec.effects;
        effects.response = Some(Payload::Reply(std::mem::take(&mut effects.reply_data)));
        Ok(())
    });
    def!(r, "msg_reject", |c: Ctx<'_>, src: I, size: I| -> Result<(), Error> {
        let message = String::from_utf8_lossy(&read(&c, src, size)?).into_owned();
        let exec = c.data_mut().exec()?;
        if !exec.can_reply() {
            return trap("msg_reject: this call context has already replied or cannot reply");
        }
        exec.effects.response = Some(Payload::reject(ErrorCode::CanisterRejectedMessage, message));
        Ok(())
    });

    def!(r, "msg_cycles_available128", |c: Ctx<'_>, dst: I| -> Result<(), Error> {
        let exec = c.data_mut().exec()?;
        let available = exec.context.cycles_available - exec.effects.cycles_accepted;
        write_u128(&mut c, dst, available)
    });
    def!(r, "msg_cycles_refunded128", |c: Ctx<'_>, dst: I| -> Result<(), Error> {
        let refunded = c.data_mut().exec()?.context.cycles_refunded;
        write_u128(&mut c, dst, refunded)
    });
    def!(r, "msg_cycles_accept128", |c: Ctx<'_>, high: i64, low: i64, dst: I| -> Result<(), Error> {
        let exec = c.data_mut().exec()?;
        let amount = u128_of(high, low).min(exec.context.cycles_available - exec.effects.cycles_accepted);
        exec.effects.cycles_accepted += amount;
        write_u128(&mut c, dst, amount)
    });
}

/// The largest reply: 2 MiB, the replica's `MAX_INTER_CANISTER_PAYLOAD_IN_BYTES`
/// (`rs/types/src/messages.rs`), for anything replicated; queries may
/// answer 3 MiB.
fn max_reply_bytes(kind: EntryKind) -> usize {
    if kind.is_replicated() { 2 << 20 } else { 3 << 20 }
}
