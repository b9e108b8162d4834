//! Queries and `canister_inspect_message`: nothing they do is kept.

use candid::Principal;

use super::{Canister, CanisterStatus, Keeping, QueryStep};
use crate::code::Entry;
use crate::message::{ErrorCode, Payload, Reject};
use crate::system_api::{Effects, EntryKind, MessageContext};

impl Canister {
    /// Runs the query method `method`: `canister_query <method>` answers at
    /// once and keeps nothing; `canister_composite_query <method>` may make
    /// calls instead, whose answers go to [`Canister::query_response`].
    /// Returns what it came to and the instructions it used, at most
    /// `instruction_limit`.
    pub fn query(
        &mut self,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
        time: u64,
        data_certificate: Option<Vec<u8>>,
        instruction_limit: u64,
    ) -> (QueryStep, u64) {
        // A stopped canister answers no query; a stopping one still does
        // (`get_active_canister` in rs/replicated_state/src/replicated_state.rs).
        if self.status == CanisterStatus::Stopped {
            let message =
                format!("Canister {} is stopped and therefore does not have a CallContextManager", self.id);
            return (QueryStep::Answer(Payload::reject(ErrorCode::CanisterStopped, message)), 0);
        }
        let mut context = MessageContext::new(EntryKind::Query, sender, method.into(), arg, time);
        context.data_certificate = data_certificate;
        context.instruction_limit = instruction_limit;
        let composite = format!("canister_composite_query {method}");
        if self.exports(&composite) {
            return self.start_composite_query(composite, context);
        }
        let export = format!("canister_query {method}");
        if !self.exports(&export) {
            let message = format!("Canister {} has no query method '{method}'", self.id);
            return (QueryStep::Answer(Payload::reject(ErrorCode::CanisterMethodNotFound, message)), 0);
        }
        let ran = self.run_keeping(Entry::Export(export), context, Keeping::Discard);
        let payload = match ran.outcome {
            Err(trap) => Payload::reject(trap.code, format!("Error from Canister {}: {trap}", self.id)),
            Ok(Effects { response: Some(payload), .. }) => payload,
            Ok(_) => Payload::reject(
                ErrorCode::CanisterDidNotReply,
                format!("Canister {} did not produce a response", self.id),
            ),
        };
        (QueryStep::Answer(payload), ran.instructions)
    }

    /// Whether `canister_inspect_message` accepts an ingress message; a
    /// canister without one accepts everything.
    pub fn inspect(
        &mut self,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
        time: u64,
    ) -> Result<(), Reject> {
        if !self.exports("canister_inspect_message") {
            return Ok(());
        }
        let context = MessageContext::new(EntryKind::InspectMessage, sender, method.into(), arg, time);
        let (error_code, message) = match self
            .run_keeping(Entry::Export("canister_inspect_message".into()), context, Keeping::Discard)
            .outcome
        {
            Err(trap) => (trap.code, format!("canister_inspect_message trapped: {trap}")),
            Ok(effects) if effects.accepted => return Ok(()),
            Ok(_) => (
                ErrorCode::CanisterRejectedMessage,
                format!("Canister {} did not accept the message", self.id),
            ),
        };
        Err(Reject::new(error_code, message))
    }
}
