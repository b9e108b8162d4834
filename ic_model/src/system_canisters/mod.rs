//! The system canisters icp-cli and dfx call, as the simulator's stand-ins
//! at their mainnet ids: the ICP ledger, the cycles ledger and the cycles
//! minting canister. They are not DFINITY's canisters: they run natively,
//! keep the balances and blocks their interfaces show (with the IC's fees
//! and deduplication), and refuse what the real ones refuse with the same
//! errors. Creating a canister and depositing cycles are the engine's: a
//! [`Host`] does them.

mod cmc;
mod cycles_ledger;
mod icp_ledger;
mod icrc1;

use candid::{CandidType, Principal};
use ic_error_types::ErrorCode;
use serde::{Deserialize, Serialize};

pub use cycles_ledger::CYCLES_LEDGER_FEE;
pub use icp_ledger::ICP_LEDGER_FEE_E8S;

/// The ICP ledger's id on the IC (`ryjl3-tyaaa-aaaaa-aaaba-cai`).
pub const ICP_LEDGER: Principal = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 2, 1, 1]);
/// The cycles ledger's id on the IC (`um5iw-rqaaa-aaaaq-qaaba-cai`).
pub const CYCLES_LEDGER: Principal = Principal::from_slice(&[0, 0, 0, 0, 2, 16, 0, 2, 1, 1]);
/// The cycles minting canister's id on the IC (`rkp4c-7iaaa-aaaaa-aaaca-cai`).
pub const CYCLES_MINTING_CANISTER: Principal = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 4, 1, 1]);
/// The system canisters, by id.
pub const CANISTERS: [Principal; 3] = [ICP_LEDGER, CYCLES_LEDGER, CYCLES_MINTING_CANISTER];
/// The memo of an ICP transfer to the cycles minting canister to be
/// turned into cycles (`MINT`).
pub const MEMO_MINT_CYCLES: u64 = 0x544e_494d;
/// The memo of an ICP transfer to the cycles minting canister to pay for a
/// canister (`CREA`).
pub const MEMO_CREATE_CANISTER: u64 = 0x4145_5243;
/// The memos the cycles minting canister acts on: the ICP ledger keeps the
/// transfers that carry one for the notifications that follow.
const CMC_MEMOS: [u64; 2] = [MEMO_MINT_CYCLES, MEMO_CREATE_CANISTER];
/// The NNS governance canister (`rrkah-fqaaa-aaaaa-aaaaq-cai`): the ICP
/// ledger's minting account is its default account.
pub const GOVERNANCE: Principal = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 1, 1]);

/// What the anonymous principal holds when a network starts, as PocketIC
/// gives it: 1,000,000,000 ICP.
pub const ANONYMOUS_ICP_E8S: u128 = 100_000_000 * 1_000_000_000;
/// What the anonymous principal holds when a network starts, as PocketIC
/// gives it: 2^127 cycles.
pub const ANONYMOUS_CYCLES: u128 = 1 << 127;

pub use crate::Reject;

/// The rejects the system canisters answer with (a trait: [`Reject`] is
/// `ic_reject`'s).
trait Rejects: Sized {
    fn no_method(canister: Principal, kind: &str, method: &str) -> Self;
    /// What a canister that traps with `why` answers.
    fn trap(canister: Principal, why: &str) -> Self;
    fn bad_argument(canister: Principal, method: &str, why: impl std::fmt::Display) -> Self;
    fn trapped(canister: Principal, why: &str) -> Self;
}

impl Rejects for Reject {
    fn no_method(canister: Principal, kind: &str, method: &str) -> Self {
        Self::new(
            ErrorCode::CanisterMethodNotFound,
            format!(
                "Canister {canister} has no {kind} method '{method}' (it is the simulator's stand-in: docs/network.md lists its methods)"
            ),
        )
    }

    fn trap(canister: Principal, why: &str) -> Self {
        Self::new(ErrorCode::CanisterCalledTrap, format!("Canister {canister} trapped: {why}"))
    }

    fn bad_argument(canister: Principal, method: &str, why: impl std::fmt::Display) -> Self {
        Self::trapped(canister, &format!("failed to decode the argument of {method}: {why}"))
    }

    fn trapped(canister: Principal, why: &str) -> Self {
        Self::new(ErrorCode::CanisterCalledTrap, format!("Canister {canister} trapped: {why}"))
    }
}

/// What the system canisters need of the engine beneath them.
pub trait Host {
    /// The subnets, in the engine's order.
    fn subnets(&self) -> Vec<Principal>;
    /// The network's time, in ns since the epoch.
    fn time(&self) -> u64;
    /// Creates a canister on `subnet` with `settings` (its controllers
    /// among them), holding `cycles`; why not, if it cannot.
    fn create_canister(
        &mut self,
        subnet: Principal,
        settings: ic_management_canister_types::CanisterSettings,
        cycles: u128,
    ) -> Result<Principal, String>;
    /// Adds `cycles` to `canister`'s balance; why not, if it cannot.
    fn deposit_cycles(&mut self, canister: Principal, cycles: u128) -> Result<(), String>;
}

/// The system canisters' state: what their ledgers hold.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SystemCanisters {
    icp: icp_ledger::IcpLedger,
    cycles: cycles_ledger::CyclesLedger,
    cmc: cmc::Cmc,
}

impl Default for SystemCanisters {
    fn default() -> Self {
        Self::new()
    }
}

impl SystemCanisters {
    /// Ledgers in which the anonymous principal holds [`ANONYMOUS_ICP_E8S`]
    /// and [`ANONYMOUS_CYCLES`], and no one else anything.
    pub fn new() -> Self {
        Self {
            icp: icp_ledger::IcpLedger::new(),
            cycles: cycles_ledger::CyclesLedger::new(),
            cmc: cmc::Cmc::default(),
        }
    }

    /// Whether `canister` is one of them.
    pub fn is_system_canister(canister: Principal) -> bool {
        CANISTERS.contains(&canister)
    }

    /// An update call from `caller`; `None` if `canister` is none of them.
    pub fn update(
        &mut self,
        host: &mut dyn Host,
        canister: Principal,
        caller: Principal,
        method: &str,
        arg: &[u8],
    ) -> Option<Result<Vec<u8>, Reject>> {
        let now = host.time();
        Some(match canister {
            ICP_LEDGER => self.icp.update(caller, method, arg, now),
            CYCLES_LEDGER => self.cycles.update(host, caller, method, arg, now),
            CYCLES_MINTING_CANISTER => {
                let ledgers = (&mut self.icp, &mut self.cycles);
                self.cmc.update(host, ledgers, caller, method, arg, now)
            }
            _ => return None,
        })
    }

    /// A call from the canister `caller` with `cycles` attached: the answer
    /// and the cycles accepted; `None` if `canister` is none of them. Only
    /// the cycles ledger's `deposit` accepts cycles.
    pub fn call_from_canister(
        &mut self,
        host: &mut dyn Host,
        canister: Principal,
        caller: Principal,
        method: &str,
        arg: &[u8],
        cycles: u128,
    ) -> Option<(Result<Vec<u8>, Reject>, u128)> {
        if (canister, method) == (CYCLES_LEDGER, "deposit") {
            return Some(self.cycles.deposit_call(arg, cycles));
        }
        Some((self.update(host, canister, caller, method, arg)?, 0))
    }

    /// A query from `caller`; `None` if `canister` is none of them.
    pub fn query(
        &self,
        host: &dyn Host,
        canister: Principal,
        method: &str,
        arg: &[u8],
    ) -> Option<Result<Vec<u8>, Reject>> {
        Some(match canister {
            ICP_LEDGER => self.icp.query(method, arg, host.time()),
            CYCLES_LEDGER => self.cycles.query(method, arg, host.time()),
            CYCLES_MINTING_CANISTER => cmc::answer(host, "query", method),
            _ => return None,
        })
    }
}

/// A query's answer to the same call as an update: a query method may be
/// called either way; a missing one is missing as an update.
fn as_update(answer: Result<Vec<u8>, Reject>, canister: Principal, method: &str) -> Result<Vec<u8>, Reject> {
    match answer {
        Err(reject) if reject.error_code == ErrorCode::CanisterMethodNotFound => {
            Err(Reject::no_method(canister, "update", method))
        }
        answer => answer,
    }
}

/// `value` as a candid reply.
fn reply<T: CandidType>(value: T) -> Result<Vec<u8>, Reject> {
    Ok(candid::encode_one(value).expect("a reply encodes"))
}

/// The candid argument of `method`, or the trap the canister would give.
fn argument<T: CandidType + for<'de> Deserialize<'de>>(
    canister: Principal,
    method: &str,
    arg: &[u8],
) -> Result<T, Reject> {
    candid::decode_one(arg).map_err(|e| Reject::bad_argument(canister, method, e))
}

#[cfg(test)]
mod tests;
