//! The ICP ledger's stand-in: ICRC-1, ICRC-2 and the legacy `transfer` and
//! `account_balance` over one book keyed by account identifier, as the ICP
//! ledger keeps it (allowances too); its minting account is NNS
//! governance's, which approves no one.

use candid::{CandidType, Principal};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::icrc1::{self, Token};
use super::{ANONYMOUS_ICP_E8S, GOVERNANCE, ICP_LEDGER, Reject, Rejects, argument, as_update, reply};
use crate::ledger::{self, Ledger, account_identifier};

/// The ICP ledger's fee: 0.0001 ICP.
pub const ICP_LEDGER_FEE_E8S: u128 = 10_000;

const TOKEN: Token = Token { canister: ICP_LEDGER, symbol: "ICP", name: "Internet Computer", decimals: 8 };

/// The legacy interface's amount.
#[derive(CandidType, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Tokens {
    pub(super) e8s: u64,
}

impl Tokens {
    fn of(e8s: u128) -> Self {
        Self { e8s: u64::try_from(e8s).unwrap_or(u64::MAX) }
    }
}

#[derive(CandidType, Deserialize)]
pub(super) struct TimeStamp {
    pub(super) timestamp_nanos: u64,
}

/// The legacy `transfer`'s argument.
#[derive(CandidType, Deserialize)]
pub(super) struct TransferArgs {
    pub(super) memo: u64,
    pub(super) amount: Tokens,
    pub(super) fee: Tokens,
    pub(super) from_subaccount: Option<Vec<u8>>,
    pub(super) to: Vec<u8>,
    pub(super) created_at_time: Option<TimeStamp>,
}

/// What the legacy `transfer` is deduplicated by: the transaction it makes
/// (`Transaction` in the ICP ledger, whose hash its window keeps), senders
/// and receivers named by account identifier.
#[derive(CandidType)]
struct LegacyTransaction {
    from: Vec<u8>,
    to: Vec<u8>,
    amount: Tokens,
    fee: Tokens,
    memo: u64,
    created_at_time: u64,
}

/// The legacy `transfer`'s error.
#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
enum TransferError {
    BadFee { expected_fee: Tokens },
    InsufficientFunds { balance: Tokens },
    TxTooOld { allowed_window_nanos: u64 },
    TxCreatedInFuture,
    TxDuplicate { duplicate_of: u64 },
}

#[derive(CandidType, Deserialize)]
struct AccountBalanceArgs {
    account: Vec<u8>,
}

/// What the ICP ledger traps with.
fn trap(why: &str) -> Reject {
    Reject::trap(ICP_LEDGER, why)
}

/// An account identifier as the ICP ledger takes one: 32 bytes whose first
/// four are the CRC32 of the rest.
fn account_id(bytes: &[u8]) -> Result<[u8; 32], String> {
    let id = <[u8; 32]>::try_from(bytes)
        .map_err(|_| format!("invalid account identifier: {} bytes, not 32", bytes.len()))?;
    if id[..4] != crc32fast::hash(&id[4..]).to_be_bytes() {
        return Err("invalid account identifier: its checksum does not match".into());
    }
    Ok(id)
}

/// The ICP ledger's book, by account identifier.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IcpLedger {
    book: Ledger<[u8; 32]>,
    /// The last transfers with a memo the cycles minting canister acts on,
    /// by block, for it to be notified of.
    deposits: BTreeMap<u64, Deposit>,
}

/// A transfer the cycles minting canister may be notified of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deposit {
    pub to: [u8; 32],
    pub e8s: u128,
    pub memo: u64,
}

/// How many such transfers the ledger keeps for the cycles minting
/// canister; an older one is too old to be notified of.
const KEPT_DEPOSITS: usize = 10_000;

fn key(account: &ledger::Account) -> [u8; 32] {
    account_identifier(account)
}

impl IcpLedger {
    /// The anonymous principal holds [`ANONYMOUS_ICP_E8S`].
    pub fn new() -> Self {
        let mut book = Ledger::new(ICP_LEDGER_FEE_E8S, Some(key(&ledger::Account::of(GOVERNANCE))));
        book.mint(key(&ledger::Account::of(Principal::anonymous())), ANONYMOUS_ICP_E8S);
        Self { book, deposits: BTreeMap::new() }
    }

    pub fn update(
        &mut self,
        caller: Principal,
        method: &str,
        arg: &[u8],
        now: u64,
    ) -> Result<Vec<u8>, Reject> {
        if let Some(answer) = icrc1::update(&mut self.book, &TOKEN, key, caller, method, arg, now) {
            return answer;
        }
        match method {
            "transfer" => {
                let args: TransferArgs = argument(ICP_LEDGER, method, arg)?;
                reply(self.transfer(caller, args, now)?)
            }
            _ => as_update(self.query(method, arg, now), ICP_LEDGER, method),
        }
    }

    pub fn query(&self, method: &str, arg: &[u8], now: u64) -> Result<Vec<u8>, Reject> {
        let minting_account = Some(icrc1::Account { owner: GOVERNANCE, subaccount: None });
        if let Some(answer) = icrc1::query(&self.book, &TOKEN, key, minting_account, method, arg, now) {
            return answer;
        }
        match method {
            "account_balance" => {
                let args: AccountBalanceArgs = argument(ICP_LEDGER, method, arg)?;
                let account = account_id(&args.account).map_err(|why| trap(&why))?;
                reply(Tokens::of(self.book.balance(&account)))
            }
            "transfer_fee" => {
                #[derive(CandidType)]
                struct TransferFee {
                    transfer_fee: Tokens,
                }
                reply(TransferFee { transfer_fee: Tokens::of(self.book.fee()) })
            }
            other => Err(Reject::no_method(ICP_LEDGER, "query", other)),
        }
    }

    /// The transfer at `block`, if it is one the cycles minting canister
    /// may still be notified of.
    pub fn deposit(&self, block: u64) -> Option<Deposit> {
        self.deposits.get(&block).copied()
    }

    /// Burns what the cycles minting canister turned into cycles from the
    /// account `from`.
    pub fn burn(&mut self, from: [u8; 32], e8s: u128, now: u64) -> Result<u64, ledger::TransferError> {
        let minter = key(&ledger::Account::of(GOVERNANCE));
        let burn = ledger::Transfer { from, to: minter, amount: e8s, fee: None, memo: None, once: None };
        self.book.transfer(burn, now)
    }

    /// Sends what `deposit` brought to the cycles minting canister back to
    /// `to`, less the fee, as the cycles minting canister refunds.
    pub fn refund(
        &mut self,
        deposit: Deposit,
        to: ledger::Account,
        now: u64,
    ) -> Result<u64, ledger::TransferError> {
        let fee = self.book.fee();
        let amount = deposit
            .e8s
            .checked_sub(fee)
            .ok_or(ledger::TransferError::InsufficientFunds { balance: deposit.e8s })?;
        let refund = ledger::Transfer {
            from: deposit.to,
            to: key(&to),
            amount,
            fee: Some(fee),
            memo: None,
            once: None,
        };
        self.book.transfer(refund, now)
    }

    /// The legacy `transfer`; `Err` where the ICP ledger traps.
    fn transfer(
        &mut self,
        caller: Principal,
        args: TransferArgs,
        now: u64,
    ) -> Result<Result<u64, TransferError>, Reject> {
        let from = ledger::Account::new(caller, args.from_subaccount.as_deref())
            .ok_or_else(|| trap("from_subaccount is not 32 bytes long"))?;
        let to = account_id(&args.to).map_err(|why| trap(&why))?;
        let deposit = Deposit { to, e8s: args.amount.e8s.into(), memo: args.memo };
        let from = key(&from);
        // Deduplicated as the ICP ledger deduplicates it: by the transaction
        // it makes, which names accounts by identifier, so that a
        // `from_subaccount` of `null` and one of 32 zeros are one sender.
        let once = args.created_at_time.as_ref().map(|created| ledger::Once {
            created_at_time: created.timestamp_nanos,
            sent: ledger::Sent::new(
                caller,
                "transfer",
                &LegacyTransaction {
                    from: from.to_vec(),
                    to: to.to_vec(),
                    amount: args.amount,
                    fee: args.fee,
                    memo: args.memo,
                    created_at_time: created.timestamp_nanos,
                },
            ),
        });
        let transfer = ledger::Transfer {
            from,
            to,
            amount: args.amount.e8s.into(),
            fee: Some(args.fee.e8s.into()),
            memo: Some(args.memo.to_be_bytes().to_vec()),
            once,
        };
        use ledger::TransferError as E;
        let refused = match self.book.transfer(transfer, now) {
            Ok(block) => {
                if super::CMC_MEMOS.contains(&deposit.memo) {
                    self.deposits.insert(block, deposit);
                    if self.deposits.len() > KEPT_DEPOSITS {
                        self.deposits.pop_first();
                    }
                }
                return Ok(Ok(block));
            }
            Err(E::BadFee { expected_fee }) => {
                TransferError::BadFee { expected_fee: Tokens::of(expected_fee) }
            }
            Err(E::InsufficientFunds { balance }) => {
                TransferError::InsufficientFunds { balance: Tokens::of(balance) }
            }
            Err(E::TooOld) => TransferError::TxTooOld { allowed_window_nanos: ledger::TX_WINDOW_NS },
            Err(E::CreatedInFuture { .. }) => TransferError::TxCreatedInFuture,
            Err(E::Duplicate { duplicate_of }) => TransferError::TxDuplicate { duplicate_of },
            Err(E::BadBurn { min_burn_amount }) => {
                return Err(trap(&format!("a burn must be at least {min_burn_amount} e8s")));
            }
            Err(E::GenericError { message, .. }) => return Err(trap(&message)),
            Err(E::TemporarilyUnavailable) => {
                return Err(trap(
                    "too many transfers with a creation time within the window: try again later",
                ));
            }
        };
        Ok(Err(refused))
    }
}
