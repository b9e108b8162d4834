//! Installing and upgrading code; a failure restores one checkpoint.

use candid::Principal;
use std::collections::VecDeque;
use std::rc::Rc;
use wasmi::{Engine, Store};

use super::rollback::Installed;
use super::{Canister, Output};
use crate::code::{Code, CompiledModule, Entry, Snapshot};
use crate::error::SimError;
use crate::message::{CallContextId, ErrorCode, Message, Payload};
use crate::module::START_EXPORT;
use crate::stable::StableMemory;
use crate::system_api::{self, EntryKind, MessageContext, SystemState};

/// How new code arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstallMode {
    /// Fresh state, `canister_init`.
    Install,
    /// `canister_pre_upgrade`, new code, stable memory kept, `canister_post_upgrade`.
    Upgrade,
}

/// New code for a canister, and who installs it when, with what argument.
pub struct Installation {
    pub module: Rc<CompiledModule>,
    pub arg: Vec<u8>,
    pub sender: Principal,
    pub mode: InstallMode,
    pub time: u64,
}

/// What an installation may change, to give back if it fails.
struct InstallCheckpoint {
    instance: Option<Snapshot>,
    stable: StableMemory,
    global_timer: u64,
    certified_data: Vec<u8>,
    canister_version: u64,
    /// The store and code that the new code replaced, once it has.
    replaced: Option<(Store<SystemState>, Option<Installed>)>,
}

impl Canister {
    /// Installs `module`, running `canister_init` or the upgrade hooks. If
    /// anything traps or fails, the canister is left as it was.
    pub fn install(&mut self, engine: &Engine, installation: Installation) -> Result<Vec<Output>, SimError> {
        if installation.mode == InstallMode::Upgrade {
            if self.code.is_none() {
                return Err(SimError::NoCodeToUpgrade(self.id));
            }
            if !self.call_contexts.is_empty() {
                return Err(SimError::OpenCallContexts(self.id));
            }
        }
        let mut checkpoint = self.install_checkpoint();
        if let Err(e) = self.replace_code(&mut checkpoint, engine, installation) {
            self.restore(checkpoint);
            return Err(e);
        }
        // A reinstall ends every open call context: their callers are
        // told, and the slots their calls held are free. They get
        // CANISTER_ERROR, as a call context closed without a reply
        // (IC0506); the replica's uninstall answers CANISTER_REJECT
        // (IC0406, "Canister has been uninstalled.").
        let ids: Vec<CallContextId> = self.call_contexts.keys().copied().collect();
        let reinstalled = format!("Canister {} was reinstalled", self.id);
        let mut outputs = vec![];
        for id in ids {
            outputs.extend(
                self.respond(id, Payload::reject(ErrorCode::CanisterDidNotReply, reinstalled.clone())),
            );
        }
        self.call_contexts.clear();
        self.callbacks.clear();
        self.store.data_mut().in_flight.clear();
        Ok(outputs)
    }

    /// Taken before `canister_pre_upgrade`, whose changes are undone too if
    /// the new code fails.
    fn install_checkpoint(&self) -> InstallCheckpoint {
        let state = self.store.data();
        InstallCheckpoint {
            instance: self.code.as_ref().map(|c| c.code.snapshot(&self.store)),
            stable: state.stable.clone(),
            global_timer: state.global_timer,
            certified_data: state.certified_data.clone(),
            canister_version: state.canister_version,
            replaced: None,
        }
    }

    /// Runs the old code's `canister_pre_upgrade`, puts the new code in a
    /// fresh store and runs its start function, then its `canister_init` or
    /// `canister_post_upgrade`, as the replica does.
    fn replace_code(
        &mut self,
        checkpoint: &mut InstallCheckpoint,
        engine: &Engine,
        installation: Installation,
    ) -> Result<(), SimError> {
        let Installation { module, arg, sender, mode, time } = installation;
        if mode == InstallMode::Upgrade {
            self.run_hook(EntryKind::PreUpgrade, "canister_pre_upgrade", vec![], sender, time)?;
        }
        let mut state = system_api::take_state(&mut self.store);
        state.memory = None;
        state.counter = None;
        state.global_timer = 0;
        if mode == InstallMode::Install {
            // A reinstall starts from nothing certified, as the replica's.
            state.stable = Default::default();
            state.settle_stable();
            state.certified_data.clear();
            self.certified_data_changed = true;
        }
        let old_store = std::mem::replace(&mut self.store, system_api::new_store(engine, state));
        checkpoint.replaced = Some((old_store, self.code.take()));
        let code = Code::instantiate(&mut self.store, module)?;
        self.code = Some(Installed::new(code, &self.store));
        // A new version before the new code runs: `canister_init` and
        // `canister_post_upgrade` see it, `canister_pre_upgrade` the old.
        self.store.data_mut().canister_version += 1;
        self.run_hook(EntryKind::Start, START_EXPORT, vec![], sender, time)?;
        match mode {
            InstallMode::Install => self.run_hook(EntryKind::Init, "canister_init", arg, sender, time),
            InstallMode::Upgrade => {
                self.run_hook(EntryKind::PostUpgrade, "canister_post_upgrade", arg, sender, time)
            }
        }
    }

    fn restore(&mut self, checkpoint: InstallCheckpoint) {
        let InstallCheckpoint { instance, stable, global_timer, certified_data, canister_version, replaced } =
            checkpoint;
        if let Some((store, code)) = replaced {
            let state = system_api::take_state(&mut self.store);
            self.store = store;
            system_api::put_state(&mut self.store, state);
            self.code = code;
        }
        let state = self.store.data_mut();
        state.stable = stable;
        state.settle_stable();
        state.global_timer = global_timer;
        state.certified_data = certified_data;
        state.canister_version = canister_version;
        if let (Some(installed), Some(snapshot)) = (self.code.as_mut(), instance) {
            installed.code.restore(&mut self.store, &snapshot);
            installed.checkpoint = snapshot;
            installed.log.clear();
        }
        // The state may point at the failed code's instance, and rolling
        // back a trapped hook may have moved the old one to a new store:
        // the system API follows the instance there is now.
        match &self.code {
            Some(installed) => installed.code.bind(self.store.data_mut()),
            None => {
                let state = self.store.data_mut();
                state.memory = None;
                state.counter = None;
            }
        }
    }

    /// Runs an init or upgrade hook if the module exports it; a trap fails
    /// the installation.
    fn run_hook(
        &mut self,
        kind: EntryKind,
        export: &'static str,
        arg: Vec<u8>,
        caller: Principal,
        time: u64,
    ) -> Result<(), SimError> {
        if !self.exports(export) {
            return Ok(());
        }
        let context = MessageContext::new(kind, caller, String::new(), arg, time);
        let ran = self.run(Entry::Export(export.into()), context);
        self.stats.record(export, ran.instructions, ran.outcome.is_err());
        let effects = ran.outcome.map_err(|trap| SimError::InstallTrapped {
            hook: export,
            trap: trap.message,
            code: trap.code,
        })?;
        self.commit(effects, None, export, time);
        Ok(())
    }

    /// Code and call contexts go; the canister stays (for deletion). Returns
    /// the messages it had not executed.
    pub fn uninstall(&mut self) -> VecDeque<Message> {
        self.code = None;
        self.call_contexts.clear();
        self.callbacks.clear();
        std::mem::take(&mut self.queue)
    }
}
