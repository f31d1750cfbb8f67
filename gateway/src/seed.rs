//! Seeds: every random stream of a run descends from the run's seed by named forks (`run.fork("replica")
//! .fork("db").fork("0")`), so a stream is fixed by what it is for, not by the order streams are made in, and adding
//! a stream never shifts another one's draws.
//!
//! [`Seed::fork`] hashes the label's UTF-8 bytes with 64-bit FNV-1a, XORs the hash into the parent seed and takes
//! one SplitMix64 step of the result. Both are fixed integer arithmetic, so a seed forks the same on every platform
//! and Rust release; std's `DefaultHasher` makes no such promise.

use mcpstorm_core::SeededRng;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A seed of one random stream (the run's own, or one forked from it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seed(u64);

impl Seed {
    pub const fn new(value: u64) -> Seed {
        Seed(value)
    }

    pub const fn value(self) -> u64 {
        self.0
    }

    /// The seed of the stream named `label` under this one: the same parent and label always give the same seed,
    /// different labels unrelated ones.
    pub fn fork(self, label: &str) -> Seed {
        Seed(splitmix64(self.0 ^ fnv1a(label.as_bytes())))
    }

    /// A ChaCha8 generator seeded with this seed.
    pub fn rng(self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.0)
    }

    /// The core's shared generator, seeded with this seed (for what the core takes: routers, gateways, clients).
    pub fn seeded_rng(self) -> SeededRng {
        SeededRng::new(self.0)
    }
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET, |h, b| (h ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// One step of SplitMix64 from state `x`: add the golden-ratio increment, then its finaliser.
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pinned: a change here changes every run's draws, and so every report.
    #[test]
    fn forks_are_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(splitmix64(0), 0xe220_a839_7b1d_cdaf);
        let run = Seed::new(1);
        let pinned = [
            (run.fork(""), 0xadd5_9ec7_95ad_7f61),
            (run.fork("replica"), 0xd514_0f2a_259b_1972),
            (run.fork("replica").fork("db").fork("0"), 0x6064_5227_bbff_5f90),
            (Seed::new(u64::MAX).fork("agent"), 0x6275_8331_90cd_1c77),
        ];
        for (seed, value) in pinned {
            assert_eq!(seed.value(), value, "{seed:?}");
        }
    }

    #[test]
    fn labels_and_parents_both_matter() {
        let run = Seed::new(7);
        assert_eq!(run.fork("a"), Seed::new(7).fork("a"));
        assert_ne!(run.fork("a"), run.fork("b"));
        assert_ne!(run.fork("a"), Seed::new(8).fork("a"));
        assert_ne!(run.fork("a").fork("b"), run.fork("b").fork("a"));
        assert_ne!(run.fork("a"), run, "a fork is a new stream");
    }
}
