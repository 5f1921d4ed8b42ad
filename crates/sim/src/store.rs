//! The object store: one table per resource, one global resourceVersion, and per-resource
//! rings of recent watch events.
//!
//! Objects are kept as their serialized JSON bytes plus the few parsed fields that lists,
//! selectors, the garbage collector and the scheduler (a pod's node) need, so 100,000 pods
//! stay small. Each write serializes its watch event once; the stored object is a slice of
//! that same buffer and every watcher shares it. Writes of nodes and bound pods keep the
//! scheduler's node index current and tell the kubelet of node changes.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;
use tokio::sync::watch;

use crate::fit::NodeView;
use crate::object::{OwnerLink, labels_of, owners_of};
use crate::resources::{NODES, PODS, RESOURCES};
use crate::scheduler::NodeIndex;
use crate::selector::Labels;

/// `(namespace, name)`; the namespace is "" for cluster-scoped objects.
pub(crate) type ObjectKey = (String, String);

/// A resource table index plus an object key: names any object of the cluster.
pub(crate) type ObjectRef = (usize, ObjectKey);

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Added,
    Modified,
    Deleted,
}

impl EventKind {
    /// The `type` of the event on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Added => "ADDED",
            EventKind::Modified => "MODIFIED",
            EventKind::Deleted => "DELETED",
        }
    }
}

/// One stored object.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// The serialized object (a slice of the watch event frame that wrote it).
    pub object: Bytes,
    pub rv: u64,
    pub uid: Box<str>,
    pub labels: Arc<Labels>,
    pub owners: Box<[OwnerLink]>,
    /// A pod's `spec.nodeName` (None for other objects and unbound pods).
    pub node: Option<Box<str>>,
}

impl Stored {
    /// The object parsed back into JSON (for writes and field selectors).
    pub fn value(&self) -> Value {
        serde_json::from_slice(&self.object).unwrap_or(Value::Null)
    }
}

/// One retained watch event.
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub kind: EventKind,
    pub key: ObjectKey,
    /// `{"type":...,"object":...}\n`, serialized once and shared by every watcher.
    pub frame: Bytes,
    /// The object inside `frame`.
    pub object: Bytes,
    pub labels: Arc<Labels>,
    /// The object before a modification (watchers with selectors turn a modification
    /// into ADDED or DELETED when the object enters or leaves their selection).
    pub previous: Option<(Bytes, Arc<Labels>)>,
}

/// The objects and recent events of one resource.
#[derive(Debug)]
pub(crate) struct Table {
    pub objects: BTreeMap<ObjectKey, Stored>,
    pub events: VecDeque<Arc<Event>>,
    /// Every event with a resourceVersion above this is still in `events`.
    pub floor: u64,
    /// Carries the global resourceVersion after each event of this table, to wake watchers.
    pub notify: watch::Sender<u64>,
}

impl Table {
    fn new() -> Self {
        Self {
            objects: BTreeMap::new(),
            events: VecDeque::new(),
            floor: 0,
            notify: watch::Sender::new(0),
        }
    }
}

/// Work the simulated kubelet (and scheduler) is told about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KubeletEvent {
    /// A pod was created: schedule and start it.
    Created { key: ObjectKey, uid: String },
    /// A bound pod got a deletionTimestamp: finish it after the deletion delay.
    Terminating { key: ObjectKey, uid: String },
    /// A node was created, or its scheduling view (labels, taints, readiness, unschedulable)
    /// changed: register it, follow its readiness, retry unscheduled pods.
    NodeChanged { name: String },
    /// A node was removed: collect its pods after the pod GC delay.
    NodeRemoved { name: String },
}

/// The whole cluster state, behind one lock.
#[derive(Debug)]
pub(crate) struct State {
    /// The last resourceVersion handed out (global, monotonically increasing).
    pub rv: u64,
    pub tables: Vec<Table>,
    /// uid → where the object lives.
    pub uids: HashMap<Box<str>, ObjectRef>,
    /// owner uid → its dependents (objects listing it in ownerReferences).
    pub dependents: HashMap<Box<str>, BTreeSet<ObjectRef>>,
    /// uids of objects that were removed, so that a dependent created afterwards with only
    /// such owners is collected, as upstream's garbage collector collects dangling dependents.
    pub removed_uids: HashSet<Box<str>>,
    /// The scheduler's view of the nodes and their load.
    pub nodes: NodeIndex,
    window: usize,
    kubelet: Option<tokio::sync::mpsc::UnboundedSender<KubeletEvent>>,
    /// Owners whose dependents the delayed garbage collector is to collect; `None` collects
    /// them at once (`SimConfig::gc_delay` zero).
    removed_owners: Option<tokio::sync::mpsc::UnboundedSender<Box<str>>>,
}

impl State {
    /// An empty cluster retaining `window` events per resource.
    pub fn new(
        window: usize,
        kubelet: Option<tokio::sync::mpsc::UnboundedSender<KubeletEvent>>,
    ) -> Self {
        Self {
            rv: 0,
            tables: RESOURCES.iter().map(|_| Table::new()).collect(),
            uids: HashMap::new(),
            dependents: HashMap::new(),
            removed_uids: HashSet::new(),
            nodes: NodeIndex::default(),
            window,
            kubelet,
            removed_owners: None,
        }
    }

    /// Hands the dependents of removed owners to a delayed garbage collector.
    pub fn with_delayed_collection(
        mut self,
        removed_owners: tokio::sync::mpsc::UnboundedSender<Box<str>>,
    ) -> Self {
        self.removed_owners = Some(removed_owners);
        self
    }

    /// The stored object, if any.
    pub fn get(&self, res: usize, key: &ObjectKey) -> Option<&Stored> {
        self.tables[res].objects.get(key)
    }

    /// Tells the delayed garbage collector that `owner_uid` was removed; `false` when there is
    /// none and the caller collects at once.
    pub fn tell_collector(&self, owner_uid: &str) -> bool {
        self.removed_owners
            .as_ref()
            .is_some_and(|tx| tx.send(owner_uid.into()).is_ok())
    }

    /// Tells the kubelet about a pod or node change (no-op when the kubelet is disabled).
    pub fn tell_kubelet(&self, change: KubeletEvent) {
        if let Some(tx) = &self.kubelet {
            // The kubelet task only stops at shutdown, when nobody cares any more.
            let _ = tx.send(change);
        }
    }

    /// Writes `value` under `key` with a new resourceVersion, recording the watch event.
    /// The caller has decided the write is valid; this only stores and indexes it.
    pub fn put(&mut self, res: usize, key: ObjectKey, mut value: Value) -> Bytes {
        self.rv += 1;
        let rv = self.rv;
        crate::object::meta_mut(&mut value)
            .insert("resourceVersion".into(), Value::from(rv.to_string()));
        let previous = self.tables[res].objects.get(&key).cloned();
        let kind = if previous.is_some() {
            EventKind::Modified
        } else {
            EventKind::Added
        };
        let (frame, object) = serialize_frame(kind, &value);
        let node = (res == PODS)
            .then(|| value.pointer("/spec/nodeName").and_then(Value::as_str))
            .flatten()
            .filter(|name| !name.is_empty())
            .map(Box::from);
        let stored = Stored {
            object: object.clone(),
            rv,
            uid: crate::object::meta_str(&value, "uid").into(),
            labels: Arc::new(labels_of(&value)),
            owners: owners_of(&value).into_boxed_slice(),
            node,
        };
        if res == NODES && self.nodes.observe(&key.1, NodeView::of(&value)) {
            self.tell_kubelet(KubeletEvent::NodeChanged {
                name: key.1.clone(),
            });
        }
        if let Some(prev) = &previous {
            self.unindex(res, &key, prev);
        }
        self.index(res, &key, &stored);
        let event = Event {
            rv,
            kind,
            key: key.clone(),
            frame,
            object,
            labels: stored.labels.clone(),
            previous: previous.map(|p| (p.object, p.labels)),
        };
        self.tables[res].objects.insert(key, stored.clone());
        self.record(res, event);
        stored.object
    }

    /// Removes the object under `key` for good, recording a DELETED event whose object
    /// carries the deletion's resourceVersion. Returns the final object.
    pub fn remove(&mut self, res: usize, key: &ObjectKey) -> Option<(Bytes, Value)> {
        let prev = self.tables[res].objects.remove(key)?;
        self.unindex(res, key, &prev);
        self.removed_uids.insert(prev.uid.clone());
        self.rv += 1;
        let rv = self.rv;
        let mut value = prev.value();
        crate::object::meta_mut(&mut value)
            .insert("resourceVersion".into(), Value::from(rv.to_string()));
        let (frame, object) = serialize_frame(EventKind::Deleted, &value);
        if res == NODES {
            self.nodes.forget(&key.1);
            self.tell_kubelet(KubeletEvent::NodeRemoved {
                name: key.1.clone(),
            });
        }
        let event = Event {
            rv,
            kind: EventKind::Deleted,
            key: key.clone(),
            frame,
            object: object.clone(),
            labels: prev.labels,
            previous: None,
        };
        self.record(res, event);
        Some((object, value))
    }

    fn index(&mut self, res: usize, key: &ObjectKey, stored: &Stored) {
        self.uids.insert(stored.uid.clone(), (res, key.clone()));
        if let Some(node) = &stored.node {
            self.nodes.pod_bound(node);
        }
        for owner in stored.owners.iter() {
            self.dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert((res, key.clone()));
        }
    }

    fn unindex(&mut self, res: usize, key: &ObjectKey, stored: &Stored) {
        if self
            .uids
            .get(&stored.uid)
            .is_some_and(|r| r.0 == res && &r.1 == key)
        {
            self.uids.remove(&stored.uid);
        }
        if let Some(node) = &stored.node {
            self.nodes.pod_unbound(node);
        }
        for owner in stored.owners.iter() {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(&(res, key.clone()));
                if set.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
    }

    fn record(&mut self, res: usize, event: Event) {
        let rv = event.rv;
        let table = &mut self.tables[res];
        table.events.push_back(Arc::new(event));
        while table.events.len() > self.window {
            match table.events.pop_front() {
                Some(dropped) => table.floor = dropped.rv,
                None => break,
            }
        }
        table.notify.send_replace(rv);
    }

    /// Forgets every retained event, so a watch from any earlier version gets 410.
    pub fn compact(&mut self) {
        let rv = self.rv;
        for table in &mut self.tables {
            table.events.clear();
            table.floor = rv;
        }
    }
}

/// Serializes `{"type":KIND,"object":OBJ}\n` once; returns the frame and the object slice.
/// The frame is allocated at its exact size: stored objects keep their frame alive, so
/// spare capacity would be paid for every object in the cluster.
fn serialize_frame(kind: EventKind, value: &Value) -> (Bytes, Bytes) {
    // Serializing a `Value` into memory cannot fail.
    let object = serde_json::to_vec(value).unwrap_or_default();
    let frame = frame_around(kind, &object);
    let start = frame.len() - object.len() - 2;
    let object = frame.slice(start..start + object.len());
    (frame, object)
}

/// A watch frame for `kind` around an already serialized object (used when a selector
/// turns a modification into ADDED or DELETED).
pub(crate) fn frame_around(kind: EventKind, object: &[u8]) -> Bytes {
    let prefix = format!("{{\"type\":\"{}\",\"object\":", kind.as_str());
    let mut buf = BytesMut::with_capacity(prefix.len() + object.len() + 2);
    buf.put_slice(prefix.as_bytes());
    buf.put_slice(object);
    buf.put_slice(b"}\n");
    buf.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> ObjectKey {
        ("default".to_string(), name.to_string())
    }

    /// A store keeping 10 watch events, holding the pod `default/a` stored as `pod`.
    fn holding_pod_a(pod: Value) -> State {
        let mut state = State::new(10, None);
        state.put(PODS, key("a"), pod);
        state
    }

    #[test]
    fn put_and_remove_record_events_and_versions() {
        let mut state =
            holding_pod_a(json!({"metadata": {"name": "a", "uid": "u1", "labels": {"x": "y"}}}));
        let stored = state.get(PODS, &key("a")).unwrap();
        assert_eq!(stored.rv, 1);
        assert_eq!(stored.labels.get("x").map(String::as_str), Some("y"));
        let parsed = stored.value();
        assert_eq!(parsed["metadata"]["resourceVersion"], "1");
        state.put(
            PODS,
            key("a"),
            json!({"metadata": {"name": "a", "uid": "u1"}}),
        );
        let (_, removed) = state.remove(PODS, &key("a")).unwrap();
        assert_eq!(removed["metadata"]["resourceVersion"], "3");
        let kinds: Vec<_> = state.tables[PODS]
            .events
            .iter()
            .map(|e| (e.kind, e.rv))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (EventKind::Added, 1),
                (EventKind::Modified, 2),
                (EventKind::Deleted, 3)
            ]
        );
        let frame = std::str::from_utf8(&state.tables[PODS].events[0].frame).unwrap();
        assert!(
            frame.starts_with("{\"type\":\"ADDED\",\"object\":{") && frame.ends_with("}\n"),
            "{frame}"
        );
        assert!(state.uids.is_empty());
    }

    #[test]
    fn window_moves_the_floor() {
        let mut state = State::new(2, None);
        for i in 0..5 {
            state.put(
                PODS,
                key(&format!("p{i}")),
                json!({"metadata": {"uid": format!("u{i}")}}),
            );
        }
        assert_eq!(state.tables[PODS].events.len(), 2);
        assert_eq!(state.tables[PODS].floor, 3);
        state.compact();
        assert_eq!(state.tables[PODS].floor, 5);
        assert!(state.tables[PODS].events.is_empty());
    }

    #[test]
    fn dependents_are_indexed() {
        let mut state =
            holding_pod_a(json!({"metadata": {"uid": "u1", "ownerReferences": [{"uid": "o"}]}}));
        assert_eq!(state.dependents.get("o").map(|s| s.len()), Some(1));
        state.put(PODS, key("a"), json!({"metadata": {"uid": "u1"}}));
        assert!(!state.dependents.contains_key("o"));
    }

    #[test]
    fn pods_are_counted_per_node() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut state = State::new(10, Some(tx));
        let node = ("".to_string(), "n".to_string());
        state.put(NODES, node.clone(), json!({"metadata": {"uid": "n"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}));
        assert_eq!(
            rx.try_recv().ok(),
            Some(KubeletEvent::NodeChanged { name: "n".into() })
        );
        state.put(NODES, node.clone(), json!({"metadata": {"uid": "n", "annotations": {"a": "b"}}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}));
        assert!(rx.try_recv().is_err(), "no scheduling change, no event");
        state.put(
            PODS,
            key("a"),
            json!({"metadata": {"uid": "u1"}, "spec": {"nodeName": "n"}}),
        );
        state.put(
            PODS,
            key("b"),
            json!({"metadata": {"uid": "u2"}, "spec": {}}),
        );
        assert_eq!(state.nodes.bound("n"), 1);
        assert_eq!(
            state.get(PODS, &key("a")).unwrap().node.as_deref(),
            Some("n")
        );
        state.put(
            PODS,
            key("b"),
            json!({"metadata": {"uid": "u2"}, "spec": {"nodeName": "n"}}),
        );
        assert_eq!(state.nodes.bound("n"), 2);
        state.remove(PODS, &key("a"));
        assert_eq!(state.nodes.bound("n"), 1);
        state.remove(NODES, &node);
        assert_eq!(
            rx.try_recv().ok(),
            Some(KubeletEvent::NodeRemoved { name: "n".into() })
        );
        assert!(state.nodes.view("n").is_none());
    }
}
