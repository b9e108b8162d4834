//! The cycles ledger's stand-in: ICRC-1 balances of cycles by account,
//! ICRC-2 allowances (the real cycles ledger supports ICRC-2 too),
//! `create_canister` paid from the caller's balance, and `withdraw`, which
//! tops up a canister. Both of the latter are deduplicated, as the real
//! ledger's are, when they name their creation time.

use candid::{CandidType, Nat, Principal};
use serde::{Deserialize, Serialize};

use super::icrc1::{self, Token, amount};
use super::{ANONYMOUS_CYCLES, CYCLES_LEDGER, Host, Reject, Rejects, argument, as_update, reply};
use crate::ledger::{self, Ledger, Unfit, Window};

/// The cycles ledger's fee: 100M cycles a block.
pub const CYCLES_LEDGER_FEE: u128 = 100_000_000;

const TOKEN: Token =
    Token { canister: CYCLES_LEDGER, symbol: "TCYCLES", name: "Trillion Cycles", decimals: 12 };

/// `create_canister`'s argument, as icp-cli sends it.
#[derive(CandidType, Deserialize)]
struct CreateCanisterArgs {
    from_subaccount: Option<Vec<u8>>,
    created_at_time: Option<u64>,
    amount: Nat,
    creation_args: Option<CreationArgs>,
}

#[derive(CandidType, Deserialize)]
struct CreationArgs {
    subnet_selection: Option<SubnetSelection>,
    settings: Option<ic_management_canister_types::CanisterSettings>,
}

#[derive(CandidType, Deserialize)]
enum SubnetSelection {
    Filter { subnet_type: Option<String> },
    Subnet { subnet: Principal },
}

#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub(super) enum CreateCanisterError {
    GenericError { message: String, error_code: Nat },
    TemporarilyUnavailable,
    Duplicate { duplicate_of: Nat, canister_id: Option<Principal> },
    CreatedInFuture { ledger_time: u64 },
    FailedToCreate { error: String, refund_block: Option<Nat>, fee_block: Option<Nat> },
    TooOld,
    InsufficientFunds { balance: Nat },
}

#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub(super) struct CreateCanisterSuccess {
    pub block_id: Nat,
    pub canister_id: Principal,
}

/// `deposit`'s argument: a canister sends cycles with it.
#[derive(CandidType, Deserialize)]
struct DepositArgs {
    to: icrc1::Account,
    memo: Option<Vec<u8>>,
}

#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub(super) struct DepositResult {
    pub balance: Nat,
    pub block_index: Nat,
}

#[derive(CandidType, Deserialize)]
struct WithdrawArgs {
    amount: Nat,
    from_subaccount: Option<Vec<u8>>,
    to: Principal,
    created_at_time: Option<u64>,
}

#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub(super) enum RejectionCode {
    NoError,
    CanisterError,
    SysTransient,
    DestinationInvalid,
    Unknown,
    SysFatal,
    CanisterReject,
}

#[derive(CandidType, Deserialize, Debug, PartialEq, Eq)]
pub(super) enum WithdrawError {
    GenericError { message: String, error_code: Nat },
    TemporarilyUnavailable,
    FailedToWithdraw { fee_block: Option<Nat>, rejection_code: RejectionCode, rejection_reason: String },
    Duplicate { duplicate_of: Nat },
    BadFee { expected_fee: Nat },
    InvalidReceiver { receiver: Principal },
    CreatedInFuture { ledger_time: u64 },
    TooOld,
    InsufficientFunds { balance: Nat },
}

/// The cycles ledger's book, by account. It has no minting account: cycles
/// come in with canisters and go out to them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CyclesLedger {
    book: Ledger<ledger::Account>,
    /// The `create_canister` and `withdraw` calls that named their creation
    /// time, within the window (as bounded as the book's transfers).
    requests: Window<Request, Executed>,
}

/// A `create_canister` or `withdraw` call as it is deduplicated: who made
/// it, and its argument (encoded again, so that only its values count).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct Request {
    caller: Principal,
    method: Method,
    arg: Vec<u8>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Method {
    CreateCanister,
    Withdraw,
}

/// What a deduplicated call did: the block that took its cycles, and the
/// canister it created (none if the creation failed and was refunded).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Executed {
    block: u64,
    canister: Option<Principal>,
}

fn key(account: &ledger::Account) -> ledger::Account {
    *account
}

impl CyclesLedger {
    /// The anonymous principal holds [`ANONYMOUS_CYCLES`].
    pub fn new() -> Self {
        let mut book = Ledger::new(CYCLES_LEDGER_FEE, None);
        book.mint(ledger::Account::of(Principal::anonymous()), ANONYMOUS_CYCLES);
        Self { book, requests: Window::default() }
    }

    pub fn update(
        &mut self,
        host: &mut dyn Host,
        caller: Principal,
        method: &str,
        arg: &[u8],
        now: u64,
    ) -> Result<Vec<u8>, Reject> {
        if let Some(answer) = icrc1::update(&mut self.book, &TOKEN, key, caller, method, arg, now) {
            return answer;
        }
        match method {
            "create_canister" => {
                let args: CreateCanisterArgs = argument(CYCLES_LEDGER, method, arg)?;
                reply(self.create_canister(host, caller, args, now))
            }
            "withdraw" => {
                let args: WithdrawArgs = argument(CYCLES_LEDGER, method, arg)?;
                reply(self.withdraw(host, caller, args, now))
            }
            _ => as_update(self.query(method, arg, now), CYCLES_LEDGER, method),
        }
    }

    pub fn query(&self, method: &str, arg: &[u8], now: u64) -> Result<Vec<u8>, Reject> {
        icrc1::query(&self.book, &TOKEN, key, None, method, arg, now)
            .unwrap_or_else(|| Err(Reject::no_method(CYCLES_LEDGER, "query", method)))
    }

    /// `deposit` from a canister that attached `cycles`: all of them are
    /// accepted and credited to `to`, less the fee; the reply, and the
    /// cycles accepted. Like the cycles ledger, it traps (accepting none)
    /// on cycles that do not pay the fee or a memo over 32 bytes.
    pub fn deposit_call(&mut self, arg: &[u8], cycles: u128) -> (Result<Vec<u8>, Reject>, u128) {
        let trap = |why: String| (Err(Reject::trapped(CYCLES_LEDGER, &format!("deposit: {why}"))), 0);
        let args: DepositArgs = match argument(CYCLES_LEDGER, "deposit", arg) {
            Ok(args) => args,
            Err(reject) => return (Err(reject), 0),
        };
        if args.memo.as_ref().is_some_and(|memo| memo.len() > ledger::MAX_MEMO_BYTES) {
            return trap(format!("the memo is longer than {} bytes", ledger::MAX_MEMO_BYTES));
        }
        let Some(to) = args.to.to_ledger() else { return trap("the subaccount is not 32 bytes long".into()) };
        match self.deposit(to, cycles) {
            Ok((block, balance)) => {
                (reply(DepositResult { balance: balance.into(), block_index: block.into() }), cycles)
            }
            Err(why) => trap(why),
        }
    }

    /// Credits `amount` less the fee to `to`, as the cycles ledger's
    /// `deposit` does with the cycles the cycles minting canister sends it;
    /// the block and the new balance.
    pub fn deposit(&mut self, to: ledger::Account, amount: u128) -> Result<(u64, u128), String> {
        let credit = amount.checked_sub(CYCLES_LEDGER_FEE).filter(|&credit| credit > 0).ok_or_else(|| {
            format!("{amount} cycles do not pay the cycles ledger's fee of {CYCLES_LEDGER_FEE}")
        })?;
        let block = self.book.mint(to, credit);
        Ok((block, self.book.balance(&to)))
    }

    /// Takes `amount` and the fee from `from`; the fee's block.
    fn take(&mut self, from: &ledger::Account, amount: u128) -> Result<u64, u128> {
        self.book.withdraw(from, amount).map_err(|_| self.book.balance(from))
    }

    /// Gives back what a failed creation or withdrawal took (the fee is
    /// kept, as the cycles ledger keeps it); the refund's block.
    fn refund(&mut self, to: ledger::Account, amount: u128) -> u64 {
        self.book.mint(to, amount)
    }

    /// The request `arg` of `caller`'s to `method`, if it names its creation
    /// time, once the window admits it at `now`: a call that ran within the
    /// window gets what it did.
    fn admit(
        &mut self,
        caller: Principal,
        method: Method,
        arg: &impl CandidType,
        created_at_time: Option<u64>,
        now: u64,
    ) -> Result<Option<(Request, u64)>, Unfit<Executed>> {
        let Some(created) = created_at_time else { return Ok(None) };
        let request = Request { caller, method, arg: candid::encode_one(arg).expect("an argument encodes") };
        self.requests.admit(&request, created, now)?;
        Ok(Some((request, created)))
    }

    /// Remembers that `request` (if deduplicated) did `executed`.
    fn remember(&mut self, request: Option<(Request, u64)>, executed: Executed) {
        if let Some((request, created)) = request {
            self.requests.remember(request, created, executed.block, executed);
        }
    }

    fn create_canister(
        &mut self,
        host: &mut dyn Host,
        caller: Principal,
        args: CreateCanisterArgs,
        now: u64,
    ) -> Result<CreateCanisterSuccess, CreateCanisterError> {
        let generic =
            |message: String| CreateCanisterError::GenericError { message, error_code: Nat::from(0u8) };
        let from = ledger::Account::new(caller, args.from_subaccount.as_deref())
            .ok_or_else(|| generic("from_subaccount is not 32 bytes long".into()))?;
        let request = self.admit(caller, Method::CreateCanister, &args, args.created_at_time, now).map_err(
            |unfit| match unfit {
                Unfit::TooOld => CreateCanisterError::TooOld,
                Unfit::CreatedInFuture { ledger_time } => {
                    CreateCanisterError::CreatedInFuture { ledger_time }
                }
                Unfit::Duplicate(done) => CreateCanisterError::Duplicate {
                    duplicate_of: done.block.into(),
                    canister_id: done.canister,
                },
                Unfit::Full => CreateCanisterError::TemporarilyUnavailable,
            },
        )?;
        let balance = self.book.balance(&from);
        let amount =
            amount(&args.amount).ok_or(CreateCanisterError::InsufficientFunds { balance: balance.into() })?;
        let creation = args.creation_args.unwrap_or(CreationArgs { subnet_selection: None, settings: None });
        let subnets = host.subnets();
        let subnet = match creation.subnet_selection {
            Some(SubnetSelection::Subnet { subnet }) if !subnets.contains(&subnet) => {
                return Err(CreateCanisterError::FailedToCreate {
                    error: format!("subnet {subnet} is not part of this network"),
                    refund_block: None,
                    fee_block: None,
                });
            }
            Some(SubnetSelection::Subnet { subnet }) => subnet,
            Some(SubnetSelection::Filter { subnet_type: Some(kind) }) if kind != "application" => {
                return Err(CreateCanisterError::FailedToCreate {
                    error: format!("this network has only application subnets, not {kind}"),
                    refund_block: None,
                    fee_block: None,
                });
            }
            _ => subnets[0],
        };
        let mut settings = creation.settings.unwrap_or_default();
        // The cycles ledger makes the caller the controller when none is named.
        settings.controllers.get_or_insert_with(|| vec![caller]);
        let fee_block = self
            .take(&from, amount)
            .map_err(|balance| CreateCanisterError::InsufficientFunds { balance: balance.into() })?;
        let created = host.create_canister(subnet, settings, amount);
        self.remember(request, Executed { block: fee_block, canister: created.as_ref().ok().copied() });
        match created {
            Ok(canister_id) => Ok(CreateCanisterSuccess { block_id: fee_block.into(), canister_id }),
            Err(error) => {
                let refund_block = self.refund(from, amount);
                Err(CreateCanisterError::FailedToCreate {
                    error,
                    refund_block: Some(refund_block.into()),
                    fee_block: Some(fee_block.into()),
                })
            }
        }
    }

    fn withdraw(
        &mut self,
        host: &mut dyn Host,
        caller: Principal,
        args: WithdrawArgs,
        now: u64,
    ) -> Result<Nat, WithdrawError> {
        let generic = |message: String| WithdrawError::GenericError { message, error_code: Nat::from(0u8) };
        let from = ledger::Account::new(caller, args.from_subaccount.as_deref())
            .ok_or_else(|| generic("from_subaccount is not 32 bytes long".into()))?;
        if args.amount == 0u8 {
            return Err(generic("cannot withdraw 0 cycles".into()));
        }
        // Cycles go to canisters only: a self-authenticating id is refused
        // before any fee is taken.
        if args.to.as_slice().last() == Some(&2) {
            return Err(WithdrawError::InvalidReceiver { receiver: args.to });
        }
        let request =
            self.admit(caller, Method::Withdraw, &args, args.created_at_time, now).map_err(|unfit| {
                match unfit {
                    Unfit::TooOld => WithdrawError::TooOld,
                    Unfit::CreatedInFuture { ledger_time } => WithdrawError::CreatedInFuture { ledger_time },
                    Unfit::Duplicate(done) => WithdrawError::Duplicate { duplicate_of: done.block.into() },
                    Unfit::Full => WithdrawError::TemporarilyUnavailable,
                }
            })?;
        let balance = self.book.balance(&from);
        let amount =
            amount(&args.amount).ok_or(WithdrawError::InsufficientFunds { balance: balance.into() })?;
        let block = self
            .take(&from, amount)
            .map_err(|balance| WithdrawError::InsufficientFunds { balance: balance.into() })?;
        let deposited = host.deposit_cycles(args.to, amount);
        self.remember(request, Executed { block, canister: None });
        match deposited {
            Ok(()) => Ok(block.into()),
            Err(rejection_reason) => {
                self.refund(from, amount);
                Err(WithdrawError::FailedToWithdraw {
                    fee_block: Some(block.into()),
                    rejection_code: RejectionCode::DestinationInvalid,
                    rejection_reason,
                })
            }
        }
    }
}
