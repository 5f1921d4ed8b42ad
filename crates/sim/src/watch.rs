//! Watch streams: replay of retained events newer than the asked resourceVersion, live
//! events as they happen, BOOKMARKs, `timeoutSeconds`, forced disconnects, and the 410
//! ERROR event for versions older than the retained window — as a real API server sends them;
//! and, as injected faults, forced disconnects, lost events and late ones ([`WatchFaults`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use crate::config::WatchLag;
use crate::resources::RESOURCES;
use crate::selector::{FieldSelector, LabelSelector, Labels};
use crate::server::Shared;
use crate::status::ApiError;
use crate::store::{Event, EventKind, ObjectKey, State, frame_around};
use crate::table::{self, IncludeObject};

/// How often a bookmark is offered to a watcher that asked for them.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(1);

/// What a watch request asked for.
#[derive(Debug, Clone)]
pub(crate) struct WatchParams {
    pub res: usize,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// `None` (or 0) starts with synthetic ADDED events for the current state.
    pub resource_version: Option<u64>,
    pub bookmarks: bool,
    pub send_initial_events: bool,
    pub timeout: Option<Duration>,
    /// Render object events as one-row Tables (for kubectl get --watch).
    pub table: Option<IncludeObject>,
}

impl WatchParams {
    fn selects(&self, key: &ObjectKey, labels: &Labels, object: &Bytes) -> bool {
        if self.namespace.as_ref().is_some_and(|ns| *ns != key.0) {
            return false;
        }
        if !self.labels.matches(labels) {
            return false;
        }
        if self.fields.is_empty() {
            return true;
        }
        let parsed: Option<Value> = if self.fields.needs_object() {
            serde_json::from_slice(object).ok()
        } else {
            None
        };
        self.fields.matches(&key.0, &key.1, parsed.as_ref())
    }

    /// The frame this watcher gets for `event`, if any (selector transitions become
    /// ADDED/DELETED as upstream's watch cache does).
    fn frame_for(&self, event: &Event) -> Option<Bytes> {
        let now = self.selects(&event.key, &event.labels, &event.object);
        let before = event
            .previous
            .as_ref()
            .map(|(obj, labels)| self.selects(&event.key, labels, obj));
        match (event.kind, before, now) {
            (EventKind::Modified, Some(true), true)
            | (EventKind::Added | EventKind::Deleted, _, true) => Some(event.frame.clone()),
            (EventKind::Modified, Some(false), true) => {
                Some(frame_around(EventKind::Added, &event.object))
            }
            (EventKind::Modified, Some(true), false) => {
                Some(frame_around(EventKind::Deleted, &event.object))
            }
            _ => None,
        }
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        let info = &RESOURCES[self.res];
        let mut metadata = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let event = json!({"type": "BOOKMARK", "object": {"kind": info.kind, "apiVersion": info.api_version(), "metadata": metadata}});
        let mut line = event.to_string().into_bytes();
        line.push(b'\n');
        Bytes::from(line)
    }
}

/// Turns object events into Table events for watchers that asked for Tables; the first
/// Table carries the column definitions, later ones only rows (as upstream).
struct Renderer {
    plural: &'static str,
    table: Option<IncludeObject>,
    columns_sent: bool,
}

impl Renderer {
    fn render(&mut self, frame: Bytes) -> Bytes {
        let Some(include) = self.table else {
            return frame;
        };
        let Ok(event) = serde_json::from_slice::<Value>(&frame) else {
            return frame;
        };
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "ADDED" | "MODIFIED" | "DELETED") {
            return frame;
        }
        let object = event.get("object").cloned().unwrap_or(Value::Null);
        let rv = object
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap_or(Value::Null);
        let rendered = table::table(
            self.plural,
            json!({"resourceVersion": rv}),
            &[object],
            include,
            !self.columns_sent,
        );
        self.columns_sent = true;
        let mut line = json!({"type": kind, "object": rendered})
            .to_string()
            .into_bytes();
        line.push(b'\n');
        Bytes::from(line)
    }
}

/// The ERROR event carrying a 410 Expired status.
fn expired_frame(asked: u64, current: u64) -> Bytes {
    let event = json!({"type": "ERROR", "object": ApiError::expired(asked, current).to_status()});
    let mut line = event.to_string().into_bytes();
    line.push(b'\n');
    Bytes::from(line)
}

/// The faults injected into one watch stream (from `FaultConfig` when it starts).
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchFaults {
    /// Close the stream after this long.
    pub disconnect_after: Option<Duration>,
    /// Leave out every event of an object with this label key.
    pub unwatched_label: Option<String>,
    /// Deliver the events of objects with a label key late, and what follows them behind them.
    pub lag: Option<WatchLag>,
}

impl WatchFaults {
    fn loses(&self, event: &Event) -> bool {
        self.unwatched_label
            .as_ref()
            .is_some_and(|label| event.labels.contains_key(label))
    }

    fn lags(&self, event: &Event) -> bool {
        self.lag
            .as_ref()
            .is_some_and(|lag| event.labels.contains_key(&lag.label))
    }
}

/// One frame for a watcher and whether the lag fault holds it back.
struct Frame {
    bytes: Bytes,
    lagged: bool,
}

impl Frame {
    fn on_time(bytes: Bytes) -> Self {
        Self {
            bytes,
            lagged: false,
        }
    }
}

/// What one look at the state yields for a watcher.
enum Batch {
    Frames(Vec<Frame>),
    Expired(Bytes),
}

/// Where a watch's frames go: straight to the response body, or, under the lag fault, through
/// a queue that releases each at its time, in order.
struct Outbox {
    tx: mpsc::Sender<Bytes>,
    lag: Option<LagQueue>,
}

/// The lag fault's queue: frames with the instant they may leave.
struct LagQueue {
    delay: Duration,
    queue: mpsc::UnboundedSender<(Instant, Bytes)>,
    /// When the last queued frame leaves: nothing may overtake it.
    last_release: Instant,
}

impl Outbox {
    fn new(tx: mpsc::Sender<Bytes>, lag: Option<&WatchLag>) -> Self {
        let lag = lag.map(|lag| {
            let (queue, mut queued) = mpsc::unbounded_channel::<(Instant, Bytes)>();
            let body = tx.clone();
            tokio::spawn(async move {
                while let Some((release, frame)) = queued.recv().await {
                    sleep_until(release).await;
                    if body.send(frame).await.is_err() {
                        return;
                    }
                }
            });
            LagQueue {
                delay: lag.delay,
                queue,
                last_release: Instant::now(),
            }
        });
        Self { tx, lag }
    }

    /// Sends `frame` on; false once the watcher has gone.
    async fn send(&mut self, frame: Frame) -> bool {
        match &mut self.lag {
            None => self.tx.send(frame.bytes).await.is_ok(),
            Some(lag) => {
                let due = Instant::now()
                    + if frame.lagged {
                        lag.delay
                    } else {
                        Duration::ZERO
                    };
                lag.last_release = lag.last_release.max(due);
                lag.queue.send((lag.last_release, frame.bytes)).is_ok()
            }
        }
    }
}

/// Events newer than `cursor` (bar the ones `faults` loses), advancing it to the state's
/// current version.
fn collect(state: &State, params: &WatchParams, faults: &WatchFaults, cursor: &mut u64) -> Batch {
    let table = &state.tables[params.res];
    if *cursor < table.floor {
        return Batch::Expired(expired_frame(*cursor, state.rv));
    }
    let start = table.events.partition_point(|e| e.rv <= *cursor);
    let frames = table
        .events
        .range(start..)
        .filter(|e| !faults.loses(e))
        .filter_map(|e| {
            params.frame_for(e).map(|bytes| Frame {
                bytes,
                lagged: faults.lags(e),
            })
        })
        .collect();
    *cursor = (*cursor).max(state.rv);
    Batch::Frames(frames)
}

/// Sends `batch` to the watcher: its frames rendered, or the expiry error as is. Returns
/// whether the watch goes on (false after an expiry or once the watcher has gone).
async fn send_batch(outbox: &mut Outbox, renderer: &mut Renderer, batch: Batch) -> bool {
    match batch {
        Batch::Expired(frame) => {
            outbox.send(Frame::on_time(frame)).await;
            false
        }
        Batch::Frames(frames) => {
            for frame in frames {
                let bytes = renderer.render(frame.bytes);
                let sent = outbox
                    .send(Frame {
                        bytes,
                        lagged: frame.lagged,
                    })
                    .await;
                if !sent {
                    return false;
                }
            }
            true
        }
    }
}

/// The current state as synthetic ADDED events.
fn initial_frames(state: &State, params: &WatchParams) -> Vec<Bytes> {
    let table = &state.tables[params.res];
    let objects: Box<dyn Iterator<Item = (&ObjectKey, &crate::store::Stored)>> =
        match &params.namespace {
            Some(ns) => Box::new(
                table
                    .objects
                    .range((ns.clone(), String::new())..)
                    .take_while(move |(k, _)| k.0 == *ns),
            ),
            None => Box::new(table.objects.iter()),
        };
    objects
        .filter(|(key, stored)| params.selects(key, &stored.labels, &stored.object))
        .map(|(_, stored)| frame_around(EventKind::Added, &stored.object))
        .collect()
}

/// Starts a watch; the returned body streams newline-delimited JSON events.
pub(crate) fn start(shared: Arc<Shared>, params: WatchParams, faults: WatchFaults) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let mut shutdown = shared.shutdown.subscribe();
    let mut renderer = Renderer {
        plural: RESOURCES[params.res].plural,
        table: params.table,
        columns_sent: false,
    };
    tokio::spawn(async move {
        let (mut notify, mut cursor, first) = {
            let state = shared.state.read();
            let notify = state.tables[params.res].notify.subscribe();
            let mut cursor = state.rv;
            let first = match params.resource_version {
                Some(rv) if rv > 0 && !params.send_initial_events => {
                    cursor = rv;
                    collect(&state, &params, &faults, &mut cursor)
                }
                _ => {
                    let mut frames = initial_frames(&state, &params);
                    if params.send_initial_events && params.bookmarks {
                        frames.push(params.bookmark(state.rv, true));
                    }
                    Batch::Frames(frames.into_iter().map(Frame::on_time).collect())
                }
            };
            (notify, cursor, first)
        };
        let mut outbox = Outbox::new(tx.clone(), faults.lag.as_ref());
        if !send_batch(&mut outbox, &mut renderer, first).await {
            return;
        }
        let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let deadline = params.timeout.map(|t| Instant::now() + t).unwrap_or(far);
        let disconnect = faults
            .disconnect_after
            .map(|t| Instant::now() + t)
            .unwrap_or(far);
        let mut bookmark_tick =
            tokio::time::interval_at(Instant::now() + BOOKMARK_INTERVAL, BOOKMARK_INTERVAL);
        let mut last_bookmark = cursor;
        loop {
            let bookmark_due = tokio::select! {
                changed = notify.changed() => {
                    if changed.is_err() { return; }
                    false
                }
                _ = bookmark_tick.tick(), if params.bookmarks => true,
                _ = sleep_until(deadline) => {
                    if params.bookmarks {
                        outbox.send(Frame::on_time(params.bookmark(cursor, false))).await;
                    }
                    return;
                }
                _ = sleep_until(disconnect) => return,
                _ = shutdown.changed() => return,
                _ = tx.closed() => return,
            };
            let batch = {
                let state = shared.state.read();
                notify.borrow_and_update();
                collect(&state, &params, &faults, &mut cursor)
            };
            if !send_batch(&mut outbox, &mut renderer, batch).await {
                return;
            }
            if bookmark_due && cursor > last_bookmark {
                last_bookmark = cursor;
                if !outbox
                    .send(Frame::on_time(params.bookmark(cursor, false)))
                    .await
                {
                    return;
                }
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|frame| (Ok::<_, Infallible>(frame), rx))
    });
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::PODS;

    fn params(labels: &str) -> WatchParams {
        WatchParams {
            res: PODS,
            namespace: Some("default".into()),
            labels: LabelSelector::parse(labels).unwrap(),
            fields: FieldSelector::default(),
            resource_version: Some(0),
            bookmarks: false,
            send_initial_events: false,
            timeout: None,
            table: None,
        }
    }

    fn frame_type(frame: &Bytes) -> String {
        let v: Value = serde_json::from_slice(frame).unwrap();
        v["type"].as_str().unwrap().to_string()
    }

    #[test]
    fn selector_transitions() {
        let mut state = State::new(100, None);
        // default/p moves out of app=a and back in.
        let key = ("default".to_string(), "p".to_string());
        for app in ["a", "b", "a"] {
            let pod = json!({"metadata": {"uid": "u", "labels": {"app": app}}});
            state.put(PODS, key.clone(), pod);
        }
        state.put(
            PODS,
            ("other".to_string(), "p".to_string()),
            json!({"metadata": {"uid": "v", "labels": {"app": "a"}}}),
        );
        let mut cursor = 0;
        let Batch::Frames(frames) = collect(
            &state,
            &params("app=a"),
            &WatchFaults::default(),
            &mut cursor,
        ) else {
            panic!("expired")
        };
        let types: Vec<String> = frames.iter().map(|f| frame_type(&f.bytes)).collect();
        assert_eq!(types, vec!["ADDED", "DELETED", "ADDED"]);
        assert_eq!(cursor, 4);
        state.compact();
        let mut old = 2;
        assert!(matches!(
            collect(&state, &params(""), &WatchFaults::default(), &mut old),
            Batch::Expired(_)
        ));
        assert_eq!(initial_frames(&state, &params("app=a")).len(), 1);
    }

    #[test]
    fn an_unwatched_label_loses_the_events_of_its_objects_only() {
        let mut state = State::new(100, None);
        let pod = |name: &str, labels: Value| {
            (
                ("default".to_string(), name.to_string()),
                json!({"metadata": {"uid": name, "labels": labels}}),
            )
        };
        for (key, object) in [
            pod("seen", json!({"app": "a"})),
            pod("lost", json!({"app": "a", "lost": "x"})),
        ] {
            state.put(PODS, key, object);
        }
        let faults = WatchFaults {
            unwatched_label: Some("lost".into()),
            ..WatchFaults::default()
        };
        let mut cursor = 0;
        let Batch::Frames(frames) = collect(&state, &params(""), &faults, &mut cursor) else {
            panic!("expired")
        };
        assert_eq!(frames.len(), 1);
        let event: Value = serde_json::from_slice(&frames[0].bytes).unwrap();
        assert_eq!(event["object"]["metadata"]["uid"], "seen");
        assert_eq!(cursor, 2, "the lost event still advances the stream");
        assert_eq!(
            initial_frames(&state, &params("")).len(),
            2,
            "a fresh list shows both"
        );
    }

    #[test]
    fn a_lagging_label_marks_the_events_of_its_objects_only() {
        let mut state = State::new(100, None);
        for (name, labels) in [
            ("prompt", json!({"app": "a"})),
            ("late", json!({"lag": "x"})),
        ] {
            state.put(
                PODS,
                ("default".to_string(), name.to_string()),
                json!({"metadata": {"uid": name, "labels": labels}}),
            );
        }
        let faults = WatchFaults {
            lag: Some(WatchLag {
                label: "lag".into(),
                delay: Duration::from_secs(5),
            }),
            ..WatchFaults::default()
        };
        let mut cursor = 0;
        let Batch::Frames(frames) = collect(&state, &params(""), &faults, &mut cursor) else {
            panic!("expired")
        };
        let lagged: Vec<bool> = frames.iter().map(|frame| frame.lagged).collect();
        assert_eq!(lagged, [false, true]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_event_holds_back_what_follows_it_on_the_stream() {
        let (tx, mut rx) = mpsc::channel(16);
        let lag = WatchLag {
            label: "lag".into(),
            delay: Duration::from_secs(5),
        };
        let mut outbox = Outbox::new(tx, Some(&lag));
        let started = Instant::now();
        let receiver = tokio::spawn(async move {
            let mut arrivals = Vec::new();
            while let Some(frame) = rx.recv().await {
                arrivals.push((frame, started.elapsed().as_secs()));
            }
            arrivals
        });
        let frame = |text: &'static str, lagged| Frame {
            bytes: Bytes::from(text),
            lagged,
        };
        for (text, lagged) in [("before", false), ("late", true), ("bookmark", false)] {
            assert!(outbox.send(frame(text, lagged)).await);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(outbox.send(frame("after", false)).await);
        drop(outbox);
        let arrivals = receiver.await.expect("receiver");
        assert_eq!(
            arrivals,
            [
                (Bytes::from("before"), 0),
                (Bytes::from("late"), 5),
                (Bytes::from("bookmark"), 5),
                (Bytes::from("after"), 5),
            ]
        );
    }
}
