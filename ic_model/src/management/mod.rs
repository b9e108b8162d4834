//! The management canister (`aaaaa-aa`): the methods users and tools call
//! on it as ingress messages, each executed in the round after it was
//! submitted (`Ic::execute_round`), and those canisters call on it, each
//! answered after the round it was made in, over an [`Engine`] that
//! executes the canisters. It is a part of the IC of its own: what it
//! needs of the IC is its [`Host`] (`Ic` is one), and its entry points
//! ([`call`], [`call_from_canister`], [`query`], [`create_paid`]) take one.
//!
//! Canisters call the same methods users do, the caller being the sender,
//! on their own subnet (the management canister is on every subnet), and
//! those only canisters may call: `create_canister` (paid with the cycles
//! attached), `deposit_cycles` (the cycles attached), `raw_rand` and the
//! threshold signatures ([`chain_keys`]). As on
//! the replica, an ingress message to one of those three is refused
//! ("Only canisters can call ic00 method ..."); and as on PocketIC, a
//! canister may call `provisional_create_canister_with_cycles` (on its own
//! subnet). A method the model does not implement is answered
//! [`unsupported`], from a user or a canister alike.

mod canister;
pub mod chain_keys;
pub mod http_outcalls;
mod only_canisters;
mod raw_rand;
pub mod settings;
mod snapshots;
mod vetkd;

pub use canister::{CanisterInfo, Metadata, SnapshotInfo};
pub use chain_keys::ChainKeys;
pub(crate) use raw_rand::RawRand;
pub use raw_rand::value as raw_rand_value;
pub use snapshots::MAX_SNAPSHOTS_PER_CANISTER;

use candid::{CandidType, Decode, Nat, Principal};
use ic_error_types::ErrorCode;
use ic_management_canister_types::{
    CanisterIdRecord, CanisterInstallMode, CanisterLogFilter, CanisterLogRecord, CanisterSettings,
    CanisterStatusResult, CanisterStatusType, ChunkHash, DeleteCanisterSnapshotArgs, EnvironmentVariable,
    FetchCanisterLogsArgs, FetchCanisterLogsResult, InstallChunkedCodeArgs, InstallCodeArgs,
    LoadCanisterSnapshotArgs, LogVisibility, MemoryMetrics, ProvisionalCreateCanisterWithCyclesArgs,
    QueryStats, TakeCanisterSnapshotArgs, UpdateSettingsArgs, UploadChunkArgs,
};
use sha2::{Digest, Sha256};
use std::io::Read;

use crate::Reject;
use crate::effective::{Effective, NoSubnet};
use crate::engine::Engine;

pub use only_canisters::call_from_canister;

type CallResult = Result<Vec<u8>, Reject>;

/// What the management canister needs of the IC it is part of: the engine
/// that executes the canisters, what it knows of each canister, the
/// subnets a creation may be routed to, and the network's seeded
/// `raw_rand`.
pub trait Host {
    /// The engine beneath.
    type Engine: Engine;
    /// The engine, to read.
    fn engine(&self) -> &Self::Engine;
    /// The engine, to change.
    fn engine_mut(&mut self) -> &mut Self::Engine;
    /// The canister, or the reject a call to a missing one gets.
    fn canister(&self, id: Principal) -> Result<&CanisterInfo, Reject>;
    /// The canister, to change (the caller checked it exists): the host
    /// notes it changed.
    fn canister_mut(&mut self, id: Principal) -> &mut CanisterInfo;
    /// A new canister.
    fn insert_canister(&mut self, id: Principal, info: CanisterInfo);
    /// A deleted canister.
    fn remove_canister(&mut self, id: Principal);
    /// The subnet a provisional creation routed by `effective` creates on;
    /// why not, if there is none.
    fn subnet_for(&self, effective: Effective) -> Result<Principal, NoSubnet>;
    /// The next value of the network's `raw_rand`: the n-th one drawn is
    /// [`raw_rand_value`]`(seed, n)`, of the network's seed.
    fn next_raw_rand(&mut self) -> [u8; 32];
    /// The chain keys the network holds.
    fn chain_keys(&self) -> &chain_keys::ChainKeys;
    /// The HTTPS outcalls waiting for responses.
    fn outcalls_mut(&mut self) -> &mut http_outcalls::Outcalls;
}

/// A method or argument this model of the IC does not implement.
pub fn unsupported(what: impl std::fmt::Display) -> Reject {
    Reject::new(
        ErrorCode::UnknownManagementMessage,
        format!(
            "{what}: not supported by this project's model of the IC (the simulator's, not the replica's)"
        ),
    )
}

/// A query to the management canister from `sender`: `fetch_canister_logs`
/// (what the canister printed, for whom its log visibility admits), which
/// the Candid UI and `icp canister logs` call.
pub fn query(ic: &impl Host, sender: Principal, method: &str, arg: &[u8]) -> CallResult {
    if method != "fetch_canister_logs" {
        return Err(unsupported(format!("query {method} to the management canister")));
    }
    let args: FetchCanisterLogsArgs = decode(arg, method)?;
    let canister = args.canister_id;
    let info = ic.canister(canister)?;
    let allowed = match &info.settings.log_visibility {
        LogVisibility::Public => true,
        LogVisibility::Controllers => info.controllers.contains(&sender),
        LogVisibility::AllowedViewers(viewers) => {
            info.controllers.contains(&sender) || viewers.contains(&sender)
        }
    };
    if !allowed {
        return Err(Reject::new(
            ErrorCode::CanisterRejectedMessage,
            format!("Caller {sender} is not allowed to query ic00 method {method}"),
        ));
    }
    let wanted = |record: &CanisterLogRecord| match &args.filter {
        None => true,
        Some(CanisterLogFilter::ByIdx { start, end }) => (*start..=*end).contains(&record.idx),
        Some(CanisterLogFilter::ByTimestampNanos { start, end }) => {
            (*start..=*end).contains(&record.timestamp_nanos)
        }
    };
    let mut canister_log_records = ic.engine().canister_log(canister)?;
    canister_log_records.retain(wanted);
    reply(FetchCanisterLogsResult { canister_log_records })
}

/// How a management call came.
#[derive(Clone, Copy, Debug)]
enum Origin {
    /// An ingress message, routed by its effective canister id or subnet.
    Ingress(Effective),
    /// A canister's call, delivered on the caller's subnet, with cycles attached.
    Canister { subnet: Principal, cycles: u128 },
}

/// A management call from `sender`, routed by `effective`.
pub fn call(
    ic: &mut impl Host,
    effective: Effective,
    sender: Principal,
    method: &str,
    arg: &[u8],
) -> CallResult {
    manage(ic, Origin::Ingress(effective), sender, method, arg).0
}

/// A management call from `sender`: the answer and the cycles accepted.
fn manage(
    ic: &mut impl Host,
    origin: Origin,
    sender: Principal,
    method: &str,
    arg: &[u8],
) -> (CallResult, u128) {
    if let Some(answer) = only_canisters::call(ic, origin, sender, method, arg) {
        return answer;
    }
    let effective = match origin {
        Origin::Ingress(effective) => effective,
        Origin::Canister { .. } => Effective::None,
    };
    (manage_for_anyone(ic, origin, effective, sender, method, arg), 0)
}

/// The methods users and canisters both call; none accepts cycles.
fn manage_for_anyone(
    ic: &mut impl Host,
    origin: Origin,
    effective: Effective,
    sender: Principal,
    method: &str,
    arg: &[u8],
) -> CallResult {
    match method {
        "provisional_create_canister_with_cycles" => {
            let args: ProvisionalCreateCanisterWithCyclesArgs = decode(arg, method)?;
            let subnet = match origin {
                // A canister creates on its own subnet.
                Origin::Canister { subnet, .. } => subnet,
                Origin::Ingress(effective) => ic
                    .subnet_for(effective)
                    .map_err(|why| Reject::new(ErrorCode::SubnetNotFound, why.to_string()))?,
            };
            create(ic, subnet, sender, args)
        }
        "install_code" => {
            let args: InstallCodeArgs = decode(arg, method)?;
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            install(ic, canister, sender, args)
        }
        "install_chunked_code" => {
            let args: InstallChunkedCodeArgs = decode(arg, method)?;
            let canister = target(ic, effective, args.target_canister, sender, method)?;
            install_chunked(ic, canister, sender, args)
        }
        "upload_chunk" => {
            let args: UploadChunkArgs = decode(arg, method)?;
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            upload_chunk(ic, canister, args.chunk)
        }
        "stored_chunks" | "clear_chunk_store" => {
            let args: CanisterIdRecord = decode(arg, method)?;
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            let chunks = &mut ic.canister_mut(canister).chunks;
            if method == "clear_chunk_store" {
                chunks.clear();
                return reply(());
            }
            reply(chunks.keys().map(|hash| ChunkHash { hash: hash.clone() }).collect::<Vec<_>>())
        }
        "update_settings" => {
            let args: UpdateSettingsArgs = decode(arg, method)?;
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            update_settings(ic, canister, args.settings)
        }
        "start_canister" | "stop_canister" | "delete_canister" | "canister_status" => {
            let args: CanisterIdRecord = decode(arg, method)?;
            if method == "delete_canister" && args.canister_id == sender {
                return Err(Reject::new(
                    ErrorCode::CanisterInvalidController,
                    format!("Canister {sender} cannot delete itself."),
                ));
            }
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            lifecycle(ic, canister, method)
        }
        "take_canister_snapshot" => {
            let args: TakeCanisterSnapshotArgs = decode(arg, method)?;
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            snapshots::take(ic, canister, args)
        }
        "load_canister_snapshot" => {
            let args: LoadCanisterSnapshotArgs = decode(arg, method)?;
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            snapshots::load(ic, canister, args)
        }
        "list_canister_snapshots" => {
            let args: CanisterIdRecord = decode(arg, method)?;
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            snapshots::list(ic, canister)
        }
        "delete_canister_snapshot" => {
            let args: DeleteCanisterSnapshotArgs = decode(arg, method)?;
            let canister = target(ic, effective, args.canister_id, sender, method)?;
            snapshots::delete(ic, canister, args)
        }
        other => Err(unsupported(format!("management method {other}"))),
    }
}

/// A new canister on `subnet`, created by the management canister for
/// a canister (the cycles ledger) that pays `cycles` for it: the
/// creation fee is kept, as on the IC. (A canister's own
/// `create_canister` is `only_canisters::create`, with the replica's reject.)
pub fn create_paid(
    ic: &mut impl Host,
    subnet: Principal,
    settings: CanisterSettings,
    cycles: u128,
) -> Result<Principal, Reject> {
    let fee = CANISTER_CREATION_FEE;
    let Some(cycles) = cycles.checked_sub(fee) else {
        return Err(Reject::new(
            ErrorCode::CanisterOutOfCycles,
            format!("{cycles} cycles do not pay the canister creation fee of {fee}"),
        ));
    };
    let args = ProvisionalCreateCanisterWithCyclesArgs {
        amount: Some(Nat::from(cycles)),
        settings: Some(settings),
        specified_id: None,
        sender_canister_version: None,
    };
    let created = create(ic, subnet, Principal::anonymous(), args)?;
    Ok(Decode!(&created, CanisterIdRecord).expect("the management canister's reply").canister_id)
}

/// What the IC charges for creating a canister on a 13-node subnet.
pub const CANISTER_CREATION_FEE: u128 = 500_000_000_000;

fn decode<T: CandidType + for<'a> serde::Deserialize<'a>>(arg: &[u8], method: &str) -> Result<T, Reject> {
    Decode!(arg, T).map_err(|e| {
        Reject::new(
            ErrorCode::InvalidManagementPayload,
            format!("Error decoding candid for method {method}: {e}"),
        )
    })
}

fn reply<T: CandidType>(value: T) -> CallResult {
    Ok(candid::encode_one(value).expect("management replies encode"))
}

/// The canister a controller-only method acts on: it exists and `sender` controls it.
fn target(
    ic: &impl Host,
    effective: Effective,
    canister: Principal,
    sender: Principal,
    method: &str,
) -> Result<Principal, Reject> {
    if let Effective::Canister(id) = effective
        && id != canister
    {
        return Err(Reject::new(
            ErrorCode::CanisterNotHostedBySubnet,
            format!("the effective canister id {id} is not the canister {canister} that {method} names"),
        ));
    }
    if !ic.canister(canister)?.controllers.contains(&sender) {
        return Err(Reject::new(
            ErrorCode::CanisterInvalidController,
            format!(
                "Only controllers of canister {canister} can call ic00 method {method}; {sender} is not one"
            ),
        ));
    }
    Ok(canister)
}

/// `provisional_create_canister_with_cycles` on `subnet`.
fn create(
    ic: &mut impl Host,
    subnet: Principal,
    sender: Principal,
    args: ProvisionalCreateCanisterWithCyclesArgs,
) -> CallResult {
    let settings = args.settings.unwrap_or_default();
    let mut kept = settings::defaults();
    settings::apply(&mut kept, &settings).map_err(invalid_settings)?;
    let cycles = match args.amount.map(|n| u128::try_from(n.0)) {
        None => None,
        Some(Ok(cycles)) => Some(cycles),
        Some(Err(_)) => return Err(unsupported("creating a canister with more than 2^128 cycles")),
    };
    let controllers = settings.controllers.clone().unwrap_or_else(|| vec![sender]);
    let id =
        ic.engine_mut().create_canister(subnet, controllers.clone(), &settings, cycles, args.specified_id)?;
    let mut info = CanisterInfo::new(subnet, controllers);
    info.settings = kept;
    ic.insert_canister(id, info);
    reply(CanisterIdRecord { canister_id: id })
}

/// The reject for settings the replica refuses.
fn invalid_settings(why: String) -> Reject {
    Reject::new(ErrorCode::InvalidManagementPayload, format!("Invalid settings: {why}"))
}

/// `install_code` in any mode; gzipped modules are unpacked as the IC does.
fn install(ic: &mut impl Host, canister: Principal, sender: Principal, args: InstallCodeArgs) -> CallResult {
    let installed = ic.canister(canister)?.module_hash.is_some();
    if args.mode == CanisterInstallMode::Install && installed {
        return Err(Reject::new(
            ErrorCode::CanisterNonEmpty,
            format!(
                "Canister {canister} cannot be installed because the canister is not empty. Try installing with mode='reinstall' instead."
            ),
        ));
    }
    let hash = Sha256::digest(&args.wasm_module).to_vec();
    let wasm = unpack(args.wasm_module)
        .map_err(|e| Reject::new(ErrorCode::CanisterInvalidWasm, format!("gzip: {e}")))?;
    let upgrade = matches!(args.mode, CanisterInstallMode::Upgrade(_));
    ic.engine_mut().install_code(canister, sender, &wasm, args.arg, upgrade)?;
    let info = ic.canister_mut(canister);
    info.module_hash = Some(hash);
    info.module_size = wasm.len() as u64;
    info.metadata = canister::metadata(&wasm);
    reply(())
}

/// The replica's chunk store limits: chunks of at most 1 MiB, and at most
/// `WASM_CHUNK_STORE_MAX_SIZE` (100 MiB) in all.
const MAX_CHUNK_BYTES: usize = 1024 * 1024;
const MAX_CHUNKS: usize = 100;

fn contract_violation(message: String) -> Reject {
    Reject::new(ErrorCode::CanisterContractViolation, message)
}

/// `upload_chunk`: the chunk, kept under its sha256.
fn upload_chunk(ic: &mut impl Host, canister: Principal, chunk: Vec<u8>) -> CallResult {
    if chunk.len() > MAX_CHUNK_BYTES {
        return Err(contract_violation(format!(
            "Wasm chunk size {} exceeds the maximum chunk size of {MAX_CHUNK_BYTES}",
            chunk.len()
        )));
    }
    let chunks = &mut ic.canister_mut(canister).chunks;
    let hash = Sha256::digest(&chunk).to_vec();
    if chunks.len() >= MAX_CHUNKS && !chunks.contains_key(&hash) {
        return Err(Reject::new(
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
    ic: &mut impl Host,
    canister: Principal,
    sender: Principal,
    args: InstallChunkedCodeArgs,
) -> CallResult {
    let store = args.store_canister.unwrap_or(canister);
    if store != canister {
        return Err(unsupported("install_chunked_code from another canister's chunk store"));
    }
    let chunks = &ic.canister(canister)?.chunks;
    let mut wasm_module = vec![];
    for ChunkHash { hash } in &args.chunk_hashes_list {
        // A list may name one chunk many times: the module it makes is
        // capped as the store is (and as the replica caps a module).
        if wasm_module.len() > MAX_CHUNKS * MAX_CHUNK_BYTES {
            return Err(contract_violation(format!(
                "the chunks listed make a module over {} bytes",
                MAX_CHUNKS * MAX_CHUNK_BYTES
            )));
        }
        let chunk = chunks.get(hash).ok_or_else(|| {
            contract_violation(format!(
                "Error from Wasm chunk store: A chunk with hash {} was not found in the store",
                hex(hash)
            ))
        })?;
        wasm_module.extend_from_slice(chunk);
    }
    let hash = Sha256::digest(&wasm_module).to_vec();
    if hash != args.wasm_module_hash {
        return Err(contract_violation(format!(
            "Error from Wasm chunk store: Wasm module hash {} does not match given hash {}",
            hex(&hash),
            hex(&args.wasm_module_hash)
        )));
    }
    let args = InstallCodeArgs {
        mode: args.mode,
        canister_id: canister,
        wasm_module,
        arg: args.arg,
        sender_canister_version: args.sender_canister_version,
    };
    install(ic, canister, sender, args)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
/// variables in the engine, the rest kept here (see [`settings`]); a new
/// canister version, as on the IC.
fn update_settings(ic: &mut impl Host, canister: Principal, given: CanisterSettings) -> CallResult {
    let mut kept = ic.canister(canister)?.settings.clone();
    settings::apply(&mut kept, &given).map_err(invalid_settings)?;
    ic.engine_mut().update_settings(canister, &given)?;
    let info = ic.canister_mut(canister);
    info.settings = kept;
    if let Some(controllers) = given.controllers {
        info.controllers = controllers;
    }
    reply(())
}

/// `start_canister`, `stop_canister`, `delete_canister`, `canister_status`.
fn lifecycle(ic: &mut impl Host, canister: Principal, method: &str) -> CallResult {
    let status = match method {
        "start_canister" => {
            ic.engine_mut().start_canister(canister)?;
            CanisterStatusType::Running
        }
        "stop_canister" => {
            ic.engine_mut().stop_canister(canister)?;
            CanisterStatusType::Stopped
        }
        "delete_canister" => {
            if ic.canister(canister)?.status != CanisterStatusType::Stopped {
                return Err(Reject::new(
                    ErrorCode::CanisterNotStopped,
                    format!("Canister {canister} must be stopped before it is deleted."),
                ));
            }
            ic.engine_mut().delete_canister(canister)?;
            ic.remove_canister(canister);
            return reply(());
        }
        _ => return status(ic, canister),
    };
    ic.canister_mut(canister).status = status;
    reply(())
}

/// The canister's settings, sizes, cycles and version. What the engine
/// does not keep (reserved cycles, query statistics, history, snapshots,
/// the idle burn) is 0.
fn status(ic: &impl Host, canister: Principal) -> CallResult {
    let info = ic.canister(canister)?;
    let engine = ic.engine().status(canister)?;
    let wasm_memory = Nat::from(engine.wasm_memory_bytes);
    let stable_memory = Nat::from(engine.stable_memory_bytes);
    let chunks: usize = info.chunks.values().map(Vec::len).sum();
    let chunk_store = Nat::from(chunks);
    let module = Nat::from(info.module_size);
    let custom_sections: usize = info.metadata.iter().map(|m| m.name.len() + m.content.len()).sum();
    let mut settings = info.settings.clone();
    settings.controllers = info.controllers.clone();
    settings.environment_variables = engine
        .environment_variables
        .into_iter()
        .map(|(name, value)| EnvironmentVariable { name, value })
        .collect();
    let zero = || Nat::from(0u8);
    reply(CanisterStatusResult {
        status: info.status,
        ready_for_migration: false,
        version: engine.version,
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
        cycles: Nat::from(engine.cycles),
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
