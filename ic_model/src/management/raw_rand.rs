//! `raw_rand`: 32 bytes, a new value each call, deterministic so that a
//! run replays. The IC draws them from its random beacon, which no one
//! knows beforehand; the model derives the n-th call's bytes from a seed it
//! keeps (and saves with the network): SHA-256 of a domain tag, the seed
//! and n. A network's seed is its keys' seed ([`crate::Keys::seed`]), so
//! the same calls in the same order on a network of the same seed get the
//! same bytes. Not secret: any test may derive them again. Never use the
//! simulator's `raw_rand` for keys that guard anything.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The seed of the model's `raw_rand`, and how many values it has drawn.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RawRand {
    seed: u64,
    drawn: u64,
}

impl RawRand {
    pub(crate) fn new(seed: u64) -> Self {
        Self { seed, drawn: 0 }
    }

    /// The next value.
    pub(crate) fn next(&mut self) -> [u8; 32] {
        let value = value(self.seed, self.drawn);
        // A restored counter may stand anywhere: it wraps, never panics.
        self.drawn = self.drawn.wrapping_add(1);
        value
    }
}

/// The `n`-th value (from 0) that `seed` gives.
pub fn value(seed: u64, n: u64) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(b"ic_model raw_rand");
    hash.update(seed.to_le_bytes());
    hash.update(n.to_le_bytes());
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_value_is_new_and_a_seed_gives_the_same_ones() {
        let mut first = RawRand::new(1);
        let values: Vec<_> = (0..3).map(|_| first.next()).collect();
        assert!(values[0] != values[1] && values[1] != values[2] && values[0] != values[2]);
        let mut again = RawRand::new(1);
        assert_eq!((0..3).map(|_| again.next()).collect::<Vec<_>>(), values);
        assert_ne!(RawRand::new(2).next(), values[0]);
        assert_eq!(value(1, 2), values[2]);
    }

    #[test]
    fn a_counter_restored_at_its_last_value_wraps() {
        let mut last = RawRand { seed: 1, drawn: u64::MAX };
        assert_eq!(last.next(), value(1, u64::MAX));
        assert_eq!(last.next(), value(1, 0));
    }
}
