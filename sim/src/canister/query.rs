//! Queries and `canister_inspect_message`: run on a copy, never kept.

use candid::Principal;

use super::{Canister, CanisterStatus};
use crate::code::Entry;
use crate::message::{ErrorCode, Payload, Reject};
use crate::system_api::{Effects, EntryKind, MessageContext};

impl Canister {
    /// Runs `canister_query <method>` and discards its effects.
    pub fn query(
        &mut self,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
        time: u64,
        data_certificate: Option<Vec<u8>>,
    ) -> Payload {
        // A stopped canister answers no query; a stopping one still does
        // (`get_active_canister` in rs/replicated_state/src/replicated_state.rs).
        if self.status == CanisterStatus::Stopped {
            let message =
                format!("Canister {} is stopped and therefore does not have a CallContextManager", self.id);
            return Payload::reject(ErrorCode::CanisterStopped, message);
        }
        let export = format!("canister_query {method}");
        if !self.exports(&export) {
            let message = format!("Canister {} has no query method '{method}'", self.id);
            return Payload::reject(ErrorCode::CanisterMethodNotFound, message);
        }
        let mut context = MessageContext::new(EntryKind::Query, sender, method.into(), arg, time);
        context.data_certificate = data_certificate;
        match self.run_keeping(Entry::Export(export), context, false).outcome {
            Err(trap) => Payload::reject(trap.code, format!("Error from Canister {}: {trap}", self.id)),
            Ok(Effects { response: Some(payload), .. }) => payload,
            Ok(_) => Payload::reject(
                ErrorCode::CanisterDidNotReply,
                format!("Canister {} did not produce a response", self.id),
            ),
        }
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
            .run_keeping(Entry::Export("canister_inspect_message".into()), context, false)
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
