//! Upstream's well-known strings: annotation keys, label key, condition types and
//! reasons. Other components (kubectl, dashboards, upstream controllers taking over) read them,
//! so they must be byte-identical to upstream's.

/// Name of the controller's work queue (and of its metrics).
pub const QUEUE_NAME: &str = "deployment";
/// Requeues of a failing key before it is dropped (`maxRetries`).
pub const MAX_RETRIES: u32 = 15;

/// Label (and selector key) that ties a ReplicaSet and its pods to one pod template.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// Revision number of a ReplicaSet; on the Deployment, the revision of its new ReplicaSet.
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";
/// Comma-separated earlier revisions of a ReplicaSet whose template was reused.
pub const REVISION_HISTORY_ANNOTATION: &str = "deployment.kubernetes.io/revision-history";
/// Deployment `spec.replicas` when the ReplicaSet was last scaled.
pub const DESIRED_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/desired-replicas";
/// Deployment `spec.replicas + maxSurge` when the ReplicaSet was last scaled.
pub const MAX_REPLICAS_ANNOTATION: &str = "deployment.kubernetes.io/max-replicas";
/// Legacy rollback request (revision number; 0 = the previous revision).
pub const ROLLBACK_TO_ANNOTATION: &str = "deprecated.deployment.rollback.to";
/// kubectl's client-side apply record; never copied to ReplicaSets.
pub const LAST_APPLIED_CONFIG_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Upper bound (characters) of the revision-history annotation.
pub const REVISION_HISTORY_LIMIT_CHARS: usize = 2000;

/// Deployment condition type: whether the rollout makes progress.
pub const CONDITION_PROGRESSING: &str = "Progressing";
/// Deployment condition type: whether minimum availability is reached.
pub const CONDITION_AVAILABLE: &str = "Available";
/// Deployment (and ReplicaSet) condition type: pods could not be created or deleted.
pub const CONDITION_REPLICA_FAILURE: &str = "ReplicaFailure";

/// Progressing=True: a new ReplicaSet was created.
pub const REASON_NEW_REPLICA_SET: &str = "NewReplicaSetCreated";
/// Progressing=True: an existing ReplicaSet matches the template.
pub const REASON_FOUND_NEW_RS: &str = "FoundNewReplicaSet";
/// Progressing=True: the rollout moved forward.
pub const REASON_REPLICA_SET_UPDATED: &str = "ReplicaSetUpdated";
/// Progressing=True: the rollout completed.
pub const REASON_NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
/// Progressing=False: no progress within `progressDeadlineSeconds`.
pub const REASON_TIMED_OUT: &str = "ProgressDeadlineExceeded";
/// Progressing=False (and a Warning event): creating the new ReplicaSet failed.
pub const REASON_FAILED_RS_CREATE: &str = "ReplicaSetCreateError";
/// Progressing=Unknown: the Deployment is paused.
pub const REASON_PAUSED: &str = "DeploymentPaused";
/// Progressing=Unknown: the Deployment was resumed.
pub const REASON_RESUMED: &str = "DeploymentResumed";
/// Available=True.
pub const REASON_MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
/// Available=False.
pub const REASON_MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

/// `spec.strategy.type` of a rolling update.
pub const STRATEGY_ROLLING_UPDATE: &str = "RollingUpdate";
/// `spec.strategy.type` of a recreate.
pub const STRATEGY_RECREATE: &str = "Recreate";

/// `progressDeadlineSeconds` and `revisionHistoryLimit` value meaning "not set" (math.MaxInt32).
pub const UNLIMITED: i32 = i32::MAX;
