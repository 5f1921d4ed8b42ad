//! client-go's `EventCorrelator` for core/v1 events: what to send for a new event.
//!
//! Three stages, in upstream's order:
//! 1. **aggregate**: once 10 events with the same source, object, type and reason but distinct
//!    messages arrive within 10 minutes, further ones are folded into one event whose message is
//!    `(combined from similar events): <latest message>`;
//! 2. **dedupe**: an event identical to one sent before (same source, object, type, reason,
//!    message) becomes a patch of the earlier event with `count + 1` and a new `lastTimestamp`;
//! 3. **spam filter**: each source+object may emit a burst of 25 events, then one per 5 minutes;
//!    the rest are dropped.
//!
//! Pure: time comes in as a parameter, nothing is sent from here.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Map, Value};

use super::lru::{KeyDigest, Lru};

const NANOS_PER_SECOND: f64 = 1e9;

/// Tunables of the correlator; [`Default`] is upstream's.
#[derive(Debug, Clone)]
pub struct CorrelatorConfig {
    /// Entries per cache (upstream `maxLruCacheEntries`, 4096).
    pub cache_size: usize,
    /// Distinct messages of one source/object/reason before aggregation (10).
    pub max_similar_events: usize,
    /// Window of the similar-event count, in seconds (600).
    pub similar_window_seconds: i64,
    /// Events a source/object may emit at once (25).
    pub spam_burst: f64,
    /// Events per second refilled for a source/object afterwards (1/300).
    pub spam_qps: f64,
}

impl Default for CorrelatorConfig {
    fn default() -> Self {
        CorrelatorConfig {
            cache_size: 4096,
            max_similar_events: 10,
            similar_window_seconds: 600,
            spam_burst: 25.0,
            spam_qps: 1.0 / 300.0,
        }
    }
}

/// What to send for one recorded event.
#[derive(Debug, Clone, PartialEq)]
pub enum Correlation {
    /// POST this new event.
    Create(Event),
    /// PATCH the existing event `event.metadata.name` with this strategic-merge body; if it is
    /// gone, POST `event` instead.
    Patch {
        /// The event as it should now exist (count and timestamps updated).
        event: Event,
        /// `{"count":..,"lastTimestamp":..,"message":..}`.
        patch: Value,
    },
    /// Dropped by the spam filter.
    Skip,
}

#[derive(Debug)]
struct AggregateRecord {
    /// Digests of the distinct messages seen (upstream keeps the messages themselves).
    messages: HashSet<KeyDigest>,
    last_seen: Timestamp,
}

#[derive(Debug, Clone)]
struct Observation {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

#[derive(Debug)]
struct TokenBucket {
    tokens: f64,
    last: Timestamp,
}

/// The correlator state: three bounded caches.
#[derive(Debug)]
pub struct EventCorrelator {
    config: CorrelatorConfig,
    similar: Lru<AggregateRecord>,
    observed: Lru<Observation>,
    spam: Lru<TokenBucket>,
}

fn text(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or_default()
}

/// upstream `getSpamKey`'s fields, in its order: the source and the involved object. The
/// other keys are built from them.
fn source_and_object(event: &Event) -> [&str; 7] {
    let (object, source) = (&event.involved_object, event.source.as_ref());
    [
        source.map_or("", |s| text(&s.component)),
        source.map_or("", |s| text(&s.host)),
        text(&object.kind),
        text(&object.namespace),
        text(&object.name),
        text(&object.uid),
        text(&object.api_version),
    ]
}

/// upstream `getEventKey`: identical events share this key.
fn event_key(event: &Event) -> KeyDigest {
    let [component, host, kind, namespace, name, uid, api_version] = source_and_object(event);
    KeyDigest::of(&[
        component,
        host,
        kind,
        namespace,
        name,
        text(&event.involved_object.field_path),
        uid,
        api_version,
        text(&event.type_),
        text(&event.reason),
        text(&event.message),
    ])
}

/// upstream `EventAggregatorByReasonFunc`'s aggregate key: similar events share it.
fn similar_key(event: &Event) -> KeyDigest {
    let reported = [
        text(&event.type_),
        text(&event.reason),
        text(&event.reporting_component),
        text(&event.reporting_instance),
    ];
    KeyDigest::of(&[source_and_object(event).as_slice(), &reported].concat())
}

/// upstream `getSpamKey`: one budget per source and object.
fn spam_key(event: &Event) -> KeyDigest {
    KeyDigest::of(&source_and_object(event))
}

/// The name upstream gives a new event: `<involved object name>.<unix nanos in hex>`.
pub fn event_name(involved_name: &str, at: Timestamp) -> String {
    format!("{involved_name}.{:x}", at.as_nanosecond())
}

impl EventCorrelator {
    /// An empty correlator.
    pub fn new(config: CorrelatorConfig) -> Self {
        EventCorrelator {
            similar: Lru::new(config.cache_size),
            observed: Lru::new(config.cache_size),
            spam: Lru::new(config.cache_size),
            config,
        }
    }

    /// Decides what to send for `event` (upstream `EventCorrelate`), at time `now`.
    pub fn correlate(&mut self, event: Event, now: Timestamp) -> Correlation {
        let (event, key) = self.aggregate(event, now);
        let (event, patch) = self.observe(event, key);
        if !self.spam_allows(&event, now) {
            return Correlation::Skip;
        }
        match patch {
            Some(patch) => Correlation::Patch { event, patch },
            None => Correlation::Create(event),
        }
    }

    /// Remembers the server's copy of a written event (name, resourceVersion, count) so the next
    /// identical event patches it (upstream `UpdateState`).
    pub fn update_state(&mut self, written: &Event) {
        self.observed.insert(
            event_key(written),
            Observation {
                count: written.count.unwrap_or(0),
                first_timestamp: written.first_timestamp.clone(),
                name: written.metadata.name.clone(),
                resource_version: written.metadata.resource_version.clone(),
            },
        );
    }

    fn aggregate(&mut self, event: Event, now: Timestamp) -> (Event, KeyDigest) {
        let key = similar_key(&event);
        let window_nanos = i128::from(self.config.similar_window_seconds) * 1_000_000_000;
        let message = KeyDigest::of(&[text(&event.message)]);
        let fresh = || AggregateRecord {
            messages: HashSet::new(),
            last_seen: now,
        };
        let distinct = match self.similar.get_mut(key) {
            Some(record) => {
                if now.as_nanosecond() - record.last_seen.as_nanosecond() > window_nanos {
                    *record = fresh();
                }
                record.messages.insert(message);
                record.last_seen = now;
                record.messages.len()
            }
            None => {
                let mut record = fresh();
                record.messages.insert(message);
                self.similar.insert(key, record);
                1
            }
        };
        if distinct < self.config.max_similar_events {
            let key = event_key(&event);
            return (event, key);
        }
        if let Some(record) = self.similar.get_mut(key)
            && let Some(any) = record.messages.iter().next().copied()
        {
            record.messages.remove(&any);
        }
        let at = Time(now);
        let combined = Event {
            metadata: ObjectMeta {
                name: Some(event_name(text(&event.involved_object.name), now)),
                namespace: event.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            count: Some(1),
            first_timestamp: Some(at.clone()),
            last_timestamp: Some(at),
            message: Some(format!(
                "(combined from similar events): {}",
                text(&event.message)
            )),
            reporting_component: Some(String::new()),
            reporting_instance: Some(String::new()),
            involved_object: event.involved_object,
            type_: event.type_,
            reason: event.reason,
            source: event.source,
            ..Event::default()
        };
        (combined, key)
    }

    fn observe(&mut self, mut event: Event, key: KeyDigest) -> (Event, Option<Value>) {
        let mut patch = None;
        if let Some(last) = self
            .observed
            .get_mut(key)
            .filter(|last| last.count > 0)
            .cloned()
        {
            event.metadata.name = last.name;
            event.metadata.resource_version = last.resource_version;
            event.first_timestamp = last.first_timestamp;
            event.count = Some(last.count.saturating_add(1));
            patch = Some(count_patch(&event));
        }
        self.observed.insert(
            key,
            Observation {
                count: event.count.unwrap_or(0),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
        (event, patch)
    }

    fn spam_allows(&mut self, event: &Event, now: Timestamp) -> bool {
        let key = spam_key(event);
        let (burst, qps) = (self.config.spam_burst, self.config.spam_qps);
        if self.spam.get_mut(key).is_none() {
            self.spam.insert(
                key,
                TokenBucket {
                    tokens: burst,
                    last: now,
                },
            );
        }
        let Some(bucket) = self.spam.get_mut(key) else {
            return true;
        };
        let elapsed =
            (now.as_nanosecond() - bucket.last.as_nanosecond()).max(0) as f64 / NANOS_PER_SECOND;
        bucket.tokens = (bucket.tokens + elapsed * qps).min(burst);
        bucket.last = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The two-way strategic merge patch upstream computes between the event with zeroed
/// count/lastTimestamp/message and the updated event: those three fields, keys sorted.
fn count_patch(event: &Event) -> Value {
    let mut patch = Map::new();
    if let Some(count) = event.count {
        patch.insert("count".to_owned(), Value::from(count));
    }
    if let Some(last) = &event.last_timestamp {
        patch.insert(
            "lastTimestamp".to_owned(),
            serde_json::to_value(last).unwrap_or(Value::Null),
        );
    }
    if let Some(message) = event.message.as_ref().filter(|m| !m.is_empty()) {
        patch.insert("message".to_owned(), Value::from(message.clone()));
    }
    Value::Object(patch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EventSource, ObjectReference};
    use serde_json::json;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("valid timestamp")
    }

    fn event(object: &str, reason: &str, message: &str, seconds: i64) -> Event {
        Event {
            metadata: ObjectMeta {
                name: Some(event_name(object, at(seconds))),
                namespace: Some("default".to_owned()),
                ..ObjectMeta::default()
            },
            involved_object: ObjectReference {
                api_version: Some("apps/v1".to_owned()),
                kind: Some("ReplicaSet".to_owned()),
                name: Some(object.to_owned()),
                namespace: Some("default".to_owned()),
                uid: Some(format!("{object}-uid")),
                resource_version: Some("1".to_owned()),
                field_path: None,
            },
            reason: Some(reason.to_owned()),
            message: Some(message.to_owned()),
            source: Some(EventSource {
                component: Some("replicaset-controller".to_owned()),
                host: None,
            }),
            first_timestamp: Some(Time(at(seconds))),
            last_timestamp: Some(Time(at(seconds))),
            count: Some(1),
            type_: Some("Normal".to_owned()),
            reporting_component: Some("replicaset-controller".to_owned()),
            reporting_instance: Some(String::new()),
            ..Event::default()
        }
    }

    /// What the server would answer to a create: the event with a resourceVersion.
    fn written(mut event: Event, resource_version: &str) -> Event {
        event.metadata.resource_version = Some(resource_version.to_owned());
        event
    }

    #[test]
    fn event_name_is_object_name_dot_hex_nanos() {
        let t = Timestamp::new(1_795_332_634, 1).expect("valid");
        assert_eq!(
            event_name("web", t),
            format!("web.{:x}", 1_795_332_634_000_000_001_i128)
        );
    }

    #[test]
    fn first_event_is_created_as_is() {
        let mut correlator = EventCorrelator::new(CorrelatorConfig::default());
        let e = event("rs", "SuccessfulCreate", "Created pod: a", 100);
        assert_eq!(
            correlator.correlate(e.clone(), at(100)),
            Correlation::Create(e)
        );
    }

    #[test]
    fn identical_event_patches_the_first_with_count_two() {
        let mut correlator = EventCorrelator::new(CorrelatorConfig::default());
        let first = event("rs", "FailedCreate", "Error creating: quota", 100);
        let Correlation::Create(sent) = correlator.correlate(first.clone(), at(100)) else {
            panic!("first event must be created");
        };
        correlator.update_state(&written(sent, "41"));

        let repeat = event("rs", "FailedCreate", "Error creating: quota", 160);
        let Correlation::Patch { event, patch } = correlator.correlate(repeat, at(160)) else {
            panic!("repeat must be a patch");
        };
        assert_eq!(
            event.metadata.name, first.metadata.name,
            "patches the first event"
        );
        assert_eq!(event.metadata.resource_version.as_deref(), Some("41"));
        assert_eq!(event.count, Some(2));
        assert_eq!(event.first_timestamp, Some(Time(at(100))));
        assert_eq!(event.last_timestamp, Some(Time(at(160))));
        assert_eq!(
            serde_json::to_string(&patch).expect("serializes"),
            serde_json::to_string(&json!({
                "count": 2,
                "lastTimestamp": "1970-01-01T00:02:40Z",
                "message": "Error creating: quota"
            }))
            .expect("serializes")
        );

        let Correlation::Patch { event, .. } = correlator.correlate(
            self::event("rs", "FailedCreate", "Error creating: quota", 170),
            at(170),
        ) else {
            panic!("third must be a patch");
        };
        assert_eq!(event.count, Some(3));
    }

    #[test]
    fn events_differing_in_any_identity_field_are_not_merged() {
        let base = event("rs", "SuccessfulCreate", "Created pod: a", 100);
        let mut other_type = base.clone();
        other_type.type_ = Some("Warning".to_owned());
        let mut other_uid = base.clone();
        other_uid.involved_object.uid = Some("recreated".to_owned());
        let mut other_source = base.clone();
        other_source.source = Some(EventSource {
            component: Some("deployment-controller".to_owned()),
            host: None,
        });
        let variants = [
            event("rs", "SuccessfulCreate", "Created pod: b", 100),
            event("rs", "SuccessfulDelete", "Created pod: a", 100),
            event("rs2", "SuccessfulCreate", "Created pod: a", 100),
            other_type,
            other_uid,
            other_source,
        ];
        for variant in variants {
            let mut correlator = EventCorrelator::new(CorrelatorConfig::default());
            let Correlation::Create(sent) = correlator.correlate(base.clone(), at(100)) else {
                panic!("first must be created");
            };
            correlator.update_state(&written(sent, "1"));
            assert!(
                matches!(
                    correlator.correlate(variant.clone(), at(101)),
                    Correlation::Create(_)
                ),
                "{variant:?}"
            );
        }
    }

    /// A correlator that has created nine events about `rs` at 100 s with distinct messages:
    /// one short of upstream's threshold for combining similar events.
    fn correlator_after_nine_distinct_messages() -> EventCorrelator {
        let mut correlator = EventCorrelator::new(CorrelatorConfig::default());
        for i in 0..9 {
            let e = event("rs", "SuccessfulCreate", &format!("Created pod: p{i}"), 100);
            assert!(
                matches!(correlator.correlate(e, at(100)), Correlation::Create(_)),
                "{i}"
            );
        }
        correlator
    }

    #[test]
    fn tenth_distinct_message_is_combined_and_later_ones_patch_it() {
        let mut correlator = correlator_after_nine_distinct_messages();
        let tenth = event("rs", "SuccessfulCreate", "Created pod: p9", 101);
        let Correlation::Create(combined) = correlator.correlate(tenth, at(101)) else {
            panic!("tenth distinct message creates the combined event");
        };
        assert_eq!(
            combined.message.as_deref(),
            Some("(combined from similar events): Created pod: p9")
        );
        assert_eq!(combined.count, Some(1));
        assert_eq!(combined.metadata.name, Some(event_name("rs", at(101))));
        let eleventh = event("rs", "SuccessfulCreate", "Created pod: p10", 102);
        let Correlation::Patch { event, patch } = correlator.correlate(eleventh, at(102)) else {
            panic!("further similar events patch the combined one");
        };
        assert_eq!(event.metadata.name, combined.metadata.name);
        assert_eq!(event.count, Some(2));
        assert_eq!(
            patch["message"],
            "(combined from similar events): Created pod: p10"
        );
    }

    #[test]
    fn similar_window_expires() {
        let mut correlator = correlator_after_nine_distinct_messages();
        let late = event("rs", "SuccessfulCreate", "Created pod: late", 100 + 601);
        let Correlation::Create(sent) = correlator.correlate(late, at(100 + 601)) else {
            panic!("created");
        };
        assert_eq!(sent.message.as_deref(), Some("Created pod: late"));
    }

    #[test]
    fn spam_filter_allows_a_burst_then_one_per_refill() {
        let config = CorrelatorConfig {
            max_similar_events: usize::MAX,
            ..CorrelatorConfig::default()
        };
        let mut correlator = EventCorrelator::new(config);
        let send = |c: &mut EventCorrelator, i: usize, seconds: i64| {
            c.correlate(
                event(
                    "rs",
                    "SuccessfulCreate",
                    &format!("Created pod: p{i}"),
                    seconds,
                ),
                at(seconds),
            )
        };
        for i in 0..25 {
            assert!(
                matches!(send(&mut correlator, i, 100), Correlation::Create(_)),
                "{i}"
            );
        }
        assert_eq!(send(&mut correlator, 25, 100), Correlation::Skip);
        assert_eq!(send(&mut correlator, 26, 399), Correlation::Skip);
        assert!(matches!(
            send(&mut correlator, 27, 401),
            Correlation::Create(_)
        ));
        assert_eq!(send(&mut correlator, 28, 402), Correlation::Skip);
        // Another object has its own budget.
        assert!(matches!(
            correlator.correlate(event("other", "SuccessfulCreate", "x", 401), at(401)),
            Correlation::Create(_)
        ));
    }
}
