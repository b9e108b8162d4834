//! The management canister's methods that only canisters may call, as the
//! replica's ingress filter says (an ingress message carries no cycles to
//! pay or deposit with): `create_canister`, `deposit_cycles`, `raw_rand`,
//! the chain key methods ([`super::chain_keys`]) and `http_request`
//! ([`super::http_outcalls`], which answers later).

use candid::{Nat, Principal};
use ic_error_types::ErrorCode;
use ic_management_canister_types::{
    CanisterIdRecord, CanisterSettings, CreateCanisterArgs, ProvisionalCreateCanisterWithCyclesArgs,
};

use super::{
    CANISTER_CREATION_FEE, CallResult, Host, Origin, chain_keys, create, decode, http_outcalls, manage, reply,
};
use crate::Reject;
use crate::engine::Engine;

/// The methods only canisters may call, besides the chain key methods.
const METHODS: [&str; 4] = ["create_canister", "deposit_cycles", "raw_rand", "http_request"];

/// The engine's call `call` to the management canister, from canister
/// `caller` on `subnet` with `cycles` attached: the answer, and the cycles
/// it accepted (the rest go back to the caller); `None` for an outcall,
/// which is answered when its responses come
/// ([`super::http_outcalls::respond`]).
pub fn call_from_canister(
    ic: &mut impl Host,
    subnet: Principal,
    caller: Principal,
    method: &str,
    arg: &[u8],
    cycles: u128,
    call: u64,
) -> Option<(CallResult, u128)> {
    if method == "http_request" {
        return http_outcalls::request(ic, subnet, caller, arg, cycles, call);
    }
    Some(manage(ic, Origin::Canister { subnet, cycles }, caller, method, arg))
}

/// The answer to one of [`METHODS`] and the cycles it accepted; `None` for
/// another method. From an ingress message, the replica's refusal.
pub(super) fn call(
    ic: &mut impl Host,
    origin: Origin,
    sender: Principal,
    method: &str,
    arg: &[u8],
) -> Option<(CallResult, u128)> {
    if !METHODS.contains(&method) && !chain_keys::METHODS.contains(&method) {
        return None;
    }
    let Origin::Canister { subnet, cycles } = origin else {
        let only = format!("Only canisters can call ic00 method {method}");
        return Some((Err(Reject::new(ErrorCode::CanisterRejectedMessage, only)), 0));
    };
    if chain_keys::METHODS.contains(&method) {
        return Some(chain_keys::call(ic.chain_keys(), sender, method, arg, cycles));
    }
    let (answer, accepts) = match method {
        "create_canister" => {
            let created = decode(arg, method).and_then(|args: CreateCanisterArgs| {
                paid_create(ic, subnet, sender, args.settings.unwrap_or_default(), cycles)
            });
            (created, true)
        }
        "deposit_cycles" => {
            let deposited = decode(arg, method).and_then(|args: CanisterIdRecord| {
                ic.canister(args.canister_id)?;
                ic.engine_mut().deposit_cycles(args.canister_id, cycles)?;
                reply(())
            });
            (deposited, true)
        }
        "raw_rand" => {
            let drawn = candid::decode_args::<()>(arg)
                .map_err(|e| {
                    Reject::new(
                        ErrorCode::InvalidManagementPayload,
                        format!("Error decoding candid for method {method}: {e}"),
                    )
                })
                .and_then(|()| reply(ic.next_raw_rand().to_vec()));
            (drawn, false)
        }
        _ => unreachable!("call_from_canister answers {method}"),
    };
    // What a method accepts, it accepts whole, and only if it succeeds.
    let accepted = if accepts && answer.is_ok() { cycles } else { 0 };
    Some((answer, accepted))
}

/// A canister's `create_canister` on its own subnet, paid with the `cycles`
/// attached: the creation fee is kept and the rest is the new canister's
/// balance; the caller controls it unless `settings` names controllers.
fn paid_create(
    ic: &mut impl Host,
    subnet: Principal,
    sender: Principal,
    settings: CanisterSettings,
    cycles: u128,
) -> CallResult {
    let fee = CANISTER_CREATION_FEE;
    let Some(balance) = cycles.checked_sub(fee) else {
        return Err(Reject::new(
            ErrorCode::InsufficientCyclesForCreateCanister,
            format!(
                "Creating a canister requires a fee of {fee} that is deducted from the canister's initial balance but only {cycles} cycles were received with the create_canister request."
            ),
        ));
    };
    let args = ProvisionalCreateCanisterWithCyclesArgs {
        amount: Some(Nat::from(balance)),
        settings: Some(settings),
        specified_id: None,
        sender_canister_version: None,
    };
    create(ic, subnet, sender, args)
}
