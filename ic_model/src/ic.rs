//! The IC above an engine: the management canister and the system
//! canisters answering ingress messages, what they know of each canister,
//! and the subnets' certified state that shows it.

use candid::Principal;
use ic_management_canister_types::CanisterSettings;
use ic_sim_client::api::FaultReport;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::effective::{Effective, NoSubnet};
use crate::engine::{CallsInFlight, Engine};
use crate::ingress::Ingress;
use crate::management::http_outcalls::{self, OutcallResponse, Outcalls};
use crate::management::{self, CanisterInfo, ChainKeys, RawRand};
use crate::system_canisters::{self, Host, SystemCanisters};
use crate::{CanisterState, CertifiedState, Keys, Reject, SubnetRanges};

/// The network as a live view shows it ([`Ic::view`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NetworkView {
    /// The network's time, in ns since the epoch.
    pub time_ns: u64,
    /// Rounds executed so far.
    pub rounds: u64,
    /// The request slots each (caller, callee) pair may hold.
    pub queue_capacity: u32,
    /// Each subnet and the canisters it hosts.
    pub subnets: Vec<SubnetView>,
    /// The pairs that hold request slots now.
    pub calls_in_flight: Vec<CallsInFlight>,
    /// What injected faults did: the events' log, the responses dropped,
    /// each canister's traps and rejects.
    pub faults: FaultReport,
}

/// A subnet and the canisters it hosts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubnetView {
    /// Its id.
    pub id: Principal,
    /// The canisters it hosts.
    pub canisters: Vec<Principal>,
}

/// What the model keeps beside the engine's state, saved with it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct IcState {
    /// Every canister the management canister created and has not deleted.
    pub canisters: BTreeMap<Principal, CanisterInfo>,
    /// The ledgers and the cycles minting canister, when the network has them.
    pub system: Option<SystemCanisters>,
    /// The ingress messages not forgotten yet.
    pub(crate) ingress: Ingress,
    /// The seed of the management canister's `raw_rand`, and how many
    /// values it has drawn.
    pub(crate) raw_rand: RawRand,
    /// The chain keys its subnets hold (none unless set).
    pub(crate) chain_keys: ChainKeys,
    /// The HTTPS outcalls waiting for responses.
    pub(crate) outcalls: Outcalls,
    /// Signatures and vetKD keys on their way back (see [`Ic::execute_round`]).
    pub(crate) signatures: HeldAnswers,
}

/// Answers to canisters' calls that take rounds to come: the rounds this
/// model has executed, and each answer with the round it is due in.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct HeldAnswers {
    round: u64,
    held: Vec<HeldAnswer>,
}

impl HeldAnswers {
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct HeldAnswer {
    due: u64,
    call: u64,
    result: Result<Vec<u8>, Reject>,
    accepted: u128,
}

/// The IC over the engine `E`.
pub struct Ic<E> {
    /// The engine that executes the canisters.
    pub engine: E,
    pub(crate) state: IcState,
    /// Canisters created, changed or deleted since their entries were last
    /// staged in the certified state.
    changed: BTreeSet<Principal>,
    certified: Arc<CertifiedState>,
}

impl<E: Engine> Ic<E> {
    /// An IC over `engine` whose state `keys` sign; with `system_canisters`,
    /// the ledgers and the cycles minting canister answer at their ids.
    pub fn new(engine: E, keys: Keys, system_canisters: bool) -> Self {
        let state = IcState {
            canisters: BTreeMap::new(),
            system: system_canisters.then(SystemCanisters::new),
            ingress: Ingress::default(),
            raw_rand: RawRand::new(keys.seed()),
            chain_keys: ChainKeys::default(),
            outcalls: Outcalls::default(),
            signatures: HeldAnswers::default(),
        };
        Self::resume(engine, keys, state)
    }

    /// The IC that `state` and `engine` were, saved together, signed again
    /// with the same keys.
    pub fn resume(mut engine: E, keys: Keys, state: IcState) -> Self {
        let certified = CertifiedState::new(keys, &ranges(&engine, state.system.is_some()), engine.time());
        engine.set_root_key(certified.root_key_der());
        engine.set_chain_keys(state.chain_keys.names());
        // A canister's calls to the management canister: on every subnet.
        let management = Principal::management_canister();
        engine
            .route_to_model_on_every_subnet(management)
            .expect("no canister has the management canister's id");
        if state.system.is_some()
            && let Some(&first) = engine.subnets().first()
        {
            // Canisters call the system canisters too (the cycles ledger's
            // `deposit`): the engine routes those calls here.
            for canister in system_canisters::CANISTERS {
                engine.route_to_model(canister, first).expect("the system canisters' ids are free");
            }
        }
        let changed = state.canisters.keys().copied().collect();
        let mut ic = Self { engine, state, changed, certified: Arc::new(certified) };
        ic.stage_changes();
        ic
    }

    /// What the model keeps beside the engine's state.
    pub fn state(&self) -> &IcState {
        &self.state
    }

    /// The keys that sign the certified state.
    pub fn keys(&self) -> Keys {
        self.certified.keys()
    }

    /// The subnets' certified state, which the IC's HTTP interface and
    /// canisters' data certificates read.
    pub fn certified(&self) -> &Arc<CertifiedState> {
        &self.certified
    }

    /// What a live view of the network shows: nothing a query could not
    /// read, and it changes nothing.
    pub fn view(&self) -> NetworkView {
        let subnets = self.engine.subnets().into_iter().map(|id| {
            let hosted = self.state.canisters.iter().filter(|(_, info)| info.subnet == id);
            SubnetView { id, canisters: hosted.map(|(&canister, _)| canister).collect() }
        });
        NetworkView {
            time_ns: self.engine.time(),
            rounds: self.engine.rounds(),
            queue_capacity: self.engine.queue_capacity(),
            subnets: subnets.collect(),
            calls_in_flight: self.engine.calls_in_flight(),
            faults: self.engine.fault_report(),
        }
    }

    /// From now on the network holds `keys`: PocketIC's II subnet holds
    /// `key_1`, its test-keys subnet `test_key_1` and `dfx_test_key`.
    pub fn hold_chain_keys(&mut self, keys: ChainKeys) {
        self.engine.set_chain_keys(keys.names());
        self.state.chain_keys = keys;
    }

    /// The HTTPS outcalls waiting for responses, oldest first.
    pub fn pending_outcalls(&self) -> Vec<http_outcalls::Outcall> {
        self.state.outcalls.pending().cloned().collect()
    }

    /// The pending outcalls with an id of `from` or more: those made since
    /// the caller last asked, without a copy of the others.
    pub fn pending_outcalls_from(&self, from: u64) -> Vec<http_outcalls::Outcall> {
        self.state.outcalls.pending_from(from).cloned().collect()
    }

    /// Answers pending outcall `id` with its node's `response` and, to make
    /// a replicated outcall's nodes disagree, every other node's (`others`);
    /// the canister gets the answer in the next round. Why not, if it
    /// cannot (no such outcall, a wrong number of responses).
    pub fn respond_to_outcall(
        &mut self,
        id: u64,
        response: OutcallResponse,
        others: Vec<OutcallResponse>,
    ) -> Result<(), String> {
        http_outcalls::respond(self, id, response, others)
    }

    /// The canister's stable memory, all its pages, as PocketIC's
    /// `get_stable_memory` reads it.
    pub fn stable_memory(&self, canister: Principal) -> Result<Vec<u8>, Reject> {
        self.canister(canister)?;
        self.engine.stable_memory(canister)
    }

    /// Replaces the canister's stable memory, as PocketIC's
    /// `set_stable_memory` does (no controller's call: a test's hand).
    pub fn set_stable_memory(&mut self, canister: Principal, data: Vec<u8>) -> Result<(), Reject> {
        self.canister(canister)?;
        self.engine.set_stable_memory(canister, data)
    }

    /// The canister's cycles balance.
    pub fn cycle_balance(&self, canister: Principal) -> Result<u128, Reject> {
        self.canister(canister)?;
        Ok(self.engine.status(canister)?.cycles)
    }

    /// Adds `cycles` to the canister's balance (a provisional top-up, as
    /// PocketIC's and the replica's test networks offer); the new balance.
    pub fn add_cycles(&mut self, canister: Principal, cycles: u128) -> Result<u128, Reject> {
        self.canister(canister)?;
        self.engine.deposit_cycles(canister, cycles)?;
        self.cycle_balance(canister)
    }

    /// The canister, or the reject a call to a missing one gets.
    pub fn canister(&self, id: Principal) -> Result<&CanisterInfo, Reject> {
        self.state.canisters.get(&id).ok_or_else(|| Reject::canister_not_found(id))
    }

    /// The subnet a provisional creation routed by `effective` creates on;
    /// why not, if there is none.
    pub fn subnet_for(&self, effective: Effective) -> Result<Principal, NoSubnet> {
        let subnets = self.engine.subnet_ranges();
        let hosts = |id: Principal| {
            let within = |(first, last): &(Principal, Principal)| {
                first.as_slice() <= id.as_slice() && id.as_slice() <= last.as_slice()
            };
            subnets.iter().find(|subnet| subnet.ranges.iter().any(within)).map(|subnet| subnet.id)
        };
        match effective {
            Effective::None => subnets.first().map(|subnet| subnet.id).ok_or(NoSubnet::InTheNetwork),
            Effective::Subnet(id) if subnets.iter().any(|subnet| subnet.id == id) => Ok(id),
            Effective::Subnet(id) => Err(NoSubnet::WithId(id)),
            Effective::Canister(id) => hosts(id).ok_or(NoSubnet::Hosting(id)),
        }
    }

    /// A management call from `sender`, routed by `effective`.
    pub fn call_management(
        &mut self,
        effective: Effective,
        sender: Principal,
        method: &str,
        arg: &[u8],
    ) -> Result<Vec<u8>, Reject> {
        management::call(self, effective, sender, method, arg)
    }

    /// Whether the model, not the engine, executes an ingress message to
    /// `canister`: the management canister's, and the system canisters'
    /// when the network has them.
    pub(crate) fn answers(&self, canister: Principal) -> bool {
        canister == Principal::management_canister()
            || (self.state.system.is_some() && SystemCanisters::is_system_canister(canister))
    }

    /// Executes now an ingress message to the management canister or a
    /// system canister; `None` if it is for the engine. Submitted ones
    /// execute in the next round ([`Ic::execute_round`]).
    pub fn answer(
        &mut self,
        effective: Effective,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: &[u8],
    ) -> Option<Result<Vec<u8>, Reject>> {
        if canister == Principal::management_canister() {
            return Some(management::call(self, effective, sender, method, arg));
        }
        self.with_system_canisters(|system, ic| system.update(ic, canister, sender, method, arg))?
    }

    /// Executes a round: the engine's, then, at the round's time, the
    /// ingress messages to the management canister and the system
    /// canisters submitted since the last round; and answers the calls the
    /// engine's canisters made to the management canister and the system
    /// canisters, whose answers go back in the next round.
    ///
    /// A signature or a vetKD key is made on the subnet that holds its key,
    /// which on mainnet is another subnet: it comes back after a round trip
    /// between subnets (2 × [`Engine::xnet_latency_rounds`]; on PocketIC's
    /// profile, in the next round as every answer of the model's).
    pub fn execute_round(&mut self) {
        self.engine.execute_round();
        self.execute_ingress_to_model();
        let signatures = &mut self.state.signatures;
        signatures.round += 1;
        let round = signatures.round;
        let (due, held) = std::mem::take(&mut signatures.held).into_iter().partition(|h| h.due <= round);
        signatures.held = held;
        for HeldAnswer { call, result, accepted, .. } in due {
            self.engine.answer_call(call, result, accepted);
        }
        for call in self.engine.calls_to_model() {
            let (result, accepted) = if call.callee == Principal::management_canister() {
                let (caller, cycles) = (call.caller, call.cycles);
                let answer = management::call_from_canister(
                    self,
                    call.subnet,
                    caller,
                    &call.method,
                    &call.arg,
                    cycles,
                    call.id,
                );
                // An outcall is answered when its responses come.
                let Some(answer) = answer else { continue };
                let delay = self.engine.xnet_latency_rounds().saturating_mul(2);
                if delay > 0
                    && answer.0.is_ok()
                    && management::chain_keys::PAID.contains(&call.method.as_str())
                {
                    let (result, accepted) = answer;
                    let due = self.state.signatures.round.saturating_add(delay);
                    self.state.signatures.held.push(HeldAnswer { due, call: call.id, result, accepted });
                    continue;
                }
                answer
            } else {
                let answer = self.with_system_canisters(|system, ic| {
                    system.call_from_canister(
                        ic,
                        call.callee,
                        call.caller,
                        &call.method,
                        &call.arg,
                        call.cycles,
                    )
                });
                answer.flatten().unwrap_or_else(|| (Err(Reject::canister_not_found(call.callee)), 0))
            };
            self.engine.answer_call(call.id, result, accepted);
        }
    }

    /// `f` on the system canisters, with the model as their host; `None` if
    /// there are none. They are out of the model while the model is their
    /// host, and back in even if `f` panics, so that a network that catches
    /// the panic keeps its ledgers.
    fn with_system_canisters<R>(
        &mut self,
        f: impl FnOnce(&mut SystemCanisters, &mut Self) -> R,
    ) -> Option<R> {
        let mut system = self.state.system.take()?;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&mut system, self)));
        self.state.system = Some(system);
        Some(result.unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
    }

    /// A query the management canister or a system canister answers;
    /// `None` if it is for the engine.
    pub fn answer_query(
        &self,
        canister: Principal,
        sender: Principal,
        method: &str,
        arg: &[u8],
    ) -> Option<Result<Vec<u8>, Reject>> {
        if canister == Principal::management_canister() {
            return Some(management::query(self, sender, method, arg));
        }
        self.state.system.as_ref()?.query(self, canister, method, arg)
    }

    /// Stages in the certified state the entries of every canister created,
    /// changed or deleted, or whose certified data changed, since last time.
    pub fn stage_changes(&mut self) {
        let mut changed = std::mem::take(&mut self.changed);
        changed.extend(self.engine.take_certified_data_changes());
        for canister in changed {
            self.certified.write_canister(canister, self.canister_state(canister).as_ref());
        }
    }

    /// Stages and signs the latest state now, at the network's time, as a
    /// round's end would: PocketIC's `set_certified_time`.
    pub fn certify(&mut self) {
        self.stage_changes();
        self.certified.certify_staged(self.engine.time());
    }

    /// The data certificate a query to `canister` reads: the latest state,
    /// staged and signed now. The model signs only when a query is about
    /// to read the state, which gives the certificate a replica certifying
    /// every round would, for a fraction of the signatures.
    pub fn data_certificate(&mut self, canister: Principal) -> Option<Vec<u8>> {
        self.certify();
        self.certified.data_certificate(canister)
    }

    /// What the state tree shows of `canister`; `None` if there is none.
    fn canister_state(&self, canister: Principal) -> Option<CanisterState> {
        let info = self.state.canisters.get(&canister)?;
        Some(CanisterState {
            controllers: info.controllers.clone(),
            module_hash: info.module_hash.clone(),
            metadata: info.metadata.iter().map(|m| (m.name.clone(), m.public, m.content.clone())).collect(),
            certified_data: self.engine.certified_data(canister),
        })
    }
}

/// The subnets' ranges. The cycles ledger's id lies outside every range an
/// engine assigns: with the system canisters, the first subnet hosts it, as
/// one of the IC's does.
fn ranges(engine: &impl Engine, system_canisters: bool) -> Vec<SubnetRanges> {
    let mut subnets = engine.subnet_ranges();
    if system_canisters && let Some(first) = subnets.first_mut() {
        let ledger = system_canisters::CYCLES_LEDGER;
        first.ranges.push((ledger, ledger));
    }
    subnets
}

/// The system canisters' host: the management canister creates what the
/// cycles ledger pays for, and the engine holds the cycles.
impl<E: Engine> Host for Ic<E> {
    fn subnets(&self) -> Vec<Principal> {
        self.engine.subnets()
    }

    fn time(&self) -> u64 {
        self.engine.time()
    }

    fn create_canister(
        &mut self,
        subnet: Principal,
        settings: CanisterSettings,
        cycles: u128,
    ) -> Result<Principal, String> {
        management::create_paid(self, subnet, settings, cycles).map_err(|reject| reject.message)
    }

    fn deposit_cycles(&mut self, canister: Principal, cycles: u128) -> Result<(), String> {
        self.canister(canister).map_err(|reject| reject.message)?;
        self.engine.deposit_cycles(canister, cycles).map_err(|reject| reject.message)
    }
}

/// The management canister's host: the engine beneath it, the canisters'
/// records (each change staged for the certified state), the subnets and
/// the seeded `raw_rand`.
impl<E: Engine> management::Host for Ic<E> {
    type Engine = E;

    fn engine(&self) -> &E {
        &self.engine
    }

    fn engine_mut(&mut self) -> &mut E {
        &mut self.engine
    }

    fn canister(&self, id: Principal) -> Result<&CanisterInfo, Reject> {
        Ic::canister(self, id)
    }

    fn canister_mut(&mut self, id: Principal) -> &mut CanisterInfo {
        self.changed.insert(id);
        self.state.canisters.get_mut(&id).expect("the caller checked the canister exists")
    }

    fn insert_canister(&mut self, id: Principal, info: CanisterInfo) {
        self.changed.insert(id);
        self.state.canisters.insert(id, info);
    }

    fn remove_canister(&mut self, id: Principal) {
        self.changed.insert(id);
        self.state.canisters.remove(&id);
    }

    fn subnet_for(&self, effective: Effective) -> Result<Principal, NoSubnet> {
        Ic::subnet_for(self, effective)
    }

    fn next_raw_rand(&mut self) -> [u8; 32] {
        self.state.raw_rand.next()
    }

    fn chain_keys(&self) -> &ChainKeys {
        &self.state.chain_keys
    }

    fn outcalls_mut(&mut self) -> &mut Outcalls {
        &mut self.state.outcalls
    }
}
