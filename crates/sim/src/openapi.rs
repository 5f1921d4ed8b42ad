//! Minimal OpenAPI documents for kubectl. kubectl's default `--validate=strict` first loads
//! the OpenAPI v2 schema (protobuf only; failure is fatal) and then asks OpenAPI v3 whether
//! the server supports the `fieldValidation` query parameter on PATCH. The sim serves an
//! empty v2 document (kubectl skips client-side validation of kinds it has no schema for)
//! and v3 documents declaring `fieldValidation`, which it accepts and ignores.

use serde_json::{Map, Value, json};

use crate::resources::{RESOURCES, groups};

/// The Content-Type of the protobuf OpenAPI v2 document.
pub(crate) const V2_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Appends a protobuf length-delimited field (wire type 2) with a one-byte tag.
fn proto_field(out: &mut Vec<u8>, field: u8, bytes: &[u8]) {
    out.push((field << 3) | 2);
    let mut len = bytes.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(bytes);
}

/// `/openapi/v2`: a gnostic `openapi_v2.Document` with swagger "2.0", an info block and no
/// paths or definitions, protobuf-encoded by hand.
pub(crate) fn v2_document() -> Vec<u8> {
    let mut info = Vec::new();
    proto_field(&mut info, 1, b"Kubernetes");
    proto_field(&mut info, 2, b"v1.28.0-sim");
    let mut doc = Vec::new();
    proto_field(&mut doc, 1, b"2.0");
    proto_field(&mut doc, 2, &info);
    proto_field(&mut doc, 8, &[]);
    doc
}

fn gv_path(group: &str) -> String {
    if group.is_empty() {
        "api/v1".to_string()
    } else {
        format!("apis/{group}/v1")
    }
}

/// `/openapi/v3`: the group-versions and where their documents are.
pub(crate) fn root() -> Value {
    let mut paths = Map::new();
    for group in std::iter::once("").chain(groups()) {
        let path = gv_path(group);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash=sim")}),
        );
    }
    json!({"paths": paths})
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/{group}/v1`, if served.
pub(crate) fn group_version(path: &str) -> Option<Value> {
    let group = match path {
        "api/v1" => "",
        other => other.strip_prefix("apis/")?.strip_suffix("/v1")?,
    };
    let mut paths = Map::new();
    for r in RESOURCES.iter().filter(|r| r.group == group) {
        let item = if r.namespaced {
            format!(
                "/{}/namespaces/{{namespace}}/{}/{{name}}",
                gv_path(group),
                r.plural
            )
        } else {
            format!("/{}/{}/{{name}}", gv_path(group), r.plural)
        };
        paths.insert(
            item,
            json!({"patch": {
                "operationId": format!("patch{}", r.kind),
                "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
                "parameters": [{"name": "fieldValidation", "in": "query", "schema": {"type": "string"}}],
                "responses": {"200": {"description": "OK"}}
            }}),
        );
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.28.0-sim"},
        "paths": paths,
        "components": {"schemas": {}}
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_protobuf_bytes() {
        let doc = v2_document();
        let mut expected = vec![0x0a, 3];
        expected.extend_from_slice(b"2.0");
        expected.extend_from_slice(&[0x12, 25, 0x0a, 10]);
        expected.extend_from_slice(b"Kubernetes");
        expected.extend_from_slice(&[0x12, 11]);
        expected.extend_from_slice(b"v1.28.0-sim");
        expected.extend_from_slice(&[0x42, 0]);
        assert_eq!(doc, expected);
        let mut long = Vec::new();
        proto_field(&mut long, 1, &[0u8; 200]);
        assert_eq!(&long[..3], &[0x0a, 0xc8, 0x01]);
    }

    #[test]
    fn documents() {
        let root = root();
        assert_eq!(
            root["paths"]["apis/apps/v1"]["serverRelativeURL"],
            "/openapi/v3/apis/apps/v1?hash=sim"
        );
        assert!(root["paths"].get("api/v1").is_some());
        let apps = group_version("apis/apps/v1").unwrap();
        let patch =
            &apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert_eq!(patch["parameters"][0]["name"], "fieldValidation");
        let core = group_version("api/v1").unwrap();
        assert!(core["paths"].get("/api/v1/namespaces/{name}").is_some());
        let batch = group_version("apis/batch/v1").unwrap();
        assert_eq!(
            batch["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"]["x-kubernetes-group-version-kind"]
                ["kind"],
            "Job"
        );
        assert!(group_version("apis/extensions/v1").is_none());
        assert!(group_version("nonsense").is_none());
    }
}
