//! The monitoring assets in `deploy/monitoring/` against the real manager: every series the
//! Grafana dashboard and the PrometheusRule query is one a running `kube-controller-manager`
//! exports (scraped after it synced a Deployment and a StatefulSet against the sim), with the
//! labels the queries filter and group by, so the dashboard and the alerts cannot rot. And
//! `kubectl kustomize` builds `deploy/` (the base), `deploy/overlays/with-monitoring` and
//! `deploy/overlays/shadow` (a shadow-mode kcm-rs beside the base's).

use std::{
    collections::{BTreeMap, BTreeSet},
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use kube::{
    Api,
    api::{Patch, PatchParams, PostParams},
};
use serde_json::{Value, json};
use sim::{NodesConfig, SimCluster, SimConfig, testing::workload};

const BINARY: &str = env!("CARGO_BIN_EXE_kube-controller-manager");

/// Labels Prometheus attaches to every scraped series (the target's; `cluster` by the usual
/// external label), which the queries may select and group by without the manager exporting
/// them.
const TARGET_LABELS: &[&str] = &[
    "job",
    "instance",
    "cluster",
    "namespace",
    "pod",
    "service",
    "endpoint",
    "container",
];

/// Series Prometheus makes itself for every target, not the manager.
const SCRAPE_SERIES: &[&str] = &["up"];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    let path = repo_root().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------------------------------------
// The exposition format: families, their types and the label names of their samples.

#[derive(Debug, Default)]
struct Family {
    kind: String,
    labels: BTreeSet<String>,
}

/// Families by name, from `# TYPE` lines; the label names of every sample (a histogram's
/// `_bucket`, `_sum` and `_count` samples count for their family, `le` included).
fn families(exposition: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut words = rest.split_whitespace();
            if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                families.entry(name.to_owned()).or_default().kind = kind.to_owned();
            }
        }
    }
    for line in exposition.lines().filter(|l| !l.starts_with('#')) {
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let Some(family) = family_of(&families, &line[..name_end]) else {
            continue;
        };
        let labels = line[name_end..]
            .strip_prefix('{')
            .map(matcher_labels)
            .unwrap_or_default();
        if let Some(family) = families.get_mut(&family) {
            family.labels.extend(labels);
        }
    }
    families
}

/// The family a series name belongs to: itself (not a histogram or summary, whose bare name
/// has no series), or a histogram's or summary's `_bucket`/`_sum`/`_count`.
fn family_of(families: &BTreeMap<String, Family>, series: &str) -> Option<String> {
    let composite = |kind: &str| kind == "histogram" || kind == "summary";
    if let Some(family) = families.get(series) {
        return (!composite(&family.kind)).then(|| series.to_owned());
    }
    ["_bucket", "_sum", "_count"].iter().find_map(|suffix| {
        let base = series.strip_suffix(suffix)?;
        let family = families.get(base)?;
        let valid = composite(&family.kind) && (*suffix != "_bucket" || family.kind == "histogram");
        valid.then(|| base.to_owned())
    })
}

/// Label names of `a="x",b=~"y"...}` (exposition samples and PromQL matchers alike); stops at
/// the closing brace.
fn matcher_labels(text: &str) -> Vec<String> {
    let mut labels = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace() || *c == ',').is_some() {}
        let mut name = String::new();
        while let Some(c) = chars.next_if(|c| c.is_alphanumeric() || *c == '_') {
            name.push(c);
        }
        if name.is_empty() {
            break;
        }
        labels.push(name);
        while chars.next_if(|c| *c != '"' && *c != '}').is_some() {}
        if chars.next() != Some('"') {
            break;
        }
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '"' => break,
                _ => {}
            }
        }
    }
    labels
}

// ---------------------------------------------------------------------------------------------
// PromQL, as far as the check needs it: the series selectors (name and matcher labels) and
// the labels of `by`, `without`, `on`, `ignoring` and `group_*` clauses.

#[derive(Debug, Default)]
struct Query {
    selectors: Vec<(String, Vec<String>)>,
    grouping: Vec<String>,
}

const AGGREGATIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];
const GROUPING: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];
const KEYWORDS: &[&str] = &[
    "and", "or", "unless", "bool", "offset", "atan2", "inf", "nan", "Inf", "NaN",
];

fn parse_query(expr: &str) -> Query {
    let chars: Vec<char> = expr.chars().collect();
    let mut query = Query::default();
    let mut i = 0;
    // The selector a following `{...}` belongs to.
    let mut open_selector: Option<usize> = None;
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let skip_ws = |mut i: usize| {
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        i
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '"' || c == '\'' || c == '`' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            open_selector = None;
        } else if c == '{' {
            // The closing brace, skipping quoted label values.
            let mut end = i + 1;
            let mut quote = None;
            while end < chars.len() {
                match (quote, chars[end]) {
                    (Some(_), '\\') => end += 1,
                    (Some(q), c) if c == q => quote = None,
                    (None, '"' | '\'' | '`') => quote = Some(chars[end]),
                    (None, '}') => break,
                    _ => {}
                }
                end += 1;
            }
            let block: String = chars[i + 1..end].iter().collect();
            let labels = matcher_labels(&block);
            match open_selector.take() {
                Some(index) => query.selectors[index].1.extend(labels),
                None => panic!("selector without a metric name in {expr:?}"),
            }
            i = end + 1;
        } else if c == '[' {
            i += chars[i..].iter().position(|&c| c == ']').unwrap_or(0) + 1;
            open_selector = None;
        } else if c == '$' {
            // A Grafana variable outside a matcher or range.
            i += 1;
            while i < chars.len() && (ident(chars[i]) || chars[i] == '{' || chars[i] == '}') {
                i += 1;
            }
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            open_selector = None;
        } else if ident(c) {
            let start = i;
            while i < chars.len() && ident(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = skip_ws(i);
            open_selector = None;
            if GROUPING.contains(&word.as_str()) {
                if chars.get(next) == Some(&'(') {
                    let end = chars[next..]
                        .iter()
                        .position(|&c| c == ')')
                        .map_or(chars.len(), |p| next + p);
                    let list: String = chars[next + 1..end].iter().collect();
                    query.grouping.extend(
                        list.split(',')
                            .map(str::trim)
                            .filter(|label| !label.is_empty())
                            .map(str::to_owned),
                    );
                    i = end + 1;
                }
            } else if AGGREGATIONS.contains(&word.as_str())
                || KEYWORDS.contains(&word.as_str())
                || chars.get(next) == Some(&'(')
            {
                // An aggregation, operator keyword or function call.
            } else {
                query.selectors.push((word, Vec::new()));
                open_selector = Some(query.selectors.len() - 1);
            }
        } else {
            i += 1;
            open_selector = None;
        }
    }
    query
}

#[test]
fn the_query_parser_finds_selectors_matchers_and_grouping_labels() {
    let query = parse_query(
        "histogram_quantile(0.99, sum by (instance, name, le) (rate(\
         workqueue_queue_duration_seconds_bucket{cluster=\"$cluster\", job=\"kcm-rs\", \
         instance=~\"$instance\"}[$__rate_interval]))) / on (name) group_left \
         max without(pod) (up{job=\"a,b}\"} == 1) and 1e3 > bool foo:bar",
    );
    assert_eq!(
        query.selectors,
        vec![
            (
                "workqueue_queue_duration_seconds_bucket".to_owned(),
                vec!["cluster".into(), "job".into(), "instance".into()]
            ),
            ("up".to_owned(), vec!["job".into()]),
            ("foo:bar".to_owned(), vec![]),
        ]
    );
    assert_eq!(query.grouping, ["instance", "name", "le", "name", "pod"]);
}

// ---------------------------------------------------------------------------------------------
// The assets.

/// Every PromQL expression of the dashboard, with where it is: panel targets' `expr` and the
/// templating variables' queries (`label_values(<expr>, <label>)`).
fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    fn walk(value: &Value, title: &str, out: &mut Vec<(String, String)>) {
        match value {
            Value::Object(map) => {
                let title = map.get("title").and_then(Value::as_str).unwrap_or(title);
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("expr", Value::String(expr)) => {
                            out.push((format!("panel {title:?}"), expr.clone()))
                        }
                        ("templating", _) => {}
                        _ => walk(value, title, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, title, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(dashboard, "", &mut out);
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("templating.list");
    for variable in variables.iter().filter(|v| v["type"] == "query") {
        let name = variable["name"].as_str().unwrap_or_default();
        let query = match &variable["query"] {
            Value::String(query) => query.as_str(),
            other => other["query"].as_str().unwrap_or_default(),
        };
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|rest| rest.strip_suffix(')'))
            .and_then(|args| args.rsplit_once(','))
            .map(|(expr, _label)| expr)
            .unwrap_or_else(|| panic!("variable {name}: want label_values(<expr>, <label>)"));
        out.push((format!("variable {name}"), inner.to_owned()));
    }
    out
}

/// The alerts of the PrometheusRule: (alert name, the rule as JSON).
fn alert_rules(rule: &Value) -> Vec<(String, Value)> {
    assert_eq!(rule["kind"], "PrometheusRule");
    rule["spec"]["groups"]
        .as_array()
        .expect("spec.groups")
        .iter()
        .flat_map(|group| group["rules"].as_array().cloned().unwrap_or_default())
        .map(|rule| {
            let name = rule["alert"]
                .as_str()
                .expect("only alerting rules")
                .to_owned();
            (name, rule)
        })
        .collect()
}

fn yaml_documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple(text).expect("valid YAML")
}

/// Checks one expression against the scraped families; returns what is wrong with it.
fn check_query(
    families: &BTreeMap<String, Family>,
    place: &str,
    expr: &str,
) -> (Vec<String>, BTreeSet<String>) {
    let query = parse_query(expr);
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    let mut known_labels: BTreeSet<String> = TARGET_LABELS.iter().map(|l| l.to_string()).collect();
    if query.selectors.is_empty() {
        problems.push(format!("{place}: no series in {expr:?}"));
    }
    for (series, labels) in &query.selectors {
        if SCRAPE_SERIES.contains(&series.as_str()) {
            used.insert(series.clone());
            continue;
        }
        let Some(family) = family_of(families, series) else {
            problems.push(format!("{place}: {series} is not exported by the manager"));
            continue;
        };
        let family_labels = &families[&family].labels;
        for label in labels {
            if !family_labels.contains(label) && !TARGET_LABELS.contains(&label.as_str()) {
                problems.push(format!("{place}: {series} has no label {label:?}"));
            }
        }
        known_labels.extend(family_labels.iter().cloned());
        used.insert(family);
    }
    for label in &query.grouping {
        if !known_labels.contains(label) {
            problems.push(format!(
                "{place}: groups by {label:?}, which none of its series has"
            ));
        }
    }
    if expr.contains("histogram_quantile") {
        let buckets = query
            .selectors
            .iter()
            .all(|(series, _)| series.ends_with("_bucket"));
        if !buckets || !query.grouping.iter().any(|label| label == "le") {
            problems.push(format!(
                "{place}: histogram_quantile wants _bucket series aggregated by le: {expr:?}"
            ));
        }
    }
    (problems, used)
}

// ---------------------------------------------------------------------------------------------
// A manager doing real work against the sim.

struct Manager {
    child: Child,
    port: u16,
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn scrape(port: u16) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    (head.split_whitespace().nth(1) == Some("200")).then(|| body.to_owned())
}

async fn scale<K>(api: &Api<K>, name: &str, replicas: i32)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": replicas}})),
    )
    .await
    .expect("scale");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_and_alerts_query_only_series_the_manager_exports() {
    let dashboard: Value =
        serde_json::from_str(&read("deploy/monitoring/kcm-rs-dashboard.json")).expect("JSON");
    let rule = yaml_documents(&read("deploy/monitoring/prometheusrule.yaml"))
        .into_iter()
        .next()
        .expect("one document");
    let mut queries = dashboard_queries(&dashboard);
    let alerts = alert_rules(&rule);
    for (name, rule) in &alerts {
        let expr = rule["expr"].as_str().expect("expr");
        queries.push((format!("alert {name}"), expr.to_owned()));
    }

    // The manager, leading, syncs a Deployment and a StatefulSet, scaled back and forth, and a
    // DaemonSet on three nodes, its template changed each round, until every family the assets
    // name has appeared (labelled families appear with their first sample: stale-sync skips,
    // for one, need the controllers to outrun their caches).
    let sim = SimCluster::start(SimConfig {
        nodes: NodesConfig::with_count(3),
        ..SimConfig::default()
    })
    .await
    .expect("sim");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("free port");
    let log = std::fs::File::create(dir.path().join("manager.log")).expect("log");
    let manager = Manager {
        child: Command::new(BINARY)
            .arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--secure-port={port}"))
            .args([
                "--bind-address=127.0.0.1",
                "--plain-http",
                "--leader-elect=true",
            ])
            .arg("--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start manager"),
        port,
    };
    let deployments: Api<Deployment> = Api::namespaced(sim.client(), "default");
    let stateful_sets: Api<StatefulSet> = Api::namespaced(sim.client(), "default");
    let daemon_sets: Api<DaemonSet> = Api::namespaced(sim.client(), "default");
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(workload("Deployment", "web", 3)).expect("Deployment"),
        )
        .await
        .expect("create Deployment");
    stateful_sets
        .create(
            &PostParams::default(),
            &serde_json::from_value(workload("StatefulSet", "db", 2)).expect("StatefulSet"),
        )
        .await
        .expect("create StatefulSet");
    let mut daemon_set = workload("DaemonSet", "agent", 0);
    if let Some(spec) = daemon_set["spec"].as_object_mut() {
        spec.remove("replicas");
    }
    daemon_sets
        .create(
            &PostParams::default(),
            &serde_json::from_value(daemon_set).expect("DaemonSet"),
        )
        .await
        .expect("create DaemonSet");

    let deadline = Instant::now() + Duration::from_secs(90);
    let mut round = 0;
    let (families, problems, used) = loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let exposition = scrape(manager.port).unwrap_or_default();
        let families = families(&exposition);
        let mut problems = Vec::new();
        let mut used = BTreeSet::new();
        for (place, expr) in &queries {
            let (mut found, series) = check_query(&families, place, expr);
            problems.append(&mut found);
            used.extend(series);
        }
        let leading = exposition.contains("leader_election_master_status{name=\"kcm-rs\"} 1");
        if (problems.is_empty() && leading) || Instant::now() > deadline {
            break (families, problems, used);
        }
        round += 1;
        let replicas = if round % 2 == 0 { 2 } else { 6 };
        scale(&deployments, "web", replicas).await;
        scale(&stateful_sets, "db", replicas).await;
        daemon_sets
            .patch(
                "agent",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"template": {"metadata": {"annotations": {"round": round.to_string()}}}}})),
            )
            .await
            .expect("roll the DaemonSet");
    };
    assert!(
        problems.is_empty(),
        "queries name series or labels the manager does not export:\n{}\nexported families: {:?}",
        problems.join("\n"),
        families.keys().collect::<Vec<_>>()
    );
    // Both workloads were synced by the manager, not only created.
    let deployment = deployments.get("web").await.expect("get Deployment");
    let stateful_set = stateful_sets.get("db").await.expect("get StatefulSet");
    assert!(
        deployment
            .status
            .and_then(|s| s.observed_generation)
            .is_some()
            && stateful_set
                .status
                .and_then(|s| s.observed_generation)
                .is_some(),
        "the manager did not sync both the Deployment and the StatefulSet"
    );

    // What the issue asks the dashboard and the alerts to cover.
    for family in [
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_retries_total",
        "workqueue_queue_duration_seconds",
        "workqueue_work_duration_seconds",
        "controller_sync_duration_seconds",
        "rest_client_requests_total",
        "rest_client_request_duration_seconds",
        "leader_election_master_status",
        "replicaset_controller_stale_sync_skips_total",
        "statefulset_controller_stale_sync_skips_total",
        "deployment_controller_stale_sync_skips_total",
        "daemonset_controller_stale_sync_skips_total",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "up",
    ] {
        assert!(used.contains(family), "nothing queries {family}");
    }
    let names: BTreeSet<&str> = alerts.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "KcmRsDown",
            "KcmRsNoLeader",
            "KcmRsWorkqueueDepthGrowing",
            "KcmRsSyncErrors",
            "KcmRsRestClientErrors",
        ])
    );
    for (name, rule) in &alerts {
        assert!(rule["for"].is_string(), "{name}: no `for`");
        assert!(
            rule["labels"]["severity"].is_string(),
            "{name}: no severity"
        );
        for annotation in ["summary", "description"] {
            assert!(
                rule["annotations"][annotation].is_string(),
                "{name}: no {annotation}"
            );
        }
    }
    // kubernetes-mixin conventions: every panel query goes through the datasource variable,
    // and the dashboard has a fixed uid so links survive re-imports.
    assert_eq!(dashboard["uid"], "kcm-rs-controller-manager");
    let variables: Vec<&str> = dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(variables, ["datasource", "cluster", "instance"]);
    drop(manager);
}

// ---------------------------------------------------------------------------------------------
// kustomize.

fn kustomize(dir: &str) -> Vec<Value> {
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_owned());
    let output = Command::new(&kubectl)
        .arg("kustomize")
        .arg(repo_root().join(dir))
        .output()
        .unwrap_or_else(|e| panic!("running {kubectl} (needed on PATH): {e}"));
    assert!(
        output.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    yaml_documents(&String::from_utf8_lossy(&output.stdout))
}

fn key(object: &Value) -> (String, String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        text(&object["kind"]),
        text(&object["metadata"]["namespace"]),
        text(&object["metadata"]["name"]),
    )
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

/// Whether every `matchLabels` entry is among `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .is_some_and(|s| !s.is_empty() && s.iter().all(|(k, v)| labels[k] == *v))
}

#[test]
fn kustomize_builds_the_base_and_the_monitoring_overlay() {
    let base = kustomize("deploy");
    let overlay = kustomize("deploy/overlays/with-monitoring");

    let base_keys: BTreeSet<_> = base.iter().map(key).collect();
    let kinds: BTreeSet<&str> = base.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            "Namespace",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            "Service",
        ])
    );
    // The component adds exactly the monitoring objects and changes nothing in the base.
    let added: BTreeSet<_> = overlay
        .iter()
        .map(key)
        .filter(|k| !base_keys.contains(k))
        .collect();
    let own = |kind: &str, ns: &str, name: &str| (kind.to_owned(), ns.to_owned(), name.to_owned());
    assert_eq!(
        added,
        BTreeSet::from([
            own("ServiceMonitor", "kcm-rs", "kcm-rs"),
            own("PrometheusRule", "kcm-rs", "kcm-rs"),
            own("ConfigMap", "kcm-rs", "kcm-rs-dashboard"),
            own("ClusterRoleBinding", "", "kcm-rs-metrics-reader"),
        ])
    );
    for object in &base {
        assert!(
            overlay.contains(object),
            "the overlay changed {:?}",
            key(object)
        );
    }

    // The pieces fit: Service -> pods, ServiceMonitor -> Service port, binding -> role.
    let deployment = find(&base, "Deployment", "kcm-rs");
    let service = find(&base, "Service", "kcm-rs");
    let pod = &deployment["spec"]["template"];
    assert!(selects(
        &service["spec"]["selector"],
        &pod["metadata"]["labels"]
    ));
    let container_ports: Vec<&Value> = pod["spec"]["containers"][0]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| &p["name"])
        .collect();
    let service_port = &service["spec"]["ports"][0];
    assert!(container_ports.contains(&&service_port["targetPort"]));
    let monitor = find(&overlay, "ServiceMonitor", "kcm-rs");
    assert!(selects(
        &monitor["spec"]["selector"]["matchLabels"],
        &service["metadata"]["labels"]
    ));
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"],
        service_port["name"]
    );
    let binding = find(&overlay, "ClusterRoleBinding", "kcm-rs-metrics-reader");
    let role = binding["roleRef"]["name"].as_str().expect("roleRef");
    let rules = &find(&base, "ClusterRole", role)["rules"];
    assert_eq!(
        rules,
        &json!([{"nonResourceURLs": ["/metrics", "/shadow"], "verbs": ["get"]}])
    );

    // The dashboard ConfigMap carries the file unchanged, labelled for Grafana's sidecar.
    let dashboard = find(&overlay, "ConfigMap", "kcm-rs-dashboard");
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    let shipped: Value = serde_json::from_str(
        dashboard["data"]["kcm-rs.json"]
            .as_str()
            .expect("data.kcm-rs.json"),
    )
    .expect("dashboard JSON");
    let file: Value =
        serde_json::from_str(&read("deploy/monitoring/kcm-rs-dashboard.json")).expect("JSON");
    assert_eq!(shipped, file);
    let rule = find(&overlay, "PrometheusRule", "kcm-rs");
    let file = yaml_documents(&read("deploy/monitoring/prometheusrule.yaml"));
    assert_eq!(Some(rule), file.first());
}

#[test]
fn kustomize_builds_the_shadow_overlay_beside_the_base() {
    let base = kustomize("deploy");
    let shadow = kustomize("deploy/overlays/shadow");

    // Nothing of the base is touched: every object is the shadow's own (the Namespace is the
    // base's), so both apply side by side.
    let base_keys: BTreeSet<_> = base.iter().map(key).collect();
    assert!(shadow.iter().all(|object| object["kind"] != "Namespace"));
    for object in &shadow {
        assert!(
            !base_keys.contains(&key(object)),
            "the shadow overlay would overwrite {:?}",
            key(object)
        );
    }

    let deployment = find(&shadow, "Deployment", "kcm-rs-shadow");
    let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(args.contains(&"--shadow"), "{args:?}");
    assert!(
        args.contains(&"--leader-elect-resource-name=kcm-rs-shadow"),
        "{args:?}"
    );
    assert!(!args.contains(&"--leader-elect-resource-name=kcm-rs"));
    let role = find(&shadow, "Role", "kcm-rs-leader-election-shadow");
    assert!(
        role["rules"]
            .as_array()
            .expect("rules")
            .iter()
            .any(|rule| rule["resourceNames"] == serde_json::json!(["kcm-rs-shadow"]))
    );
    // It watches the namespaces (nothing in one being deleted is compared); the base does not.
    let watches_namespaces = |role: &Value| {
        role["rules"].as_array().into_iter().flatten().any(|rule| {
            rule["resources"] == json!(["namespaces"]) && rule["verbs"] == json!(["list", "watch"])
        })
    };
    assert!(watches_namespaces(find(
        &shadow,
        "ClusterRole",
        "kcm-rs-shadow"
    )));
    assert!(!watches_namespaces(find(&base, "ClusterRole", "kcm-rs")));
    // Its Service selects its pods only, not the normal kcm-rs's.
    let service = find(&shadow, "Service", "kcm-rs-shadow");
    let normal = find(&base, "Deployment", "kcm-rs");
    assert!(selects(
        &service["spec"]["selector"],
        &deployment["spec"]["template"]["metadata"]["labels"]
    ));
    assert!(!selects(
        &service["spec"]["selector"],
        &normal["spec"]["template"]["metadata"]["labels"]
    ));
}
