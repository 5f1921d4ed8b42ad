//! `matchPodFailurePolicy`: upstream's `TestMatchPodFailurePolicy` table (rule names, a
//! post-v1.36 field, are checked as the matching rule's position), plus rows for container
//! names, init containers and odd rules; `getFailJobMessage` and `nonIgnoredFailedPodsCount`.

use k8s_openapi::api::batch::v1::PodFailurePolicy;
use serde_json::{Value, json};

use super::{PodBuilder, build, job, pod, refs};
use crate::decide::failure_policy::{
    fail_job_message, match_pod_failure_policy, non_ignored_failed_pods_count,
};
use crate::decide::spec::JobView;
use crate::decide::types::PolicyAction;

fn policy(rules: Value) -> PodFailurePolicy {
    serde_json::from_value(json!({ "rules": rules })).expect("a valid policy")
}

fn exit_rule(action: &str, operator: &str, values: &[i32]) -> Value {
    json!({"action": action, "onExitCodes": {"operator": operator, "values": values}})
}

fn condition_rule(action: &str, type_: &str, status: &str) -> Value {
    json!({"action": action, "onPodConditions": [{"type": type_, "status": status}]})
}

fn failed_pod() -> PodBuilder {
    pod().name("mypod").phase("Failed")
}

struct Row {
    name: &'static str,
    rules: Option<Value>,
    pod: PodBuilder,
    want_message: Option<&'static str>,
    want_count_failed: bool,
    want_action: Option<PolicyAction>,
    want_rule: Option<usize>,
}

#[test]
fn match_pod_failure_policy_table() {
    use PolicyAction::{Count, FailIndex, FailJob, Ignore};
    let rows = [
        Row {
            name: "unknown action for rule matching by exit codes - skip rule with unknown action",
            rules: Some(json!([
                exit_rule("UnknownAction", "In", &[1, 2]),
                exit_rule("FailJob", "In", &[2, 3]),
            ])),
            pod: failed_pod().exited("main-container", 2),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(1),
        },
        Row {
            name: "unknown action for rule matching by pod conditions - skip rule with unknown action",
            rules: Some(json!([
                condition_rule("UnkonwnAction", "DisruptionTarget", "True"),
                condition_rule("Ignore", "DisruptionTarget", "True"),
            ])),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(1),
        },
        Row {
            name: "unknown operator - rule with unknown action is skipped for onExitCodes",
            rules: Some(json!([
                exit_rule("Ignore", "UnknownOperator", &[1, 2]),
                exit_rule("FailJob", "In", &[2, 3]),
            ])),
            pod: failed_pod().exited("main-container", 2),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 1",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(1),
        },
        Row {
            name: "no policy rules",
            rules: None,
            pod: failed_pod().exited("", 2),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "ignore rule matched for exit codes",
            rules: Some(json!([exit_rule("Ignore", "In", &[1, 2, 3])])),
            pod: failed_pod().exited("", 2),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(0),
        },
        Row {
            name: "ignore rule matched on negative exit codes - needed for Windows support",
            rules: Some(json!([exit_rule(
                "Ignore",
                "In",
                &[-1073741676, -1073741510]
            )])),
            pod: failed_pod().exited("", -1073741510),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(0),
        },
        Row {
            name: "FailJob rule matched for exit codes",
            rules: Some(json!([exit_rule("FailJob", "In", &[1, 2, 3])])),
            pod: failed_pod().exited("main-container", 2),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 2 matching FailJob rule at index 0",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(0),
        },
        Row {
            name: "successful containers are skipped by the rules",
            rules: Some(json!([exit_rule("FailJob", "NotIn", &[111])])),
            pod: failed_pod()
                .init_exited("init-container", 0, None)
                .exited("main-container", 111)
                .exited("suppport-container", 0),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "FailIndex rule matched for exit codes",
            rules: Some(json!([exit_rule("FailIndex", "In", &[1, 2, 3])])),
            pod: failed_pod().exited("", 2),
            want_message: None,
            want_count_failed: true,
            want_action: Some(FailIndex),
            want_rule: Some(0),
        },
        Row {
            name: "pod failure policy with NotIn operator and value 0",
            rules: Some(json!([exit_rule("FailJob", "NotIn", &[0])])),
            pod: failed_pod()
                .exited("main-container", 1)
                .exited("suppport-container", 0),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 1 matching FailJob rule at index 0",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(0),
        },
        Row {
            name: "second jobfail rule matched for exit codes",
            rules: Some(json!([
                exit_rule("Count", "In", &[1, 2, 3]),
                exit_rule("FailJob", "In", &[4, 5, 6]),
            ])),
            pod: failed_pod().exited("main-container", 6),
            want_message: Some(
                "Container main-container for pod default/mypod failed with exit code 6 matching FailJob rule at index 1",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(1),
        },
        Row {
            name: "count rule matched for exit codes",
            rules: Some(json!([exit_rule("Count", "In", &[1, 2, 3])])),
            pod: failed_pod().restarts("foo", 0).exited("bar", 2),
            want_message: None,
            want_count_failed: true,
            want_action: Some(Count),
            want_rule: Some(0),
        },
        Row {
            name: "FailIndex rule matched for pod conditions",
            rules: Some(json!([condition_rule(
                "FailIndex",
                "DisruptionTarget",
                "True"
            )])),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: true,
            want_action: Some(FailIndex),
            want_rule: Some(0),
        },
        Row {
            name: "ignore rule matched for pod conditions",
            rules: Some(json!([condition_rule(
                "Ignore",
                "DisruptionTarget",
                "True"
            )])),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(0),
        },
        Row {
            name: "ignore rule matches by the status=False",
            rules: Some(json!([condition_rule(
                "Ignore",
                "DisruptionTarget",
                "False"
            )])),
            pod: failed_pod().condition("DisruptionTarget", "False"),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(0),
        },
        Row {
            name: "ignore rule matches by the status=Unknown",
            rules: Some(json!([condition_rule(
                "Ignore",
                "DisruptionTarget",
                "Unknown"
            )])),
            pod: failed_pod().condition("DisruptionTarget", "Unknown"),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(0),
        },
        Row {
            name: "ignore rule does not match when status for pattern is False, but actual True",
            rules: Some(json!([condition_rule(
                "Ignore",
                "DisruptionTarget",
                "False"
            )])),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "ignore rule does not match when status for pattern is True, but actual False",
            rules: Some(json!([condition_rule(
                "Ignore",
                "DisruptionTarget",
                "True"
            )])),
            pod: failed_pod().condition("DisruptionTarget", "False"),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "default - do not match condition with status=False",
            rules: Some(json!([condition_rule(
                "Ignore",
                "DisruptionTarget",
                "True"
            )])),
            pod: failed_pod().condition("DisruptionTarget", "False"),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "job fail rule matched for pod conditions",
            rules: Some(json!([condition_rule(
                "FailJob",
                "DisruptionTarget",
                "True"
            )])),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: Some(
                "Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(0),
        },
        Row {
            name: "count rule matched for pod conditions",
            rules: Some(json!([condition_rule("Count", "DisruptionTarget", "True")])),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: true,
            want_action: Some(Count),
            want_rule: Some(0),
        },
        Row {
            name: "no rule matched",
            rules: Some(json!([
                exit_rule("Count", "NotIn", &[8]),
                exit_rule("Ignore", "In", &[1, 2, 3]),
                exit_rule("FailJob", "NotIn", &[5, 6, 7]),
                condition_rule("Count", "ResourceLimitExceeded", "True"),
                condition_rule("Ignore", "DisruptionTarget", "True"),
            ])),
            pod: failed_pod().exited("", 32),
            want_message: None,
            want_count_failed: true,
            want_action: Some(Count),
            want_rule: Some(0),
        },
        Row {
            name: "expected matching rule returned",
            rules: Some(json!([
                condition_rule("FailJob", "MaxFailedIndexesExceeded", "True"),
                condition_rule("Ignore", "DisruptionTarget", "True"),
            ])),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(1),
        },
        // kcm-rs rows.
        Row {
            name: "containerName restricts the match",
            rules: Some(json!([
                {"action": "FailJob", "onExitCodes": {"containerName": "other", "operator": "In", "values": [2]}},
                {"action": "Ignore", "onExitCodes": {"containerName": "main", "operator": "In", "values": [2]}},
            ])),
            pod: failed_pod().exited("main", 2),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(1),
        },
        Row {
            name: "init containers are matched when no app container does",
            rules: Some(json!([exit_rule("FailJob", "In", &[42])])),
            pod: failed_pod()
                .exited("main", 1)
                .init_exited("setup", 42, None),
            want_message: Some(
                "Container setup for pod default/mypod failed with exit code 42 matching FailJob rule at index 0",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(0),
        },
        Row {
            name: "app containers are matched before init containers",
            rules: Some(json!([exit_rule("FailJob", "NotIn", &[7])])),
            pod: failed_pod().init_exited("setup", 3, None).exited("main", 4),
            want_message: Some(
                "Container main for pod default/mypod failed with exit code 4 matching FailJob rule at index 0",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(0),
        },
        Row {
            name: "running containers have no exit code",
            rules: Some(json!([exit_rule("FailJob", "NotIn", &[1])])),
            pod: failed_pod().running("main"),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "exit code 0 never matches, even In [0]",
            rules: Some(json!([exit_rule("FailJob", "In", &[0])])),
            pod: failed_pod().exited("main", 0),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "a pattern without status matches True (the API default)",
            rules: Some(
                json!([{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]),
            ),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(0),
        },
        Row {
            name: "a rule with neither requirement and an empty conditions list match nothing",
            rules: Some(json!([
                {"action": "FailJob"},
                {"action": "FailJob", "onPodConditions": []},
                condition_rule("Count", "DisruptionTarget", "True"),
            ])),
            pod: failed_pod().condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: true,
            want_action: Some(Count),
            want_rule: Some(2),
        },
        Row {
            name: "onExitCodes wins over onPodConditions in the same rule",
            rules: Some(json!([{"action": "Ignore",
                "onExitCodes": {"operator": "In", "values": [9]},
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}])),
            pod: failed_pod()
                .exited("main", 1)
                .condition("DisruptionTarget", "True"),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "empty rule list",
            rules: Some(json!([])),
            pod: failed_pod().exited("main", 1),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "pod without name, namespace or status",
            rules: Some(json!([condition_rule(
                "FailJob",
                "DisruptionTarget",
                "True"
            )])),
            pod: PodBuilder(Default::default()),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        // A failing Job matches the policy against its unfinished pods too: the kubelet's
        // `True` conditions, which a cached running pod does not keep, still match.
        Row {
            name: "a running pod's True kubelet condition matches",
            rules: Some(json!([
                condition_rule("FailJob", "Ready", "False"),
                {"action": "Ignore", "onPodConditions": [
                    {"type": "DisruptionTarget", "status": "True"}, {"type": "Ready"}]},
            ])),
            pod: pod()
                .name("mypod")
                .phase("Running")
                .condition("PodScheduled", "True")
                .condition("Ready", "True"),
            want_message: None,
            want_count_failed: false,
            want_action: Some(Ignore),
            want_rule: Some(1),
        },
        Row {
            name: "a running pod's condition that is not True matches",
            rules: Some(json!([condition_rule(
                "FailJob",
                "ContainersReady",
                "False"
            )])),
            pod: pod()
                .name("mypod")
                .phase("Running")
                .condition("Ready", "True")
                .condition("ContainersReady", "False"),
            want_message: Some(
                "Pod default/mypod has condition ContainersReady matching FailJob rule at index 0",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(0),
        },
        Row {
            name: "a running pod matches no True kubelet condition it does not have",
            rules: Some(json!([condition_rule("Ignore", "Initialized", "True")])),
            pod: pod()
                .name("mypod")
                .phase("Pending")
                .condition("PodScheduled", "True")
                .condition("Initialized", "False"),
            want_message: None,
            want_count_failed: true,
            want_action: None,
            want_rule: None,
        },
        Row {
            name: "a failed pod's True kubelet conditions match in the pod's order",
            rules: Some(json!([{"action": "FailJob", "onPodConditions": [
                {"type": "DisruptionTarget", "status": "True"},
                {"type": "Initialized", "status": "True"}]}])),
            pod: failed_pod()
                .condition("Initialized", "True")
                .condition("DisruptionTarget", "True"),
            want_message: Some(
                "Pod default/mypod has condition Initialized matching FailJob rule at index 0",
            ),
            want_count_failed: true,
            want_action: Some(FailJob),
            want_rule: Some(0),
        },
    ];
    for row in rows {
        let policy = row.rules.map(policy);
        let got = match_pod_failure_policy(policy.as_ref(), &row.pod.build());
        assert_eq!(
            got.fail_job_message.as_deref(),
            row.want_message,
            "{}",
            row.name
        );
        assert_eq!(got.count_failed, row.want_count_failed, "{}", row.name);
        assert_eq!(got.action, row.want_action, "{}", row.name);
        assert_eq!(got.rule_index, row.want_rule, "{}", row.name);
    }
}

#[test]
fn fail_job_message_looks_at_failed_pods_only() {
    let rules = json!({"podFailurePolicy": {"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5]}}
    ]}});
    let job = job(json!({ "spec": rules }));
    let view = JobView::new(&job);
    let pods = build(vec![
        // Running (a container restarting in place): not failed.
        pod().name("running").phase("Running").exited("c", 5),
        // Deleted but running: with a policy, not failed yet.
        pod()
            .name("deleted")
            .phase("Running")
            .exited("c", 5)
            .deletion_timestamp(),
        pod().name("counted").phase("Failed").exited("c", 1),
        pod().name("matching").phase("Failed").exited("c", 5),
        pod().name("second").phase("Failed").exited("c", 5),
    ]);
    assert_eq!(
        fail_job_message(&view, &refs(&pods)).as_deref(),
        Some(
            "Container c for pod default/matching failed with exit code 5 matching FailJob rule at index 0"
        )
    );
    assert_eq!(fail_job_message(&view, &refs(&pods[..3])), None);
    let without_policy = super::job(json!({}));
    assert_eq!(
        fail_job_message(&JobView::new(&without_policy), &refs(&pods)),
        None
    );
}

#[test]
fn non_ignored_failed_pods_leave_out_ignored_ones() {
    let with_policy = job(json!({"spec": {"podFailurePolicy": {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}
    ]}}}));
    let pods = build(vec![
        pod().phase("Failed").condition("DisruptionTarget", "True"),
        pod().phase("Failed").exited("c", 1),
        pod().phase("Failed"),
    ]);
    assert_eq!(
        non_ignored_failed_pods_count(&JobView::new(&with_policy), &refs(&pods)),
        2
    );
    let without = job(json!({}));
    assert_eq!(
        non_ignored_failed_pods_count(&JobView::new(&without), &refs(&pods)),
        3
    );
}
