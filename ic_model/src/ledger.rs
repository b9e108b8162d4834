//! A token ledger's book, as the IC's ledgers keep one (ICRC-1): balances
//! by account, transfers that pay a fee, mints from and burns to the
//! minting account, and deduplication of the transfers that name their
//! creation time. The ICP ledger keys its book by account identifier, the
//! cycles ledger by account: the book is generic over the key.

use candid::Principal;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How long a transfer that names its creation time is remembered, so that
/// the same one sent again is refused (ICRC-1's `TX_WINDOW`).
pub const TX_WINDOW_NS: u64 = 24 * 3600 * 1_000_000_000;
/// How far a creation time may be ahead of the ledger's clock, or behind
/// the window (ICRC-1's `PERMITTED_DRIFT`).
pub const PERMITTED_DRIFT_NS: u64 = 120 * 1_000_000_000;
/// The longest memo the IC's ledgers take.
pub const MAX_MEMO_BYTES: usize = 32;
/// Transfers with a creation time a ledger remembers within its window;
/// past it, it answers `TemporarilyUnavailable`, as the ICRC ledgers
/// throttle (`max_transactions_in_window`): no one can make it remember
/// without limit.
pub const MAX_TRANSFERS_IN_WINDOW: usize = 100_000;

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

/// A transfer as ICRC-1's `icrc1_transfer` asks for one, from and to keys
/// of the book.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Transfer<K> {
    pub from: K,
    pub to: K,
    pub amount: u128,
    /// The fee the sender expects to pay; `None`: the ledger's.
    pub fee: Option<u128>,
    pub memo: Option<Vec<u8>>,
    /// When the sender made it, in ns since the epoch; `Some` makes it
    /// deduplicated.
    pub created_at_time: Option<u64>,
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

/// A ledger's book: who holds what, the blocks so far, and the recent
/// transfers that named their creation time.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Ledger<K: Ord> {
    fee: u128,
    minter: Option<K>,
    balances: BTreeMap<K, u128>,
    total_supply: u128,
    blocks: u64,
    /// Deduplicated transfers, with their block.
    recent: BTreeMap<Transfer<K>, u64>,
    /// The same, by creation time and block: the order they are forgotten in.
    recent_by_time: BTreeMap<(u64, u64), Transfer<K>>,
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
            recent: BTreeMap::new(),
            recent_by_time: BTreeMap::new(),
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

    /// Blocks written so far; the next one gets this index.
    #[cfg(test)]
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Executes `transfer` at `now` (ns since the epoch); the index of its
    /// block. A mint (from the minter) and a burn (to it) pay no fee; any
    /// other transfer pays the ledger's, which a fee given must equal.
    pub fn transfer(&mut self, transfer: Transfer<K>, now: u64) -> Result<u64, TransferError> {
        if transfer.memo.as_ref().is_some_and(|memo| memo.len() > MAX_MEMO_BYTES) {
            return Err(TransferError::GenericError {
                error_code: 0,
                message: format!("the memo is longer than {MAX_MEMO_BYTES} bytes"),
            });
        }
        let is_minter = |key: &K| self.minter.as_ref() == Some(key);
        let (mint, burn) = (is_minter(&transfer.from), is_minter(&transfer.to));
        if mint && burn {
            return Err(TransferError::GenericError {
                error_code: 0,
                message: "the minting account cannot send to itself".into(),
            });
        }
        let fee = if mint || burn { 0 } else { self.fee };
        if transfer.fee.is_some_and(|given| given != fee) {
            return Err(TransferError::BadFee { expected_fee: fee });
        }
        if burn && transfer.amount < self.fee {
            return Err(TransferError::BadBurn { min_burn_amount: self.fee });
        }
        if let Some(created) = transfer.created_at_time {
            if created.saturating_add(TX_WINDOW_NS + PERMITTED_DRIFT_NS) < now {
                return Err(TransferError::TooOld);
            }
            if created > now.saturating_add(PERMITTED_DRIFT_NS) {
                return Err(TransferError::CreatedInFuture { ledger_time: now });
            }
            self.forget_before(now);
            if let Some(&duplicate_of) = self.recent.get(&transfer) {
                return Err(TransferError::Duplicate { duplicate_of });
            }
            if self.recent.len() >= MAX_TRANSFERS_IN_WINDOW {
                return Err(TransferError::TemporarilyUnavailable);
            }
        }
        if !mint {
            let balance = self.balance(&transfer.from);
            let debit = transfer.amount.checked_add(fee).filter(|&debit| debit <= balance);
            let Some(debit) = debit else { return Err(TransferError::InsufficientFunds { balance }) };
            self.set_balance(transfer.from.clone(), balance - debit);
            self.total_supply -= fee;
        }
        if burn {
            self.total_supply -= transfer.amount;
        } else {
            let credit = self.balance(&transfer.to).saturating_add(transfer.amount);
            self.set_balance(transfer.to.clone(), credit);
        }
        if mint {
            self.total_supply = self.total_supply.saturating_add(transfer.amount);
        }
        let block = self.blocks;
        self.blocks += 1;
        if let Some(created) = transfer.created_at_time {
            self.recent_by_time.insert((created, block), transfer.clone());
            self.recent.insert(transfer, block);
        }
        Ok(block)
    }

    /// Credits `amount` to `to` from nowhere: a ledger's first balances, and
    /// what the cycles ledger gives back when a creation or withdrawal fails.
    /// The index of its block.
    pub fn mint(&mut self, to: K, amount: u128) -> u64 {
        let credit = self.balance(&to).saturating_add(amount);
        self.set_balance(to, credit);
        self.total_supply = self.total_supply.saturating_add(amount);
        let block = self.blocks;
        self.blocks += 1;
        block
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
        let block = self.blocks;
        self.blocks += 1;
        Ok(block)
    }

    fn set_balance(&mut self, key: K, balance: u128) {
        if balance == 0 {
            self.balances.remove(&key);
        } else {
            self.balances.insert(key, balance);
        }
    }

    /// Forgets the deduplicated transfers too old to be taken again.
    fn forget_before(&mut self, now: u64) {
        let horizon = now.saturating_sub(TX_WINDOW_NS + PERMITTED_DRIFT_NS);
        while let Some(entry) = self.recent_by_time.first_entry()
            && entry.key().0 < horizon
        {
            self.recent.remove(&entry.remove());
        }
    }
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
        Transfer { from, to, amount, fee: None, memo: None, created_at_time: None }
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
        let once = Transfer { created_at_time: Some(NOW), ..transfer(user(1), user(2), 10) };
        assert_eq!(ledger.transfer(once.clone(), NOW), Ok(1));
        assert_eq!(ledger.transfer(once.clone(), NOW + 1), Err(TransferError::Duplicate { duplicate_of: 1 }));
        let other_memo = Transfer { memo: Some(vec![1]), ..once.clone() };
        assert_eq!(ledger.transfer(other_memo, NOW), Ok(2), "another transfer");
        let later = NOW + TX_WINDOW_NS + PERMITTED_DRIFT_NS + 1;
        assert_eq!(ledger.transfer(once, later), Err(TransferError::TooOld));
        let ahead = Transfer {
            created_at_time: Some(NOW + PERMITTED_DRIFT_NS + 1),
            ..transfer(user(1), user(2), 10)
        };
        assert_eq!(ledger.transfer(ahead, NOW), Err(TransferError::CreatedInFuture { ledger_time: NOW }));
        let plain = transfer(user(1), user(2), 10);
        assert_eq!(ledger.transfer(plain.clone(), NOW), Ok(3));
        assert_eq!(ledger.transfer(plain, NOW), Ok(4), "without a creation time, no deduplication");
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
            created_at_time: Some(at),
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
        assert_eq!(ledger.recent.len(), 1);
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
                let sent = Transfer { created_at_time: created.map(|c| NOW - c), ..transfer(from, key(to), amount) };
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
    }
}
