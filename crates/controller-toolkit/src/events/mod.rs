//! Recording core/v1 Events the way upstream's controllers do.
//!
//! Upstream's kube-controller-manager writes **core/v1 Events** through client-go's legacy
//! recorder: name `<object>.<hex unix nanos>`, `involvedObject`, `source.component` and
//! `reportingComponent` set to the controller name (e.g. `replicaset-controller`),
//! `reportingInstance` empty, `count`, `firstTimestamp`/`lastTimestamp`, `eventTime` unset, and
//! repeats folded by client-go's correlator (see [`correlator`]). `kube::runtime::events::Recorder`
//! writes `events.k8s.io/v1` Events with series instead, which `kubectl get events` and existing
//! tooling see differently, so it is not used here.
//!
//! Recording never blocks a sync: [`EventRecorder::record`] puts the event on a bounded queue
//! (1000, like upstream's broadcaster) and returns; a background task correlates and writes
//! them. When the queue is full the event is dropped with a log line, as upstream does. A write
//! that cannot reach the server is retried (12 tries, 10 s apart, like upstream); an answer from
//! the server, even an error, is final.

pub mod correlator;
mod lru;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::{Client, Resource};
use tokio::sync::{mpsc, oneshot};

use crate::api_errors::{
    NAMESPACE_TERMINATING_CAUSE, error_message, has_status_cause, is_already_exists, is_not_found,
};
use crate::writes::Writer;
use correlator::{Correlation, CorrelatorConfig, EventCorrelator, event_name};

/// Upstream's broadcaster queue length (`maxQueuedEvents`).
pub const DEFAULT_QUEUE_CAPACITY: usize = 1000;

/// The event types the API accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Routine: something was done as intended.
    Normal,
    /// Something failed or needs attention.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// How a recorder is set up.
#[derive(Debug, Clone)]
pub struct RecorderConfig {
    /// `source.component` and `reportingComponent`, e.g. `replicaset-controller`.
    pub component: String,
    /// Events queued for the writer before new ones are dropped.
    pub queue_capacity: usize,
    /// Aggregation, dedupe and spam-filter settings.
    pub correlator: CorrelatorConfig,
    /// Retries while the API server is unreachable.
    pub retry: RetryConfig,
}

/// How often a write is retried when the API server cannot be reached (upstream: 12 tries,
/// 10 s apart). Answers from the server, even errors, are never retried, as upstream.
#[derive(Debug, Clone)]
pub struct RetryConfig {
    /// Tries per event, the first included.
    pub max_attempts: u32,
    /// Pause between tries; the writer handles nothing else meanwhile.
    pub interval: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 12,
            interval: Duration::from_secs(10),
        }
    }
}

impl RecorderConfig {
    /// Upstream's settings for `component`.
    pub fn new(component: impl Into<String>) -> Self {
        RecorderConfig {
            component: component.into(),
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            correlator: CorrelatorConfig::default(),
            retry: RetryConfig::default(),
        }
    }
}

enum Message {
    Record(Box<Event>),
    Flush(oneshot::Sender<()>),
}

/// A cheap-to-clone handle that records events for one component. The background writer stops
/// when the last handle is dropped.
#[derive(Clone)]
pub struct EventRecorder {
    component: Arc<str>,
    queue: mpsc::Sender<Message>,
}

/// The `involvedObject` reference upstream builds for an object (`reference.GetReference`).
pub fn object_reference<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    let meta = object.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

impl EventRecorder {
    /// Starts the background writer on the current Tokio runtime and returns a handle.
    ///
    /// Must be called from within a Tokio runtime (it spawns the writer task).
    pub fn start(client: Client, config: RecorderConfig) -> Self {
        Self::start_with_writer(Writer::new(client), config)
    }

    /// [`start`](Self::start) writing through a controller's write layer, so its events are
    /// writes like any other (and shadow mode records them instead of sending them).
    pub fn start_with_writer(writes: Writer, config: RecorderConfig) -> Self {
        let (queue, receiver) = mpsc::channel(config.queue_capacity.max(1));
        let writer = EventWriter {
            writes,
            correlator: EventCorrelator::new(config.correlator),
            retry: config.retry,
        };
        tokio::spawn(writer.run(receiver));
        EventRecorder {
            component: Arc::from(config.component),
            queue,
        }
    }

    /// Records an event about `object` without waiting (upstream `Recorder.Eventf`).
    pub fn record<K: Resource<DynamicType = ()>>(
        &self,
        object: &K,
        event_type: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        self.record_for_reference(object_reference(object), event_type, reason, message);
    }

    /// Records an event about the object `involved` refers to, without waiting.
    pub fn record_for_reference(
        &self,
        involved: ObjectReference,
        event_type: EventType,
        reason: &str,
        message: impl Into<String>,
    ) {
        let event = self.make_event(
            involved,
            event_type,
            reason,
            message.into(),
            Timestamp::now(),
        );
        let key = event_log_key(&event);
        match self.queue.try_send(Message::Record(Box::new(event))) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(object = %key, reason, "event queue is full, dropping event");
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!(object = %key, reason, "event writer has stopped, dropping event");
            }
        }
    }

    /// Waits until every event recorded before this call has been written (or given up on,
    /// which includes sitting out retries while the server is unreachable). For shutdown and
    /// tests; syncs never need it.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.queue.send(Message::Flush(done)).await.is_ok() {
            // An error means the writer stopped, which also means nothing is pending.
            let _ = wait.await;
        }
    }

    /// upstream `makeEvent`, with `source` and the reporting fields from the component.
    fn make_event(
        &self,
        involved: ObjectReference,
        event_type: EventType,
        reason: &str,
        message: String,
        now: Timestamp,
    ) -> Event {
        let namespace = match involved.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns.to_owned(),
            _ => "default".to_owned(),
        };
        let name = event_name(involved.name.as_deref().unwrap_or_default(), now);
        Event {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            involved_object: involved,
            reason: Some(reason.to_owned()),
            message: Some(message),
            source: Some(EventSource {
                component: Some(self.component.to_string()),
                host: None,
            }),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            type_: Some(event_type.as_str().to_owned()),
            reporting_component: Some(self.component.to_string()),
            reporting_instance: Some(String::new()),
            ..Event::default()
        }
    }
}

/// `namespace/name` of the involved object, the key field of log lines about an event.
fn event_log_key(event: &Event) -> String {
    let object = &event.involved_object;
    format!(
        "{}/{}",
        object.namespace.as_deref().unwrap_or_default(),
        object.name.as_deref().unwrap_or_default()
    )
}

/// The background task: correlates and writes events one at a time.
struct EventWriter {
    writes: Writer,
    correlator: EventCorrelator,
    retry: RetryConfig,
}

/// How one attempt to write an event ended.
enum Attempt {
    Written(Box<Event>),
    /// The server answered (or the request could not be built): retrying cannot help.
    Rejected,
    /// The server could not be reached: worth another try.
    Unreachable,
}

/// Whether a failed write may succeed later: upstream retries everything except API statuses
/// and requests that could not be built.
fn is_retriable(err: &kube::Error) -> bool {
    !matches!(
        err,
        kube::Error::Api(_) | kube::Error::BuildRequest(_) | kube::Error::HttpError(_)
    )
}

impl EventWriter {
    async fn run(mut self, mut receiver: mpsc::Receiver<Message>) {
        while let Some(message) = receiver.recv().await {
            match message {
                Message::Record(event) => self.write(*event).await,
                Message::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    }

    /// upstream `recordToSink`: correlate, then send with up to `max_attempts` tries while the
    /// server is unreachable.
    async fn write(&mut self, event: Event) {
        let correlation = self.correlator.correlate(event, Timestamp::now());
        let (event, patch) = match correlation {
            Correlation::Skip => return,
            Correlation::Create(event) => (event, None),
            Correlation::Patch { event, patch } => (event, Some(patch)),
        };
        for attempt in 1..=self.retry.max_attempts.max(1) {
            match self.send(&event, patch.as_ref()).await {
                Attempt::Written(written) => {
                    self.correlator.update_state(&written);
                    return;
                }
                Attempt::Rejected => return,
                Attempt::Unreachable if attempt < self.retry.max_attempts => {
                    tokio::time::sleep(self.retry.interval).await;
                }
                Attempt::Unreachable => {}
            }
        }
        tracing::warn!(
            object = %event_log_key(&event),
            reason = event.reason.as_deref().unwrap_or_default(),
            attempts = self.retry.max_attempts,
            "unable to write event, dropping it"
        );
    }

    /// upstream `recordEvent`: patch a repeat (falling back to a create if the event is gone),
    /// create anything else.
    async fn send(&self, event: &Event, patch: Option<&serde_json::Value>) -> Attempt {
        if let Some(patch) = patch {
            let name = event.metadata.name.as_deref().unwrap_or_default();
            let namespace = event.metadata.namespace.as_deref().unwrap_or("default");
            match self
                .writes
                .strategic_patch::<Event>(namespace, name, patch.clone(), "event")
                .await
            {
                Ok(written) => return Attempt::Written(Box::new(written)),
                Err(err) if is_not_found(&err) => {}
                Err(err) => return self.failed(event, &err),
            }
        }
        let mut fresh = event.clone();
        fresh.metadata.resource_version = None;
        fresh
            .metadata
            .namespace
            .get_or_insert_with(|| "default".to_owned());
        match self.writes.create(&fresh, "event").await {
            Ok(written) => Attempt::Written(Box::new(written)),
            Err(err) => self.failed(event, &err),
        }
    }

    fn failed(&self, event: &Event, err: &kube::Error) -> Attempt {
        let key = event_log_key(event);
        let reason = event.reason.as_deref().unwrap_or_default();
        let error = error_message(err);
        if is_retriable(err) {
            tracing::warn!(object = %key, reason, %error, "unable to write event, may retry");
            Attempt::Unreachable
        } else if is_already_exists(err) || has_status_cause(err, NAMESPACE_TERMINATING_CAUSE) {
            tracing::debug!(object = %key, reason, %error, "server rejected event");
            Attempt::Rejected
        } else {
            tracing::warn!(object = %key, reason, %error, "server rejected event, not retrying");
            Attempt::Rejected
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unreachable_servers_are_retried() {
        let status = kube::Error::Api(Box::new(
            kube::core::Status::failure("boom", "InternalError").with_code(500),
        ));
        assert!(!is_retriable(&status), "answers from the server are final");
        let transport =
            kube::Error::ReadEvents(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
        assert!(is_retriable(&transport));
        let unexpected = kube::Error::SerdeError(
            serde_json::from_str::<Event>("not json").expect_err("invalid"),
        );
        assert!(
            is_retriable(&unexpected),
            "an unexpected response may be transient"
        );
    }
}
