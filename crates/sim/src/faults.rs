//! Seeded, reproducible fault injection: failing writes (500, 429, 409), added latency and
//! forced watch disconnects. The generator is reseeded whenever the configuration changes,
//! so a given seed and request sequence always fails the same requests.

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::FaultConfig;
use crate::resources::ResourceInfo;
use crate::status::ApiError;

/// The fault configuration and its random generator.
#[derive(Debug)]
pub(crate) struct FaultInjector {
    inner: Mutex<(FaultConfig, ChaCha8Rng)>,
}

impl FaultInjector {
    /// Injects faults as `config` says, from a generator seeded with `config.seed`.
    pub fn new(config: FaultConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        Self {
            inner: Mutex::new((config, rng)),
        }
    }

    /// Replaces the configuration (and reseeds).
    pub fn set(&self, config: FaultConfig) {
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        *self.inner.lock() = (config, rng);
    }

    /// The current configuration.
    pub fn config(&self) -> FaultConfig {
        self.inner.lock().0.clone()
    }

    /// Decides whether this write fails, and how.
    pub fn roll_write(&self, res: &ResourceInfo, name: &str) -> Option<ApiError> {
        let mut guard = self.inner.lock();
        let (config, rng) = &mut *guard;
        if config.write_500 <= 0.0 && config.write_429 <= 0.0 && config.write_409 <= 0.0 {
            return None;
        }
        let roll: f64 = rng.random();
        if roll < config.write_500 {
            return Some(ApiError::internal("injected fault"));
        }
        if roll < config.write_500 + config.write_429 {
            return Some(ApiError::too_many_requests());
        }
        if roll < config.write_500 + config.write_429 + config.write_409 {
            return Some(ApiError::conflict(res, name));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{PODS, RESOURCES};

    fn outcomes(config: FaultConfig, n: usize) -> Vec<Option<u16>> {
        let faults = FaultInjector::new(config);
        (0..n)
            .map(|_| faults.roll_write(&RESOURCES[PODS], "p").map(|e| e.code))
            .collect()
    }

    #[test]
    fn same_seed_same_faults() {
        let config = FaultConfig {
            seed: 7,
            write_500: 0.2,
            write_429: 0.2,
            write_409: 0.2,
            ..Default::default()
        };
        let a = outcomes(config.clone(), 200);
        assert_eq!(a, outcomes(config, 200));
        for code in [500, 429, 409] {
            assert!(a.contains(&Some(code)), "{code} never injected");
        }
        assert!(a.contains(&None));
        assert!(
            outcomes(FaultConfig::default(), 50)
                .iter()
                .all(Option::is_none)
        );
        let always = FaultConfig {
            write_429: 1.0,
            ..Default::default()
        };
        assert!(outcomes(always, 20).iter().all(|o| *o == Some(429)));
    }
}
