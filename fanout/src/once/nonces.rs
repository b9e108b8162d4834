//! The caller's half of execute-once: nonces that never repeat, and the
//! floors it sends.

use std::fmt;

/// The nonces a caller tags its calls with, and the floors it sends.
///
/// A callee keeps a nonce it executed until the caller's floor passes it,
/// so a nonce must never repeat for one caller, even after a reinstall,
/// which wipes the caller's memory. [`reserve`](Self::reserve) hands out
/// nonces from a range that starts at the canister version times
/// [`PER_VERSION`](Self::PER_VERSION): the version grows with every
/// message that commits and every install, reinstall, upgrade and
/// settings change, and is never reset, so no installation reaches a
/// range that a later version starts from. Nothing needs keeping across
/// an upgrade (the version it brings starts a new range): keep it in a
/// `thread_local!`.
///
/// A floor promises the callee that no nonce below it comes again:
/// [`floors`](Self::floors) computes it per callee from the unfinished
/// jobs, as a finished job sends nothing again and a new job's nonces are
/// above every earlier one's.
///
/// ```
/// use ic_fanout::once::Nonces;
///
/// let mut nonces = Nonces::default();
/// // In an update method, with ic_cdk::api::canister_version():
/// let first = nonces.reserve(7, 100).unwrap(); // nonces first..first + 100
/// let next = nonces.reserve(7, 1).unwrap();
/// assert_eq!((first, next), (7 * Nonces::PER_VERSION, first + 100));
/// // Two unfinished jobs: from `first` to callees a and b, from `next` to b.
/// let floors = Nonces::floors(&["a", "b", "c"], &[(first, &["a", "b"][..]), (next, &["b"])]);
/// assert_eq!(floors, [first, first, 0], "c: no unfinished job calls it, no promise");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nonces {
    /// The next nonce not yet reserved in this installation.
    next: u64,
    /// Ranges passed over (see [`skipping`](Self::skipping)).
    skipped: u64,
}

impl Nonces {
    /// Nonces one canister version (one message, as the version grows
    /// with each) can reserve. Small, because the version grows a message
    /// at a time: at 2^14 the ranges last for 2^50 messages.
    pub const PER_VERSION: u64 = 1 << 14;

    /// Ranges that start `skipped` ranges later than the canister
    /// version's: for a caller that numbered its nonces some other way
    /// before, up to `skipped` times [`PER_VERSION`](Self::PER_VERSION).
    /// Keep `skipped` in stable memory: a new installation starts from it.
    pub fn skipping(skipped: u64) -> Self {
        Self { next: 0, skipped }
    }

    /// Reserves `n` nonces at canister version `version`, and returns the
    /// first of them.
    pub fn reserve(&mut self, version: u64, n: u64) -> Result<u64, NoNonces> {
        let range = version.checked_add(self.skipped);
        let (Some(start), Some(end)) = (
            range.and_then(|r| r.checked_mul(Self::PER_VERSION)),
            range.and_then(|r| r.checked_add(1)).and_then(|r| r.checked_mul(Self::PER_VERSION)),
        ) else {
            return Err(NoNonces::PastTheRanges { version });
        };
        let first = self.next.max(start);
        if end - first < n {
            return Err(NoNonces::UsedUp { version });
        }
        self.next = first + n;
        Ok(first)
    }

    /// The floor to send each of `callees`: the lowest first nonce of the
    /// `unfinished` jobs (each its first nonce and the callees it calls)
    /// that call it, or 0 (no promise) where none does. Per callee, so
    /// that a job waiting long for one callee does not hold down the floor
    /// (and fill the nonces held) of another.
    pub fn floors<C: PartialEq>(callees: &[C], unfinished: &[(u64, &[C])]) -> Vec<u64> {
        let floor = |callee| {
            let calling = unfinished.iter().filter(|(_, calls)| calls.contains(callee));
            Self::floor(calling.map(|&(first, _)| first))
        };
        callees.iter().map(floor).collect()
    }

    /// One floor for every callee: the lowest of the unfinished jobs'
    /// first nonces, or 0 if there are none. Cheaper than
    /// [`floors`](Self::floors) for jobs of thousands of callees, but a
    /// job that waits long for one callee holds down the floor of all.
    pub fn floor(unfinished: impl IntoIterator<Item = u64>) -> u64 {
        unfinished.into_iter().min().unwrap_or(0)
    }
}

/// Why [`Nonces::reserve`] has no nonces; nothing was reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoNonces {
    /// The version's range is past the last nonce.
    PastTheRanges {
        /// The canister version.
        version: u64,
    },
    /// This version reserved its [`Nonces::PER_VERSION`] already.
    UsedUp {
        /// The canister version.
        version: u64,
    },
}

impl fmt::Display for NoNonces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PastTheRanges { version } => write!(f, "canister version {version} leaves no nonces"),
            Self::UsedUp { version } => write!(
                f,
                "this canister version ({version}) has reserved all its {} nonces; reserve them in another call",
                Nonces::PER_VERSION
            ),
        }
    }
}

impl std::error::Error for NoNonces {}

#[cfg(test)]
mod tests {
    use super::*;

    const PER_VERSION: u64 = Nonces::PER_VERSION;

    #[test]
    fn nonce_ranges_never_repeat_across_versions() {
        let mut nonces = Nonces::default();
        assert_eq!(nonces.reserve(1, 10), Ok(PER_VERSION));
        assert_eq!(nonces.reserve(1, 10), Ok(PER_VERSION + 10));
        // A reinstall forgets the range but not the version, which grew.
        let mut reinstalled = Nonces::default();
        assert_eq!(reinstalled.reserve(2, 10), Ok(2 * PER_VERSION));
        // A later message (or settings change) keeps the range but grows
        // the version: the next range starts past everything before.
        assert_eq!(nonces.reserve(3, 1), Ok(3 * PER_VERSION));
    }

    #[test]
    fn a_used_up_or_overflowing_range_is_refused() {
        let mut nonces = Nonces::default();
        assert_eq!(nonces.reserve(1, PER_VERSION), Ok(PER_VERSION));
        let err = nonces.reserve(1, 1).unwrap_err().to_string();
        assert!(err.contains("in another call"), "{err}");
        assert!(nonces.reserve(1 << 50, 1).unwrap_err().to_string().contains("leaves no nonces"));
        assert!(nonces.reserve((1 << 50) - 2, 1).is_ok(), "2^50 versions have nonces");
        assert!(nonces.reserve(u64::MAX, 1).is_err());
    }

    #[test]
    fn skipped_ranges_are_added_to_the_version_s() {
        assert_eq!(Nonces::skipping(3).reserve(2, 10), Ok(5 * PER_VERSION));
        let err = Nonces::skipping(u64::MAX).reserve(1, 1).unwrap_err();
        assert_eq!(err, NoNonces::PastTheRanges { version: 1 });
    }

    #[test]
    fn each_callee_s_floor_is_the_lowest_first_nonce_of_the_unfinished_jobs_that_call_it() {
        let unfinished: [(u64, &[u8]); 3] = [(30, &[1, 2]), (20, &[1]), (40, &[2])];
        assert_eq!(Nonces::floors(&[1, 2, 3], &unfinished), [20, 30, 0], "3: no job calls it, no promise");
        assert_eq!(Nonces::floors::<u8>(&[1], &[]), [0], "nothing unfinished: no promise");
        assert_eq!(Nonces::floor(unfinished.map(|(first, _)| first)), 20);
        assert_eq!(Nonces::floor([]), 0);
    }
}
