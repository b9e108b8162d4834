//! The management canister (`aaaaa-aa`) methods PocketIC's client calls as
//! ingress, done on the simulator when they are submitted.

use candid::{CandidType, Decode, Nat, Principal};
use ic_management_canister_types::{
    CanisterIdRecord, CanisterInstallMode, CanisterSettings, CanisterStatusResult, CanisterStatusType,
    ChunkHash, EnvironmentVariable, InstallChunkedCodeArgs, InstallCodeArgs, MemoryMetrics,
    ProvisionalCreateCanisterWithCyclesArgs, QueryStats, UpdateSettingsArgs, UploadChunkArgs,
};
use pocket_ic::common::rest::RawEffectivePrincipal;
use pocket_ic::{ErrorCode, RejectCode, RejectResponse};
use sha2::{Digest, Sha256};
use std::io::Read;

use crate::errors::{self, ApiError};
use crate::instance::{CallResult, CanisterInfo, Instance, Metadata};
use crate::settings;
use std::collections::BTreeMap;

/// Routes a management call. `Err` is an HTTP error (a bad effective
/// principal), `Ok(Err)` the reject the call gets.
pub fn call(
    instance: &mut Instance,
    effective: &RawEffectivePrincipal,
    sender: Principal,
    method: &str,
    arg: &[u8],
) -> Result<CallResult, ApiError> {
    if method == "provisional_create_canister_with_cycles" {
        return match Decode!(arg, ProvisionalCreateCanisterWithCyclesArgs) {
            Ok(args) => create(instance, effective, sender, args),
            Err(e) => Ok(Err(bad_payload(method, e))),
        };
    }
    let result = match method {
        "install_code" => decode(arg, method).and_then(|args: InstallCodeArgs| {
            let canister = target(instance, effective, args.canister_id, sender, method)?;
            install(instance, canister, sender, args)
        }),
        "install_chunked_code" => decode(arg, method).and_then(|args: InstallChunkedCodeArgs| {
            let canister = target(instance, effective, args.target_canister, sender, method)?;
            install_chunked(instance, canister, sender, args)
        }),
        "upload_chunk" => decode(arg, method).and_then(|args: UploadChunkArgs| {
            let canister = target(instance, effective, args.canister_id, sender, method)?;
            upload_chunk(instance, canister, args.chunk)
        }),
        "stored_chunks" | "clear_chunk_store" => decode(arg, method).and_then(|args: CanisterIdRecord| {
            let canister = target(instance, effective, args.canister_id, sender, method)?;
            let chunks = &mut instance.canisters.get_mut(&canister).expect("checked by target").chunks;
            if method == "clear_chunk_store" {
                chunks.clear();
                return reply(());
            }
            reply(chunks.keys().map(|hash| ChunkHash { hash: hash.clone() }).collect::<Vec<_>>())
        }),
        "update_settings" => decode(arg, method).and_then(|args: UpdateSettingsArgs| {
            let canister = target(instance, effective, args.canister_id, sender, method)?;
            update_settings(instance, canister, sender, args.settings)
        }),
        "start_canister" | "stop_canister" | "delete_canister" | "canister_status" | "deposit_cycles" => {
            decode(arg, method).and_then(|args: CanisterIdRecord| {
                // Anyone may deposit cycles; the rest is for controllers.
                let canister = if method == "deposit_cycles" {
                    instance.canister(args.canister_id).map(|_| args.canister_id)
                } else {
                    target(instance, effective, args.canister_id, sender, method)
                }?;
                lifecycle(instance, canister, sender, method)
            })
        }
        other => Err(errors::unsupported(format!("management method {other}"))),
    };
    Ok(result)
}

fn bad_payload(method: &str, e: impl std::fmt::Display) -> RejectResponse {
    errors::reject(
        RejectCode::CanisterReject,
        ErrorCode::InvalidManagementPayload,
        format!("Error decoding candid for method {method}: {e}"),
    )
}

fn decode<T: CandidType + for<'a> serde::Deserialize<'a>>(
    arg: &[u8],
    method: &str,
) -> Result<T, RejectResponse> {
    Decode!(arg, T).map_err(|e| bad_payload(method, e))
}

fn reply<T: CandidType>(value: T) -> CallResult {
    Ok(candid::encode_one(value).expect("management replies encode"))
}

/// The canister a controller-only method acts on: it exists and `sender` controls it.
fn target(
    instance: &Instance,
    effective: &RawEffectivePrincipal,
    canister: Principal,
    sender: Principal,
    method: &str,
) -> Result<Principal, RejectResponse> {
    if let RawEffectivePrincipal::CanisterId(id) = effective
        && id.as_slice() != canister.as_slice()
    {
        return Err(errors::reject(
            RejectCode::CanisterReject,
            ErrorCode::CanisterNotHostedBySubnet,
            format!(
                "the effective canister id {effective} is not the canister {canister} that {method} names"
            ),
        ));
    }
    if !instance.canister(canister)?.controllers.contains(&sender) {
        return Err(errors::reject(
            RejectCode::CanisterError,
            ErrorCode::CanisterInvalidController,
            format!(
                "Only controllers of canister {canister} can call ic00 method {method}; {sender} is not one"
            ),
        ));
    }
    Ok(canister)
}

/// `provisional_create_canister_with_cycles`, on the subnet the effective principal names.
pub fn create(
    instance: &mut Instance,
    effective: &RawEffectivePrincipal,
    sender: Principal,
    args: ProvisionalCreateCanisterWithCyclesArgs,
) -> Result<CallResult, ApiError> {
    let subnet = match effective {
        RawEffectivePrincipal::SubnetId(id) => {
            let id = Principal::try_from_slice(id)
                .map_err(|e| ApiError::bad_request(format!("subnet id: {e}")))?;
            instance.subnet_index(id).ok_or_else(|| ApiError::bad_request(format!("SubnetNotFound({id})")))?
        }
        RawEffectivePrincipal::CanisterId(id) => {
            let id = Principal::try_from_slice(id)
                .map_err(|e| ApiError::bad_request(format!("canister id: {e}")))?;
            let subnet = instance
                .topology()
                .get_subnet(id)
                .ok_or_else(|| ApiError::bad_request(format!("CanisterNotFound({id})")))?;
            instance.subnet_index(subnet).expect("the topology lists the simulator's subnets")
        }
        RawEffectivePrincipal::None => 0,
    };
    if args.specified_id.is_some() {
        return Ok(Err(errors::unsupported("provisional_create_canister_with_cycles with a specified_id")));
    }
    let settings = args.settings.unwrap_or_default();
    let mut kept = settings::defaults();
    if let Err(why) = settings::apply(&mut kept, &settings) {
        return Ok(Err(invalid_settings(why)));
    }
    let initial = instance.sim.config().initial_cycles;
    let Ok(cycles) = args.amount.map_or(Ok(initial), |n| u128::try_from(n.0)) else {
        return Ok(Err(errors::unsupported("creating a canister with more than 2^128 cycles")));
    };
    let controllers = settings.controllers.clone().unwrap_or_else(|| vec![sender]);
    let id = instance.sim.create_canister_with(subnet, sim_settings(&settings, Some(controllers.clone())));
    let id = match id {
        Ok(id) => id,
        Err(e) => return Ok(Err(errors::from_sim_error(e))),
    };
    // The simulator creates a canister with its initial cycles.
    let set = match cycles.checked_sub(initial) {
        Some(more) => instance.sim.add_cycles(id, more),
        None => instance.sim.remove_cycles(id, initial - cycles),
    };
    if let Err(e) = set {
        return Ok(Err(errors::from_sim_error(e)));
    }
    let subnet = instance.sim.subnets()[subnet];
    let mut info = CanisterInfo::new(subnet, controllers);
    info.settings = kept;
    instance.canisters.insert(id, info);
    instance.changed.insert(id);
    Ok(reply(CanisterIdRecord { canister_id: id }))
}

/// What of `settings` the simulator keeps and enforces (checked already).
fn sim_settings(settings: &CanisterSettings, controllers: Option<Vec<Principal>>) -> sim::Settings {
    let env_vars = settings
        .environment_variables
        .as_ref()
        .map(|vars| vars.iter().map(|var| (var.name.clone(), var.value.clone())).collect::<BTreeMap<_, _>>());
    let wasm_memory_limit =
        settings.wasm_memory_limit.as_ref().map(|n| u64::try_from(&n.0).expect("checked"));
    sim::Settings { controllers, env_vars, wasm_memory_limit }
}

/// The reject for settings the replica refuses.
fn invalid_settings(why: String) -> RejectResponse {
    errors::reject(
        RejectCode::CanisterError,
        ErrorCode::InvalidManagementPayload,
        format!("Invalid settings: {why}"),
    )
}

/// `install_code` in any mode; gzipped modules are unpacked as the IC does.
fn install(
    instance: &mut Instance,
    canister: Principal,
    sender: Principal,
    args: InstallCodeArgs,
) -> CallResult {
    let installed = instance.canister(canister)?.module_hash.is_some();
    if args.mode == CanisterInstallMode::Install && installed {
        return Err(errors::reject(
            RejectCode::CanisterError,
            ErrorCode::CanisterNonEmpty,
            format!(
                "Canister {canister} cannot be installed because the canister is not empty. Try installing with mode='reinstall' instead."
            ),
        ));
    }
    let hash = Sha256::digest(&args.wasm_module).to_vec();
    let wasm = unpack(args.wasm_module).map_err(|e| {
        errors::reject(RejectCode::CanisterError, ErrorCode::CanisterInvalidWasm, format!("gzip: {e}"))
    })?;
    let done = match args.mode {
        CanisterInstallMode::Install | CanisterInstallMode::Reinstall => {
            // The simulator's install replaces code and stable memory: a reinstall.
            instance.sim.install_canister(canister, &wasm, args.arg, sender)
        }
        CanisterInstallMode::Upgrade(_) => instance.sim.upgrade_canister(canister, &wasm, args.arg, sender),
    };
    done.map_err(errors::from_sim_error)?;
    let info = instance.canisters.get_mut(&canister).expect("checked");
    info.module_hash = Some(hash);
    info.module_size = wasm.len() as u64;
    info.metadata = metadata(&wasm);
    instance.changed.insert(canister);
    reply(())
}

/// The module's metadata sections, as the replica reads them at install.
fn metadata(wasm: &[u8]) -> Vec<Metadata> {
    let sections = wasmparser::Parser::new(0).parse_all(wasm).filter_map(|payload| match payload {
        Ok(wasmparser::Payload::CustomSection(section)) => Some(section),
        _ => None,
    });
    let metadata = |section: wasmparser::CustomSectionReader<'_>| {
        let (public, name) = match section.name().split_once(' ')? {
            ("icp:public", name) => (true, name),
            ("icp:private", name) => (false, name),
            _ => return None,
        };
        Some(Metadata { name: name.to_string(), public, content: section.data().to_vec() })
    };
    sections.filter_map(metadata).collect()
}

/// The replica's chunk store limits: chunks of at most 1 MiB, and at most
/// `WASM_CHUNK_STORE_MAX_SIZE` (100 MiB) in all.
const MAX_CHUNK_BYTES: usize = 1024 * 1024;
const MAX_CHUNKS: usize = 100;

/// `upload_chunk`: the chunk, kept under its sha256.
fn upload_chunk(instance: &mut Instance, canister: Principal, chunk: Vec<u8>) -> CallResult {
    if chunk.len() > MAX_CHUNK_BYTES {
        return Err(errors::reject(
            RejectCode::CanisterReject,
            ErrorCode::CanisterContractViolation,
            format!("Wasm chunk size {} exceeds the maximum chunk size of {MAX_CHUNK_BYTES}", chunk.len()),
        ));
    }
    let chunks = &mut instance.canisters.get_mut(&canister).expect("checked by target").chunks;
    let hash = Sha256::digest(&chunk).to_vec();
    if chunks.len() >= MAX_CHUNKS && !chunks.contains_key(&hash) {
        return Err(errors::reject(
            RejectCode::CanisterReject,
            ErrorCode::CanisterOutOfMemory,
            format!(
                "Wasm chunk store of canister {canister} is full: it holds {MAX_CHUNKS} chunks; clear it with clear_chunk_store"
            ),
        ));
    }
    chunks.insert(hash.clone(), chunk);
    reply(ChunkHash { hash })
}

/// `install_chunked_code`: the chunks, in the order listed, make the module.
fn install_chunked(
    instance: &mut Instance,
    canister: Principal,
    sender: Principal,
    args: InstallChunkedCodeArgs,
) -> CallResult {
    let store = args.store_canister.unwrap_or(canister);
    if store != canister {
        return Err(errors::unsupported("install_chunked_code from another canister's chunk store"));
    }
    let chunks = &instance.canister(canister)?.chunks;
    let mut wasm_module = vec![];
    for ChunkHash { hash } in &args.chunk_hashes_list {
        // A list may name one chunk many times: the module it makes is
        // capped as the store is (and as the replica caps a module).
        if wasm_module.len() > MAX_CHUNKS * MAX_CHUNK_BYTES {
            return Err(errors::reject(
                RejectCode::CanisterReject,
                ErrorCode::CanisterContractViolation,
                format!("the chunks listed make a module over {} bytes", MAX_CHUNKS * MAX_CHUNK_BYTES),
            ));
        }
        let chunk = chunks.get(hash).ok_or_else(|| {
            errors::reject(
                RejectCode::CanisterReject,
                ErrorCode::CanisterContractViolation,
                format!(
                    "Error from Wasm chunk store: A chunk with hash {} was not found in the store",
                    hex::encode(hash)
                ),
            )
        })?;
        wasm_module.extend_from_slice(chunk);
    }
    let hash = Sha256::digest(&wasm_module).to_vec();
    if hash != args.wasm_module_hash {
        return Err(errors::reject(
            RejectCode::CanisterReject,
            ErrorCode::CanisterContractViolation,
            format!(
                "Error from Wasm chunk store: Wasm module hash {} does not match given hash {}",
                hex::encode(hash),
                hex::encode(&args.wasm_module_hash)
            ),
        ));
    }
    let args = InstallCodeArgs {
        mode: args.mode,
        canister_id: canister,
        wasm_module,
        arg: args.arg,
        sender_canister_version: args.sender_canister_version,
    };
    install(instance, canister, sender, args)
}

/// The largest module the replica takes, unpacked (100 MiB).
const MAX_WASM_BYTES: u64 = 100 << 20;

fn unpack(module: Vec<u8>) -> std::io::Result<Vec<u8>> {
    if !module.starts_with(&[0x1f, 0x8b]) {
        return Ok(module);
    }
    let mut wasm = vec![];
    // A few KiB may unpack to gigabytes: stop one byte past the limit.
    flate2::read::GzDecoder::new(module.as_slice()).take(MAX_WASM_BYTES + 1).read_to_end(&mut wasm)?;
    if wasm.len() as u64 > MAX_WASM_BYTES {
        return Err(std::io::Error::other(format!("the module unpacks to more than {MAX_WASM_BYTES} bytes")));
    }
    Ok(wasm)
}

/// Every setting a controller gives: controllers and environment
/// variables in the simulator, the rest kept here (see [`settings`]); a
/// new canister version, as on the IC.
fn update_settings(
    instance: &mut Instance,
    canister: Principal,
    sender: Principal,
    given: CanisterSettings,
) -> CallResult {
    let mut kept = instance.canister(canister)?.settings.clone();
    settings::apply(&mut kept, &given).map_err(invalid_settings)?;
    let controllers = given.controllers.clone();
    instance
        .sim
        .update_settings(canister, sender, sim_settings(&given, controllers.clone()))
        .map_err(errors::from_sim_error)?;
    let info = instance.canisters.get_mut(&canister).expect("checked");
    info.settings = kept;
    if let Some(controllers) = controllers {
        info.controllers = controllers;
        instance.changed.insert(canister);
    }
    reply(())
}

/// `start_canister`, `stop_canister`, `delete_canister`, `canister_status`, `deposit_cycles`.
fn lifecycle(instance: &mut Instance, canister: Principal, sender: Principal, method: &str) -> CallResult {
    let sim = &mut instance.sim;
    let status = match method {
        "start_canister" => sim.start_canister(canister, sender).map(|()| Some(CanisterStatusType::Running)),
        "stop_canister" => sim.stop_canister(canister, sender).map(|()| Some(CanisterStatusType::Stopped)),
        "delete_canister" => {
            if instance.canister(canister)?.status != CanisterStatusType::Stopped {
                return Err(errors::reject(
                    RejectCode::CanisterError,
                    ErrorCode::CanisterNotStopped,
                    format!("Canister {canister} must be stopped before it is deleted."),
                ));
            }
            instance.sim.delete_canister(canister, sender).map_err(errors::from_sim_error)?;
            instance.canisters.remove(&canister);
            instance.changed.insert(canister);
            return reply(());
        }
        "canister_status" => return status(instance, canister),
        // An ingress message carries no cycles: it deposits none.
        _ => Ok(None),
    };
    if let Some(status) = status.map_err(errors::from_sim_error)? {
        instance.canisters.get_mut(&canister).expect("checked").status = status;
    }
    reply(())
}

/// The canister's settings, sizes, cycles and version. What the simulator
/// does not keep (reserved cycles, query statistics, history, snapshots,
/// the idle burn) is 0.
fn status(instance: &Instance, canister: Principal) -> CallResult {
    let info = instance.canister(canister)?;
    let sim = &instance.sim;
    let cycles = sim.cycle_balance(canister).map_err(errors::from_sim_error)?;
    let known = |result: Result<u64, sim::SimError>| result.map(Nat::from).map_err(errors::from_sim_error);
    let wasm_memory = known(sim.wasm_memory_size(canister))?;
    let stable_memory = known(sim.stable_memory_size(canister))?;
    let chunks: usize = info.chunks.values().map(Vec::len).sum();
    let chunk_store = Nat::from(chunks);
    let module = Nat::from(info.module_size);
    let custom_sections: usize = info.metadata.iter().map(|m| m.name.len() + m.content.len()).sum();
    let mut settings = info.settings.clone();
    settings.controllers = info.controllers.clone();
    settings.environment_variables = sim
        .env_vars(canister)
        .map_err(errors::from_sim_error)?
        .iter()
        .map(|(name, value)| EnvironmentVariable { name: name.clone(), value: value.clone() })
        .collect();
    let zero = || Nat::from(0u8);
    reply(CanisterStatusResult {
        status: info.status,
        ready_for_migration: false,
        version: sim.canister_version(canister).map_err(errors::from_sim_error)?,
        settings,
        module_hash: info.module_hash.clone(),
        memory_size: wasm_memory.clone() + stable_memory.clone() + module.clone() + chunk_store.clone(),
        memory_metrics: MemoryMetrics {
            wasm_memory_size: wasm_memory,
            stable_memory_size: stable_memory,
            global_memory_size: zero(),
            wasm_binary_size: module,
            custom_sections_size: Nat::from(custom_sections),
            canister_history_size: zero(),
            wasm_chunk_store_size: chunk_store,
            snapshots_size: zero(),
            log_memory_store_size: zero(),
        },
        cycles: Nat::from(cycles),
        reserved_cycles: zero(),
        idle_cycles_burned_per_day: zero(),
        query_stats: QueryStats {
            num_calls_total: zero(),
            num_instructions_total: zero(),
            request_payload_bytes_total: zero(),
            response_payload_bytes_total: zero(),
        },
    })
}
