//! The cycles minting canister's stand-in: where icp-cli puts a canister,
//! the ICP/XDR rate, cycles minted from ICP sent to it
//! (`notify_mint_cycles`, which `icp cycles mint` calls), and canisters
//! paid for in ICP (`notify_create_canister`, which `icp canister create
//! --with-icp` calls).

use candid::{CandidType, Nat, Principal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::cycles_ledger::CyclesLedger;
use super::icp_ledger::{Deposit, IcpLedger};
use super::{
    CYCLES_MINTING_CANISTER, Host, MEMO_CREATE_CANISTER, MEMO_MINT_CYCLES, Reject, Rejects, argument, reply,
};
use crate::ledger::{self, account_identifier};

/// The simulator's fixed rate: 3.5 XDR for an ICP, so 3.5T cycles (a
/// trillion cycles are an XDR), 35,000 cycles an e8.
pub const XDR_PERMYRIAD_PER_ICP: u64 = 35_000;

#[derive(CandidType, Deserialize)]
struct NotifyMintArgs {
    block_index: u64,
    deposit_memo: Option<Vec<u8>>,
    to_subaccount: Option<Vec<u8>>,
}

#[derive(CandidType, Deserialize)]
struct NotifyCreateCanisterArgs {
    block_index: u64,
    controller: Principal,
    subnet_selection: Option<SubnetSelection>,
    settings: Option<ic_management_canister_types::CanisterSettings>,
}

#[derive(CandidType, Deserialize)]
enum SubnetSelection {
    Filter { subnet_type: Option<String> },
    Subnet { subnet: Principal },
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

/// What a notification did: one sent again gets the same answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Notified {
    Minted(NotifyMintOk),
    Created(Principal),
    Refunded { reason: String, block_index: Option<u64> },
}

/// The notifications answered, by ICP block.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Cmc {
    notified: BTreeMap<u64, Notified>,
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
        host: &mut dyn Host,
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
            "notify_create_canister" => {
                let args: NotifyCreateCanisterArgs = argument(CYCLES_MINTING_CANISTER, method, arg)?;
                reply(self.notify_create_canister(host, ledgers.0, caller, args, now))
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
        match self.notified.get(&args.block_index) {
            Some(Notified::Minted(done)) => return Ok(done.clone()),
            Some(other) => return Err(already_used(args.block_index, other)),
            None => {}
        }
        let deposit = deposit_of(icp, args.block_index, caller, MEMO_MINT_CYCLES, "MINT")?;
        let to = ledger::Account::new(caller, args.to_subaccount.as_deref())
            .ok_or_else(|| NotifyError::InvalidTransaction("to_subaccount is not 32 bytes long".into()))?;
        let minted = deposit.e8s.saturating_mul(u128::from(XDR_PERMYRIAD_PER_ICP));
        let (block, balance) = cycles
            .deposit(to, minted)
            .map_err(|reason| NotifyError::Refunded { reason, block_index: None })?;
        icp.burn(deposit.to, deposit.e8s, now)
            .map_err(|e| NotifyError::Other { error_code: 0, error_message: format!("{e:?}") })?;
        let done = NotifyMintOk { balance: balance.into(), block_index: block.into(), minted: minted.into() };
        self.remember(args.block_index, Notified::Minted(done.clone()));
        Ok(done)
    }

    /// A canister for `controller`, holding the cycles the ICP sent with the
    /// `CREA` memo buys (less the creation fee), on the subnet asked for or
    /// the first; the ICP is burnt. If it cannot be created, the ICP goes
    /// back to the caller less the ICP ledger's fee.
    fn notify_create_canister(
        &mut self,
        host: &mut dyn Host,
        icp: &mut IcpLedger,
        caller: Principal,
        args: NotifyCreateCanisterArgs,
        now: u64,
    ) -> Result<Principal, NotifyError> {
        match self.notified.get(&args.block_index) {
            Some(Notified::Created(canister)) => return Ok(*canister),
            Some(other) => return Err(already_used(args.block_index, other)),
            None => {}
        }
        let deposit = deposit_of(icp, args.block_index, caller, MEMO_CREATE_CANISTER, "CREA")?;
        let subnets = host.subnets();
        let subnet = match args.subnet_selection {
            Some(SubnetSelection::Subnet { subnet }) => subnet,
            Some(SubnetSelection::Filter { .. }) | None => subnets[0],
        };
        let mut settings = args.settings.unwrap_or_default();
        settings.controllers.get_or_insert_with(|| vec![args.controller]);
        let cycles = deposit.e8s.saturating_mul(u128::from(XDR_PERMYRIAD_PER_ICP));
        let created = if subnets.contains(&subnet) {
            host.create_canister(subnet, settings, cycles)
        } else {
            Err(format!("subnet {subnet} is not part of this network"))
        };
        let canister = match created {
            Ok(canister) => canister,
            Err(reason) => {
                let block_index = icp.refund(deposit, ledger::Account::of(caller), now).ok();
                let refunded = Notified::Refunded { reason: reason.clone(), block_index };
                self.remember(args.block_index, refunded);
                return Err(NotifyError::Refunded { reason, block_index });
            }
        };
        icp.burn(deposit.to, deposit.e8s, now)
            .map_err(|e| NotifyError::Other { error_code: 0, error_message: format!("{e:?}") })?;
        self.remember(args.block_index, Notified::Created(canister));
        Ok(canister)
    }

    fn remember(&mut self, block: u64, notified: Notified) {
        self.notified.insert(block, notified);
        if self.notified.len() > KEPT_NOTIFICATIONS {
            self.notified.pop_first();
        }
    }
}

/// The answer to a block notified of before for another purpose, or refunded.
fn already_used(block: u64, notified: &Notified) -> NotifyError {
    match notified {
        Notified::Refunded { reason, block_index } => {
            NotifyError::Refunded { reason: reason.clone(), block_index: *block_index }
        }
        _ => NotifyError::InvalidTransaction(format!(
            "block {block} was already notified of for another purpose"
        )),
    }
}

/// The ICP transfer at `block`, if it went to the cycles minting
/// canister's subaccount of `caller` with `memo`.
fn deposit_of(
    icp: &IcpLedger,
    block: u64,
    caller: Principal,
    memo: u64,
    memo_name: &str,
) -> Result<Deposit, NotifyError> {
    let invalid = || {
        NotifyError::InvalidTransaction(format!(
            "block {block} is not a transfer with the {memo_name} memo to the cycles minting canister's subaccount of {caller}, or is too old"
        ))
    };
    let deposit = icp.deposit(block).ok_or_else(invalid)?;
    let to = ledger::Account { owner: CYCLES_MINTING_CANISTER, subaccount: subaccount_of(caller) };
    if deposit.to != account_identifier(&to) || deposit.memo != memo {
        return Err(invalid());
    }
    Ok(deposit)
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
