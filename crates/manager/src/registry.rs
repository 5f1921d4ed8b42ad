//! The controller registry: canonical name -> descriptor (aliases, default state, init function).
//!
//! The manager knows controllers only through this map, as upstream's `NewControllerDescriptors`.
//! Registration rejects what upstream panics on (empty or duplicate names, an alias that clashes
//! with a name or another alias), so a broken registry fails at start-up, not silently.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::context::ControllerContext;

/// A constructed controller, ready to run once the informers have started.
pub trait Controller: Send {
    /// Runs until `shutdown` is cancelled and every worker has finished its current item.
    /// Waiting for the informer caches to sync is part of running.
    fn run(self: Box<Self>, shutdown: CancellationToken) -> BoxFuture<'static, ()>;
}

/// Why a controller could not be constructed; aborts the manager's start-up, as upstream does.
#[derive(Debug, thiserror::Error)]
#[error("initializing {controller}: {message}")]
pub struct InitError {
    /// Canonical name of the controller that failed.
    pub controller: String,
    /// What went wrong.
    pub message: String,
}

/// Builds a controller: wires its informers, handlers and queue, starts nothing.
/// `Ok(None)` means the controller chose not to run (logged and skipped, as upstream).
pub type InitFn = fn(&ControllerContext) -> Result<Option<Box<dyn Controller>>, InitError>;

/// One registry entry.
#[derive(Clone, Copy)]
pub struct ControllerDescriptor {
    /// Canonical name, e.g. `replicaset-controller`; also the health-check and client name.
    pub name: &'static str,
    /// Names accepted in `--controllers` besides the canonical one (upstream's short names).
    pub aliases: &'static [&'static str],
    /// Whether `*` leaves this controller off (only naming it explicitly enables it).
    pub disabled_by_default: bool,
    /// Constructor.
    pub init: InitFn,
}

impl std::fmt::Debug for ControllerDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerDescriptor")
            .field("name", &self.name)
            .field("aliases", &self.aliases)
            .field("disabled_by_default", &self.disabled_by_default)
            .finish_non_exhaustive()
    }
}

/// A registration that upstream would refuse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RegistryError {
    /// The descriptor has an empty name.
    #[error("controller name must not be empty")]
    EmptyName,
    /// The name or an alias is already taken.
    #[error("controller name or alias {0:?} is already registered")]
    Duplicate(String),
}

/// Map of canonical controller names to descriptors, plus the alias table.
#[derive(Debug, Default, Clone)]
pub struct ControllerRegistry {
    descriptors: BTreeMap<&'static str, ControllerDescriptor>,
    aliases: BTreeMap<&'static str, &'static str>,
}

impl ControllerRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a descriptor, refusing empty and clashing names.
    pub fn register(&mut self, descriptor: ControllerDescriptor) -> Result<(), RegistryError> {
        if descriptor.name.is_empty() {
            return Err(RegistryError::EmptyName);
        }
        if self.canonical_name(descriptor.name).is_some() {
            return Err(RegistryError::Duplicate(descriptor.name.to_string()));
        }
        for alias in descriptor.aliases {
            if self.canonical_name(alias).is_some() || *alias == descriptor.name {
                return Err(RegistryError::Duplicate((*alias).to_string()));
            }
        }
        for alias in descriptor.aliases {
            self.aliases.insert(alias, descriptor.name);
        }
        self.descriptors.insert(descriptor.name, descriptor);
        Ok(())
    }

    /// Resolves a canonical name or an alias to the canonical name.
    pub fn canonical_name(&self, name: &str) -> Option<&'static str> {
        if let Some((canonical, _)) = self.descriptors.get_key_value(name) {
            return Some(canonical);
        }
        self.aliases.get(name).copied()
    }

    /// Canonical names, sorted; used in error messages and help.
    pub fn known_names(&self) -> Vec<&'static str> {
        self.descriptors.keys().copied().collect()
    }

    /// Every descriptor, sorted by name.
    pub fn descriptors(&self) -> impl Iterator<Item = &ControllerDescriptor> {
        self.descriptors.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(name: &'static str, aliases: &'static [&'static str]) -> ControllerDescriptor {
        ControllerDescriptor {
            name,
            aliases,
            disabled_by_default: false,
            init: |_| Ok(None),
        }
    }

    /// A registry holding only `descriptor`.
    fn registry_of(descriptor: ControllerDescriptor) -> ControllerRegistry {
        let mut registry = ControllerRegistry::new();
        registry.register(descriptor).unwrap();
        registry
    }

    #[test]
    fn resolves_names_and_aliases() {
        let registry = registry_of(descriptor("replicaset-controller", &["replicaset"]));
        assert_eq!(
            registry.canonical_name("replicaset"),
            Some("replicaset-controller")
        );
        assert_eq!(
            registry.canonical_name("replicaset-controller"),
            Some("replicaset-controller")
        );
        assert_eq!(registry.canonical_name("deployment"), None);
    }

    #[test]
    fn refuses_what_upstream_panics_on() {
        let mut registry = registry_of(descriptor("a-controller", &["a"]));
        let cases = [
            (descriptor("", &[]), RegistryError::EmptyName),
            (
                descriptor("a-controller", &[]),
                RegistryError::Duplicate("a-controller".into()),
            ),
            (
                descriptor("b-controller", &["a"]),
                RegistryError::Duplicate("a".into()),
            ),
            (
                descriptor("c-controller", &["a-controller"]),
                RegistryError::Duplicate("a-controller".into()),
            ),
            (descriptor("a", &[]), RegistryError::Duplicate("a".into())),
        ];
        for (descriptor, want) in cases {
            assert_eq!(registry.register(descriptor), Err(want));
        }
    }
}
