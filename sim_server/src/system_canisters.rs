//! Stand-ins for the system canisters icp-cli calls when it creates a
//! canister: the cycles ledger's `create_canister` and the cycles minting
//! canister's `get_default_subnets`. They are the simulator's, not
//! DFINITY's: they run natively, keep no ledger, and charge nothing (every
//! caller may create canisters, each with the simulator's initial cycles
//! or the amount asked for, whichever is more).

use candid::{CandidType, Decode, Nat, Principal};
use ic_management_canister_types::{CanisterSettings, ProvisionalCreateCanisterWithCyclesArgs};
use pocket_ic::common::rest::RawEffectivePrincipal;
use pocket_ic::{ErrorCode, RejectCode};
use serde::Deserialize;

use crate::errors;
use crate::instance::{CallResult, Instance};
use crate::management;

/// The cycles ledger's id on the IC (`um5iw-rqaaa-aaaaq-qaaba-cai`).
pub const CYCLES_LEDGER: Principal = Principal::from_slice(&[0, 0, 0, 0, 2, 16, 0, 2, 1, 1]);
/// The cycles minting canister's id on the IC (`rkp4c-7iaaa-aaaaa-aaaca-cai`):
/// the fifth id of the first subnet's range, which the network reserves.
pub use sim::CYCLES_MINTING_CANISTER;
/// The first subnet assigns no id below this one to a user's canister.
pub const RESERVED_IDS: u64 = 5;

/// `create_canister`'s argument, as icp-cli sends it
/// (`icp-canister-interfaces/src/cycles_ledger.rs`).
#[derive(CandidType, Deserialize)]
struct CreateCanisterArgs {
    amount: Nat,
    creation_args: Option<CreationArgs>,
}

#[derive(CandidType, Deserialize)]
struct CreationArgs {
    subnet_selection: Option<SubnetSelection>,
    settings: Option<CreationSettings>,
}

#[derive(CandidType, Deserialize)]
enum SubnetSelection {
    Filter { subnet_type: Option<String> },
    Subnet { subnet: Principal },
}

#[derive(CandidType, Deserialize)]
struct CreationSettings {
    controllers: Option<Vec<Principal>>,
    freezing_threshold: Option<Nat>,
    reserved_cycles_limit: Option<Nat>,
    memory_allocation: Option<Nat>,
    compute_allocation: Option<Nat>,
}

#[derive(CandidType)]
enum CreateCanisterResponse {
    Ok { block_id: Nat, canister_id: Principal },
}

fn reject(message: String) -> pocket_ic::RejectResponse {
    errors::reject(RejectCode::CanisterReject, ErrorCode::CanisterRejectedMessage, message)
}

/// An update call to a stand-in; `None` if `canister` is none of them.
pub fn update(
    instance: &mut Instance,
    canister: Principal,
    sender: Principal,
    method: &str,
    arg: &[u8],
) -> Option<CallResult> {
    if canister == CYCLES_MINTING_CANISTER {
        return Some(query(instance, canister, method).expect("a stand-in"));
    }
    if canister != CYCLES_LEDGER {
        return None;
    }
    if method != "create_canister" {
        return Some(Err(reject(format!(
            "the simulator's cycles ledger stand-in has only create_canister, not {method}"
        ))));
    }
    Some(create_canister(instance, sender, arg))
}

/// A query to a stand-in; `None` if `canister` is none of them.
pub fn query(instance: &Instance, canister: Principal, method: &str) -> Option<CallResult> {
    if canister == CYCLES_LEDGER {
        return Some(Err(reject(format!(
            "the simulator's cycles ledger stand-in answers no query ({method})"
        ))));
    }
    if canister != CYCLES_MINTING_CANISTER {
        return None;
    }
    Some(match method {
        // The first subnet only, so that where icp-cli puts a canister does
        // not depend on its random choice; `--subnet` chooses another.
        "get_default_subnets" => Ok(candid::encode_one(vec![instance.sim.subnets()[0]]).expect("encodes")),
        other => Err(reject(format!(
            "the simulator's cycles minting canister stand-in has only get_default_subnets, not {other}"
        ))),
    })
}

fn create_canister(instance: &mut Instance, sender: Principal, arg: &[u8]) -> CallResult {
    let args = Decode!(arg, CreateCanisterArgs)
        .map_err(|e| reject(format!("Error decoding candid for create_canister: {e}")))?;
    let creation = args.creation_args.unwrap_or(CreationArgs { subnet_selection: None, settings: None });
    let subnet = match creation.subnet_selection {
        Some(SubnetSelection::Subnet { subnet }) => {
            if instance.subnet_index(subnet).is_none() {
                return Err(reject(format!(
                    "Failed to create canister: subnet {subnet} is not part of this network"
                )));
            }
            subnet
        }
        Some(SubnetSelection::Filter { subnet_type: Some(kind) }) if kind != "application" => {
            return Err(reject(format!(
                "Failed to create canister: this network has only application subnets, not {kind}"
            )));
        }
        _ => instance.sim.subnets()[0],
    };
    let settings = creation.settings.map(|s| CanisterSettings {
        controllers: s.controllers,
        freezing_threshold: s.freezing_threshold,
        reserved_cycles_limit: s.reserved_cycles_limit,
        memory_allocation: s.memory_allocation,
        compute_allocation: s.compute_allocation,
        ..CanisterSettings::default()
    });
    let initial = Nat::from(instance.sim.config().initial_cycles);
    let create = ProvisionalCreateCanisterWithCyclesArgs {
        amount: Some(args.amount.max(initial)),
        settings,
        specified_id: None,
        sender_canister_version: None,
    };
    let effective = RawEffectivePrincipal::SubnetId(subnet.as_slice().to_vec());
    let created = management::create(instance, &effective, sender, create)
        .map_err(|e| reject(format!("Failed to create canister: {}", e.message)))??;
    let record = Decode!(&created, ic_management_canister_types::CanisterIdRecord)
        .expect("the management canister's reply");
    instance.ledger_blocks += 1;
    let block_id = Nat::from(instance.ledger_blocks);
    Ok(candid::encode_one(CreateCanisterResponse::Ok { block_id, canister_id: record.canister_id })
        .expect("encodes"))
}
