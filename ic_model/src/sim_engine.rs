//! The simulator as the IC model's engine. Its rejects are the model's
//! (`ic_reject::Reject`), made with the replica's error codes where they
//! arise; its refusals ([`SimError`]) are given the replica's codes here.

use candid::Principal;
use ic_error_types::ErrorCode;
use ic_management_canister_types::{CanisterLogRecord, CanisterSettings};
use sim::{Sim, SimError, canister_id};
use std::collections::{BTreeMap, BTreeSet};

use crate::engine::{CallToModel, CallsInFlight, Engine, EngineStatus};
use crate::{CanisterCall, Ic, Keys, Reject, SubnetRanges};
use ic_sim_client::api::{FaultReport, FaultSpec};

/// What the simulator is, as every server that runs it says.
pub const DESCRIPTION: &str = "this project's simulator (a model of IC message routing running the real canister wasm); not the replica";

/// The IC over a new simulator `sim`, its state signed with `keys`, with
/// the system canisters at their mainnet ids and every chain key PocketIC
/// offers (`dfx_test_key`, `test_key_1`, `key_1`): a local network, as
/// icp-cli and dfx expect one. The cycles minting canister's id lies in the
/// first subnet's range, so `sim` must not have assigned it.
pub fn network(mut sim: Sim, keys: Keys) -> Result<Ic<Sim>, String> {
    // The ICP ledger's and the cycles minting canister's ids lie in the
    // first subnet's range.
    if let Some(taken) =
        crate::system_canisters::CANISTERS.into_iter().find(|&id| sim.cycle_balance(id).is_ok())
    {
        return Err(format!(
            "the simulator has a canister with a system canister's id {taken}: create the network's simulator with no canisters, or at most 2 on its first subnet"
        ));
    }
    sim.reserve_canister_ids(0, RESERVED_IDS).map_err(|e| e.to_string())?;
    let mut network = Ic::new(sim, keys, true);
    network.hold_chain_keys(crate::management::ChainKeys::all());
    Ok(network)
}

/// The first subnet assigns no id below this one to a user's canister:
/// those of the NNS's first canisters, the ICP ledger's and the cycles
/// minting canister's among them.
const RESERVED_IDS: u64 = 5;

/// A refusal of the simulator's, as the replica reports the same refusal.
pub fn reject_of_error(e: SimError) -> Reject {
    use SimError as E;
    let error_code = match &e {
        E::CanisterNotFound(_) => ErrorCode::CanisterNotFound,
        E::NoSuchSubnet { .. } => ErrorCode::SubnetNotFound,
        E::InvalidWasm(_) => ErrorCode::CanisterInvalidWasm,
        E::InstallTrapped { code, .. } => *code,
        E::NoCodeToUpgrade(_) => ErrorCode::CanisterWasmModuleNotFound,
        E::OpenCallContexts(_) => ErrorCode::CanisterNotStopped,
        E::DidNotStop { .. } => ErrorCode::StopCanisterRequestTimeout,
        E::TracingOff => ErrorCode::SubnetOversubscribed,
        E::SubnetFull { .. } => ErrorCode::MaxNumberOfCanistersReached,
        E::IdTaken(_) => ErrorCode::CanisterIdAlreadyExists,
        E::NotInRange { .. } => ErrorCode::CanisterNotHostedBySubnet,
        E::StableMemoryTooLarge { .. } | E::OverBudget(_) => ErrorCode::CanisterOutOfMemory,
        E::NoSuchSnapshot { .. } => ErrorCode::CanisterSnapshotNotFound,
    };
    Reject::new(error_code, e.to_string())
}

/// What of `settings` the simulator keeps and enforces (checked already by
/// the management canister).
fn sim_settings(settings: &CanisterSettings, controllers: Option<Vec<Principal>>) -> sim::Settings {
    let env_vars = settings
        .environment_variables
        .as_ref()
        .map(|vars| vars.iter().map(|var| (var.name.clone(), var.value.clone())).collect::<BTreeMap<_, _>>());
    let wasm_memory_limit = settings.wasm_memory_limit.as_ref().and_then(|n| u64::try_from(&n.0).ok());
    sim::Settings { controllers, env_vars, wasm_memory_limit }
}

impl Engine for Sim {
    type Saved = sim::SavedSim;

    fn description(&self) -> String {
        DESCRIPTION.into()
    }

    fn saved_format() -> String {
        format!("sim {}", sim::SavedSim::FORMAT)
    }

    fn save(&self) -> Result<sim::SavedSim, String> {
        Sim::save(self).map_err(|e| e.to_string())
    }

    fn restore(saved: sim::SavedSim) -> Result<Self, String> {
        Sim::builder().restore(saved).map_err(|e| e.to_string())
    }

    fn submit_call(&mut self, call: CanisterCall) -> Result<u64, Reject> {
        Sim::submit_call(self, call.canister, call.sender, &call.method, call.arg).map(|id| id.0)
    }

    fn ingress_status(&self, id: u64) -> Option<Result<Vec<u8>, Reject>> {
        Sim::ingress_status(self, sim::MessageId(id))
    }

    fn forget_ingress(&mut self, id: u64) -> bool {
        Sim::forget_ingress(self, sim::MessageId(id))
    }

    fn query(&mut self, call: CanisterCall, data_certificate: Option<Vec<u8>>) -> Result<Vec<u8>, Reject> {
        self.query_call_certified(call.canister, call.sender, &call.method, call.arg, data_certificate)
    }

    fn busy(&self) -> bool {
        Sim::busy(self)
    }

    fn executions(&self) -> u64 {
        Sim::executions(self)
    }

    fn advance_time(&mut self, ns: u64) {
        Sim::advance_time(self, ns);
    }

    fn rounds(&self) -> u64 {
        self.ticks()
    }

    fn queue_capacity(&self) -> u32 {
        self.config().queue_capacity
    }

    fn calls_in_flight(&self) -> Vec<CallsInFlight> {
        let pairs = self.pairs_in_flight().into_iter();
        let pairs = pairs.map(|(caller, callee, calls, peak_last_round)| CallsInFlight {
            caller,
            callee,
            calls,
            peak_last_round,
        });
        pairs.collect()
    }

    fn subnets(&self) -> Vec<Principal> {
        Sim::subnets(self)
    }

    fn subnet_ranges(&self) -> Vec<SubnetRanges> {
        let subnets = Sim::subnet_ranges(self).into_iter();
        subnets
            .map(|(id, ids)| {
                let mut ranges = ids.all();
                ranges.sort_by_key(|range| *range.start());
                let ranges =
                    ranges.iter().map(|range| (canister_id(*range.start()), canister_id(*range.end())));
                SubnetRanges { id, ranges: ranges.collect() }
            })
            .collect()
    }

    fn time(&self) -> u64 {
        Sim::time(self)
    }

    fn create_canister(
        &mut self,
        subnet: Principal,
        controllers: Vec<Principal>,
        settings: &CanisterSettings,
        cycles: Option<u128>,
        specified_id: Option<Principal>,
    ) -> Result<Principal, Reject> {
        let index = Sim::subnets(self)
            .iter()
            .position(|&s| s == subnet)
            .ok_or_else(|| Reject::new(ErrorCode::SubnetNotFound, format!("Subnet {subnet} not found")))?;
        let settings = sim_settings(settings, Some(controllers));
        let id = match specified_id {
            None => self.create_canister_with(index, settings),
            Some(id) => self.create_canister_with_id(index, id, settings),
        };
        let id = id.map_err(reject_of_error)?;
        // The simulator creates a canister with its initial cycles.
        let initial = self.config().initial_cycles;
        let cycles = cycles.unwrap_or(initial);
        let set = match cycles.checked_sub(initial) {
            Some(more) => self.add_cycles(id, more),
            None => self.remove_cycles(id, initial - cycles),
        };
        set.map_err(reject_of_error)?;
        Ok(id)
    }

    fn install_code(
        &mut self,
        canister: Principal,
        sender: Principal,
        wasm: &[u8],
        arg: Vec<u8>,
        upgrade: bool,
    ) -> Result<(), Reject> {
        let done = if upgrade {
            self.upgrade_canister(canister, wasm, arg, sender)
        } else {
            // The simulator's install replaces code and stable memory.
            self.install_canister(canister, wasm, arg, sender)
        };
        done.map_err(reject_of_error)
    }

    fn take_snapshot(&mut self, canister: Principal, snapshot_id: Vec<u8>) -> Result<u64, Reject> {
        self.take_canister_snapshot(canister, snapshot_id).map_err(reject_of_error)
    }

    fn load_snapshot(&mut self, canister: Principal, snapshot_id: &[u8]) -> Result<(), Reject> {
        self.load_canister_snapshot(canister, snapshot_id).map_err(reject_of_error)
    }

    fn delete_snapshot(&mut self, canister: Principal, snapshot_id: &[u8]) -> Result<(), Reject> {
        self.delete_canister_snapshot(canister, snapshot_id).map_err(reject_of_error)
    }

    fn stable_memory(&self, canister: Principal) -> Result<Vec<u8>, Reject> {
        Sim::stable_memory(self, canister).map_err(reject_of_error)
    }

    fn set_stable_memory(&mut self, canister: Principal, data: Vec<u8>) -> Result<(), Reject> {
        Sim::set_stable_memory(self, canister, data).map_err(reject_of_error)
    }

    fn update_settings(&mut self, canister: Principal, settings: &CanisterSettings) -> Result<(), Reject> {
        let settings = sim_settings(settings, settings.controllers.clone());
        Sim::update_settings(self, canister, settings).map_err(reject_of_error)
    }

    fn start_canister(&mut self, canister: Principal) -> Result<(), Reject> {
        Sim::start_canister(self, canister).map_err(reject_of_error)
    }

    fn stop_canister(&mut self, canister: Principal) -> Result<(), Reject> {
        Sim::stop_canister(self, canister).map_err(reject_of_error)
    }

    fn delete_canister(&mut self, canister: Principal) -> Result<(), Reject> {
        Sim::delete_canister(self, canister).map_err(reject_of_error)
    }

    fn deposit_cycles(&mut self, canister: Principal, cycles: u128) -> Result<(), Reject> {
        self.add_cycles(canister, cycles).map(drop).map_err(reject_of_error)
    }

    fn status(&self, canister: Principal) -> Result<EngineStatus, Reject> {
        let status = || -> Result<EngineStatus, SimError> {
            Ok(EngineStatus {
                cycles: self.cycle_balance(canister)?,
                wasm_memory_bytes: self.wasm_memory_size(canister)?,
                stable_memory_bytes: self.stable_memory_size(canister)?,
                version: self.canister_version(canister)?,
                environment_variables: self.env_vars(canister)?.clone().into_iter().collect(),
            })
        };
        status().map_err(reject_of_error)
    }

    fn canister_log(&self, canister: Principal) -> Result<Vec<CanisterLogRecord>, Reject> {
        let records = Sim::canister_log(self, canister).map_err(reject_of_error)?;
        let record = |r: sim::LogRecord| CanisterLogRecord {
            idx: r.idx,
            timestamp_nanos: r.timestamp_nanos,
            content: r.content.into_bytes(),
        };
        Ok(records.into_iter().map(record).collect())
    }

    fn certified_data(&self, canister: Principal) -> Vec<u8> {
        Sim::certified_data(self, canister).map(<[u8]>::to_vec).unwrap_or_default()
    }

    fn take_certified_data_changes(&mut self) -> Vec<Principal> {
        Sim::take_certified_data_changes(self)
    }

    fn set_root_key(&mut self, der: Vec<u8>) {
        Sim::set_root_key(self, der);
    }

    fn set_chain_keys(&mut self, names: BTreeSet<String>) {
        Sim::set_chain_keys(self, names);
    }

    fn xnet_latency_rounds(&self) -> u64 {
        self.config().xnet_latency_rounds
    }

    fn inject_faults(&mut self, spec: FaultSpec) -> Result<(), String> {
        crate::sim_faults::inject_faults(self, spec)
    }

    fn fault_report(&self) -> FaultReport {
        crate::sim_faults::fault_report(self)
    }

    fn http_request_fee(&self, request_bytes: u64, max_response_bytes: u64) -> u128 {
        sim::http_request_fee(u128::from(request_bytes), u128::from(max_response_bytes))
    }

    fn execute_round(&mut self) {
        self.tick();
    }

    fn route_to_model(&mut self, canister: Principal, subnet: Principal) -> Result<(), Reject> {
        let index = Sim::subnets(self)
            .iter()
            .position(|&s| s == subnet)
            .ok_or_else(|| Reject::new(ErrorCode::SubnetNotFound, format!("Subnet {subnet} not found")))?;
        self.host_outside(canister, index).map_err(reject_of_error)
    }

    fn route_to_model_on_every_subnet(&mut self, canister: Principal) -> Result<(), Reject> {
        self.host_on_every_subnet(canister).map_err(reject_of_error)
    }

    fn calls_to_model(&mut self) -> Vec<CallToModel> {
        let subnets = Sim::subnets(self);
        let calls = self.outside_calls().into_iter();
        calls
            .map(|call| CallToModel {
                id: call.id,
                caller: call.caller,
                callee: call.callee,
                method: call.method,
                arg: call.arg,
                cycles: call.cycles,
                subnet: subnets[call.subnet],
            })
            .collect()
    }

    fn answer_call(&mut self, id: u64, result: Result<Vec<u8>, Reject>, accepted_cycles: u128) {
        self.answer_outside(id, result, accepted_cycles);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Interface;

    #[test]
    fn each_subnets_range_holds_the_ids_it_assigns() {
        let mut sim = Sim::builder().with_subnet().with_subnet().build();
        for (index, subnet) in Engine::subnet_ranges(&sim).into_iter().enumerate() {
            let id = sim.create_canister(index, vec![]).unwrap();
            let (first, last) = subnet.ranges[0];
            assert!(first.as_slice() <= id.as_slice() && id.as_slice() <= last.as_slice());
            assert_eq!(subnet.id, Sim::subnets(&sim)[index]);
        }
    }

    #[test]
    fn the_model_charges_the_creation_fee_the_simulator_charges_canisters() {
        assert_eq!(crate::management::CANISTER_CREATION_FEE, sim::CANISTER_CREATION_FEE);
    }

    #[test]
    fn a_network_refuses_a_simulator_whose_canisters_hold_a_system_canisters_id() {
        let mut sim = Sim::builder().with_subnet().build();
        for _ in 0..3 {
            sim.create_canister(0, vec![]).unwrap();
        }
        let refused = network(sim, Keys::from_seed(0)).err().expect("refused, not a panic");
        assert!(refused.contains("ryjl3-tyaaa-aaaaa-aaaba-cai"), "{refused}");
        let mut sim = Sim::builder().with_subnet().build();
        sim.create_canister(0, vec![]).unwrap();
        assert!(network(sim, Keys::from_seed(0)).is_ok());
    }

    /// `fetch_canister_logs` (the Candid UI's and `icp canister logs`'
    /// query): what the canister printed, indexed and timed, for its
    /// controllers, for anyone once its log is public, filtered by index.
    #[test]
    fn fetch_canister_logs_answers_what_the_canister_printed_to_whom_it_may() {
        use candid::{Decode, Encode};
        use ic_management_canister_types::{
            CanisterIdRecord, CanisterLogFilter, FetchCanisterLogsArgs, FetchCanisterLogsResult,
            InstallCodeArgs, LogVisibility, ProvisionalCreateCanisterWithCyclesArgs, UpdateSettingsArgs,
        };
        let (owner, stranger) = (Principal::from_slice(&[1; 29]), Principal::from_slice(&[2; 29]));
        let mut ic = network(Sim::builder().with_subnet().build(), Keys::from_seed(0)).unwrap();
        let call = |ic: &mut Ic<Sim>, canister: Principal, method: &str, arg: Vec<u8>| {
            let number =
                ic.submit(crate::Effective::None, CanisterCall::new(canister, owner, method, arg)).unwrap();
            for _ in 0..10 {
                if let Some(outcome) = ic.outcome(number) {
                    return outcome.unwrap();
                }
                ic.execute_round();
            }
            panic!("{method} did not finish");
        };
        let management = Principal::management_canister();
        let create = ProvisionalCreateCanisterWithCyclesArgs::default();
        let created =
            call(&mut ic, management, "provisional_create_canister_with_cycles", Encode!(&create).unwrap());
        let canister = Decode!(&created, CanisterIdRecord).unwrap().canister_id;
        let wasm = wat::parse_str(
            r#"(module
                (import "ic0" "debug_print" (func $print (param i32 i32)))
                (import "ic0" "msg_reply" (func $reply))
                (memory 1)
                (data (i32.const 0) "hello")
                (func (export "canister_update print")
                  (call $print (i32.const 0) (i32.const 5))
                  (call $reply)))"#,
        )
        .unwrap();
        let install = InstallCodeArgs {
            mode: ic_management_canister_types::CanisterInstallMode::Install,
            canister_id: canister,
            wasm_module: wasm,
            arg: vec![],
            sender_canister_version: None,
        };
        call(&mut ic, management, "install_code", Encode!(&install).unwrap());
        for _ in 0..3 {
            call(&mut ic, canister, "print", vec![]);
        }
        let fetch = |ic: &mut Ic<Sim>, sender: Principal, filter: Option<CanisterLogFilter>| {
            let arg = Encode!(&FetchCanisterLogsArgs { canister_id: canister, filter }).unwrap();
            let records = ic.query(CanisterCall::new(management, sender, "fetch_canister_logs", arg))?;
            Ok::<_, Reject>(Decode!(&records, FetchCanisterLogsResult).unwrap().canister_log_records)
        };
        let records = fetch(&mut ic, owner, None).unwrap();
        assert_eq!(
            records.iter().map(|r| (r.idx, r.content.as_slice())).collect::<Vec<_>>(),
            [(0, &b"hello"[..]), (1, b"hello"), (2, b"hello")]
        );
        assert!(records.windows(2).all(|pair| pair[0].timestamp_nanos < pair[1].timestamp_nanos));
        let later = fetch(&mut ic, owner, Some(CanisterLogFilter::ByIdx { start: 1, end: 5 })).unwrap();
        assert_eq!(later.iter().map(|r| r.idx).collect::<Vec<_>>(), [1, 2]);

        let refused = fetch(&mut ic, stranger, None).unwrap_err();
        assert_eq!(refused.error_code, ErrorCode::CanisterRejectedMessage);
        assert!(
            refused.message.contains("not allowed to query ic00 method fetch_canister_logs"),
            "{refused:?}"
        );
        let public = UpdateSettingsArgs {
            canister_id: canister,
            settings: CanisterSettings { log_visibility: Some(LogVisibility::Public), ..Default::default() },
            sender_canister_version: None,
        };
        call(&mut ic, management, "update_settings", Encode!(&public).unwrap());
        assert_eq!(fetch(&mut ic, stranger, None).unwrap(), records);
    }

    /// Only controllers install code and change settings: the management
    /// canister checks it (the simulator beneath it checks no permissions),
    /// and a stranger's attempt leaves the canister as it was.
    #[test]
    fn a_strangers_install_code_and_update_settings_are_refused_and_change_nothing() {
        use candid::{Decode, Encode};
        use ic_management_canister_types::{
            CanisterIdRecord, CanisterInstallMode, EnvironmentVariable, InstallCodeArgs,
            ProvisionalCreateCanisterWithCyclesArgs, UpdateSettingsArgs,
        };
        let (owner, stranger) = (Principal::from_slice(&[1; 29]), Principal::from_slice(&[2; 29]));
        let mut ic = network(Sim::builder().with_subnet().build(), Keys::from_seed(0)).unwrap();
        let call = |ic: &mut Ic<Sim>, sender: Principal, method: &str, arg: Vec<u8>| {
            let management = Principal::management_canister();
            let number = ic
                .submit(crate::Effective::None, CanisterCall::new(management, sender, method, arg))
                .unwrap();
            for _ in 0..10 {
                if let Some(outcome) = ic.outcome(number) {
                    return outcome;
                }
                ic.execute_round();
            }
            panic!("{method} did not finish");
        };
        let create = Encode!(&ProvisionalCreateCanisterWithCyclesArgs::default()).unwrap();
        let created = call(&mut ic, owner, "provisional_create_canister_with_cycles", create).unwrap();
        let canister = Decode!(&created, CanisterIdRecord).unwrap().canister_id;
        let install = |mode| {
            let wasm = wat::parse_str("(module (memory 1))").unwrap();
            let args = InstallCodeArgs {
                mode,
                canister_id: canister,
                wasm_module: wasm,
                arg: vec![],
                sender_canister_version: None,
            };
            Encode!(&args).unwrap()
        };
        call(&mut ic, owner, "install_code", install(CanisterInstallMode::Install)).unwrap();
        let before = Engine::status(&ic.engine, canister).unwrap();
        let settings = UpdateSettingsArgs {
            canister_id: canister,
            settings: CanisterSettings {
                controllers: Some(vec![stranger]),
                environment_variables: Some(vec![EnvironmentVariable {
                    name: "by".into(),
                    value: "a stranger".into(),
                }]),
                ..Default::default()
            },
            sender_canister_version: None,
        };
        for (method, arg) in [
            ("install_code", install(CanisterInstallMode::Reinstall)),
            ("install_code", install(CanisterInstallMode::Upgrade(None))),
            ("update_settings", Encode!(&settings).unwrap()),
        ] {
            let refused = call(&mut ic, stranger, method, arg).unwrap_err();
            assert_eq!(refused.error_code, ErrorCode::CanisterInvalidController, "{method}: {refused:?}");
        }
        assert_eq!(Engine::status(&ic.engine, canister).unwrap(), before, "unchanged");
        assert_eq!(ic.engine.controllers(canister).unwrap(), [owner]);
    }

    /// The model passes the simulator's rejects on as they were made: a
    /// trap whose message reads like a missing method is still a trap.
    #[test]
    fn a_missing_method_is_told_from_a_trap_by_its_code_not_its_text() {
        let mut sim = Sim::builder().with_subnet().build();
        let owner = Principal::anonymous();
        let canister = sim.create_canister(0, vec![owner]).unwrap();
        let wasm = wat::parse_str(
            r#"(module
                (import "ic0" "trap" (func $trap (param i32 i32)))
                (memory 1)
                (data (i32.const 0) "Canister x has no update method 'y'")
                (func (export "canister_update mimic") (call $trap (i32.const 0) (i32.const 35))))"#,
        )
        .unwrap();
        sim.install_canister(canister, &wasm, vec![], owner).unwrap();
        let mut outcome = |method: &str| {
            let id =
                Engine::submit_call(&mut sim, CanisterCall::new(canister, owner, method, vec![])).unwrap();
            Engine::execute_round(&mut sim);
            Engine::ingress_status(&sim, id).expect("answered").unwrap_err()
        };
        assert_eq!(outcome("y").error_code, ErrorCode::CanisterMethodNotFound);
        let mimic = outcome("mimic");
        assert!(mimic.message.contains("has no update method 'y'"), "{mimic:?}");
        assert_eq!(mimic.error_code, ErrorCode::CanisterCalledTrap);
    }
}
