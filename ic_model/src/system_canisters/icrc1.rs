//! ICRC-1's and ICRC-2's interface over a ledger's book: the candid types
//! the standards define, and the methods both ledgers answer alike.

use candid::{CandidType, Nat, Principal};
use serde::Deserialize;

use super::{Reject, Rejects, argument, reply};
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

/// A refusal of the book's as the candid error `$target` names it: ICRC-2's
/// errors repeat ICRC-1's, and `$bad_burn` says what a refused burn becomes.
macro_rules! icrc1_refusal {
    ($refusal:expr, $target:ident, $bad_burn:expr) => {{
        use ledger::TransferError as E;
        match $refusal {
            E::BadFee { expected_fee } => $target::BadFee { expected_fee: expected_fee.into() },
            E::BadBurn { min_burn_amount } => $bad_burn(min_burn_amount),
            E::InsufficientFunds { balance } => $target::InsufficientFunds { balance: balance.into() },
            E::TooOld => $target::TooOld,
            E::CreatedInFuture { ledger_time } => $target::CreatedInFuture { ledger_time },
            E::Duplicate { duplicate_of } => $target::Duplicate { duplicate_of: duplicate_of.into() },
            E::TemporarilyUnavailable => $target::TemporarilyUnavailable,
            E::GenericError { error_code, message } => {
                $target::GenericError { error_code: error_code.into(), message }
            }
        }
    }};
}

impl From<ledger::TransferError> for TransferError {
    fn from(e: ledger::TransferError) -> Self {
        icrc1_refusal!(e, Self, |min_burn_amount: u128| Self::BadBurn {
            min_burn_amount: min_burn_amount.into()
        })
    }
}

/// ICRC-2's `ApproveArgs`.
#[derive(CandidType, Deserialize)]
pub struct ApproveArgs {
    pub from_subaccount: Option<Vec<u8>>,
    pub spender: Account,
    pub amount: Nat,
    pub expected_allowance: Option<Nat>,
    pub expires_at: Option<u64>,
    pub fee: Option<Nat>,
    pub memo: Option<Vec<u8>>,
    pub created_at_time: Option<u64>,
}

/// ICRC-2's `ApproveError`.
#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub enum ApproveError {
    BadFee { expected_fee: Nat },
    InsufficientFunds { balance: Nat },
    AllowanceChanged { current_allowance: Nat },
    Expired { ledger_time: u64 },
    TooOld,
    CreatedInFuture { ledger_time: u64 },
    Duplicate { duplicate_of: Nat },
    TemporarilyUnavailable,
    GenericError { error_code: Nat, message: String },
}

impl From<ledger::ApproveError> for ApproveError {
    fn from(e: ledger::ApproveError) -> Self {
        match e {
            ledger::ApproveError::Refused(refusal) => {
                // An approval burns nothing: the book never refuses one so.
                icrc1_refusal!(refusal, Self, |min_burn_amount| Self::GenericError {
                    error_code: Nat::from(0u8),
                    message: format!("a burn must be at least {min_burn_amount}"),
                })
            }
            ledger::ApproveError::AllowanceChanged { current_allowance } => {
                Self::AllowanceChanged { current_allowance: current_allowance.into() }
            }
            ledger::ApproveError::Expired { ledger_time } => Self::Expired { ledger_time },
        }
    }
}

/// ICRC-2's `AllowanceArgs`.
#[derive(CandidType, Deserialize)]
pub struct AllowanceArgs {
    pub account: Account,
    pub spender: Account,
}

/// ICRC-2's `Allowance`.
#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub struct Allowance {
    pub allowance: Nat,
    pub expires_at: Option<u64>,
}

/// ICRC-2's `TransferFromArgs`.
#[derive(CandidType, Deserialize)]
pub struct TransferFromArgs {
    pub spender_subaccount: Option<Vec<u8>>,
    pub from: Account,
    pub to: Account,
    pub amount: Nat,
    pub fee: Option<Nat>,
    pub memo: Option<Vec<u8>>,
    pub created_at_time: Option<u64>,
}

/// ICRC-2's `TransferFromError`: ICRC-1's errors and `InsufficientAllowance`,
/// a candid type of its own, as the standard declares it.
#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub enum TransferFromError {
    BadFee { expected_fee: Nat },
    BadBurn { min_burn_amount: Nat },
    InsufficientFunds { balance: Nat },
    InsufficientAllowance { allowance: Nat },
    TooOld,
    CreatedInFuture { ledger_time: u64 },
    Duplicate { duplicate_of: Nat },
    TemporarilyUnavailable,
    GenericError { error_code: Nat, message: String },
}

impl From<ledger::TransferFromError> for TransferFromError {
    fn from(e: ledger::TransferFromError) -> Self {
        match e {
            ledger::TransferFromError::Refused(refusal) => {
                icrc1_refusal!(refusal, Self, |min_burn_amount: u128| Self::BadBurn {
                    min_burn_amount: min_burn_amount.into()
                })
            }
            ledger::TransferFromError::InsufficientAllowance { allowance } => {
                Self::InsufficientAllowance { allowance: allowance.into() }
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

/// The ICRC-1 and ICRC-2 queries at `now`, over a book keyed by what `key`
/// makes of an account; `None` for another method.
pub fn query<K: Ord + Clone>(
    book: &Ledger<K>,
    token: &Token,
    key: impl Fn(&ledger::Account) -> K,
    minting_account: Option<Account>,
    method: &str,
    arg: &[u8],
    now: u64,
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
            let standard = |name: &str, url: &str| Standard { name: name.into(), url: url.into() };
            reply(vec![
                standard("ICRC-1", "https://github.com/dfinity/ICRC-1"),
                standard("ICRC-2", "https://github.com/dfinity/ICRC-1/tree/main/standards/ICRC-2"),
            ])
        }
        "icrc2_allowance" => argument::<AllowanceArgs>(token.canister, method, arg).map(|args| {
            // A malformed subaccount names no account: no allowance.
            let allowance = match (args.account.to_ledger(), args.spender.to_ledger()) {
                (Some(from), Some(spender)) => book.allowance(&key(&from), &key(&spender), now),
                _ => ledger::Allowance::default(),
            };
            let allowance =
                Allowance { allowance: allowance.amount.into(), expires_at: allowance.expires_at };
            candid::encode_one(allowance).expect("encodes")
        }),
        _ => return None,
    })
}

/// The ICRC-1 and ICRC-2 updates from `caller` at `now`: `icrc1_transfer`,
/// `icrc2_approve` and `icrc2_transfer_from`; `None` for another method.
pub fn update<K: Ord + Clone>(
    book: &mut Ledger<K>,
    token: &Token,
    key: impl Fn(&ledger::Account) -> K,
    caller: Principal,
    method: &str,
    arg: &[u8],
    now: u64,
) -> Option<Result<Vec<u8>, Reject>> {
    Some(match method {
        "icrc1_transfer" => argument(token.canister, method, arg)
            .and_then(|arg: TransferArg| reply(transfer(book, key, caller, arg, now))),
        "icrc2_approve" => argument(token.canister, method, arg).and_then(|arg: ApproveArgs| {
            // As the cycles ledger does, whatever the subaccounts.
            if arg.spender.owner == caller {
                return Err(Reject::trap(token.canister, "self approval is not allowed"));
            }
            reply(approve(book, key, caller, arg, now))
        }),
        "icrc2_transfer_from" => argument(token.canister, method, arg)
            .and_then(|arg: TransferFromArgs| reply(transfer_from(book, key, caller, arg, now))),
        _ => return None,
    })
}

fn transfer<K: Ord + Clone>(
    book: &mut Ledger<K>,
    key: impl Fn(&ledger::Account) -> K,
    caller: Principal,
    arg: TransferArg,
    now: u64,
) -> Result<Nat, TransferError> {
    let from = account(caller, arg.from_subaccount.as_deref(), "from_subaccount")?;
    let transfer = to_book(book, &key, from, &arg.to, &arg.amount, arg.fee.as_ref())?;
    let once = once(caller, "icrc1_transfer", &arg, arg.created_at_time);
    let transfer = ledger::Transfer { memo: arg.memo, once, ..transfer };
    Ok(book.transfer(transfer, now)?.into())
}

fn approve<K: Ord + Clone>(
    book: &mut Ledger<K>,
    key: impl Fn(&ledger::Account) -> K,
    caller: Principal,
    arg: ApproveArgs,
    now: u64,
) -> Result<Nat, ApproveError> {
    let from = account(caller, arg.from_subaccount.as_deref(), "from_subaccount")
        .map_err(ledger::ApproveError::from)?;
    let spender = account(arg.spender.owner, arg.spender.subaccount.as_deref(), "spender.subaccount")
        .map_err(ledger::ApproveError::from)?;
    let once = once(caller, "icrc2_approve", &arg, arg.created_at_time);
    let approve = ledger::Approve {
        from: key(&from),
        spender: key(&spender),
        // More than the book holds is as good as all it holds, as the
        // ICRC ledgers saturate it.
        amount: amount_or_max(&arg.amount),
        expected_allowance: arg.expected_allowance.as_ref().map(amount_or_max),
        expires_at: arg.expires_at,
        fee: arg.fee.as_ref().map(amount_or_max),
        memo: arg.memo,
        once,
    };
    Ok(book.approve(approve, now)?.into())
}

fn transfer_from<K: Ord + Clone>(
    book: &mut Ledger<K>,
    key: impl Fn(&ledger::Account) -> K,
    caller: Principal,
    arg: TransferFromArgs,
    now: u64,
) -> Result<Nat, TransferFromError> {
    let refused = ledger::TransferFromError::from;
    let spender =
        account(caller, arg.spender_subaccount.as_deref(), "spender_subaccount").map_err(refused)?;
    let from = account(arg.from.owner, arg.from.subaccount.as_deref(), "from.subaccount").map_err(refused)?;
    let transfer = to_book(book, &key, from, &arg.to, &arg.amount, arg.fee.as_ref()).map_err(refused)?;
    let once = once(caller, "icrc2_transfer_from", &arg, arg.created_at_time);
    let transfer = ledger::Transfer { memo: arg.memo, once, ..transfer };
    Ok(book.transfer_from(key(&spender), transfer, now)?.into())
}

/// An operation that names its creation time is deduplicated as it was
/// sent: `caller`'s `arg` to `method`, whose `null` and `opt [0; 32]`
/// subaccounts differ, as ICRC-1 asks (the book's module says why this is
/// not the ICP ledger's own choice).
fn once(
    caller: Principal,
    method: &str,
    arg: &impl CandidType,
    created_at_time: Option<u64>,
) -> Option<ledger::Once> {
    created_at_time
        .map(|created_at_time| ledger::Once { created_at_time, sent: ledger::Sent::new(caller, method, arg) })
}

/// The book's account of `owner`'s `subaccount`; `what` names the field
/// that holds it, for a subaccount of another length than 32 bytes.
fn account(
    owner: Principal,
    subaccount: Option<&[u8]>,
    what: &str,
) -> Result<ledger::Account, ledger::TransferError> {
    ledger::Account::new(owner, subaccount).ok_or_else(|| ledger::TransferError::GenericError {
        error_code: 0,
        message: format!("{what} is not 32 bytes long"),
    })
}

/// A transfer's candid fields as the book's transfer from `from`, without
/// a memo or a creation time.
fn to_book<K: Ord + Clone>(
    book: &Ledger<K>,
    key: impl Fn(&ledger::Account) -> K,
    from: ledger::Account,
    to: &Account,
    amount: &Nat,
    fee: Option<&Nat>,
) -> Result<ledger::Transfer<K>, ledger::TransferError> {
    let to = account(to.owner, to.subaccount.as_deref(), "to.subaccount")?;
    let from = key(&from);
    let Some(amount) = self::amount(amount) else {
        return Err(ledger::TransferError::InsufficientFunds { balance: book.balance(&from) });
    };
    let fee = fee.map(amount_or_max);
    Ok(ledger::Transfer { from, to: key(&to), amount, fee, memo: None, once: None })
}

/// A fee too large to hold is no fee the ledger charges: refused as a bad fee.
fn amount_or_max(n: &Nat) -> u128 {
    amount(n).unwrap_or(u128::MAX)
}
