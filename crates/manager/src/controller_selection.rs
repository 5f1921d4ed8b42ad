//! The `--controllers` flag: which controllers run.
//!
//! Upstream semantics: aliases are rewritten to canonical names, every entry but
//! `*` must name a known controller, and for each controller the first entry naming it (`name`
//! or `-name`) decides; otherwise `*` enables every controller that is not disabled by default.

use crate::registry::ControllerRegistry;

/// A `--controllers` entry that names no known controller.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{name:?} is not in the list of known controllers: {known}")]
pub struct UnknownControllerError {
    name: String,
    known: String,
}

/// The validated `--controllers` list, with aliases resolved to canonical names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerSelection {
    entries: Vec<SelectionEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum SelectionEntry {
    All,
    Enable(String),
    Disable(String),
}

impl ControllerSelection {
    /// Validates the raw flag entries against the registry; an unknown name is an error that
    /// lists the known ones, as upstream's message does.
    pub fn parse(
        raw_entries: &[String],
        registry: &ControllerRegistry,
    ) -> Result<Self, UnknownControllerError> {
        let mut entries = Vec::with_capacity(raw_entries.len());
        for raw in raw_entries.iter().map(|entry| entry.trim()) {
            if raw.is_empty() {
                continue;
            }
            if raw == "*" {
                entries.push(SelectionEntry::All);
                continue;
            }
            let (disable, name) = match raw.strip_prefix('-') {
                Some(name) => (true, name),
                None => (false, raw),
            };
            let canonical = registry
                .canonical_name(name)
                .ok_or_else(|| UnknownControllerError {
                    name: name.to_string(),
                    known: registry.known_names().join(", "),
                })?
                .to_string();
            entries.push(if disable {
                SelectionEntry::Disable(canonical)
            } else {
                SelectionEntry::Enable(canonical)
            });
        }
        Ok(Self { entries })
    }

    /// The list as upstream's component configuration keeps it (`Generic.Controllers`, what
    /// `/configz` shows): `*`, `name` or `-name` in flag order, aliases replaced by canonical
    /// names. Empty entries, which decide nothing, are left out.
    pub fn canonical_entries(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|entry| match entry {
                SelectionEntry::All => "*".to_string(),
                SelectionEntry::Enable(name) => name.clone(),
                SelectionEntry::Disable(name) => format!("-{name}"),
            })
            .collect()
    }

    /// Upstream's `IsControllerEnabled`: first explicit mention wins, then `*` enables the
    /// controllers that are not disabled by default.
    pub fn is_enabled(&self, canonical_name: &str, disabled_by_default: bool) -> bool {
        for entry in &self.entries {
            match entry {
                SelectionEntry::Enable(name) if name == canonical_name => return true,
                SelectionEntry::Disable(name) if name == canonical_name => return false,
                _ => {}
            }
        }
        self.entries.contains(&SelectionEntry::All) && !disabled_by_default
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{ControllerRegistry, test_descriptor};

    fn registry() -> ControllerRegistry {
        let mut registry = ControllerRegistry::new();
        let descriptors: [(&'static str, &'static [&'static str], bool); 4] = [
            ("replicaset-controller", &["replicaset"], false),
            ("deployment-controller", &["deployment"], false),
            ("statefulset-controller", &["statefulset"], false),
            ("bootstrap-signer-controller", &["bootstrapsigner"], true),
        ];
        for (name, aliases, disabled_by_default) in descriptors {
            registry
                .register(test_descriptor(name, aliases, disabled_by_default))
                .expect("register");
        }
        registry
    }

    fn entries(list: &str) -> Vec<String> {
        list.split(',').map(str::to_string).collect()
    }

    #[test]
    fn decides_like_upstream() {
        let registry = registry();
        // (controller, disabled by default, [(flag, expected)])
        type Case = (&'static str, bool, &'static [(&'static str, bool)]);
        let cases: [Case; 2] = [
            (
                "replicaset-controller",
                false,
                &[
                    ("*", true),
                    ("*,-replicaset", false),
                    ("-replicaset,*", false),
                    ("*,-replicaset-controller", false),
                    ("replicaset,-replicaset", true),
                    ("-replicaset,replicaset", false),
                    ("deployment", false),
                    ("deployment,replicaset", true),
                    ("", false),
                ],
            ),
            (
                "bootstrap-signer-controller",
                true,
                &[
                    ("*", false),
                    ("*,bootstrapsigner", true),
                    ("bootstrap-signer-controller", true),
                ],
            ),
        ];
        for (name, disabled_by_default, flags) in cases {
            for &(flag, want) in flags {
                let selection = ControllerSelection::parse(&entries(flag), &registry).expect(flag);
                assert_eq!(
                    selection.is_enabled(name, disabled_by_default),
                    want,
                    "--controllers={flag} for {name}"
                );
            }
        }
    }

    #[test]
    fn canonical_entries_keep_the_order_and_resolve_aliases() {
        let registry = registry();
        let selection =
            ControllerSelection::parse(&entries("*,-replicaset,, bootstrapsigner"), &registry)
                .expect("parse");
        assert_eq!(
            selection.canonical_entries(),
            vec!["*", "-replicaset-controller", "bootstrap-signer-controller"]
        );
    }

    #[test]
    fn unknown_names_are_errors_listing_the_known_ones() {
        let registry = registry();
        for flag in ["nosuch", "*,-nosuch", "replicaset,foo"] {
            let err = ControllerSelection::parse(&entries(flag), &registry).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains("is not in the list of known controllers"),
                "{message}"
            );
            assert!(message.contains("replicaset-controller"), "{message}");
        }
    }
}
