//! The cycles minting canister's stand-in: where icp-cli puts a canister,
//! the ICP/XDR rate, and cycles minted from ICP sent to it
//! (`notify_mint_cycles`, which `icp cycles mint` calls).

use candid::{CandidType, Nat, Principal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::cycles_ledger::CyclesLedger;
use super::icp_ledger::IcpLedger;
use super::{CYCLES_MINTING_CANISTER, Host, Reject, argument, reply};
use crate::ledger::{self, account_identifier};

/// The memo of an ICP transfer to be turned into cycles (`MINT`).
pub const MEMO_MINT_CYCLES: u64 = 0x544e_494d;
/// The memo of an ICP transfer to pay for a canister (`CREA`).
pub const MEMO_CREATE_CANISTER: u64 = 0x4145_5243;
/// The memos the cycles minting canister acts on.
pub const MEMOS: [u64; 2] = [MEMO_MINT_CYCLES, MEMO_CREATE_CANISTER];
/// The simulator's fixed rate: 3.5 XDR for an ICP, so 3.5T cycles (a
/// trillion cycles are an XDR), 35,000 cycles an e8.
pub const XDR_PERMYRIAD_PER_ICP: u64 = 35_000;

#[derive(CandidType, Deserialize)]
struct NotifyMintArgs {
    block_index: u64,
    deposit_memo: Option<Vec<u8>>,
    to_subaccount: Option<Vec<u8>>,
}

#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct NotifyMintOk {
    balance: Nat,
    block_index: Nat,
    minted: Nat,
}

#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub(super) enum NotifyError {
    Refunded { reason: String, block_index: Option<u64> },
    InvalidTransaction(String),
    Other { error_code: u64, error_message: String },
    Processing,
    TransactionTooOld(u64),
}

/// The notifications answered, by ICP block: one sent again gets the same answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Cmc {
    notified: BTreeMap<u64, NotifyMintOk>,
}

/// As many as the ICP ledger keeps transfers to notify of.
const KEPT_NOTIFICATIONS: usize = 10_000;

/// The subaccount of the cycles minting canister that `principal` sends ICP
/// to: its length, its bytes, zeros.
fn subaccount_of(principal: Principal) -> [u8; 32] {
    let bytes = principal.as_slice();
    let mut subaccount = [0; 32];
    subaccount[0] = bytes.len() as u8;
    subaccount[1..=bytes.len()].copy_from_slice(bytes);
    subaccount
}

impl Cmc {
    /// An update call from `caller`.
    pub fn update(
        &mut self,
        host: &dyn Host,
        ledgers: (&mut IcpLedger, &mut CyclesLedger),
        caller: Principal,
        method: &str,
        arg: &[u8],
        now: u64,
    ) -> Result<Vec<u8>, Reject> {
        match method {
            "notify_mint_cycles" => {
                let args: NotifyMintArgs = argument(CYCLES_MINTING_CANISTER, method, arg)?;
                reply(self.notify_mint_cycles(ledgers, caller, args, now))
            }
            _ => answer(host, "update", method),
        }
    }

    fn notify_mint_cycles(
        &mut self,
        (icp, cycles): (&mut IcpLedger, &mut CyclesLedger),
        caller: Principal,
        args: NotifyMintArgs,
        now: u64,
    ) -> Result<NotifyMintOk, NotifyError> {
        if let Some(done) = self.notified.get(&args.block_index) {
            return Ok(done.clone());
        }
        let Some(deposit) = icp.deposit(args.block_index) else {
            return Err(NotifyError::InvalidTransaction(format!(
                "block {} is not an ICP transfer with the MINT memo, or is too old",
                args.block_index
            )));
        };
        let from = ledger::Account { owner: CYCLES_MINTING_CANISTER, subaccount: subaccount_of(caller) };
        if deposit.to != account_identifier(&from) || deposit.memo != MEMO_MINT_CYCLES {
            return Err(NotifyError::InvalidTransaction(format!(
                "block {} is not a transfer with the MINT memo to the cycles minting canister's subaccount of {caller}",
                args.block_index
            )));
        }
        let to = ledger::Account::new(caller, args.to_subaccount.as_deref())
            .ok_or_else(|| NotifyError::InvalidTransaction("to_subaccount is not 32 bytes long".into()))?;
        let minted = deposit.e8s.saturating_mul(u128::from(XDR_PERMYRIAD_PER_ICP));
        let (block, balance) = cycles
            .deposit(to, minted)
            .map_err(|reason| NotifyError::Refunded { reason, block_index: None })?;
        icp.burn(deposit.to, deposit.e8s, now)
            .map_err(|e| NotifyError::Other { error_code: 0, error_message: format!("{e:?}") })?;
        let done = NotifyMintOk { balance: balance.into(), block_index: block.into(), minted: minted.into() };
        self.notified.insert(args.block_index, done.clone());
        if self.notified.len() > KEPT_NOTIFICATIONS {
            self.notified.pop_first();
        }
        Ok(done)
    }
}

/// A call of `kind` (query or update: the same answer) to the cycles
/// minting canister's read-only methods.
pub fn answer(host: &dyn Host, kind: &str, method: &str) -> Result<Vec<u8>, Reject> {
    match method {
        // The first subnet only, so that where icp-cli puts a canister does
        // not depend on its random choice; `--subnet` chooses another.
        "get_default_subnets" => reply(vec![host.subnets()[0]]),
        "get_icp_xdr_conversion_rate" => {
            #[derive(CandidType)]
            struct Rate {
                xdr_permyriad_per_icp: u64,
                timestamp_seconds: u64,
            }
            #[derive(CandidType)]
            struct Certified {
                data: Rate,
                hash_tree: Vec<u8>,
                certificate: Vec<u8>,
            }
            let data = Rate {
                xdr_permyriad_per_icp: XDR_PERMYRIAD_PER_ICP,
                timestamp_seconds: host.time() / 1_000_000_000,
            };
            reply(Certified { data, hash_tree: vec![], certificate: vec![] })
        }
        other => Err(Reject::no_method(CYCLES_MINTING_CANISTER, kind, other)),
    }
}
