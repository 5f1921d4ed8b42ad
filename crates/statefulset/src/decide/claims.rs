//! The claim writes a pod needs (upstream `createPersistentVolumeClaims` and `fixPodClaim`),
//! shared by the replica pass and the condemned pods' claim fixes.

use std::{collections::BTreeMap, sync::Arc};

use informer::CachedPod;
use k8s_openapi::api::{apps::v1::StatefulSet, core::v1::PersistentVolumeClaim};

use super::ClaimWrite;

use crate::{
    identity::{pod_claims, pod_ordinal},
    retention::{claim_owner_up_to_date, updated_claim_owners},
};

/// The claim writes an existing pod needs: missing claims
/// created when `create_missing`, owner refs fixed where the retention policy disagrees.
pub(super) fn claim_writes(
    set: &StatefulSet,
    pod: &CachedPod,
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
    create_missing: bool,
) -> Vec<ClaimWrite> {
    let ordinal = pod_ordinal(pod);
    let mut writes = Vec::new();
    for wanted in pod_claims(set, ordinal) {
        let name = wanted.metadata.name.clone().unwrap_or_default();
        match claims.get(&name) {
            None if create_missing => {
                writes.push(ClaimWrite::Create(Box::new(with_owners(set, pod, wanted))))
            }
            None => {}
            Some(existing) if create_missing && existing.metadata.deletion_timestamp.is_some() => {
                writes.push(ClaimWrite::BeingDeleted(name));
            }
            Some(existing) if !claim_owner_up_to_date(set, pod, existing) => {
                writes.push(ClaimWrite::SetOwners {
                    claim: existing.clone(),
                    owners: updated_claim_owners(set, pod, existing),
                });
            }
            Some(_) => {}
        }
    }
    writes
}

fn with_owners(
    set: &StatefulSet,
    pod: &CachedPod,
    mut claim: PersistentVolumeClaim,
) -> PersistentVolumeClaim {
    let owners = updated_claim_owners(set, pod, &claim);
    claim.metadata.owner_references = (!owners.is_empty()).then_some(owners);
    claim
}

/// Claims for a pod about to be created: the missing ones, or an error marker for one being
/// deleted (upstream `createPersistentVolumeClaims`).
pub(super) fn claims_to_create(
    set: &StatefulSet,
    pod: &CachedPod,
    claims: &BTreeMap<String, Arc<PersistentVolumeClaim>>,
) -> Vec<ClaimWrite> {
    pod_claims(set, pod_ordinal(pod))
        .into_iter()
        .filter_map(|wanted| {
            let name = wanted.metadata.name.clone().unwrap_or_default();
            match claims.get(&name) {
                None => Some(ClaimWrite::Create(Box::new(with_owners(set, pod, wanted)))),
                Some(existing) if existing.metadata.deletion_timestamp.is_some() => {
                    Some(ClaimWrite::BeingDeleted(name))
                }
                Some(_) => None,
            }
        })
        .collect()
}
