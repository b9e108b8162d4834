//! Execute-once: callees run each (caller, nonce) at most once, with
//! state bounded per caller and callers admitted by the canister
//! ([`ExecuteOnce`]); callers tag their calls with nonces that never
//! repeat and send each callee its floor ([`Nonces`]).
//!
//! A caller that retries a call whose outcome it does not know (a bounded
//! wait that timed out, `SYS_UNKNOWN`) tags it with a nonce, and the callee
//! executes each nonce once. Keeping every nonce for ever makes the
//! callee's memory grow without limit, so each caller also sends a
//! **floor**: its promise never to send a nonce below it again. The callee
//! keeps only the nonces at or above the caller's floor, at most
//! [`Limits::nonces_per_caller`] of them, and refuses (with a message) a
//! nonce below the floor or a new one past the cap. Nothing is executed
//! twice, and nothing the callee can still decide is refused. A caller
//! takes its nonces, and the floor for each callee, from [`Nonces`].
//!
//! A cap per caller does not stop a stranger with many principals, so only
//! admitted callers ([`ExecuteOnce::admit`], at most [`Limits::callers`])
//! have state at all.
//!
//! **Memory**: executed nonces are kept 64 to an entry (a bit each) in a
//! `StableBTreeMap`. Consecutive nonces, as a caller numbering its calls
//! sends them, cost about 1.2 bytes each; nonces 64 or more apart cost an
//! entry each, about 72 bytes with the B-tree's nodes. So one caller at the
//! default cap of 10,000 nonces holds about 12 KB to 720 KB, and 1,000 callers at
//! most about 720 MB. (Measured by this crate's test
//! `the_state_stays_bounded_after_a_million_nonces`.)

use candid::Principal;
use ic_stable_structures::storable::Bound;
use ic_stable_structures::{Memory, StableBTreeMap, Storable};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

mod nonces;

pub use nonces::{NoNonces, Nonces};

/// How much state [`ExecuteOnce`] may keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Executed nonces kept per caller at or above its floor; a new nonce
    /// past them is refused until the caller raises its floor.
    pub nonces_per_caller: u64,
    /// Callers admitted at once.
    pub callers: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self { nonces_per_caller: 10_000, callers: 1_000 }
    }
}

/// What [`ExecuteOnce`] keeps about one caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallerState {
    /// Nonces below it are refused.
    pub floor: u64,
    /// Executed nonces kept, all at or above the floor.
    pub held: u64,
    /// Whether the caller may have nonces executed.
    pub admitted: bool,
    /// Keys this caller's nonces (4 bytes instead of a principal's 29).
    index: u32,
}

/// Whether [`ExecuteOnce::execute`] ran its closure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Execution<R> {
    /// Executed by this call, with the closure's result.
    Now(R),
    /// The nonce was executed before; the closure did not run.
    Earlier,
}

impl<R> Execution<R> {
    /// Whether the closure ran in this call.
    pub fn is_now(&self) -> bool {
        matches!(self, Execution::Now(_))
    }
}

/// Why [`ExecuteOnce`] refused. Nothing was executed; the message says what
/// the caller can do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The caller is not admitted.
    NotAdmitted(Principal),
    /// The nonce is below the caller's floor: it may have executed, and will
    /// not execute now.
    BelowFloor {
        /// The nonce sent.
        nonce: u64,
        /// The caller's floor.
        floor: u64,
    },
    /// A new nonce would pass the executed nonces the caller may hold (in
    /// a batch, counting the batch's new nonces before it).
    Full {
        /// The cap, [`Limits::nonces_per_caller`].
        held: u64,
        /// The caller's floor.
        floor: u64,
    },
    /// [`Limits::callers`] callers are admitted already.
    TooManyCallers {
        /// The cap.
        limit: u64,
    },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::NotAdmitted(caller) => write!(
                f,
                "{caller} is not admitted to have calls executed once: a controller of this canister must admit it first"
            ),
            Refused::BelowFloor { nonce, floor } => write!(
                f,
                "nonce {nonce} is below the floor {floor} this caller set: it may have executed, and will not execute now"
            ),
            Refused::Full { held, floor } => write!(
                f,
                "this caller may hold at most {held} executed nonces at or above its floor {floor}, and a new one would pass that: raise the floor past the nonces it will not send again"
            ),
            Refused::TooManyCallers { limit } => {
                write!(f, "{limit} callers are admitted, the most this canister admits: revoke one first")
            }
        }
    }
}

impl std::error::Error for Refused {}

/// Executes each (caller, nonce) at most once, keeping its state in two
/// stable memories, so that it survives upgrades without hooks.
///
/// ```
/// use ic_fanout::once::{ExecuteOnce, Execution, Limits, Refused};
/// use ic_stable_structures::VectorMemory;
///
/// let mut once = ExecuteOnce::init(VectorMemory::default(), VectorMemory::default(), Limits::default());
/// let caller = candid::Principal::from_slice(&[1]);
/// assert_eq!(once.execute(caller, 5, 0, || "sent"), Err(Refused::NotAdmitted(caller)));
///
/// once.admit(caller).unwrap();
/// assert_eq!(once.execute(caller, 5, 0, || "sent"), Ok(Execution::Now("sent")));
/// assert_eq!(once.execute(caller, 5, 0, || "sent"), Ok(Execution::Earlier));
/// // The caller promises never to send a nonce below 6 again: 5 is dropped.
/// assert_eq!(once.execute(caller, 6, 6, || "sent"), Ok(Execution::Now("sent")));
/// assert_eq!(once.caller(caller).unwrap().held, 1);
/// assert_eq!(once.execute(caller, 5, 0, || "sent"), Err(Refused::BelowFloor { nonce: 5, floor: 6 }));
/// ```
pub struct ExecuteOnce<M: Memory> {
    callers: StableBTreeMap<Principal, CallerState, M>,
    /// Executed nonces, 64 to an entry: (caller index, nonce / 64) to a
    /// bit per nonce.
    executed: StableBTreeMap<(u32, u64), u64, M>,
    limits: Limits,
    /// Callers admitted now (the `callers` map also keeps revoked ones).
    admitted: u64,
}

impl<M: Memory> ExecuteOnce<M> {
    /// Loads the state kept in `callers` and `executed` (two memories no
    /// other structure uses), or starts empty in fresh memories.
    pub fn init(callers: M, executed: M, limits: Limits) -> Self {
        let callers = StableBTreeMap::init(callers);
        let admitted = callers.values().filter(|c: &CallerState| c.admitted).count() as u64;
        Self { callers, executed: StableBTreeMap::init(executed), limits, admitted }
    }

    /// Admits `caller`; admitting one already admitted changes nothing.
    pub fn admit(&mut self, caller: Principal) -> Result<(), Refused> {
        let existing = self.callers.get(&caller);
        if existing.is_some_and(|c| c.admitted) {
            return Ok(());
        }
        if self.admitted >= self.limits.callers {
            return Err(Refused::TooManyCallers { limit: self.limits.callers });
        }
        let index = self.callers.len() as u32;
        let state = existing.unwrap_or(CallerState { floor: 0, held: 0, admitted: false, index });
        self.callers.insert(caller, CallerState { admitted: true, ..state });
        self.admitted += 1;
        Ok(())
    }

    /// Stops executing `caller`'s nonces and drops them; a floor above them
    /// stays, so that none of them executes again if it is admitted later.
    /// (That record, 40 bytes or so, is all that stays.)
    pub fn revoke(&mut self, caller: Principal) {
        let Some(state) = self.callers.get(&caller) else { return };
        let above_all = self.highest_nonce(state.index).map_or(state.floor, |n| n.saturating_add(1));
        self.raise_floor(caller, above_all);
        if state.admitted {
            self.admitted -= 1;
        }
        let state = self.callers.get(&caller).expect("raise_floor keeps the record");
        self.callers.insert(caller, CallerState { admitted: false, ..state });
    }

    /// Whether `caller` is admitted.
    pub fn is_admitted(&self, caller: Principal) -> bool {
        self.callers.get(&caller).is_some_and(|c| c.admitted)
    }

    /// The admitted callers, in principal order.
    pub fn admitted(&self) -> impl Iterator<Item = Principal> + '_ {
        self.callers.iter().filter(|e| e.value().admitted).map(|e| *e.key())
    }

    /// What is kept about `caller`, if anything.
    pub fn caller(&self, caller: Principal) -> Option<CallerState> {
        self.callers.get(&caller)
    }

    /// Raises `caller`'s floor to `floor` (a lower one changes nothing) and
    /// drops its nonces below it, as a call carrying that floor would. For
    /// a caller with no record it makes one that is not admitted: how a
    /// canister moving from a store without floors keeps its callers'
    /// executed nonces from running again.
    pub fn raise_floor(&mut self, caller: Principal, floor: u64) {
        let known = self.callers.get(&caller);
        let index = self.callers.len() as u32;
        let state = known.unwrap_or(CallerState { floor: 0, held: 0, admitted: false, index });
        if floor <= state.floor && known.is_some() {
            return;
        }
        let floor = floor.max(state.floor);
        let mut dropped = 0;
        let below: Vec<((u32, u64), u64)> = self
            .executed
            .range((state.index, state.floor / 64)..(state.index, floor / 64))
            .map(|entry| (*entry.key(), entry.value()))
            .collect();
        for (key, bits) in below {
            dropped += bits.count_ones();
            self.executed.remove(&key);
        }
        // The chunk the floor falls in keeps its bits from the floor up.
        let key = (state.index, floor / 64);
        if let Some(bits) = self.executed.get(&key) {
            let kept = bits & (u64::MAX << (floor % 64));
            dropped += (bits ^ kept).count_ones();
            if kept == 0 {
                self.executed.remove(&key);
            } else {
                self.executed.insert(key, kept);
            }
        }
        let held = state.held - u64::from(dropped);
        self.callers.insert(caller, CallerState { floor, held, ..state });
    }

    /// Runs `f` unless `caller` had `nonce` executed before, first raising
    /// the caller's floor to `floor` (the caller's promise never to send a
    /// nonce below it again; 0 promises nothing).
    ///
    /// Refused, with `f` not run, if the caller is not admitted, the nonce
    /// is below the floor, or the nonce is new and the caller holds
    /// [`Limits::nonces_per_caller`] nonces. A refusal after the floor was
    /// raised keeps the raise: it was the caller's promise either way.
    ///
    /// ```
    /// # use ic_fanout::once::{ExecuteOnce, Execution, Limits, Refused};
    /// # use ic_stable_structures::VectorMemory;
    /// let limits = Limits { nonces_per_caller: 2, ..Limits::default() };
    /// let mut once = ExecuteOnce::init(VectorMemory::default(), VectorMemory::default(), limits);
    /// let caller = candid::Principal::from_slice(&[1]);
    /// once.admit(caller).unwrap();
    /// once.execute(caller, 1, 0, || ()).unwrap();
    /// once.execute(caller, 2, 0, || ()).unwrap();
    /// assert_eq!(once.execute(caller, 3, 0, || ()), Err(Refused::Full { held: 2, floor: 0 }));
    /// assert_eq!(once.execute(caller, 3, 2, || ()), Ok(Execution::Now(())));
    /// ```
    pub fn execute<R>(
        &mut self,
        caller: Principal,
        nonce: u64,
        floor: u64,
        f: impl FnOnce() -> R,
    ) -> Result<Execution<R>, Refused> {
        let mut f = Some(f);
        let mut executions = self.execute_all(caller, [nonce], floor, |_| f.take().map(|f| f()))?;
        Ok(match executions.pop().expect("one execution per nonce") {
            Execution::Now(result) => Execution::Now(result.expect("f runs once")),
            Execution::Earlier => Execution::Earlier,
        })
    }

    /// [`execute`](Self::execute) for many nonces of one caller, all or
    /// nothing: either each nonce is decided (executed now, with `f`, or
    /// earlier), in their order, or the first refused is returned and no
    /// `f` runs. A nonce twice among them runs once, the second `Earlier`.
    ///
    /// What a batch method should use: the caller's record is read and
    /// written once (besides raising its floor) and the nonces 64 at a
    /// time, where an
    /// [`execute`](Self::execute) for each nonce does both for every nonce.
    /// An empty batch only raises the floor.
    ///
    /// ```
    /// # use ic_fanout::once::{ExecuteOnce, Execution, Limits, Refused};
    /// # use ic_stable_structures::VectorMemory;
    /// let limits = Limits { nonces_per_caller: 3, ..Limits::default() };
    /// let mut once = ExecuteOnce::init(VectorMemory::default(), VectorMemory::default(), limits);
    /// let caller = candid::Principal::from_slice(&[1]);
    /// once.admit(caller).unwrap();
    /// let runs = once.execute_all(caller, [5, 6, 5], 0, |nonce| nonce * 10).unwrap();
    /// assert_eq!(runs, [Execution::Now(50), Execution::Now(60), Execution::Earlier]);
    /// // Two more would pass the cap of 3: neither runs.
    /// assert_eq!(once.execute_all(caller, [7, 8], 0, |_| ()), Err(Refused::Full { held: 3, floor: 0 }));
    /// assert_eq!(once.caller(caller).unwrap().held, 2);
    /// ```
    pub fn execute_all<R>(
        &mut self,
        caller: Principal,
        nonces: impl IntoIterator<Item = u64>,
        floor: u64,
        mut f: impl FnMut(u64) -> R,
    ) -> Result<Vec<Execution<R>>, Refused> {
        let Some(mut state) = self.callers.get(&caller).filter(|c| c.admitted) else {
            return Err(Refused::NotAdmitted(caller));
        };
        if floor > state.floor {
            self.raise_floor(caller, floor);
            state = self.callers.get(&caller).expect("raise_floor keeps the record");
        }
        // Decided in memory first, each chunk of 64 read once, so that a
        // refusal leaves the store as raising the floor left it.
        let mut chunks: BTreeMap<u64, (u64, bool)> = BTreeMap::new();
        let mut now = Vec::new();
        let mut held = state.held;
        for nonce in nonces {
            if nonce < state.floor {
                return Err(Refused::BelowFloor { nonce, floor: state.floor });
            }
            let (chunk, bit) = (nonce / 64, 1 << (nonce % 64));
            let (bits, changed) = chunks
                .entry(chunk)
                .or_insert_with(|| (self.executed.get(&(state.index, chunk)).unwrap_or(0), false));
            if *bits & bit != 0 {
                now.push(None);
                continue;
            }
            if held >= self.limits.nonces_per_caller {
                return Err(Refused::Full { held, floor: state.floor });
            }
            (*bits, *changed, held) = (*bits | bit, true, held + 1);
            now.push(Some(nonce));
        }
        for (chunk, (bits, changed)) in chunks {
            if changed {
                self.executed.insert((state.index, chunk), bits);
            }
        }
        if held != state.held {
            self.callers.insert(caller, CallerState { held, ..state });
        }
        Ok(now.into_iter().map(|nonce| nonce.map_or(Execution::Earlier, |n| Execution::Now(f(n)))).collect())
    }

    /// The highest nonce `index` holds.
    fn highest_nonce(&self, index: u32) -> Option<u64> {
        let last = self.executed.range((index, 0)..=(index, u64::MAX)).next_back()?;
        Some(last.key().1 * 64 + 63 - u64::from(last.value().leading_zeros()))
    }
}

impl Storable for CallerState {
    fn to_bytes(&self) -> Cow<'_, [u8]> {
        Cow::Owned(self.into_bytes())
    }

    fn into_bytes(self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(Self::SIZE);
        bytes.extend_from_slice(&self.floor.to_le_bytes());
        bytes.extend_from_slice(&self.held.to_le_bytes());
        bytes.extend_from_slice(&self.index.to_le_bytes());
        bytes.push(u8::from(self.admitted));
        bytes
    }

    fn from_bytes(bytes: Cow<[u8]>) -> Self {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Self {
            floor: u64_at(0),
            held: u64_at(8),
            index: u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes")),
            admitted: bytes[20] == 1,
        }
    }

    const BOUND: Bound = Bound::Bounded { max_size: Self::SIZE as u32, is_fixed_size: true };
}

impl CallerState {
    const SIZE: usize = 21;
}

#[cfg(test)]
mod tests {
    use super::*;
    use ic_stable_structures::VectorMemory;

    fn fresh() -> ExecuteOnce<VectorMemory> {
        ExecuteOnce::init(VectorMemory::default(), VectorMemory::default(), Limits::default())
    }

    #[test]
    fn the_default_limits_are_10_000_nonces_and_1_000_callers() {
        let limits = Limits::default();
        assert_eq!((limits.nonces_per_caller, limits.callers), (10_000, 1_000));
    }

    #[test]
    fn a_refusal_names_the_nonce_and_the_floor() {
        let refused = Refused::BelowFloor { nonce: 3, floor: 10 };
        assert!(refused.to_string().contains("nonce 3 is below the floor 10"), "{refused}");
    }

    #[test]
    fn a_caller_revoked_and_admitted_again_never_has_its_old_nonces_run_again() {
        let (mut once, caller) = (fresh(), Principal::from_slice(&[1]));
        once.admit(caller).unwrap();
        once.execute(caller, 9, 0, || ()).unwrap();
        once.revoke(caller);
        assert!(!once.is_admitted(caller) && once.admitted().next().is_none());
        once.admit(caller).unwrap();
        assert_eq!(once.admitted().collect::<Vec<_>>(), [caller]);
        assert_eq!(once.execute(caller, 9, 0, || ()), Err(Refused::BelowFloor { nonce: 9, floor: 10 }));
    }

    #[test]
    fn a_floor_raised_before_admission_holds_after_it() {
        let (mut once, caller) = (fresh(), Principal::from_slice(&[1]));
        assert_eq!(once.caller(caller), None);
        once.raise_floor(caller, 100);
        let state = once.caller(caller).unwrap();
        assert_eq!((state.floor, state.held, state.admitted), (100, 0, false));
        once.admit(caller).unwrap();
        assert_eq!(once.execute(caller, 99, 0, || ()), Err(Refused::BelowFloor { nonce: 99, floor: 100 }));
    }
}
