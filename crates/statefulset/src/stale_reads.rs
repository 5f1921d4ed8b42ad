//! Stale-read protection for the set itself (statefulset.md §3 step 1, after replicaset.md
//! §8): remember the resourceVersion of our own status writes and refuse to sync a set while
//! the cache still holds an older version, since a sync on the stale object would compute from
//! (and write back) a status that predates our own write, e.g. a lower `collisionCount`.
//!
//! Only the StatefulSet's own writes are tracked (not pod writes), and versions are compared
//! only when both parse as integers, as upstream compares them only when comparable.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The cached set is older than one we wrote.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "read version: {read} is not as new as written version: {wrote} for group resource statefulsets.apps"
)]
pub struct StaleRead {
    /// The version in the cache.
    pub read: String,
    /// The version we wrote.
    pub wrote: String,
}

/// Written versions per set key, with the UID they were written for.
#[derive(Debug, Default)]
pub struct WrittenVersions {
    written: Mutex<HashMap<String, (String, String)>>,
}

impl WrittenVersions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, String)>> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that we wrote version `resource_version` of the set `key` with `uid`.
    pub fn record(&self, key: &str, uid: &str, resource_version: &str) {
        self.lock().insert(
            key.to_owned(),
            (uid.to_owned(), resource_version.to_owned()),
        );
    }

    /// Forgets the set (deleted or gone).
    pub fn forget(&self, key: &str) {
        self.lock().remove(key);
    }

    /// Whether the cached version `read` of set `key` (with `uid`) is at least as new as our
    /// last write; a satisfied record is dropped.
    pub fn check(&self, key: &str, uid: &str, read: &str) -> Result<(), StaleRead> {
        let mut written = self.lock();
        let Some((written_uid, wrote)) = written.get(key) else {
            return Ok(());
        };
        if written_uid == uid
            && let (Ok(read_version), Ok(wrote_version)) =
                (read.parse::<u64>(), wrote.parse::<u64>())
            && read_version < wrote_version
        {
            return Err(StaleRead {
                read: read.to_owned(),
                wrote: wrote.clone(),
            });
        }
        written.remove(key);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_until_the_cache_catches_up() {
        let versions = WrittenVersions::default();
        assert_eq!(versions.check("ns/web", "u1", "5"), Ok(()));
        versions.record("ns/web", "u1", "10");
        assert_eq!(
            versions.check("ns/web", "u1", "9"),
            Err(StaleRead {
                read: "9".into(),
                wrote: "10".into()
            })
        );
        assert_eq!(versions.check("ns/web", "u1", "10"), Ok(()));
        // Satisfied records are dropped.
        assert_eq!(versions.check("ns/web", "u1", "1"), Ok(()));
    }

    #[test]
    fn other_uids_and_incomparable_versions_are_ignored() {
        let versions = WrittenVersions::default();
        versions.record("ns/web", "u1", "10");
        assert_eq!(versions.check("ns/web", "u2", "3"), Ok(()));
        versions.record("ns/web", "u1", "10");
        assert_eq!(versions.check("ns/web", "u1", "abc"), Ok(()));
        versions.record("ns/web", "u1", "10");
        versions.forget("ns/web");
        assert_eq!(versions.check("ns/web", "u1", "3"), Ok(()));
    }
}
