#![doc = include_str!("../README.md")]

mod apply;
mod create;
mod error;
#[cfg(feature = "testing")]
pub mod examples;
mod go_json;
mod hash;
mod order;
mod revision;
mod semantic;
mod semantic_cache;
mod statefulset;
mod template_hash;
mod template_patch;
mod truncate;
mod update_revision;

pub use apply::{apply_revision, apply_revision_to_statefulset};
pub use create::{NameConflict, RevisionCreation, create_request_body, resolve_name_conflict};
pub use error::Error;
pub use go_json::encode as encode_go_json;
pub use hash::{
    MAX_NAME_PREFIX_BYTES, controller_revision_name, hash_revision_data, safe_encode_string,
};
pub use order::{next_revision, sort_controller_revisions};
pub use revision::{
    CONTROLLER_REVISION_HASH_LABEL, RevisionParent, equal_revision, find_equal_revisions,
    hash_controller_revision, new_controller_revision, revision_data_bytes, revision_hash,
};
pub use semantic::latest_revision_is_semantically_current;
pub use semantic_cache::{DEFAULT_SEMANTIC_CACHE_CAPACITY, SemanticComparisonCache};
pub use statefulset::{
    STATEFULSET_REVISION_LABEL, new_statefulset_revision, statefulset_revision_data,
};
pub use template_hash::{canonical_template_text, compute_hash};
pub use template_patch::template_revision_data;
pub use truncate::{live_revision_names, revisions_to_truncate};
pub use update_revision::{UpdateRevisionChoice, choose_update_revision};
