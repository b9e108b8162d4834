//! A token ledger's book, as the IC's ledgers keep one (ICRC-1 and
//! ICRC-2): balances by account, transfers that pay a fee, mints from and
//! burns to the minting account, allowances (approvals and transfers by a
//! spender), and deduplication of the operations that name their creation
//! time. The ICP ledger keys its book by account identifier, the cycles
//! ledger by account: the book is generic over the key.
//!
//! **What is deduplicated.** An operation that names its creation time
//! ([`Once`]) is told apart from others by what its ledger says it is, a
//! [`Sent`], not by the book's keys: two operations are duplicates when
//! their `Sent` are equal. For ICRC-1's and ICRC-2's endpoints on both
//! ledgers (`icrc1_transfer`, `icrc2_approve`, `icrc2_transfer_from`) it
//! is the operation as sent: the caller, the method and the candid
//! argument, so that, as ICRC-1 asks, only structurally equal transactions
//! are duplicates. A transfer to `{ owner; subaccount = null }` and one to
//! `{ owner; subaccount = opt [0; 32] }` credit the same account, yet are
//! two transactions; so are one that names the fee and one that does not.
//! The ICP ledger's legacy `transfer` is deduplicated as the real ICP ledger
//! deduplicates it: by its transaction once converted (the sender's and the
//! receiver's account identifiers, the amount, the fee, the `u64` memo and
//! the creation time), so a `from_subaccount` of `null` or `opt [0; 32]`
//! makes no difference there (dfinity/ic: `send` in
//! `rs/ledger_suite/icp/ledger/src/main.rs` makes the transaction;
//! `apply_transaction` in
//! `rs/ledger_suite/common/ledger_canister_core/src/ledger.rs` looks up
//! `transaction.hash()` among the recent ones). The real ICP ledger keys
//! its `icrc1_transfer`, `icrc2_approve` and `icrc2_transfer_from` on the
//! converted transaction too (`icrc1_send_not_async` and
//! `icrc2_approve_not_async` there: account identifiers and, for a
//! transfer, the ledger's fee whatever fee was given), so it answers `Duplicate` where ICRC-1 and
//! DFINITY's ICRC-1 test suite (`icrc1:tx_deduplication`) expect a second
//! block. This stand-in follows ICRC-1 on those endpoints, the standard the
//! tools that call them are written against. Keys of different endpoints
//! never meet: a legacy `transfer` is never the duplicate of an
//! `icrc1_transfer`, which on the real ICP ledger it can be.

use candid::{CandidType, Principal};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// How long a transfer that names its creation time is remembered, so that
/// the same one sent again is refused (ICRC-1's `TX_WINDOW`).
pub const TX_WINDOW_NS: u64 = 24 * 3600 * 1_000_000_000;
/// How far a creation time may be ahead of the ledger's clock, or behind
/// the window (ICRC-1's `PERMITTED_DRIFT`).
pub const PERMITTED_DRIFT_NS: u64 = 120 * 1_000_000_000;
/// The longest memo the IC's ledgers take.
pub const MAX_MEMO_BYTES: usize = 32;
/// Operations with a creation time a ledger remembers within its window;
/// past it, it answers `TemporarilyUnavailable`, as the ICRC ledgers
/// throttle (`max_transactions_in_window`): no one can make it remember
/// without limit.
pub const MAX_TRANSFERS_IN_WINDOW: usize = 100_000;
/// Live allowances a ledger holds at most. Each approval costs its owner
/// the fee, yet without a cap anyone who pays could grow the book without
/// limit. Expired and spent allowances are pruned, so only live ones count;
/// past the cap an approval that would add one is refused with
/// `GenericError` rather than `TemporarilyUnavailable`, since live
/// allowances stay until their owners lower them and a retry soon would
/// fail alike. Changing or removing an existing one is always allowed.
pub const MAX_ALLOWANCES: usize = 100_000;

/// An ICRC-1 account: an owner and one of its subaccounts (none is the
/// all-zero one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Account {
    pub owner: Principal,
    pub subaccount: [u8; 32],
}

impl Account {
    /// The owner's default account.
    pub fn of(owner: Principal) -> Self {
        Self { owner, subaccount: [0; 32] }
    }

    /// An account as ICRC-1 names it; a subaccount of another length than
    /// 32 bytes is no account.
    pub fn new(owner: Principal, subaccount: Option<&[u8]>) -> Option<Self> {
        let subaccount = match subaccount {
            None => [0; 32],
            Some(bytes) => bytes.try_into().ok()?,
        };
        Some(Self { owner, subaccount })
    }
}

/// The ICP ledger's account identifier: `crc32 ‖ sha224("\x0Aaccount-id" ‖
/// owner ‖ subaccount)`.
pub fn account_identifier(account: &Account) -> [u8; 32] {
    use sha2::Digest;
    let hash = sha2::Sha224::new()
        .chain_update(b"\x0Aaccount-id")
        .chain_update(account.owner.as_slice())
        .chain_update(account.subaccount)
        .finalize();
    let mut id = [0; 32];
    id[..4].copy_from_slice(&crc32fast::hash(&hash).to_be_bytes());
    id[4..].copy_from_slice(&hash);
    id
}

/// What a ledger tells a deduplicated operation apart by: the operation
/// as its sender sent it (the module's doc says what each ledger puts in
/// it). Two operations are duplicates when these are equal.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Sent {
    caller: Principal,
    method: String,
    /// The candid argument as the ledger decoded it, encoded again: only
    /// its values count, not how the sender's agent encoded them.
    arg: Vec<u8>,
}

impl Sent {
    /// `arg`, as `caller` sent it to `method`.
    pub fn new(caller: Principal, method: &str, arg: &impl CandidType) -> Self {
        Self { caller, method: method.into(), arg: candid::encode_one(arg).expect("an argument encodes") }
    }
}

/// An operation's creation time, which makes it executed at most once
/// within the window ([`TX_WINDOW_NS`]), and what it is told apart by.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Once {
    /// When the sender made it, in ns since the epoch (ICRC-1's
    /// `created_at_time`).
    pub created_at_time: u64,
    pub sent: Sent,
}

/// A transfer as ICRC-1's `icrc1_transfer` asks for one, from and to keys
/// of the book.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transfer<K> {
    pub from: K,
    pub to: K,
    pub amount: u128,
    /// The fee the sender expects to pay; `None`: the ledger's.
    pub fee: Option<u128>,
    pub memo: Option<Vec<u8>>,
    /// `Some` makes it deduplicated.
    pub once: Option<Once>,
}

/// An approval as ICRC-2's `icrc2_approve` asks for one: `spender` may
/// then move up to `amount` (fees included) out of `from`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approve<K> {
    pub from: K,
    pub spender: K,
    pub amount: u128,
    /// The allowance the owner believes is current; another refuses it.
    pub expected_allowance: Option<u128>,
    /// When it lapses, in ns since the epoch.
    pub expires_at: Option<u64>,
    pub fee: Option<u128>,
    pub memo: Option<Vec<u8>>,
    /// `Some` makes it deduplicated.
    pub once: Option<Once>,
}

/// What a spender may still move out of an account, and until when.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allowance {
    pub amount: u128,
    pub expires_at: Option<u64>,
}

/// Why a transfer was refused (ICRC-1's `TransferError`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransferError {
    BadFee { expected_fee: u128 },
    BadBurn { min_burn_amount: u128 },
    InsufficientFunds { balance: u128 },
    TooOld,
    CreatedInFuture { ledger_time: u64 },
    Duplicate { duplicate_of: u64 },
    TemporarilyUnavailable,
    GenericError { error_code: u64, message: String },
}

/// Why an approval was refused (ICRC-2's `ApproveError`): for the checks
/// it shares with a transfer, as a transfer is refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ApproveError {
    Refused(TransferError),
    AllowanceChanged { current_allowance: u128 },
    Expired { ledger_time: u64 },
}

impl From<TransferError> for ApproveError {
    fn from(e: TransferError) -> Self {
        Self::Refused(e)
    }
}

/// Why a spender's transfer was refused (ICRC-2's `TransferFromError`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TransferFromError {
    Refused(TransferError),
    InsufficientAllowance { allowance: u128 },
}

impl From<TransferError> for TransferFromError {
    fn from(e: TransferError) -> Self {
        Self::Refused(e)
    }
}

/// Why an operation that names its creation time may not run now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unfit<V> {
    TooOld,
    CreatedInFuture {
        ledger_time: u64,
    },
    /// The same operation ran within the window: what it answered.
    Duplicate(V),
    /// The window holds [`MAX_TRANSFERS_IN_WINDOW`] operations already.
    Full,
}

impl From<Unfit<u64>> for TransferError {
    fn from(unfit: Unfit<u64>) -> Self {
        match unfit {
            Unfit::TooOld => Self::TooOld,
            Unfit::CreatedInFuture { ledger_time } => Self::CreatedInFuture { ledger_time },
            Unfit::Duplicate(duplicate_of) => Self::Duplicate { duplicate_of },
            Unfit::Full => Self::TemporarilyUnavailable,
        }
    }
}

/// The operations of type `T` that named their creation time and ran
/// within the window, with what each answered: one sent again gets
/// `Duplicate`. At most [`MAX_TRANSFERS_IN_WINDOW`] of them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Window<T: Ord, V> {
    answers: BTreeMap<T, V>,
    /// The same, by creation time and block: the order they are forgotten in.
    by_time: BTreeMap<(u64, u64), T>,
}

impl<T: Ord + Clone, V: Clone> Default for Window<T, V> {
    fn default() -> Self {
        Self { answers: BTreeMap::new(), by_time: BTreeMap::new() }
    }
}

impl<T: Ord + Clone, V: Clone> Window<T, V> {
    /// Whether `operation`, created at `created`, may run at `now`.
    pub fn admit(&mut self, operation: &T, created: u64, now: u64) -> Result<(), Unfit<V>> {
        if created.saturating_add(TX_WINDOW_NS + PERMITTED_DRIFT_NS) < now {
            return Err(Unfit::TooOld);
        }
        if created > now.saturating_add(PERMITTED_DRIFT_NS) {
            return Err(Unfit::CreatedInFuture { ledger_time: now });
        }
        self.forget_before(now);
        if let Some(answer) = self.answers.get(operation) {
            return Err(Unfit::Duplicate(answer.clone()));
        }
        if self.answers.len() >= MAX_TRANSFERS_IN_WINDOW {
            return Err(Unfit::Full);
        }
        Ok(())
    }

    /// Remembers that `operation`, created at `created`, ran in `block` and
    /// answered `answer`.
    pub fn remember(&mut self, operation: T, created: u64, block: u64, answer: V) {
        self.by_time.insert((created, block), operation.clone());
        self.answers.insert(operation, answer);
    }

    /// Forgets the operations too old to be taken again.
    fn forget_before(&mut self, now: u64) {
        let horizon = now.saturating_sub(TX_WINDOW_NS + PERMITTED_DRIFT_NS);
        while let Some(entry) = self.by_time.first_entry()
            && entry.key().0 < horizon
        {
            self.answers.remove(&entry.remove());
        }
    }
}

/// What a transfer is, once checked: its fee, and whether it mints or burns.
#[derive(Clone, Copy)]
struct Kind {
    fee: u128,
    mint: bool,
    burn: bool,
}

/// A ledger's book: who holds what, who may spend what of whose, the
/// blocks so far, and the recent operations that named their creation time.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ledger<K: Ord> {
    fee: u128,
    minter: Option<K>,
    balances: BTreeMap<K, u128>,
    total_supply: u128,
    blocks: u64,
    /// Deduplicated operations, with their block.
    recent: Window<Sent, u64>,
    /// Allowances by owner and spender; none is zero.
    allowances: BTreeMap<(K, K), Allowance>,
    /// The allowances that expire, by when: the order they are pruned in.
    expiries: BTreeSet<(u64, K, K)>,
}

impl<K: Ord + Clone> Ledger<K> {
    /// An empty ledger that charges `fee` per transfer; a `minter` mints
    /// (transfers from it) and burns (transfers to it). The cycles ledger
    /// has none: cycles come in and go out with canisters.
    pub fn new(fee: u128, minter: Option<K>) -> Self {
        Self {
            fee,
            minter,
            balances: BTreeMap::new(),
            total_supply: 0,
            blocks: 0,
            recent: Window::default(),
            allowances: BTreeMap::new(),
            expiries: BTreeSet::new(),
        }
    }

    pub fn fee(&self) -> u128 {
        self.fee
    }

    pub fn balance(&self, key: &K) -> u128 {
        self.balances.get(key).copied().unwrap_or(0)
    }

    pub fn total_supply(&self) -> u128 {
        self.total_supply
    }

    /// What `spender` may move out of `from` at `now`: nothing once expired.
    pub fn allowance(&self, from: &K, spender: &K, now: u64) -> Allowance {
        match self.allowances.get(&(from.clone(), spender.clone())) {
            Some(allowance) if allowance.expires_at.is_none_or(|at| at > now) => *allowance,
            _ => Allowance::default(),
        }
    }

    /// Blocks written so far; the next one gets this index.
    #[cfg(test)]
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Executes `transfer` at `now` (ns since the epoch); the index of its
    /// block. A mint (from the minter) and a burn (to it) pay no fee; any
    /// other transfer pays the ledger's, which a fee given must equal.
    pub fn transfer(&mut self, transfer: Transfer<K>, now: u64) -> Result<u64, TransferError> {
        let kind = self.check(&transfer)?;
        self.admit(transfer.once.as_ref(), now)?;
        self.move_funds(&transfer, kind)?;
        Ok(self.write_block(transfer.once))
    }

    /// Sets what `approve.spender` may move out of `approve.from` (zero
    /// removes it), charging the owner the fee; the index of its block.
    pub fn approve(&mut self, approve: Approve<K>, now: u64) -> Result<u64, ApproveError> {
        check_memo(approve.memo.as_ref())?;
        if self.is_minter(&approve.from) {
            return Err(generic("the minting account cannot approve").into());
        }
        if approve.from == approve.spender {
            return Err(generic("an account cannot approve itself").into());
        }
        if approve.fee.is_some_and(|given| given != self.fee) {
            return Err(TransferError::BadFee { expected_fee: self.fee }.into());
        }
        self.admit(approve.once.as_ref(), now)?;
        if approve.expires_at.is_some_and(|at| at <= now) {
            return Err(ApproveError::Expired { ledger_time: now });
        }
        let current = self.allowance(&approve.from, &approve.spender, now).amount;
        if approve.expected_allowance.is_some_and(|expected| expected != current) {
            return Err(ApproveError::AllowanceChanged { current_allowance: current });
        }
        let balance = self.balance(&approve.from);
        if balance < self.fee {
            return Err(TransferError::InsufficientFunds { balance }.into());
        }
        self.prune_expired(now);
        let pair = (approve.from.clone(), approve.spender.clone());
        if approve.amount > 0
            && !self.allowances.contains_key(&pair)
            && self.allowances.len() >= MAX_ALLOWANCES
        {
            return Err(generic(&format!(
                "the ledger holds {MAX_ALLOWANCES} allowances, its most: lower or remove one first"
            ))
            .into());
        }
        self.set_balance(approve.from, balance - self.fee);
        self.total_supply -= self.fee;
        self.set_allowance(pair, Allowance { amount: approve.amount, expires_at: approve.expires_at });
        Ok(self.write_block(approve.once))
    }

    /// Executes `transfer` on behalf of `spender`, from its allowance, which
    /// pays the amount and the fee; the index of its block. A spender that
    /// is the owner needs no allowance: a plain transfer.
    pub fn transfer_from(
        &mut self,
        spender: K,
        transfer: Transfer<K>,
        now: u64,
    ) -> Result<u64, TransferFromError> {
        if spender == transfer.from {
            return Ok(self.transfer(transfer, now)?);
        }
        let kind = self.check(&transfer)?;
        if kind.mint {
            // The minting account approves no one.
            return Err(TransferFromError::InsufficientAllowance { allowance: 0 });
        }
        self.admit(transfer.once.as_ref(), now)?;
        let allowance = self.allowance(&transfer.from, &spender, now);
        let spent = transfer.amount.checked_add(kind.fee).filter(|&spent| spent <= allowance.amount);
        let Some(spent) = spent else {
            return Err(TransferFromError::InsufficientAllowance { allowance: allowance.amount });
        };
        self.move_funds(&transfer, kind)?;
        let left = Allowance { amount: allowance.amount - spent, ..allowance };
        self.set_allowance((transfer.from, spender), left);
        Ok(self.write_block(transfer.once))
    }

    /// Credits `amount` to `to` from nowhere: a ledger's first balances, and
    /// what the cycles ledger gives back when a creation or withdrawal fails.
    /// The index of its block.
    pub fn mint(&mut self, to: K, amount: u128) -> u64 {
        let credit = self.balance(&to).saturating_add(amount);
        self.set_balance(to, credit);
        self.total_supply = self.total_supply.saturating_add(amount);
        self.next_block()
    }

    /// Takes `amount` plus the fee from `from`, as a burn that pays one:
    /// what the cycles ledger does to the cycles it sends to a canister.
    /// The index of its block.
    pub fn withdraw(&mut self, from: &K, amount: u128) -> Result<u64, TransferError> {
        let balance = self.balance(from);
        let debit = amount.checked_add(self.fee).filter(|&debit| debit <= balance);
        let Some(debit) = debit else { return Err(TransferError::InsufficientFunds { balance }) };
        self.set_balance(from.clone(), balance - debit);
        self.total_supply -= debit;
        Ok(self.next_block())
    }

    fn is_minter(&self, key: &K) -> bool {
        self.minter.as_ref() == Some(key)
    }

    /// What `transfer` is, or why it is refused whatever the balances.
    fn check(&self, transfer: &Transfer<K>) -> Result<Kind, TransferError> {
        check_memo(transfer.memo.as_ref())?;
        let (mint, burn) = (self.is_minter(&transfer.from), self.is_minter(&transfer.to));
        if mint && burn {
            return Err(generic("the minting account cannot send to itself"));
        }
        let fee = if mint || burn { 0 } else { self.fee };
        if transfer.fee.is_some_and(|given| given != fee) {
            return Err(TransferError::BadFee { expected_fee: fee });
        }
        if burn && transfer.amount < self.fee {
            return Err(TransferError::BadBurn { min_burn_amount: self.fee });
        }
        Ok(Kind { fee, mint, burn })
    }

    /// Refuses an operation that names a creation time it may not run at,
    /// or that ran within the window.
    fn admit(&mut self, once: Option<&Once>, now: u64) -> Result<(), TransferError> {
        match once {
            Some(once) => Ok(self.recent.admit(&once.sent, once.created_at_time, now)?),
            None => Ok(()),
        }
    }

    /// Moves what `transfer` moves, or refuses it for lack of funds.
    fn move_funds(&mut self, transfer: &Transfer<K>, kind: Kind) -> Result<(), TransferError> {
        if !kind.mint {
            let balance = self.balance(&transfer.from);
            let debit = transfer.amount.checked_add(kind.fee).filter(|&debit| debit <= balance);
            let Some(debit) = debit else { return Err(TransferError::InsufficientFunds { balance }) };
            self.set_balance(transfer.from.clone(), balance - debit);
            self.total_supply -= kind.fee;
        }
        if kind.burn {
            self.total_supply -= transfer.amount;
        } else {
            let credit = self.balance(&transfer.to).saturating_add(transfer.amount);
            self.set_balance(transfer.to.clone(), credit);
        }
        if kind.mint {
            self.total_supply = self.total_supply.saturating_add(transfer.amount);
        }
        Ok(())
    }

    /// The block of an operation that ran: remembered if it named its
    /// creation time.
    fn write_block(&mut self, once: Option<Once>) -> u64 {
        let block = self.next_block();
        if let Some(once) = once {
            self.recent.remember(once.sent, once.created_at_time, block, block);
        }
        block
    }

    fn next_block(&mut self) -> u64 {
        let block = self.blocks;
        self.blocks += 1;
        block
    }

    fn set_balance(&mut self, key: K, balance: u128) {
        if balance == 0 {
            self.balances.remove(&key);
        } else {
            self.balances.insert(key, balance);
        }
    }

    fn set_allowance(&mut self, pair: (K, K), allowance: Allowance) {
        let old = if allowance.amount == 0 {
            self.allowances.remove(&pair)
        } else {
            if let Some(at) = allowance.expires_at {
                self.expiries.insert((at, pair.0.clone(), pair.1.clone()));
            }
            self.allowances.insert(pair.clone(), allowance)
        };
        if let Some(at) = old.and_then(|old| old.expires_at)
            && Some(at) != allowance.expires_at.filter(|_| allowance.amount > 0)
        {
            self.expiries.remove(&(at, pair.0, pair.1));
        }
    }

    /// Removes the allowances expired at `now`.
    fn prune_expired(&mut self, now: u64) {
        while let Some((at, from, spender)) = self.expiries.first().cloned()
            && at <= now
        {
            self.expiries.pop_first();
            self.allowances.remove(&(from, spender));
        }
    }
}

fn check_memo(memo: Option<&Vec<u8>>) -> Result<(), TransferError> {
    if memo.is_some_and(|memo| memo.len() > MAX_MEMO_BYTES) {
        return Err(generic(&format!("the memo is longer than {MAX_MEMO_BYTES} bytes")));
    }
    Ok(())
}

fn generic(message: &str) -> TransferError {
    TransferError::GenericError { error_code: 0, message: message.into() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: u64 = 1_700_000_000_000_000_000;
    const FEE: u128 = 10_000;

    fn user(n: u8) -> Account {
        Account::of(Principal::from_slice(&[n; 29]))
    }

    fn minter() -> Account {
        Account::of(Principal::anonymous())
    }

    fn transfer(from: Account, to: Account, amount: u128) -> Transfer<Account> {
        Transfer { from, to, amount, fee: None, memo: None, once: None }
    }

    /// Made at `at`, and told apart from other operations by `what`.
    fn made(at: u64, what: &str) -> Option<Once> {
        Some(Once { created_at_time: at, sent: Sent::new(Principal::anonymous(), "test", &what.to_string()) })
    }

    fn funded() -> Ledger<Account> {
        let mut ledger = Ledger::new(FEE, Some(minter()));
        ledger.transfer(transfer(minter(), user(1), 1_000_000), NOW).unwrap();
        ledger
    }

    #[test]
    fn a_transfer_pays_the_fee_and_a_mint_or_burn_none() {
        let mut ledger = funded();
        assert_eq!(ledger.total_supply(), 1_000_000);
        assert_eq!(ledger.transfer(transfer(user(1), user(2), 100_000), NOW), Ok(1));
        assert_eq!((ledger.balance(&user(1)), ledger.balance(&user(2))), (890_000, 100_000));
        assert_eq!(ledger.total_supply(), 990_000, "the fee is burned");
        assert_eq!(ledger.transfer(transfer(user(2), minter(), 50_000), NOW), Ok(2));
        assert_eq!((ledger.balance(&user(2)), ledger.total_supply()), (50_000, 940_000));
        assert_eq!(ledger.blocks(), 3);
    }

    #[test]
    fn refusals_are_icrc1s_and_change_nothing() {
        let mut ledger = funded();
        let too_much = transfer(user(1), user(2), 1_000_000);
        assert_eq!(
            ledger.transfer(too_much, NOW),
            Err(TransferError::InsufficientFunds { balance: 1_000_000 })
        );
        let wrong_fee = Transfer { fee: Some(1), ..transfer(user(1), user(2), 10) };
        assert_eq!(ledger.transfer(wrong_fee, NOW), Err(TransferError::BadFee { expected_fee: FEE }));
        let fee_on_mint = Transfer { fee: Some(FEE), ..transfer(minter(), user(2), 10) };
        assert_eq!(ledger.transfer(fee_on_mint, NOW), Err(TransferError::BadFee { expected_fee: 0 }));
        let dust = transfer(user(1), minter(), FEE - 1);
        assert_eq!(ledger.transfer(dust, NOW), Err(TransferError::BadBurn { min_burn_amount: FEE }));
        let long_memo = Transfer { memo: Some(vec![0; 33]), ..transfer(user(1), user(2), 10) };
        assert!(matches!(ledger.transfer(long_memo, NOW), Err(TransferError::GenericError { .. })));
        assert_eq!(
            (ledger.balance(&user(1)), ledger.blocks(), ledger.total_supply()),
            (1_000_000, 1, 1_000_000)
        );
    }

    #[test]
    fn a_transfer_with_a_creation_time_executes_once_within_the_window() {
        let mut ledger = funded();
        let once = Transfer { once: made(NOW, "once"), ..transfer(user(1), user(2), 10) };
        assert_eq!(ledger.transfer(once.clone(), NOW), Ok(1));
        assert_eq!(ledger.transfer(once.clone(), NOW + 1), Err(TransferError::Duplicate { duplicate_of: 1 }));
        let other = Transfer { once: made(NOW, "another"), ..once.clone() };
        assert_eq!(ledger.transfer(other, NOW), Ok(2), "another transfer, though it moves the same");
        let later = NOW + TX_WINDOW_NS + PERMITTED_DRIFT_NS + 1;
        assert_eq!(ledger.transfer(once, later), Err(TransferError::TooOld));
        let ahead =
            Transfer { once: made(NOW + PERMITTED_DRIFT_NS + 1, "ahead"), ..transfer(user(1), user(2), 10) };
        assert_eq!(ledger.transfer(ahead, NOW), Err(TransferError::CreatedInFuture { ledger_time: NOW }));
        let plain = transfer(user(1), user(2), 10);
        assert_eq!(ledger.transfer(plain.clone(), NOW), Ok(3));
        assert_eq!(ledger.transfer(plain, NOW), Ok(4), "without a creation time, no deduplication");
    }

    /// ICRC-1: only structurally equal transactions are duplicates. A
    /// transfer to `{ owner; subaccount = null }` and one to `{ owner;
    /// subaccount = opt [0; 32] }` credit the same account, but are two
    /// transactions (DFINITY's suite checks it: `icrc1:tx_deduplication`).
    #[test]
    fn operations_are_told_apart_as_sent_not_by_the_accounts_they_credit() {
        /// ICRC-1's `Account` and a `TransferArg`'s fields that matter here.
        #[derive(CandidType)]
        struct Named {
            owner: Principal,
            subaccount: Option<Vec<u8>>,
        }
        #[derive(CandidType)]
        struct Arg {
            to: Named,
            amount: candid::Nat,
            memo: Option<Vec<u8>>,
            created_at_time: Option<u64>,
        }
        let mut ledger = funded();
        let (sender, owner) = (user(1).owner, user(2).owner);
        let arg = |subaccount| Arg {
            to: Named { owner, subaccount },
            amount: 10u8.into(),
            memo: Some(vec![0]),
            created_at_time: Some(NOW),
        };
        let to = |subaccount: Option<Vec<u8>>| Transfer {
            once: Some(Once {
                created_at_time: NOW,
                sent: Sent::new(sender, "icrc1_transfer", &arg(subaccount)),
            }),
            memo: Some(vec![0]),
            ..transfer(user(1), Account::of(owner), 10)
        };
        let (default, zeros) = (to(None), to(Some(vec![0; 32])));
        assert_eq!(Account::new(owner, None), Account::new(owner, Some(&[0; 32])), "one account");
        assert_eq!(ledger.transfer(default.clone(), NOW), Ok(1));
        assert_eq!(ledger.transfer(zeros.clone(), NOW), Ok(2), "not a duplicate of the first");
        assert_eq!(ledger.transfer(default, NOW), Err(TransferError::Duplicate { duplicate_of: 1 }));
        assert_eq!(ledger.transfer(zeros, NOW), Err(TransferError::Duplicate { duplicate_of: 2 }));
        assert_eq!(ledger.balance(&Account::of(owner)), 20);
    }

    #[test]
    fn a_withdrawal_burns_the_amount_and_the_fee() {
        let mut ledger = funded();
        assert_eq!(ledger.withdraw(&user(1), 500_000), Ok(1));
        assert_eq!((ledger.balance(&user(1)), ledger.total_supply()), (490_000, 490_000));
        assert_eq!(
            ledger.withdraw(&user(1), 490_000),
            Err(TransferError::InsufficientFunds { balance: 490_000 })
        );
    }

    #[test]
    fn the_account_identifier_is_the_icp_ledgers() {
        // The anonymous principal's default account, as the ICP ledger and
        // its tools (`dfx ledger account-id --of-principal 2vxsx-fae`) name it.
        let id = account_identifier(&Account::of(Principal::anonymous()));
        assert_eq!(hex::encode(id), "1c7a48ba6a562aa9eaa2481a9049cdf0433b9738c992d698c31d8abf89cadc79");
    }

    #[test]
    fn a_full_window_answers_temporarily_unavailable_and_forgets_in_time() {
        let mut ledger = funded();
        ledger.mint(user(1), u128::from(u64::MAX));
        let numbered = |n: usize, at| Transfer {
            memo: Some(n.to_be_bytes().to_vec()),
            once: made(at, &n.to_string()),
            ..transfer(user(1), user(2), 1)
        };
        for n in 0..MAX_TRANSFERS_IN_WINDOW {
            ledger.transfer(numbered(n, NOW), NOW).unwrap();
        }
        let one_more = numbered(MAX_TRANSFERS_IN_WINDOW, NOW);
        assert_eq!(ledger.transfer(one_more.clone(), NOW), Err(TransferError::TemporarilyUnavailable));
        let later = NOW + TX_WINDOW_NS + PERMITTED_DRIFT_NS + 1;
        let fresh = numbered(MAX_TRANSFERS_IN_WINDOW, later);
        assert!(ledger.transfer(fresh, later).is_ok(), "the window moved on");
        assert_eq!(ledger.recent.answers.len(), 1);
    }

    fn approval(from: Account, spender: Account, amount: u128) -> Approve<Account> {
        Approve {
            from,
            spender,
            amount,
            expected_allowance: None,
            expires_at: None,
            fee: None,
            memo: None,
            once: None,
        }
    }

    /// A spender of `user(1)`'s, told apart by its subaccount.
    fn spender(n: u32) -> Account {
        let mut subaccount = [0; 32];
        subaccount[..4].copy_from_slice(&n.to_be_bytes());
        Account { owner: user(2).owner, subaccount }
    }

    #[test]
    fn an_approval_charges_the_owner_and_a_spender_spends_it_with_the_fee() {
        let mut ledger = funded();
        assert_eq!(ledger.approve(approval(user(1), user(2), 300_000), NOW), Ok(1));
        assert_eq!(
            (ledger.balance(&user(1)), ledger.total_supply()),
            (990_000, 990_000),
            "the fee is burned"
        );
        assert_eq!(
            ledger.allowance(&user(1), &user(2), NOW),
            Allowance { amount: 300_000, expires_at: None }
        );
        assert_eq!(ledger.allowance(&user(2), &user(1), NOW).amount, 0, "one way");
        assert_eq!(ledger.transfer_from(user(2), transfer(user(1), user(3), 100_000), NOW), Ok(2));
        assert_eq!((ledger.balance(&user(1)), ledger.balance(&user(3))), (880_000, 100_000));
        assert_eq!(ledger.allowance(&user(1), &user(2), NOW).amount, 190_000, "the amount and the fee");
        assert_eq!(
            ledger.transfer_from(user(2), transfer(user(1), user(3), 190_000), NOW),
            Err(TransferFromError::InsufficientAllowance { allowance: 190_000 })
        );
        assert_eq!(
            ledger.transfer_from(user(3), transfer(user(1), user(3), 1), NOW),
            Err(TransferFromError::InsufficientAllowance { allowance: 0 }),
            "not approved"
        );
        assert_eq!(ledger.transfer_from(user(2), transfer(user(1), user(2), 180_000), NOW), Ok(3));
        assert!(ledger.allowances.is_empty(), "a spent allowance is removed");
        assert_eq!(ledger.approve(approval(user(1), user(2), 50_000), NOW), Ok(4));
        assert_eq!(ledger.approve(approval(user(1), user(2), 20_000), NOW), Ok(5));
        assert_eq!(ledger.allowance(&user(1), &user(2), NOW).amount, 20_000, "set, not added");
        assert_eq!(ledger.balance(&user(1)), 1_000_000 - 100_000 - 180_000 - 3 * FEE - 2 * FEE);
        // An owner that spends for itself needs no allowance: a transfer.
        assert_eq!(ledger.transfer_from(user(3), transfer(user(3), user(1), 10_000), NOW), Ok(6));
        assert_eq!(ledger.balance(&user(3)), 100_000 - 10_000 - FEE);
    }

    #[test]
    fn approval_refusals_are_icrc2s_and_change_nothing() {
        let mut ledger = funded();
        ledger.approve(approval(user(1), user(2), 500), NOW).unwrap();
        let before = ledger.clone();
        let changed = Approve { expected_allowance: Some(400), ..approval(user(1), user(2), 10) };
        assert_eq!(
            ledger.approve(changed, NOW),
            Err(ApproveError::AllowanceChanged { current_allowance: 500 })
        );
        let lapsed = Approve { expires_at: Some(NOW), ..approval(user(1), user(2), 10) };
        assert_eq!(ledger.approve(lapsed, NOW), Err(ApproveError::Expired { ledger_time: NOW }));
        assert_eq!(
            ledger.approve(approval(user(3), user(2), 10), NOW),
            Err(ApproveError::Refused(TransferError::InsufficientFunds { balance: 0 })),
            "the owner cannot pay the fee"
        );
        let wrong_fee = Approve { fee: Some(1), ..approval(user(1), user(2), 10) };
        assert_eq!(
            ledger.approve(wrong_fee, NOW),
            Err(ApproveError::Refused(TransferError::BadFee { expected_fee: FEE }))
        );
        for (from, spender) in [(minter(), user(2)), (user(1), user(1))] {
            let refused = ledger.approve(approval(from, spender, 10), NOW);
            assert!(
                matches!(refused, Err(ApproveError::Refused(TransferError::GenericError { .. }))),
                "{refused:?}"
            );
        }
        assert_eq!(
            ledger.transfer_from(user(2), transfer(minter(), user(2), 0), NOW),
            Err(TransferFromError::InsufficientAllowance { allowance: 0 }),
            "no one spends for the minter"
        );
        assert_eq!((ledger.blocks(), &ledger.balances), (before.blocks(), &before.balances));
        assert_eq!(ledger.allowances, before.allowances);
    }

    #[test]
    fn an_allowance_lapses_at_its_expiry_and_is_pruned() {
        let mut ledger = funded();
        let until = Approve { expires_at: Some(NOW + 10), ..approval(user(1), user(2), 50_000) };
        ledger.approve(until, NOW).unwrap();
        assert_eq!(ledger.allowance(&user(1), &user(2), NOW + 9).expires_at, Some(NOW + 10));
        assert_eq!(ledger.allowance(&user(1), &user(2), NOW + 10), Allowance::default());
        assert_eq!(
            ledger.transfer_from(user(2), transfer(user(1), user(2), 1), NOW + 10),
            Err(TransferFromError::InsufficientAllowance { allowance: 0 })
        );
        ledger.approve(approval(user(1), user(3), 1), NOW + 10).unwrap();
        assert_eq!(ledger.allowances.len(), 1, "the lapsed one is gone");
        assert_eq!(ledger.expiries.len(), 0);
    }

    #[test]
    fn approvals_and_spends_with_a_creation_time_execute_once() {
        let mut ledger = funded();
        let once = Approve { once: made(NOW, "approve"), ..approval(user(1), user(2), 50_000) };
        assert_eq!(ledger.approve(once.clone(), NOW), Ok(1));
        assert_eq!(
            ledger.approve(once, NOW + 1),
            Err(ApproveError::Refused(TransferError::Duplicate { duplicate_of: 1 }))
        );
        let spend = Transfer { once: made(NOW, "spend"), ..transfer(user(1), user(3), 10) };
        assert_eq!(ledger.transfer_from(user(2), spend.clone(), NOW), Ok(2));
        assert_eq!(
            ledger.transfer_from(user(2), spend.clone(), NOW),
            Err(TransferFromError::Refused(TransferError::Duplicate { duplicate_of: 2 }))
        );
        let own = Transfer { once: made(NOW, "the owner's own"), ..spend };
        assert_eq!(ledger.transfer(own, NOW), Ok(3), "the owner's own transfer is another operation");
        assert_eq!(ledger.allowance(&user(1), &user(2), NOW).amount, 50_000 - 10 - FEE);
    }

    #[test]
    fn live_allowances_are_capped_and_lapsed_ones_make_room() {
        let mut ledger = funded();
        ledger.mint(user(1), u128::from(u64::MAX));
        for n in 0..MAX_ALLOWANCES as u32 {
            let short = Approve { expires_at: Some(NOW + 1), ..approval(user(1), spender(n), 1) };
            ledger.approve(short, NOW).unwrap();
        }
        let one_more = approval(user(1), spender(u32::MAX), 1);
        let refused = ledger.approve(one_more.clone(), NOW);
        assert!(
            matches!(&refused, Err(ApproveError::Refused(TransferError::GenericError { message, .. })) if message.contains("100000 allowances")),
            "{refused:?}"
        );
        assert!(ledger.approve(approval(user(1), spender(7), 5), NOW).is_ok(), "changing one is allowed");
        assert!(ledger.approve(approval(user(1), spender(8), 0), NOW).is_ok(), "so is removing one");
        assert!(ledger.approve(one_more, NOW + 1).is_ok(), "the lapsed ones are pruned");
        assert_eq!(ledger.allowances.len(), 2);
        assert!(ledger.expiries.is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Whatever transfers are asked for (mints, burns, transfers sent
        /// again), the balances add up to the supply, and every refusal
        /// leaves the book as it was.
        #[test]
        fn balances_add_up_to_the_supply(
            steps in prop::collection::vec((0u8..5, 0u8..5, 0u128..400_000, any::<bool>(), prop::option::of(0u64..3)), 1..40)
        ) {
            let mut ledger = funded();
            let key = |n: u8| if n == 4 { minter() } else { user(n) };
            for (from, to, amount, as_minter, created) in steps {
                let from = if as_minter { minter() } else { key(from) };
                let what = format!("{from:?} {to} {amount}");
                let once = created.and_then(|c| made(NOW - c, &what));
                let sent = Transfer { once, ..transfer(from, key(to), amount) };
                let before = ledger.clone();
                let result = ledger.transfer(sent, NOW);
                let held: u128 = (0..4).map(|n| ledger.balance(&user(n))).sum();
                prop_assert_eq!(held, ledger.total_supply());
                if result.is_err() {
                    prop_assert_eq!(ledger.blocks(), before.blocks());
                    prop_assert_eq!(&ledger.balances, &before.balances);
                }
            }
        }

        /// Whatever approvals and spends are asked for, and whenever, the
        /// balances add up to the supply, no allowance held is zero or
        /// untracked in the expiry index, a spend lowers the allowance by
        /// its amount and fee, and every refusal leaves the book as it was.
        #[test]
        fn allowances_stay_consistent_with_the_balances(
            steps in prop::collection::vec(
                (0u8..3, 0u8..4, 0u8..4, 0u128..300_000, prop::option::of(0u64..20), prop::option::of(0u128..300_000), 0u64..5),
                1..40,
            )
        ) {
            let mut ledger = funded();
            ledger.transfer(transfer(minter(), user(2), 500_000), NOW).unwrap();
            let mut now = NOW;
            for (what, a, b, amount, expiry, expected, wait) in steps {
                now += wait;
                let before = ledger.clone();
                let (a, b) = (user(a), user(b));
                let allowance_before = ledger.allowance(&b, &a, now).amount;
                let ok = match what {
                    0 => {
                        let asked = Approve {
                            expires_at: expiry.map(|e| NOW + e),
                            expected_allowance: expected,
                            ..approval(a, b, amount)
                        };
                        ledger.approve(asked, now).is_ok()
                    }
                    1 => {
                        // `a` spends from `b`.
                        let spent = ledger.transfer_from(a, transfer(b, user(3), amount), now).is_ok();
                        if spent && a != b {
                            prop_assert_eq!(ledger.allowance(&b, &a, now).amount, allowance_before - amount - FEE);
                        }
                        spent
                    }
                    _ => ledger.transfer(transfer(a, b, amount), now).is_ok(),
                };
                let held: u128 = (0..4).map(|n| ledger.balance(&user(n))).sum();
                prop_assert_eq!(held, ledger.total_supply());
                prop_assert!(ledger.allowances.values().all(|allowance| allowance.amount > 0));
                let expiring: BTreeSet<_> = ledger
                    .allowances
                    .iter()
                    .filter_map(|((from, spender), allowance)| allowance.expires_at.map(|at| (at, *from, *spender)))
                    .collect();
                prop_assert_eq!(&expiring, &ledger.expiries);
                if !ok {
                    prop_assert_eq!(ledger.blocks(), before.blocks());
                    prop_assert_eq!(&ledger.balances, &before.balances);
                    prop_assert_eq!(&ledger.allowances, &before.allowances);
                }
            }
        }
    }
}
