//! kcm's factory-wide resync period: `min_resync_period * (1 + U[0,1))`, drawn once per
//! factory so that replicas of kcm do not resync in lockstep (informers.md §2).

use std::time::Duration;

use rand::Rng;

/// kcm's default `--min-resync-period`.
pub const DEFAULT_MIN_RESYNC_PERIOD: Duration = Duration::from_secs(12 * 60 * 60);

/// Draws a resync period uniformly from `[min, 2 * min)`.
pub fn resync_period<R: Rng + ?Sized>(min: Duration, rng: &mut R) -> Duration {
    let factor: f64 = rng.random();
    min.mul_f64(1.0 + factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn draws_stay_in_min_to_twice_min_and_vary() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let min = DEFAULT_MIN_RESYNC_PERIOD;
        let draws: Vec<Duration> = (0..200).map(|_| resync_period(min, &mut rng)).collect();
        assert!(draws.iter().all(|d| *d >= min && *d < min * 2), "{draws:?}");
        let distinct: std::collections::BTreeSet<_> = draws.iter().collect();
        assert!(
            distinct.len() > 100,
            "draws must be random, got {}",
            distinct.len()
        );
        assert!(draws.iter().any(|d| *d < min.mul_f64(1.25)));
        assert!(draws.iter().any(|d| *d > min.mul_f64(1.75)));
    }

    #[test]
    fn zero_minimum_means_no_resync() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert_eq!(resync_period(Duration::ZERO, &mut rng), Duration::ZERO);
    }
}
