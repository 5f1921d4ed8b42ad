//! The revision data of the controllers whose revisions replace the whole pod template
//! (`getPatch` of the StatefulSet and the DaemonSet controllers, identical in both): a strategic
//! merge patch `{"spec":{"template":{"$patch":"replace", ...}}}`.
//!
//! The template must be passed **exactly as the API server sent it**: a round-trip through
//! typed structs drops fields upstream keeps (such as `"creationTimestamp":null` from servers
//! before v1.34), and a different byte would create a new revision and restart every pod.

use serde_json::{Map, Value};

use crate::Error;
use crate::go_json;

/// The patch directive key and value that make the stored template replace the owner's
/// template wholesale when the revision is applied.
const PATCH_DIRECTIVE: &str = "$patch";
const PATCH_REPLACE: &str = "replace";

/// `getPatch`: the revision data for a raw `spec.template`, keys sorted at every level, with
/// `"$patch":"replace"` added to the template.
pub fn template_revision_data(raw_template: &Value) -> Result<Value, Error> {
    let Value::Object(template) = raw_template else {
        return Err(Error::NotAnObject {
            path: "spec.template".to_owned(),
        });
    };
    let mut template = template.clone();
    template.insert(
        PATCH_DIRECTIVE.to_owned(),
        Value::String(PATCH_REPLACE.to_owned()),
    );
    let mut spec = Map::new();
    spec.insert("template".to_owned(), Value::Object(template));
    let mut data = Map::new();
    data.insert("spec".to_owned(), Value::Object(spec));
    Ok(go_json::sorted(&Value::Object(data)))
}
