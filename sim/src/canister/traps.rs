//! Seeded traps: which of a canister's update executions trap (see [`crate::Faults`]).

use rand_pcg::Pcg64Mcg;
use rand_pcg::rand_core::Rng;
use serde::{Deserialize, Serialize};

/// Which executions trap.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub enum TrapRate {
    /// Each one with this probability.
    Fraction(f64),
    /// The k-th, 2k-th, ... (0: none).
    EveryKth(u64),
}

/// Decides which executions of one canister trap.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct TrapInjector {
    rate: TrapRate,
    rng: Pcg64Mcg,
    executions: u64,
}

impl TrapInjector {
    /// Traps at `rate`, its choices drawn from `rng`.
    pub(crate) fn new(rate: TrapRate, rng: Pcg64Mcg) -> Self {
        Self { rate, rng, executions: 0 }
    }

    /// Whether the next execution traps.
    pub(crate) fn fires(&mut self) -> bool {
        self.executions += 1;
        match self.rate {
            TrapRate::Fraction(p) => chance(&mut self.rng, p),
            TrapRate::EveryKth(k) => k > 0 && self.executions.is_multiple_of(k),
        }
    }
}

/// True with probability `p`.
pub(crate) fn chance(rng: &mut Pcg64Mcg, p: f64) -> bool {
    let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    p > 0.0 && unit < p
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_pcg::rand_core::SeedableRng;

    #[test]
    fn every_kth_traps_exactly_those() {
        let rng = Pcg64Mcg::seed_from_u64(0);
        let mut injector = TrapInjector { rate: TrapRate::EveryKth(3), rng, executions: 0 };
        let fired: Vec<bool> = (0..7).map(|_| injector.fires()).collect();
        assert_eq!(fired, [false, false, true, false, false, true, false]);
    }

    #[test]
    fn a_fraction_traps_about_that_fraction_and_the_seed_decides_which() {
        let fired = |seed| {
            let rng = Pcg64Mcg::seed_from_u64(seed);
            let mut injector = TrapInjector { rate: TrapRate::Fraction(0.1), rng, executions: 0 };
            (0..10_000).map(|_| injector.fires()).collect::<Vec<_>>()
        };
        let count = fired(1).iter().filter(|&&f| f).count();
        assert!((900..1100).contains(&count), "{count}");
        assert_eq!(fired(1), fired(1));
        assert_ne!(fired(1), fired(2));
    }
}
