//! The batch/v1 CronJob strategy of upstream's registry (`pkg/registry/batch/cronjob/strategy.go`),
//! with the CronJob's API defaults (`SetDefaults_CronJob`, `pkg/apis/batch/v1/defaults.go`, and
//! the pod defaults upstream's generated defaulters apply to `spec.jobTemplate`) and validation
//! (`ValidateCronJobCreate` and `ValidateCronJobUpdate`, `pkg/apis/batch/validation`).
//!
//! Why in the sim: a CronJob controller is tested against it, and a CronJob a real API server
//! defaults or refuses must be defaulted or refused here too, so the controller reads the
//! objects it would read in a cluster.
//!
//! What the sim does not check: the cron grammar of `spec.schedule`. Upstream parses the
//! schedule (robfig/cron's `ParseStandard`) and answers 422 for one it cannot parse; the sim
//! has no cron parser, so it stores any non-empty schedule, and a controller that cannot
//! parse it reports it with its `UnparseableSchedule` warning event instead. Everything else
//! of upstream's CronJob validation is checked, the job template with the Job spec rules of
//! [`crate::jobs`].

use std::io::Read;

use serde_json::{Map, Value, json};

use crate::defaults::{default_field, object_at, pod_template, template_metadata};
use crate::jobs::{self, NONNEGATIVE, field, go_value, int, string};
use crate::object::meta_str;
use crate::status::Cause;

/// The longest CronJob name upstream accepts on create: a DNS-1035 label (63) less the 11
/// characters of the `-<timestamp>` suffix its controller gives each Job.
const MAX_NAME_LENGTH: usize = 52;
/// The values of `spec.concurrencyPolicy`.
const CONCURRENCY_POLICIES: [&str; 3] = ["Allow", "Forbid", "Replace"];
/// Where the system's time zone database lives (what Go's `time.LoadLocation` reads first).
const ZONEINFO: &str = "/usr/share/zoneinfo";
/// The magic bytes a compiled zoneinfo (TZif) file starts with.
const TZIF_MAGIC: &[u8; 4] = b"TZif";

const TZ_IN_SCHEDULE: &str = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead";
const TZ_TWICE: &str = "cannot use both timeZone field and TZ or CRON_TZ in schedule";
const EMPTY_TIME_ZONE: &str = "timeZone must be nil or non-empty string";
const LOCAL_TIME_ZONE: &str =
    "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones";

/// Upstream's CronJob defaults on create and update: `SetDefaults_CronJob` (`concurrencyPolicy`
/// Allow, `suspend` false, `successfulJobsHistoryLimit` 3, `failedJobsHistoryLimit` 1, each
/// when unset) and, in `spec.jobTemplate`, the template metadata's `creationTimestamp: null`,
/// the pod-template defaults and the pod failure policy's pattern status. A job template gets
/// none of `SetDefaults_Job` (upstream defaults only Job objects with it).
pub(crate) fn default(cronjob: &mut Map<String, Value>) {
    let spec = object_at(cronjob, "spec");
    // Go decodes an empty string as the unset policy.
    if spec.get("concurrencyPolicy") == Some(&json!("")) {
        spec.remove("concurrencyPolicy");
    }
    default_field(spec, "concurrencyPolicy", json!("Allow"));
    default_field(spec, "suspend", json!(false));
    default_field(spec, "successfulJobsHistoryLimit", json!(3));
    default_field(spec, "failedJobsHistoryLimit", json!(1));
    let template = object_at(spec, "jobTemplate");
    template_metadata(template);
    let job_spec = object_at(template, "spec");
    pod_template(job_spec);
    jobs::default_pod_condition_patterns(job_spec);
}

/// Validates a CronJob being created (`old` None) or updated: upstream's
/// `ValidateCronJobCreate` / `ValidateCronJobUpdate` past the object metadata (which the
/// caller checks), in upstream's order, without parsing the schedule.
pub(crate) fn validate(cronjob: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let null = Value::Null;
    let spec = cronjob.get("spec").unwrap_or(&null);
    let old_spec = old.map(|old| old.get("spec").unwrap_or(&null));
    schedule_rules(spec, old_spec, &mut causes);
    nonnegative(spec, "startingDeadlineSeconds", &mut causes);
    let time_zone = field(spec, "timeZone");
    if old_spec.is_none_or(|old_spec| field(old_spec, "timeZone") != time_zone)
        && let Some(time_zone) = time_zone
    {
        time_zone_rules(time_zone, &mut causes);
    }
    concurrency_policy_rules(spec, &mut causes);
    job_template_rules(spec, &mut causes);
    nonnegative(spec, "successfulJobsHistoryLimit", &mut causes);
    nonnegative(spec, "failedJobsHistoryLimit", &mut causes);
    // Only on create, so that older CronJobs with longer names can still be updated.
    let name = meta_str(cronjob, "name");
    if old.is_none() && name.len() > MAX_NAME_LENGTH {
        causes.push(Cause::invalid(
            "metadata.name",
            &format!("{name:?}"),
            &format!("must be no more than {MAX_NAME_LENGTH} characters"),
        ));
    }
    causes
}

/// `spec.schedule`: required, and (upstream's `validateScheduleFormat` past the parse) no
/// `TZ=`/`CRON_TZ=` in it, unless the stored CronJob already had one (grandfathered), and
/// then not together with `spec.timeZone`. Like upstream, any `TZ` in the text counts.
fn schedule_rules(spec: &Value, old_spec: Option<&Value>, causes: &mut Vec<Cause>) {
    let path = "spec.schedule";
    let schedule = string(spec, "schedule").unwrap_or("");
    if schedule.is_empty() {
        causes.push(Cause::required(path));
        return;
    }
    if !schedule.contains("TZ") {
        return;
    }
    let grandfathered =
        old_spec.is_some_and(|old| string(old, "schedule").is_some_and(|s| s.contains("TZ")));
    let value = format!("{schedule:?}");
    if !grandfathered {
        causes.push(Cause::invalid(path, &value, TZ_IN_SCHEDULE));
    } else if field(spec, "timeZone").is_some() {
        causes.push(Cause::invalid(path, &value, TZ_TWICE));
    }
}

/// Upstream's `validateTimeZone` on a `spec.timeZone` that is set (checked on create and when
/// it changes): non-empty, an IANA-shaped name, not `Local`, and known to the system's time
/// zone database.
fn time_zone_rules(time_zone: &Value, causes: &mut Vec<Cause>) {
    let path = "spec.timeZone";
    let value = go_value(Some(time_zone));
    let time_zone = time_zone.as_str().unwrap_or("");
    let unknown = format!("unknown time zone {time_zone}");
    if time_zone.is_empty() {
        causes.push(Cause::invalid(path, &value, EMPTY_TIME_ZONE));
        return;
    }
    if !time_zone.split('/').all(is_zone_name_part) {
        causes.push(Cause::invalid(path, &value, &unknown));
        return;
    }
    if time_zone.eq_ignore_ascii_case("Local") {
        causes.push(Cause::invalid(path, &value, LOCAL_TIME_ZONE));
    }
    if !zone_exists(time_zone) {
        causes.push(Cause::invalid(path, &value, &unknown));
    }
}

/// One `/`-separated part of a time zone name as upstream accepts it: not `.` or `..`, not
/// starting with `-`, and matching `^[A-Za-z.\-_0-9+]{1,14}$`.
fn is_zone_name_part(part: &str) -> bool {
    part != "."
        && part != ".."
        && !part.starts_with('-')
        && (1..=14).contains(&part.len())
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
}

/// Whether Go's `time.LoadLocation` would load `name`: `UTC` and `Local` always (built in),
/// anything else from a compiled zone file of the system's database.
fn zone_exists(name: &str) -> bool {
    if name == "UTC" || name == "Local" {
        return true;
    }
    let path = std::path::Path::new(ZONEINFO).join(name);
    if !path.is_file() {
        return false;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(&path)
        .and_then(|mut file| file.read_exact(&mut magic))
        .is_ok_and(|()| &magic == TZIF_MAGIC)
}

/// `spec.concurrencyPolicy`: Allow, Forbid or Replace.
fn concurrency_policy_rules(spec: &Value, causes: &mut Vec<Cause>) {
    let path = "spec.concurrencyPolicy";
    match field(spec, "concurrencyPolicy") {
        None => causes.push(Cause::required(path)),
        Some(Value::String(policy)) if policy.is_empty() => causes.push(Cause::required(path)),
        Some(Value::String(policy)) if CONCURRENCY_POLICIES.contains(&policy.as_str()) => {}
        Some(other) => causes.push(Cause::not_supported(
            path,
            &go_value(Some(other)),
            &CONCURRENCY_POLICIES,
        )),
    }
}

/// Upstream's `ValidateJobTemplateSpec`: the Job spec rules on `spec.jobTemplate.spec`, and
/// no selector (the Job controller's selector is generated for each Job) nor a manual one.
fn job_template_rules(spec: &Value, causes: &mut Vec<Cause>) {
    let null = Value::Null;
    let path = "spec.jobTemplate.spec";
    let job_spec = spec.pointer("/jobTemplate/spec").unwrap_or(&null);
    causes.extend(jobs::spec_rules_at(job_spec, path));
    if let Some(selector) = field(job_spec, "selector") {
        causes.push(Cause::invalid(
            &format!("{path}.selector"),
            &selector.to_string(),
            "`selector` will be auto-generated",
        ));
    }
    if job_spec.get("manualSelector") == Some(&json!(true)) {
        causes.push(Cause::not_supported(
            &format!("{path}.manualSelector"),
            "true",
            &["nil", "false"],
        ));
    }
}

/// `spec.<key>`, when set, is at least 0.
fn nonnegative(spec: &Value, key: &str, causes: &mut Vec<Cause>) {
    if let Some(value) = int(spec, key).filter(|v| *v < 0) {
        causes.push(Cause::invalid(
            &format!("spec.{key}"),
            &value.to_string(),
            NONNEGATIVE,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CronJob that validates once defaulted, with `spec` merged into its spec.
    fn cronjob(name: &str, spec: Value) -> Value {
        let mut value = json!({
            "metadata": {"name": name},
            "spec": {"schedule": "*/5 * * * *",
                "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure",
                    "containers": [{"name": "hello", "image": "busybox:1.36"}]}}}}}
        });
        json_patch::merge(&mut value, &json!({ "spec": spec }));
        value
    }

    fn defaulted(mut value: Value) -> Value {
        if let Some(map) = value.as_object_mut() {
            default(map);
        }
        value
    }

    /// `field: message` of each cause, as the 422's summary lists them.
    fn messages(causes: &[Cause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn defaults_as_set_defaults_cron_job() {
        let cases = [
            (
                "nothing set",
                json!({}),
                json!({"concurrencyPolicy": "Allow", "suspend": false,
                    "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}),
            ),
            (
                "everything set",
                json!({"concurrencyPolicy": "Forbid", "suspend": true,
                    "successfulJobsHistoryLimit": 0, "failedJobsHistoryLimit": 5}),
                json!({"concurrencyPolicy": "Forbid", "suspend": true,
                    "successfulJobsHistoryLimit": 0, "failedJobsHistoryLimit": 5}),
            ),
            (
                "null and empty read as unset",
                json!({"concurrencyPolicy": "", "suspend": null,
                    "successfulJobsHistoryLimit": null, "failedJobsHistoryLimit": null}),
                json!({"concurrencyPolicy": "Allow", "suspend": false,
                    "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}),
            ),
            (
                "a bad policy is kept for validation",
                json!({"concurrencyPolicy": "Sometimes"}),
                json!({"concurrencyPolicy": "Sometimes", "suspend": false,
                    "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}),
            ),
        ];
        for (name, spec, expected) in cases {
            let obj = defaulted(cronjob("c", spec));
            for (key, value) in expected.as_object().unwrap() {
                assert_eq!(&obj["spec"][key], value, "{name}: {key}");
            }
        }
    }

    #[test]
    fn the_job_template_gets_pod_defaults_but_no_job_defaults() {
        let obj = defaulted(cronjob(
            "c",
            json!({"jobTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {
                "podFailurePolicy": {"rules": [{"action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget"}]}]}}}}),
        ));
        let template = &obj["spec"]["jobTemplate"];
        assert_eq!(
            template["metadata"],
            json!({"creationTimestamp": null, "labels": {"a": "b"}})
        );
        let job_spec = &template["spec"];
        for absent in [
            "parallelism",
            "completions",
            "backoffLimit",
            "completionMode",
            "suspend",
            "podReplacementPolicy",
            "selector",
        ] {
            assert!(job_spec.get(absent).is_none(), "{absent}");
        }
        assert_eq!(
            job_spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
            "True"
        );
        assert_eq!(
            job_spec["template"]["metadata"],
            json!({"creationTimestamp": null})
        );
        let pod = &job_spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "OnFailure");
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["terminationGracePeriodSeconds"], 30);
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(
            pod["containers"][0]["terminationMessagePath"],
            "/dev/termination-log"
        );

        // Without a job template, the defaults still build one, as Go's zero value.
        let bare = defaulted(json!({"spec": {"schedule": "@hourly"}}));
        assert_eq!(
            bare["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"],
            "Always"
        );
    }

    #[test]
    fn create_validation_as_upstream() {
        let long = "a".repeat(53);
        let cases: Vec<(&str, Value, Vec<String>)> = vec![
            ("valid", cronjob("c", json!({})), vec![]),
            (
                "name of 52 characters",
                cronjob(&"a".repeat(52), json!({})),
                vec![],
            ),
            (
                "name of 53 characters",
                cronjob(&long, json!({})),
                vec![format!(
                    "metadata.name: Invalid value: {long:?}: must be no more than 52 characters"
                )],
            ),
            (
                "no schedule",
                cronjob("c", json!({"schedule": null})),
                vec!["spec.schedule: Required value".into()],
            ),
            (
                "empty schedule",
                cronjob("c", json!({"schedule": ""})),
                vec!["spec.schedule: Required value".into()],
            ),
            (
                "an unparseable schedule is not the sim's to refuse",
                cronjob("c", json!({"schedule": "obvious error schedule"})),
                vec![],
            ),
            (
                "TZ in the schedule",
                cronjob("c", json!({"schedule": "TZ=UTC 0 * * * *"})),
                vec![format!(
                    "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": {TZ_IN_SCHEDULE}"
                )],
            ),
            (
                "CRON_TZ in the schedule",
                cronjob("c", json!({"schedule": "CRON_TZ=Europe/Rome 0 * * * *"})),
                vec![format!(
                    "spec.schedule: Invalid value: \"CRON_TZ=Europe/Rome 0 * * * *\": {TZ_IN_SCHEDULE}"
                )],
            ),
            (
                "negative counts",
                cronjob(
                    "c",
                    json!({"startingDeadlineSeconds": -1, "successfulJobsHistoryLimit": -2,
                        "failedJobsHistoryLimit": -3}),
                ),
                vec![
                    format!("spec.startingDeadlineSeconds: Invalid value: -1: {NONNEGATIVE}"),
                    format!("spec.successfulJobsHistoryLimit: Invalid value: -2: {NONNEGATIVE}"),
                    format!("spec.failedJobsHistoryLimit: Invalid value: -3: {NONNEGATIVE}"),
                ],
            ),
            (
                "zero counts",
                cronjob(
                    "c",
                    json!({"startingDeadlineSeconds": 0, "successfulJobsHistoryLimit": 0,
                        "failedJobsHistoryLimit": 0}),
                ),
                vec![],
            ),
            (
                "an unknown concurrency policy",
                cronjob("c", json!({"concurrencyPolicy": "Sometimes"})),
                vec![
                    "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"".into(),
                ],
            ),
            (
                "each known concurrency policy",
                cronjob("c", json!({"concurrencyPolicy": "Replace"})),
                vec![],
            ),
            (
                "no job template",
                cronjob("c", json!({"jobTemplate": null})),
                vec![
                    "spec.jobTemplate.spec.template.spec.containers: Required value".into(),
                    "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"".into(),
                ],
            ),
            (
                "the Job spec rules in the template",
                cronjob(
                    "c",
                    json!({"jobTemplate": {"spec": {"parallelism": -1,
                        "template": {"spec": {"restartPolicy": "Always"}}}}}),
                ),
                vec![
                    format!("spec.jobTemplate.spec.parallelism: Invalid value: -1: {NONNEGATIVE}"),
                    "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"".into(),
                ],
            ),
            (
                "a selector in the template",
                cronjob(
                    "c",
                    json!({"jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}}}}}),
                ),
                vec![
                    "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated".into(),
                ],
            ),
            (
                "a manual selector in the template",
                cronjob("c", json!({"jobTemplate": {"spec": {"manualSelector": true}}})),
                vec![
                    "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"".into(),
                ],
            ),
            (
                "manualSelector false",
                cronjob("c", json!({"jobTemplate": {"spec": {"manualSelector": false}}})),
                vec![],
            ),
        ];
        for (name, obj, expected) in cases {
            let causes = validate(&defaulted(obj), None);
            assert_eq!(messages(&causes), expected, "{name}");
        }
    }

    #[test]
    fn time_zones_as_upstream() {
        assert!(
            std::path::Path::new(ZONEINFO)
                .join("America/New_York")
                .is_file(),
            "these cases need the host's time zone database (tzdata) in {ZONEINFO}"
        );
        let invalid =
            |tz: &str, detail: &str| format!("spec.timeZone: Invalid value: {tz:?}: {detail}");
        let unknown = |tz: &str| invalid(tz, &format!("unknown time zone {tz}"));
        let cases: Vec<(&str, Vec<String>)> = vec![
            ("UTC", vec![]),
            ("Etc/UTC", vec![]),
            ("America/New_York", vec![]),
            ("Etc/GMT+5", vec![]),
            ("America/Argentina/Buenos_Aires", vec![]),
            ("", vec![invalid("", EMPTY_TIME_ZONE)]),
            ("Local", vec![invalid("Local", LOCAL_TIME_ZONE)]),
            (
                "local",
                vec![invalid("local", LOCAL_TIME_ZONE), unknown("local")],
            ),
            ("Mars/Olympus_Mons", vec![unknown("Mars/Olympus_Mons")]),
            ("America", vec![unknown("America")]),
            ("zone.tab", vec![unknown("zone.tab")]),
            ("../etc/passwd", vec![unknown("../etc/passwd")]),
            ("./UTC", vec![unknown("./UTC")]),
            ("/UTC", vec![unknown("/UTC")]),
            ("America//New_York", vec![unknown("America//New_York")]),
            ("-UTC", vec![unknown("-UTC")]),
            (
                "America/Very_Long_Name_X",
                vec![unknown("America/Very_Long_Name_X")],
            ),
            ("Europe/Ro me", vec![unknown("Europe/Ro me")]),
        ];
        for (tz, expected) in cases {
            let causes = validate(&defaulted(cronjob("c", json!({"timeZone": tz}))), None);
            assert_eq!(messages(&causes), expected, "{tz:?}");
        }
    }

    #[test]
    fn update_validation_as_upstream() {
        let stored = |spec: Value| defaulted(cronjob(&"a".repeat(60), spec));
        let cases: Vec<(&str, Value, Value, Vec<String>)> = vec![
            (
                "a long name stored before the limit may still be updated",
                json!({}),
                json!({"suspend": true}),
                vec![],
            ),
            (
                "a TZ added by an update",
                json!({}),
                json!({"schedule": "TZ=UTC 0 * * * *"}),
                vec![format!(
                    "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": {TZ_IN_SCHEDULE}"
                )],
            ),
            (
                "a grandfathered TZ may stay, and change",
                json!({"schedule": "TZ=UTC 0 * * * *"}),
                json!({"schedule": "CRON_TZ=Europe/Rome 30 * * * *"}),
                vec![],
            ),
            (
                "a grandfathered TZ with timeZone",
                json!({"schedule": "TZ=UTC 0 * * * *"}),
                json!({"schedule": "TZ=UTC 0 * * * *", "timeZone": "Europe/Rome"}),
                vec![format!(
                    "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": {TZ_TWICE}"
                )],
            ),
            (
                "an unchanged time zone is not checked again",
                json!({"timeZone": "Mars/Olympus_Mons"}),
                json!({"timeZone": "Mars/Olympus_Mons", "suspend": true}),
                vec![],
            ),
            (
                "a changed time zone is",
                json!({"timeZone": "Europe/Rome"}),
                json!({"timeZone": "Mars/Olympus_Mons"}),
                vec![
                    "spec.timeZone: Invalid value: \"Mars/Olympus_Mons\": unknown time zone Mars/Olympus_Mons".into(),
                ],
            ),
            (
                "a removed time zone is fine",
                json!({"timeZone": "Europe/Rome"}),
                json!({"timeZone": null}),
                vec![],
            ),
        ];
        for (name, old, new, expected) in cases {
            let old = stored(old);
            let mut updated = old.clone();
            json_patch::merge(&mut updated, &json!({ "spec": new }));
            let causes = validate(&defaulted(updated), Some(&old));
            assert_eq!(messages(&causes), expected, "{name}");
        }
    }
}
