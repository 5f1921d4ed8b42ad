//! The controller registry: canonical name -> descriptor (each controller crate's
//! `DESCRIPTOR`: aliases, default state, flags, init function, ...).
//!
//! The manager knows controllers only through this map, as upstream's `NewControllerDescriptors`.
//! Registration rejects what upstream panics on (empty or duplicate names, an alias that clashes
//! with a name or another alias) and a flag declared twice, so a broken registry fails at start-up, not silently.

use std::collections::BTreeMap;

pub use controller_toolkit::descriptor::ControllerDescriptor;

/// Why a controller could not be constructed; aborts the manager's start-up, as upstream does.
#[derive(Debug, thiserror::Error)]
#[error("initializing {controller}: {message}")]
pub struct InitError {
    /// Canonical name of the controller that failed.
    pub controller: String,
    /// What went wrong.
    pub message: String,
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
    /// A flag of the descriptor is already another flag (clap would refuse the command line).
    #[error("flag --{0} is already registered")]
    DuplicateFlag(String),
}

/// Map of canonical controller names to descriptors, plus the alias table.
#[derive(Debug, Default, Clone)]
pub struct ControllerRegistry {
    descriptors: BTreeMap<&'static str, ControllerDescriptor>,
    aliases: BTreeMap<&'static str, &'static str>,
    flags: std::collections::BTreeSet<&'static str>,
}

impl ControllerRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry of `descriptors`, in that order of registration.
    pub fn of(descriptors: &[ControllerDescriptor]) -> Result<Self, RegistryError> {
        let mut registry = Self::new();
        for descriptor in descriptors {
            registry.register(*descriptor)?;
        }
        Ok(registry)
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
        let flags = std::iter::once(descriptor.workers.flag)
            .chain(descriptor.settings.iter().map(|setting| setting.flag));
        for flag in flags {
            if self.flags.contains(flag) {
                return Err(RegistryError::DuplicateFlag(flag.to_string()));
            }
        }
        self.flags.insert(descriptor.workers.flag);
        self.flags
            .extend(descriptor.settings.iter().map(|setting| setting.flag));
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

/// A descriptor for tests of the registry and the selection: its workers flag is named after
/// it, it declares nothing else, and its init chooses not to run.
#[cfg(test)]
pub(crate) fn test_descriptor(
    name: &'static str,
    aliases: &'static [&'static str],
    disabled_by_default: bool,
) -> ControllerDescriptor {
    use controller_toolkit::descriptor::WorkersFlag;
    ControllerDescriptor {
        name,
        client_name: name,
        aliases,
        disabled_by_default,
        workers: WorkersFlag {
            flag: name,
            default: 1,
            help: "",
            config_section: "",
            config_field: "",
        },
        queue: name,
        metrics_subsystem: name,
        settings: &[],
        feature_gates: &[],
        compared_kinds: &[],
        rbac: &[],
        init: |_| Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use controller_toolkit::descriptor::{Setting, SettingKind};

    fn descriptor(name: &'static str, aliases: &'static [&'static str]) -> ControllerDescriptor {
        test_descriptor(name, aliases, false)
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

    /// clap panics on two arguments of one name: the registry refuses them first.
    #[test]
    fn refuses_a_flag_twice() {
        let mut registry = registry_of(descriptor("a-controller", &[]));
        let mut same_workers_flag = descriptor("b-controller", &[]);
        same_workers_flag.workers.flag = "a-controller";
        assert_eq!(
            registry.register(same_workers_flag),
            Err(RegistryError::DuplicateFlag("a-controller".into()))
        );
        let mut setting_as_flag = descriptor("c-controller", &[]);
        setting_as_flag.settings = &[Setting {
            flag: "a-controller",
            kind: SettingKind::Bool,
            default: "false",
            help: "",
        }];
        assert_eq!(
            registry.register(setting_as_flag),
            Err(RegistryError::DuplicateFlag("a-controller".into()))
        );
    }
}
