//! One instance: a simulator, what PocketIC reports that the simulator
//! does not keep (controllers, module hashes), its certified state, and
//! its ingress messages.

use candid::Principal;
use ic_management_canister_types::CanisterStatusType;
use ic_model::{CanisterState, CertifiedState, Keys, SubnetRanges};
use pocket_ic::RejectResponse;
use pocket_ic::common::rest::{RawEffectivePrincipal, RawMessageId, Topology};
use serde::{Deserialize, Serialize};
use sim::Sim;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::errors::{self, ApiError};
use crate::{management, system_canisters, topology};

/// PocketIC's `await_ingress_message` executes at most this many rounds.
pub const AWAIT_ROUNDS: u64 = sim::UPDATE_CALL_ROUND_LIMIT;

pub type CallResult = Result<Vec<u8>, RejectResponse>;

/// What PocketIC knows about a canister and the simulator does not tell.
#[derive(Clone, Serialize, Deserialize)]
pub struct CanisterInfo {
    pub subnet: Principal,
    pub controllers: Vec<Principal>,
    pub module_hash: Option<Vec<u8>>,
    pub status: CanisterStatusType,
    /// The module's `icp:public` and `icp:private` custom sections.
    pub metadata: Vec<Metadata>,
    /// The chunk store, by each chunk's sha256.
    pub chunks: BTreeMap<Vec<u8>, Vec<u8>>,
    /// The settings the simulator does not keep (see [`crate::settings`]).
    #[serde(with = "crate::saved::candid_bytes")]
    pub settings: ic_management_canister_types::DefiniteCanisterSettings,
    /// The installed module's size in bytes, as sent (maybe gzipped).
    pub module_size: u64,
}

impl CanisterInfo {
    pub fn new(subnet: Principal, controllers: Vec<Principal>) -> Self {
        Self {
            subnet,
            controllers,
            module_hash: None,
            status: CanisterStatusType::Running,
            metadata: vec![],
            chunks: BTreeMap::new(),
            settings: crate::settings::defaults(),
            module_size: 0,
        }
    }
}

/// A custom section a module declares as metadata (`icp:public <name>` or
/// `icp:private <name>`).
#[derive(Clone, Serialize, Deserialize)]
pub struct Metadata {
    pub name: String,
    pub public: bool,
    pub content: Vec<u8>,
}

#[derive(Clone, Serialize, Deserialize)]
pub(crate) enum Outcome {
    /// Executed by the simulator's rounds.
    InSim(sim::MessageId),
    /// A management call: done when it was submitted.
    Done(CallResult),
}

#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Message {
    sender: Principal,
    outcome: Outcome,
}

pub struct Instance {
    pub sim: Sim,
    pub canisters: BTreeMap<Principal, CanisterInfo>,
    /// By index, the id PocketIC's client is given; a network forgets them.
    pub(crate) messages: BTreeMap<u64, Message>,
    /// The index the next message gets: indices are never reused.
    pub(crate) next_message: u64,
    /// Canisters created, installed or deleted since their entries were
    /// last staged in the certified state.
    pub changed: BTreeSet<Principal>,
    /// The subnets' certified state, which queries' data certificates and
    /// the IC HTTP interface read.
    pub certified: Arc<CertifiedState>,
    /// The stand-ins for the ICP ledger, the cycles ledger and the cycles
    /// minting canister, which answer at their ids (`multi_subnet
    /// network`; a PocketIC instance has none, as PocketIC without its ICP
    /// features).
    pub system: Option<ic_model::system_canisters::SystemCanisters>,
}

fn principal(bytes: &[u8], what: &str) -> Result<Principal, ApiError> {
    Principal::try_from_slice(bytes).map_err(|e| ApiError::bad_request(format!("{what}: {e}")))
}

/// The subnets of `sim` and the canister ids each hosts. The cycles
/// ledger's id lies outside every range the simulator assigns: with the
/// system canisters, the first subnet hosts it, as one of the IC's does.
pub(crate) fn subnet_ranges(sim: &Sim, system_canisters: bool) -> Vec<SubnetRanges> {
    let ranges = |index| {
        let range = topology::canister_range(index);
        (Principal::from(range.start), Principal::from(range.end))
    };
    let mut subnets: Vec<SubnetRanges> = sim
        .subnets()
        .into_iter()
        .enumerate()
        .map(|(index, id)| SubnetRanges { id, ranges: vec![ranges(index)] })
        .collect();
    if system_canisters {
        let ledger = system_canisters::CYCLES_LEDGER;
        subnets[0].ranges.push((ledger, ledger));
    }
    subnets
}

impl Instance {
    /// A PocketIC instance: keys from seed 0, no system canisters.
    pub fn new(sim: Sim) -> Self {
        Self::with_keys(sim, Keys::from_seed(0), false)
    }

    /// An instance whose state `keys` sign; with `system_canisters`, the
    /// stand-ins answer at their ids.
    pub fn with_keys(mut sim: Sim, keys: Keys, system_canisters: bool) -> Self {
        let certified = CertifiedState::new(keys, &subnet_ranges(&sim, system_canisters), sim.time());
        sim.set_root_key(certified.root_key_der());
        Self {
            sim,
            canisters: BTreeMap::new(),
            messages: BTreeMap::new(),
            next_message: 0,
            changed: BTreeSet::new(),
            certified: Arc::new(certified),
            system: system_canisters.then(ic_model::system_canisters::SystemCanisters::new),
        }
    }

    /// Stages in the certified state the entries of every canister created,
    /// changed or deleted, or whose certified data changed, since last time.
    pub fn stage_changes(&mut self) {
        let mut changed = std::mem::take(&mut self.changed);
        changed.extend(self.sim.take_certified_data_changes());
        for canister in changed {
            self.certified.write_canister(canister, self.canister_state(canister).as_ref());
        }
    }

    /// What the state tree shows of `canister`; `None` if there is none.
    fn canister_state(&self, canister: Principal) -> Option<CanisterState> {
        let info = self.canisters.get(&canister)?;
        Some(CanisterState {
            controllers: info.controllers.clone(),
            module_hash: info.module_hash.clone(),
            metadata: info.metadata.iter().map(|m| (m.name.clone(), m.public, m.content.clone())).collect(),
            certified_data: self.sim.certified_data(canister).map(<[u8]>::to_vec).unwrap_or_default(),
        })
    }

    pub fn topology(&self) -> Topology {
        topology::of(&self.sim.subnets())
    }

    /// The canister, or the reject a call to a missing one gets.
    pub fn canister(&self, id: Principal) -> Result<&CanisterInfo, RejectResponse> {
        self.canisters.get(&id).ok_or_else(|| errors::canister_not_found(id))
    }

    /// The canister, for an endpoint that PocketIC refuses for a missing one.
    pub fn existing(&self, id: &[u8]) -> Result<Principal, ApiError> {
        let id = principal(id, "canister id")?;
        if !self.canisters.contains_key(&id) {
            return Err(ApiError::bad_request(format!("CanisterNotFound({id})")));
        }
        Ok(id)
    }

    /// `update/submit_ingress_message`: `Ok(Err)` when the IC refuses it.
    pub fn submit(
        &mut self,
        call: pocket_ic::common::rest::RawCanisterCall,
    ) -> Result<Result<RawMessageId, RejectResponse>, ApiError> {
        let sender = principal(&call.sender, "sender")?;
        let canister = principal(&call.canister_id, "canister id")?;
        let index =
            match self.submit_as(&call.effective_principal, canister, sender, &call.method, call.payload)? {
                Ok(index) => index,
                Err(reject) => return Ok(Err(reject)),
            };
        let message_id = index.to_be_bytes().to_vec();
        Ok(Ok(RawMessageId { effective_principal: call.effective_principal, message_id }))
    }

    /// An ingress message from `sender`. `Ok(Ok)` is its index, which
    /// [`outcome`](Self::outcome) takes; `Ok(Err)` when the IC refuses it.
    pub fn submit_as(
        &mut self,
        effective: &RawEffectivePrincipal,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Result<u64, RejectResponse>, ApiError> {
        let outcome = if canister == Principal::management_canister() {
            Outcome::Done(management::call(self, effective, sender, method, &arg)?)
        } else {
            check_effective(effective, canister)?;
            match self.sim.submit_call(canister, sender, method, arg) {
                Ok(id) => Outcome::InSim(id),
                Err(reject) => return Ok(Err(errors::from_sim_reject(reject))),
            }
        };
        Ok(Ok(self.push(Message { sender, outcome })))
    }

    /// An ingress message answered when it was submitted (by a stand-in
    /// for a system canister); returns its index.
    pub fn answered(&mut self, sender: Principal, result: CallResult) -> u64 {
        self.push(Message { sender, outcome: Outcome::Done(result) })
    }

    fn push(&mut self, message: Message) -> u64 {
        let index = self.next_message;
        self.next_message += 1;
        self.messages.insert(index, message);
        index
    }

    /// Forgets an answered message (the IC HTTP interface prunes them after
    /// their expiry). One still running is kept.
    pub fn forget(&mut self, index: u64) {
        let forgotten = match self.messages.get(&index).map(|m| &m.outcome) {
            Some(Outcome::Done(_)) => true,
            Some(Outcome::InSim(id)) => self.sim.forget_ingress(*id),
            None => false,
        };
        if forgotten {
            self.messages.remove(&index);
        }
    }

    fn index(id: &RawMessageId) -> Option<u64> {
        Some(u64::from_be_bytes(id.message_id.as_slice().try_into().ok()?))
    }

    fn message(&self, index: u64) -> Option<&Message> {
        self.messages.get(&index)
    }

    /// The outcome of the message at `index`; `None` while it runs (or if
    /// there is none).
    pub fn outcome(&self, index: u64) -> Option<CallResult> {
        match &self.message(index)?.outcome {
            Outcome::Done(result) => Some(result.clone()),
            Outcome::InSim(id) => {
                self.sim.ingress_status(*id).map(|outcome| outcome.map_err(errors::from_sim_reject))
            }
        }
    }

    /// `None` while the message is being processed (or is unknown, as PocketIC says).
    /// `Err(sender)` when `caller` is not who sent it.
    pub fn status(
        &self,
        id: &RawMessageId,
        caller: Option<Principal>,
    ) -> Result<Option<CallResult>, Principal> {
        let Some(index) = Self::index(id) else { return Ok(None) };
        let Some(message) = self.message(index) else { return Ok(None) };
        if caller.is_some_and(|caller| caller != message.sender) {
            return Err(message.sender);
        }
        Ok(self.outcome(index))
    }

    /// `update/await_ingress_message`: rounds until the answer, at most [`AWAIT_ROUNDS`].
    pub fn await_message(&mut self, id: &RawMessageId) -> Result<CallResult, ApiError> {
        if Self::index(id).and_then(|index| self.message(index)).is_none() {
            return Err(ApiError::bad_request(format!("BadIngressMessage(unknown message id {id:?})")));
        }
        for round in 0..=AWAIT_ROUNDS {
            if let Ok(Some(result)) = self.status(id, None) {
                return Ok(result);
            }
            if round < AWAIT_ROUNDS {
                self.sim.tick();
            }
        }
        Err(ApiError::bad_request(format!(
            "BadIngressMessage(Failed to answer to ingress {id:?} after {AWAIT_ROUNDS} rounds.)"
        )))
    }

    /// `read/query`.
    pub fn query(&mut self, call: pocket_ic::common::rest::RawCanisterCall) -> Result<CallResult, ApiError> {
        let sender = principal(&call.sender, "sender")?;
        let canister = principal(&call.canister_id, "canister id")?;
        if canister != Principal::management_canister() {
            check_effective(&call.effective_principal, canister)?;
        }
        Ok(self.query_as(canister, sender, &call.method, call.payload))
    }

    /// A query from `sender`, on the latest state, with the certificate of
    /// the canister's certified data. PocketIC certifies every round; the
    /// simulator signs only when a query is about to read the state, which
    /// gives the same certificate for a fraction of the signatures.
    pub fn query_as(
        &mut self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> CallResult {
        if canister == Principal::management_canister() {
            return Err(errors::unsupported(format!("query {method} to the management canister")));
        }
        self.stage_changes();
        self.certified.certify_staged(self.sim.time());
        let data_certificate = self.certified.data_certificate(canister);
        self.sim
            .query_call_certified(canister, sender, method, arg, data_certificate)
            .map_err(errors::from_sim_reject)
    }

    /// `update/set_time`: the simulator's time only moves forward.
    pub fn set_time(&mut self, ns: u64) -> Result<(), ApiError> {
        let now = self.sim.time();
        if ns < now {
            return Err(ApiError::bad_request(format!(
                "the simulator's time cannot go back: it is {now} ns, {ns} ns was asked"
            )));
        }
        self.sim.advance_time(ns - now);
        Ok(())
    }

    /// The subnet index (ascending id bytes) of a subnet id.
    pub fn subnet_index(&self, subnet: Principal) -> Option<usize> {
        self.sim.subnets().iter().position(|&s| s == subnet)
    }
}

/// A call to a canister is routed by its effective principal: it must be
/// the canister itself (or absent).
fn check_effective(effective: &RawEffectivePrincipal, canister: Principal) -> Result<(), ApiError> {
    match effective {
        RawEffectivePrincipal::None => Ok(()),
        RawEffectivePrincipal::CanisterId(id) if id.as_slice() == canister.as_slice() => Ok(()),
        other => Err(ApiError::bad_request(format!(
            "RequestRoutingError(the effective principal {other} does not match the canister {canister})"
        ))),
    }
}
