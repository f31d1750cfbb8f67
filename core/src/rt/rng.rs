use std::sync::Mutex;
use std::time::Duration;

use rand::{Rng as _, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The core's only source of randomness: ChaCha8, seeded by the embedder.
///
/// Shared behind a mutex (never held across an await). Components that need an independent stream take a
/// [`SeededRng::fork`], so adding a draw in one place does not shift every other component's sequence.
#[derive(Debug)]
pub struct SeededRng {
    inner: Mutex<ChaCha8Rng>,
}

impl SeededRng {
    pub fn new(seed: u64) -> Self {
        SeededRng { inner: Mutex::new(ChaCha8Rng::seed_from_u64(seed)) }
    }

    /// An independent generator for one component; the same `stream` always yields the same sequence.
    pub fn fork(&self, stream: u64) -> SeededRng {
        let mut rng = self.lock().clone();
        rng.set_stream(stream);
        rng.set_word_pos(0);
        SeededRng { inner: Mutex::new(rng) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ChaCha8Rng> {
        // A panic while holding this lock cannot leave the generator invalid, so poisoning is ignored.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn next_u64(&self) -> u64 {
        self.lock().next_u64()
    }

    /// Uniform in [0, 1).
    pub fn unit(&self) -> f64 {
        self.lock().random::<f64>()
    }

    /// Uniform in [0, n); 0 when n is 0.
    pub fn below(&self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.lock().random_range(0..n) }
    }

    /// `base` scaled by a uniform factor in [1 − frac, 1 + frac].
    pub fn jitter(&self, base: Duration, frac: f64) -> Duration {
        let factor = 1.0 + frac * (2.0 * self.unit() - 1.0);
        scale(base, factor)
    }
}

/// `d × factor`, saturating at `Duration::MAX` where `Duration::mul_f64` would panic (a product beyond it, which a
/// factor near 1 reaches for durations near the maximum through f64 rounding); a negative or NaN factor gives zero.
pub fn scale(d: Duration, factor: f64) -> Duration {
    if factor.is_nan() || factor <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_and_forks_are_independent() {
        let a = SeededRng::new(7);
        let b = SeededRng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let fa = a.fork(1);
        let fb = b.fork(1);
        assert_eq!(fa.next_u64(), fb.next_u64());
        assert_ne!(a.fork(2).next_u64(), a.fork(3).next_u64());
    }

    #[test]
    fn jitter_stays_in_band() {
        let rng = SeededRng::new(1);
        for _ in 0..1000 {
            let d = rng.jitter(Duration::from_secs(1), 0.2);
            assert!(d >= Duration::from_millis(800) && d <= Duration::from_millis(1200), "{d:?}");
        }
    }
}
