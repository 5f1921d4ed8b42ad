//! The flags the registered controllers add to the command line: each descriptor's
//! `--concurrent-<name>-syncs` and its own settings, and the feature gates they follow.
//!
//! Why: a controller states its flags once, in its descriptor, and the manager turns them into
//! clap arguments, `/configz` entries and the values its init function reads, so adding a
//! controller edits no flag table here. The flags are there whatever `--controllers` says, as
//! upstream accepts every controller's flags whether or not it runs.

use std::collections::BTreeMap;

use clap::{Arg, ArgAction, ArgMatches, Command, value_parser};
use controller_toolkit::descriptor::{
    ControllerDescriptor, ControllerSettings, FeatureGate, Setting, SettingKind, SettingValue,
    WorkersFlag,
};

use crate::{go_duration::parse_go_duration, registry::ControllerRegistry};

/// The values of the registered controllers' flags, and the gates they follow.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControllerFlags {
    /// Each controller's workers flag with its value, by canonical controller name.
    workers: BTreeMap<&'static str, (WorkersFlag, usize)>,
    /// Each controller's settings with their values, by canonical controller name.
    settings: BTreeMap<&'static str, Vec<(Setting, SettingValue)>>,
    /// Every gate a registered controller follows.
    gates: Vec<FeatureGate>,
}

impl ControllerFlags {
    /// `command` with the flags of every controller in `registry`.
    pub fn add_to(mut command: Command, registry: &ControllerRegistry) -> Command {
        for descriptor in registry.descriptors() {
            let workers = descriptor.workers;
            command = command.arg(
                Arg::new(workers.flag)
                    .long(workers.flag)
                    .value_parser(value_parser!(usize))
                    .help(format!("{} [default: {}]", workers.help, workers.default)),
            );
            for setting in descriptor.settings {
                let arg = Arg::new(setting.flag)
                    .long(setting.flag)
                    .default_value(setting.default)
                    .help(setting.help);
                command = command.arg(match setting.kind {
                    SettingKind::Duration => arg.value_parser(parse_go_duration),
                    SettingKind::Bool => arg
                        .value_parser(value_parser!(bool))
                        .num_args(0..=1)
                        .default_missing_value("true")
                        .action(ArgAction::Set),
                });
            }
        }
        command
    }

    /// The values `matches` (parsed by a command built with [`ControllerFlags::add_to`]) holds
    /// for the flags of every controller in `registry`.
    pub fn from_matches(matches: &ArgMatches, registry: &ControllerRegistry) -> Self {
        let mut flags = Self::default();
        for descriptor in registry.descriptors() {
            let workers = descriptor.workers;
            let value = matches
                .get_one::<usize>(workers.flag)
                .copied()
                .unwrap_or(workers.default);
            flags.workers.insert(descriptor.name, (workers, value));
            let settings = descriptor
                .settings
                .iter()
                .filter_map(|setting| {
                    let value = match setting.kind {
                        SettingKind::Duration => matches
                            .get_one::<std::time::Duration>(setting.flag)
                            .copied()
                            .map(SettingValue::Duration),
                        SettingKind::Bool => matches
                            .get_one::<bool>(setting.flag)
                            .copied()
                            .map(SettingValue::Bool),
                    };
                    value.map(|value| (*setting, value))
                })
                .collect();
            flags.settings.insert(descriptor.name, settings);
            flags.gates.extend(descriptor.feature_gates.iter().copied());
        }
        flags
    }

    /// The number of workers of the controller `name` (its descriptor's default if unknown).
    pub fn workers(&self, descriptor: &ControllerDescriptor) -> usize {
        self.workers
            .get(descriptor.name)
            .map_or(descriptor.workers.default, |(_, value)| *value)
    }

    /// What the init function of `descriptor` reads: its settings and, from `enabled_gates`,
    /// the gates it follows.
    pub fn settings_for(
        &self,
        descriptor: &ControllerDescriptor,
        enabled_gates: &BTreeMap<&'static str, bool>,
    ) -> ControllerSettings {
        let values = self
            .settings
            .get(descriptor.name)
            .into_iter()
            .flatten()
            .map(|(setting, value)| (setting.flag, *value))
            .collect();
        let gates = descriptor
            .feature_gates
            .iter()
            .map(|gate| {
                let enabled = enabled_gates.get(gate.name).copied();
                (gate.name, enabled.unwrap_or(gate.default))
            })
            .collect();
        ControllerSettings::new(values, gates)
    }

    /// Every workers flag with its value.
    pub fn all_workers(&self) -> impl Iterator<Item = &(WorkersFlag, usize)> {
        self.workers.values()
    }

    /// Every setting with its value.
    pub fn all_settings(&self) -> impl Iterator<Item = &(Setting, SettingValue)> {
        self.settings.values().flatten()
    }

    /// The gates the registered controllers follow.
    pub fn gates(&self) -> &[FeatureGate] {
        &self.gates
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::CommandFactory;

    use super::*;
    use crate::{controllers::default_registry, options::Options};

    fn parse(args: &[&str]) -> ControllerFlags {
        let registry = default_registry().expect("registry");
        let command = ControllerFlags::add_to(Options::command(), &registry);
        let argv = std::iter::once("kube-controller-manager").chain(args.iter().copied());
        let matches = command.try_get_matches_from(argv).expect("flags");
        ControllerFlags::from_matches(&matches, &registry)
    }

    fn settings(flags: &ControllerFlags, name: &str) -> ControllerSettings {
        let registry = default_registry().expect("registry");
        let descriptor = registry
            .descriptors()
            .find(|descriptor| descriptor.name == name)
            .expect("registered");
        flags.settings_for(descriptor, &BTreeMap::new())
    }

    /// Every descriptor flag parses, with its descriptor's default when not given.
    #[test]
    fn descriptor_flags_parse_with_their_defaults() {
        let defaults = parse(&[]);
        for (workers, value) in defaults.all_workers() {
            assert_eq!(*value, workers.default, "--{}", workers.flag);
        }
        let replica_sets = settings(&defaults, "replicaset-controller");
        assert_eq!(
            replica_sets
                .duration("replicaset-status-hold")
                .expect("set"),
            Duration::from_secs(1)
        );
        let sets = settings(&defaults, "statefulset-controller");
        assert!(
            !sets
                .bool("statefulset-recover-broken-rollout")
                .expect("set")
        );

        let given = parse(&[
            "--concurrent-statefulset-syncs=9",
            "--replicaset-status-hold=0s",
            "--statefulset-recover-broken-rollout",
            "--statefulset-recover-grace=1m30s",
        ]);
        let workers: BTreeMap<_, _> = given
            .all_workers()
            .map(|(flag, value)| (flag.flag, *value))
            .collect();
        assert_eq!(workers["concurrent-statefulset-syncs"], 9);
        assert_eq!(workers["concurrent-replicaset-syncs"], 5);
        let replica_sets = settings(&given, "replicaset-controller");
        assert_eq!(
            replica_sets
                .duration("replicaset-status-hold")
                .expect("set"),
            Duration::ZERO
        );
        let sets = settings(&given, "statefulset-controller");
        assert!(
            sets.bool("statefulset-recover-broken-rollout")
                .expect("set")
        );
        assert_eq!(
            sets.duration("statefulset-recover-grace").expect("set"),
            Duration::from_secs(90)
        );
    }

    #[test]
    fn a_go_duration_needs_a_unit() {
        let registry = default_registry().expect("registry");
        let command = ControllerFlags::add_to(Options::command(), &registry);
        assert!(
            command
                .try_get_matches_from(["kcm", "--statefulset-recover-grace=30"])
                .is_err()
        );
    }

    /// A controller reads only its own settings; a gate not set is at its default.
    #[test]
    fn settings_are_per_controller() {
        let flags = parse(&[]);
        let deployments = settings(&flags, "deployment-controller");
        assert!(deployments.duration("replicaset-status-hold").is_err());
        assert!(
            deployments
                .gate("DeploymentReplicaSetTerminatingReplicas")
                .expect("followed")
        );
        let registry = default_registry().expect("registry");
        let sets = registry
            .descriptors()
            .find(|descriptor| descriptor.name == "statefulset-controller")
            .expect("registered");
        let on = BTreeMap::from([("MaxUnavailableStatefulSet", true)]);
        assert!(
            flags
                .settings_for(sets, &on)
                .gate("MaxUnavailableStatefulSet")
                .expect("followed")
        );
        assert!(
            !flags
                .settings_for(sets, &BTreeMap::new())
                .gate("MaxUnavailableStatefulSet")
                .expect("followed")
        );
    }
}
