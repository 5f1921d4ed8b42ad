//! Write watermarks: per resource, the highest resourceVersion this process's writes returned.
//! Half of what a leader hands its successor when it gives the Lease up. (Not the stale-read
//! checks' per-object `stale_reads::WrittenVersions`: those say what a sync must wait for.)
//!
//! Why: a warm standby that wins the Lease must not act before its caches hold what the old
//! leader wrote (the read barrier, `informer::barrier`). A consistent read of each resource
//! names a version past all of it, but a resource nobody wrote lately reaches that version only
//! with its watch's next bookmark, once a minute on kube-apiserver. A leader that stops on
//! purpose can name exactly what the successor must have seen instead: the highest version
//! each resource's writes returned (recorded here) and the last change each of its caches took
//! in (`informer::SharedInformerFactory::changes_seen`).
//!
//! A write whose outcome is not known (a transport error, a 5xx, a future dropped while the
//! request was out) or that is still in flight leaves its resource out of the handover for the
//! rest of the term: the successor then reads that resource's version itself, as after a crash.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde::Deserialize;

use crate::writes::{Write, WriteExecutor};

/// What one resource's writes have returned so far.
#[derive(Debug, Default)]
struct ResourceWrites {
    /// The highest resourceVersion an answer carried.
    highest: Option<u64>,
    /// Writes sent and not answered yet.
    in_flight: usize,
    /// Whether a write may have changed the resource without saying to which version.
    unknown: bool,
}

/// Per resource (`pods`), the highest version this process's writes returned; cheap to clone,
/// every clone records into and reads the same table.
#[derive(Debug, Clone, Default)]
pub struct WriteWatermarks {
    resources: Arc<Mutex<HashMap<String, ResourceWrites>>>,
}

/// The table at one instant, read under one lock so that a write ending meanwhile cannot
/// leave its resource out of both halves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watermarks {
    /// Per resource whose every write has ended with a known outcome, the highest version its
    /// writes returned (resources with none written are left out).
    pub settled: BTreeMap<String, u64>,
    /// The resources with a write in flight or one whose outcome is unknown.
    pub unsettled: BTreeSet<String>,
}

/// How a write ended, for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written; the answer carried this resourceVersion.
    Written(u64),
    /// Refused by the API server (a 4xx): nothing changed.
    Refused,
    /// It may have changed the resource, at a version nobody told us (a transport error, a
    /// 5xx, an answer without a resourceVersion, a request abandoned while out).
    Unknown,
}

impl WriteOutcome {
    /// The outcome of a write the executor answered with `answer`.
    pub fn of(answer: &Result<String, kube::Error>) -> Self {
        /// Only the part of an answer the table needs.
        #[derive(Deserialize)]
        struct Answer {
            metadata: Option<AnswerMeta>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct AnswerMeta {
            resource_version: Option<String>,
        }
        match answer {
            Ok(text) => serde_json::from_str::<Answer>(text)
                .ok()
                .and_then(|answer| answer.metadata?.resource_version?.parse().ok())
                .map_or(Self::Unknown, Self::Written),
            Err(kube::Error::Api(status)) if status.code < 500 => Self::Refused,
            Err(_) => Self::Unknown,
        }
    }
}

impl WriteWatermarks {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// `executor`, with every write it carries out recorded here.
    pub fn recording(&self, executor: Arc<dyn WriteExecutor>) -> Arc<dyn WriteExecutor> {
        Arc::new(RecordingExecutor {
            inner: executor,
            versions: self.clone(),
        })
    }

    /// Records that a write to `resource` was sent; the returned guard records how it ended
    /// ([`InFlight::finish`]), or an unknown outcome if dropped first.
    pub fn sent(&self, resource: &str) -> InFlight {
        let mut resources = self.resources.lock();
        match resources.get_mut(resource) {
            Some(writes) => writes.in_flight += 1,
            None => {
                let writes = ResourceWrites {
                    in_flight: 1,
                    ..ResourceWrites::default()
                };
                resources.insert(resource.to_string(), writes);
            }
        }
        InFlight {
            versions: self.clone(),
            resource: resource.to_string(),
            finished: false,
        }
    }

    fn ended(&self, resource: &str, outcome: WriteOutcome) {
        let mut resources = self.resources.lock();
        // Every write ending was recorded as sent first.
        let Some(writes) = resources.get_mut(resource) else {
            return;
        };
        writes.in_flight = writes.in_flight.saturating_sub(1);
        match outcome {
            WriteOutcome::Written(version) => {
                writes.highest = writes.highest.max(Some(version));
            }
            WriteOutcome::Refused => {}
            WriteOutcome::Unknown => writes.unknown = true,
        }
    }

    /// The table now ([`Watermarks`]).
    pub fn snapshot(&self) -> Watermarks {
        let mut snapshot = Watermarks::default();
        for (resource, writes) in self.resources.lock().iter() {
            if writes.in_flight > 0 || writes.unknown {
                snapshot.unsettled.insert(resource.clone());
            } else if let Some(highest) = writes.highest {
                snapshot.settled.insert(resource.clone(), highest);
            }
        }
        snapshot
    }
}

/// One write on its way ([`WriteWatermarks::sent`]).
#[derive(Debug)]
pub struct InFlight {
    versions: WriteWatermarks,
    resource: String,
    finished: bool,
}

impl InFlight {
    /// Records how the write ended.
    pub fn finish(mut self, outcome: WriteOutcome) {
        self.finished = true;
        self.versions.ended(&self.resource, outcome);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.finished {
            self.versions.ended(&self.resource, WriteOutcome::Unknown);
        }
    }
}

/// An executor that records each write's outcome in a [`WriteWatermarks`].
struct RecordingExecutor {
    inner: Arc<dyn WriteExecutor>,
    versions: WriteWatermarks,
}

impl WriteExecutor for RecordingExecutor {
    fn execute(&self, write: Write) -> BoxFuture<'static, Result<String, kube::Error>> {
        let in_flight = self.versions.sent(&write.resource.plural);
        let sending = self.inner.execute(write);
        Box::pin(async move {
            let answer = sending.await;
            in_flight.finish(WriteOutcome::of(&answer));
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use kube::core::Status;

    fn api_error(code: u16) -> Result<String, kube::Error> {
        Err(kube::Error::Api(Box::new(
            Status::failure("refused", "").with_code(code),
        )))
    }

    #[test]
    fn what_a_write_answer_says_of_the_version() {
        let cases = [
            (
                Ok(r#"{"kind":"Pod","metadata":{"name":"a","resourceVersion":"42"}}"#.to_string()),
                WriteOutcome::Written(42),
            ),
            (
                Ok(r#"{"kind":"Status","status":"Success","metadata":{}}"#.to_string()),
                WriteOutcome::Unknown,
            ),
            (
                Ok(r#"{"metadata":{"resourceVersion":"opaque"}}"#.to_string()),
                WriteOutcome::Unknown,
            ),
            (Ok("not json".to_string()), WriteOutcome::Unknown),
            (api_error(409), WriteOutcome::Refused),
            (api_error(404), WriteOutcome::Refused),
            (api_error(422), WriteOutcome::Refused),
            (api_error(500), WriteOutcome::Unknown),
            (api_error(504), WriteOutcome::Unknown),
            (
                Err(kube::Error::LinesCodecMaxLineLengthExceeded),
                WriteOutcome::Unknown,
            ),
        ];
        for (answer, want) in cases {
            assert_eq!(WriteOutcome::of(&answer), want, "{answer:?}");
        }
    }

    #[test]
    fn a_resource_is_settled_once_every_write_to_it_ended_with_a_known_version() {
        type Step = (&'static str, Option<WriteOutcome>);
        // Writes per resource in order (`None`: still in flight, `Some`: ended so), and what
        // the table then says.
        type Versions = &'static [(&'static str, u64)];
        let cases: [(&[Step], Versions, &[&str]); 6] = [
            (
                &[("pods", Some(WriteOutcome::Written(5)))],
                &[("pods", 5)],
                &[],
            ),
            (
                &[
                    ("pods", Some(WriteOutcome::Written(9))),
                    ("pods", Some(WriteOutcome::Written(7))),
                    ("replicasets", Some(WriteOutcome::Written(8))),
                ],
                &[("pods", 9), ("replicasets", 8)],
                &[],
            ),
            (
                &[
                    ("pods", Some(WriteOutcome::Written(5))),
                    ("pods", Some(WriteOutcome::Refused)),
                ],
                &[("pods", 5)],
                &[],
            ),
            (&[("pods", Some(WriteOutcome::Refused))], &[], &[]),
            (
                &[
                    ("pods", Some(WriteOutcome::Written(5))),
                    ("pods", None),
                    ("replicasets", Some(WriteOutcome::Written(8))),
                ],
                &[("replicasets", 8)],
                &["pods"],
            ),
            (
                &[
                    ("pods", Some(WriteOutcome::Unknown)),
                    ("pods", Some(WriteOutcome::Written(12))),
                ],
                &[],
                &["pods"],
            ),
        ];
        for (writes, settled, unsettled) in cases {
            let versions = WriteWatermarks::new();
            let mut out = Vec::new();
            for (resource, outcome) in writes {
                let in_flight = versions.sent(resource);
                match outcome {
                    Some(outcome) => in_flight.finish(*outcome),
                    None => out.push(in_flight),
                }
            }
            let want: BTreeMap<String, u64> = settled
                .iter()
                .map(|(resource, version)| (resource.to_string(), *version))
                .collect();
            let snapshot = versions.snapshot();
            assert_eq!(snapshot.settled, want, "{writes:?}");
            let want: BTreeSet<String> = unsettled.iter().map(|r| r.to_string()).collect();
            assert_eq!(snapshot.unsettled, want, "{writes:?}");
        }
    }

    #[test]
    fn a_write_abandoned_while_out_makes_its_resource_unknown() {
        let versions = WriteWatermarks::new();
        versions.sent("pods").finish(WriteOutcome::Written(3));
        drop(versions.sent("pods"));
        let snapshot = versions.snapshot();
        assert_eq!(snapshot.settled, BTreeMap::new());
        assert_eq!(snapshot.unsettled, BTreeSet::from(["pods".to_string()]));
    }
}
