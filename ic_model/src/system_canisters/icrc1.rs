//! ICRC-1's interface over a ledger's book: the candid types the standard
//! defines, and the methods both ledgers answer alike.

use candid::{CandidType, Nat, Principal};
use serde::Deserialize;

use super::{Reject, argument, reply};
use crate::ledger::{self, Ledger};

/// ICRC-1's `Account`.
#[derive(CandidType, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Account {
    pub owner: Principal,
    pub subaccount: Option<Vec<u8>>,
}

impl Account {
    /// The book's account; `None` for a subaccount of another length than 32 bytes.
    pub fn to_ledger(&self) -> Option<ledger::Account> {
        ledger::Account::new(self.owner, self.subaccount.as_deref())
    }
}

/// ICRC-1's `TransferArg`.
#[derive(CandidType, Deserialize)]
pub struct TransferArg {
    pub from_subaccount: Option<Vec<u8>>,
    pub to: Account,
    pub amount: Nat,
    pub fee: Option<Nat>,
    pub memo: Option<Vec<u8>>,
    pub created_at_time: Option<u64>,
}

/// ICRC-1's `TransferError`.
#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub enum TransferError {
    BadFee { expected_fee: Nat },
    BadBurn { min_burn_amount: Nat },
    InsufficientFunds { balance: Nat },
    TooOld,
    CreatedInFuture { ledger_time: u64 },
    TemporarilyUnavailable,
    Duplicate { duplicate_of: Nat },
    GenericError { error_code: Nat, message: String },
}

impl From<ledger::TransferError> for TransferError {
    fn from(e: ledger::TransferError) -> Self {
        use ledger::TransferError as E;
        match e {
            E::BadFee { expected_fee } => Self::BadFee { expected_fee: expected_fee.into() },
            E::BadBurn { min_burn_amount } => Self::BadBurn { min_burn_amount: min_burn_amount.into() },
            E::InsufficientFunds { balance } => Self::InsufficientFunds { balance: balance.into() },
            E::TooOld => Self::TooOld,
            E::CreatedInFuture { ledger_time } => Self::CreatedInFuture { ledger_time },
            E::Duplicate { duplicate_of } => Self::Duplicate { duplicate_of: duplicate_of.into() },
            E::TemporarilyUnavailable => Self::TemporarilyUnavailable,
            E::GenericError { error_code, message } => {
                Self::GenericError { error_code: error_code.into(), message }
            }
        }
    }
}

/// A value of ICRC-1's `icrc1_metadata`.
#[derive(CandidType)]
enum MetadataValue {
    Nat(Nat),
    Text(String),
}

/// How a ledger describes its token.
pub struct Token {
    pub canister: Principal,
    pub symbol: &'static str,
    pub name: &'static str,
    pub decimals: u8,
}

/// An amount the book can hold; more than any ledger can hold is refused
/// as the real ledgers refuse it, for lack of funds.
pub fn amount(n: &Nat) -> Option<u128> {
    u128::try_from(&n.0).ok()
}

/// The ICRC-1 queries, over a book keyed by what `key` makes of an
/// account; `None` for another method.
pub fn query<K: Ord + Clone>(
    book: &Ledger<K>,
    token: &Token,
    key: impl Fn(&ledger::Account) -> K,
    minting_account: Option<Account>,
    method: &str,
    arg: &[u8],
) -> Option<Result<Vec<u8>, Reject>> {
    Some(match method {
        "icrc1_balance_of" => argument::<Account>(token.canister, method, arg).map(|account| {
            let balance = account.to_ledger().map_or(0, |account| book.balance(&key(&account)));
            candid::encode_one(Nat::from(balance)).expect("encodes")
        }),
        "icrc1_fee" => reply(Nat::from(book.fee())),
        "icrc1_decimals" => reply(token.decimals),
        "icrc1_symbol" => reply(token.symbol),
        "icrc1_name" => reply(token.name),
        "icrc1_total_supply" => reply(Nat::from(book.total_supply())),
        "icrc1_minting_account" => reply(minting_account),
        "icrc1_metadata" => reply(vec![
            ("icrc1:symbol".to_string(), MetadataValue::Text(token.symbol.into())),
            ("icrc1:name".to_string(), MetadataValue::Text(token.name.into())),
            ("icrc1:decimals".to_string(), MetadataValue::Nat(token.decimals.into())),
            ("icrc1:fee".to_string(), MetadataValue::Nat(book.fee().into())),
        ]),
        "icrc1_supported_standards" => {
            #[derive(CandidType)]
            struct Standard {
                name: String,
                url: String,
            }
            let icrc1 = Standard { name: "ICRC-1".into(), url: "https://github.com/dfinity/ICRC-1".into() };
            reply(vec![icrc1])
        }
        _ => return None,
    })
}

/// `icrc1_transfer` from `caller`, at `now`.
pub fn transfer<K: Ord + Clone>(
    book: &mut Ledger<K>,
    token: &Token,
    key: impl Fn(&ledger::Account) -> K,
    caller: Principal,
    arg: &[u8],
    now: u64,
) -> Result<Vec<u8>, Reject> {
    let arg: TransferArg = argument(token.canister, "icrc1_transfer", arg)?;
    reply(execute(book, key, caller, arg, now))
}

fn execute<K: Ord + Clone>(
    book: &mut Ledger<K>,
    key: impl Fn(&ledger::Account) -> K,
    caller: Principal,
    arg: TransferArg,
    now: u64,
) -> Result<Nat, TransferError> {
    let malformed = |what: &str| TransferError::GenericError {
        error_code: Nat::from(0u8),
        message: format!("{what} is not 32 bytes long"),
    };
    let from = ledger::Account::new(caller, arg.from_subaccount.as_deref())
        .ok_or_else(|| malformed("from_subaccount"))?;
    let to = arg.to.to_ledger().ok_or_else(|| malformed("to.subaccount"))?;
    let balance = book.balance(&key(&from));
    let Some(amount) = amount(&arg.amount) else {
        return Err(TransferError::InsufficientFunds { balance: balance.into() });
    };
    let fee = arg.fee.as_ref().map(amount_or_max);
    let transfer = ledger::Transfer {
        from: key(&from),
        to: key(&to),
        amount,
        fee,
        memo: arg.memo,
        created_at_time: arg.created_at_time,
    };
    Ok(book.transfer(transfer, now)?.into())
}

/// A fee too large to hold is no fee the ledger charges: refused as a bad fee.
fn amount_or_max(n: &Nat) -> u128 {
    amount(n).unwrap_or(u128::MAX)
}
