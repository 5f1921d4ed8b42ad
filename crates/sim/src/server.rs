//! The HTTP front of the sim: routes Kubernetes API paths to the store, applies injected
//! faults, counts requests, and answers errors as `Status` bodies.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State as AxumState};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use parking_lot::RwLock;
use serde_json::Value;

use crate::accounting::Accounting;
use crate::config::AuthConfig;
use crate::faults::FaultInjector;
use crate::object::meta_mut;
use crate::ops::{DeleteOptions, Propagation, UpdateMode};
use crate::patch::{self, PatchType};
use crate::resources::{self, RESOURCES};
use crate::reviews::Review;
use crate::scale::{apply_scale, scale_of};
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{ObjectKey, State};
use crate::table::{self, IncludeObject};
use crate::watch::{self, WatchFaults, WatchParams};
use crate::{discovery, eviction, jobs, openapi};

/// Everything the request handlers, the watch tasks and the kubelet share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub state: RwLock<State>,
    pub faults: FaultInjector,
    pub accounting: Accounting,
    /// Tokens and allow rules behind TokenReview and SubjectAccessReview.
    pub auth: AuthConfig,
    /// `host:port` the server is reachable at (for `/api` discovery).
    pub server_address: String,
    /// Set to true at shutdown so watch streams end.
    pub shutdown: tokio::sync::watch::Sender<bool>,
}

/// The next message on `messages`, or None once the channel closes or `shutdown` turns true:
/// the receive step of the sim's background loops (kubelet, garbage collector).
pub(crate) async fn next_before_shutdown<T>(
    messages: &mut tokio::sync::mpsc::UnboundedReceiver<T>,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) -> Option<T> {
    tokio::select! {
        message = messages.recv() => message,
        _ = shutdown.wait_for(|stopped| *stopped) => None,
    }
}

/// The sim's router: `/metrics` plus the Kubernetes API under one fallback handler.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .fallback(dispatch)
        .with_state(shared)
}

async fn metrics(AxumState(shared): AxumState<Arc<Shared>>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        shared.accounting.render_prometheus(),
    )
        .into_response()
}

/// A request aimed at a resource.
#[derive(Debug, Clone, PartialEq)]
struct ResourceRequest {
    res: usize,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<&'static str>,
}

/// What a path names.
#[derive(Debug, PartialEq)]
enum Route {
    Document(Value),
    Health,
    OpenApiV2,
    Resource(ResourceRequest),
    Review(Review),
    Unknown,
}

fn subresource(res: usize, sub: &str) -> Option<&'static str> {
    let info = &RESOURCES[res];
    match sub {
        "status" if info.status => Some("status"),
        "scale" if info.scale => Some("scale"),
        "eviction" if res == resources::PODS => Some("eviction"),
        _ => None,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    // `/namespaces/{name}/status` is the namespace's own subresource, not a collection.
    let (namespace, rest) = match rest {
        ["namespaces", _, second]
            if group.is_empty() && subresource(resources::NAMESPACES, second).is_some() =>
        {
            (None, rest)
        }
        ["namespaces", ns, _, ..] => (Some(ns.to_string()), &rest[2..]),
        _ => (None, rest),
    };
    let Some((plural, tail)) = rest.split_first() else {
        return Route::Unknown;
    };
    let Some(res) = resources::find(group, version, plural) else {
        return Route::Unknown;
    };
    let info = &RESOURCES[res];
    if namespace.is_some() && !info.namespaced {
        return Route::Unknown;
    }
    let (name, sub) = match tail {
        [] => (None, None),
        [name] => (Some(name.to_string()), None),
        [name, sub] => match subresource(res, sub) {
            Some(sub) => (Some(name.to_string()), Some(sub)),
            None => return Route::Unknown,
        },
        _ => return Route::Unknown,
    };
    if name.is_some() && info.namespaced && namespace.is_none() {
        return Route::Unknown;
    }
    Route::Resource(ResourceRequest {
        res,
        namespace,
        name,
        sub,
    })
}

fn route(path: &str, server_address: &str) -> Route {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["version"] => Route::Document(discovery::version()),
        ["healthz" | "readyz" | "livez"] => Route::Health,
        ["api"] => Route::Document(discovery::api_versions(server_address)),
        ["api", version] => {
            discovery::resource_list("", version).map_or(Route::Unknown, Route::Document)
        }
        ["apis"] => Route::Document(discovery::api_groups()),
        ["apis", group] => discovery::api_group(group).map_or(Route::Unknown, Route::Document),
        ["apis", group, version] => {
            discovery::resource_list(group, version).map_or(Route::Unknown, Route::Document)
        }
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::Document(openapi::root()),
        ["openapi", "v3", rest @ ..] => {
            openapi::group_version(&rest.join("/")).map_or(Route::Unknown, Route::Document)
        }
        ["api", version, rest @ ..] => resource_route("", version, rest),
        ["apis", group, version, rest @ ..] => {
            let review = match rest {
                [plural] => Review::find(group, version, plural),
                _ => None,
            };
            review.map_or_else(|| resource_route(group, version, rest), Route::Review)
        }
        _ => Route::Unknown,
    }
}

fn json_response(code: StatusCode, body: impl Into<Body>) -> Response {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn error_response(err: &ApiError) -> Response {
    let code = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = json_response(code, err.to_status().to_string());
    if let Some(secs) = err.retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

async fn dispatch(
    AxumState(shared): AxumState<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let faults = shared.faults.config();
    if !faults.latency.is_zero() {
        tokio::time::sleep(faults.latency).await;
    }
    match route(uri.path(), &shared.server_address) {
        Route::Document(doc) if method == Method::GET => {
            json_response(StatusCode::OK, doc.to_string())
        }
        Route::Health if method == Method::GET => (StatusCode::OK, "ok").into_response(),
        Route::OpenApiV2 if method == Method::GET => (
            [(header::CONTENT_TYPE, openapi::V2_CONTENT_TYPE)],
            openapi::v2_document(),
        )
            .into_response(),
        Route::Document(_) | Route::Health | Route::OpenApiV2 => {
            error_response(&ApiError::method_not_allowed())
        }
        Route::Unknown => error_response(&ApiError::no_route(uri.path())),
        Route::Review(review) => {
            let response = if method == Method::POST {
                match review.answer(&shared.auth, &body) {
                    Ok(answer) => json_response(StatusCode::CREATED, answer.to_string()),
                    Err(e) => error_response(&e),
                }
            } else {
                error_response(&ApiError::method_not_allowed())
            };
            shared.accounting.record(
                "create",
                review.plural(),
                user_agent_of(&headers),
                response.status().as_u16(),
            );
            response
        }
        Route::Resource(req) => {
            let query: HashMap<String, String> =
                Query::try_from_uri(&uri).map(|q| q.0).unwrap_or_default();
            let user_agent = user_agent_of(&headers);
            let Some(verb) = verb_of(&method, &req, &query) else {
                return error_response(&ApiError::method_not_allowed());
            };
            let info = &RESOURCES[req.res];
            let resource_label = match req.sub {
                Some(sub) => format!("{}/{sub}", info.plural),
                None => info.plural.to_string(),
            };
            let response = if is_write(verb) && query.get("dryRun").is_some_and(|d| !d.is_empty()) {
                error_response(&ApiError::bad_request("dryRun is not supported by the sim"))
            } else if is_write(verb)
                && let Some(err) = shared
                    .faults
                    .roll_write(info, req.name.as_deref().unwrap_or(""))
            {
                tracing::debug!(verb, resource = %resource_label, code = err.code, "injecting fault");
                error_response(&err)
            } else {
                let content_type = headers
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("application/json")
                    .to_string();
                let accept = headers
                    .get(header::ACCEPT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let table = (table::wants_table(accept) && req.sub.is_none())
                    .then(|| IncludeObject::parse(query.get("includeObject").map(String::as_str)));
                let call = Call {
                    shared: &shared,
                    req: &req,
                    query: &query,
                    body: &body,
                    content_type: &content_type,
                    table,
                };
                call.serve(verb).unwrap_or_else(|e| error_response(&e))
            };
            shared.accounting.record(
                verb,
                &resource_label,
                user_agent,
                response.status().as_u16(),
            );
            response
        }
    }
}

fn user_agent_of(headers: &HeaderMap) -> &str {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn is_write(verb: &str) -> bool {
    matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    )
}

fn flag(query: &HashMap<String, String>, key: &str) -> bool {
    query.get(key).is_some_and(|v| v == "true" || v == "1")
}

fn verb_of(
    method: &Method,
    req: &ResourceRequest,
    query: &HashMap<String, String>,
) -> Option<&'static str> {
    if req.sub == Some("eviction") {
        return (method == Method::POST).then_some("create");
    }
    let named = req.name.is_some();
    match (method.as_str(), named) {
        ("GET", false) if flag(query, "watch") => Some("watch"),
        ("GET", false) => Some("list"),
        ("GET", true) => Some("get"),
        ("POST", false) if req.sub.is_none() => Some("create"),
        ("PUT", true) => Some("update"),
        ("PATCH", true) => Some("patch"),
        ("DELETE", true) if req.sub.is_none() => Some("delete"),
        ("DELETE", false) => Some("deletecollection"),
        _ => None,
    }
}

/// One resource request being served.
struct Call<'a> {
    shared: &'a Arc<Shared>,
    req: &'a ResourceRequest,
    query: &'a HashMap<String, String>,
    body: &'a Bytes,
    content_type: &'a str,
    /// Set when the client asked for a `Table` (kubectl get), with what rows carry.
    table: Option<IncludeObject>,
}

impl Call<'_> {
    fn serve(&self, verb: &str) -> Result<Response, ApiError> {
        match verb {
            "get" => self.get(),
            "list" => self.list(),
            "watch" => self.watch(),
            "create" => self.create(),
            "update" => self.update(),
            "patch" => self.patch(),
            "delete" => self.delete(),
            "deletecollection" => self.delete_collection(),
            _ => Err(ApiError::method_not_allowed()),
        }
    }

    fn key(&self) -> ObjectKey {
        (
            self.req.namespace.clone().unwrap_or_default(),
            self.req.name.clone().unwrap_or_default(),
        )
    }

    fn info(&self) -> &'static resources::ResourceInfo {
        &RESOURCES[self.req.res]
    }

    fn body_json(&self) -> Result<Value, ApiError> {
        serde_json::from_slice(self.body).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        })
    }

    /// A stored object (or its Scale) as the answer.
    fn object_response(&self, code: StatusCode, bytes: Bytes) -> Result<Response, ApiError> {
        if self.req.sub == Some("scale") {
            let obj: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            return Ok(json_response(code, scale_of(&obj).to_string()));
        }
        Ok(json_response(code, bytes))
    }

    fn get(&self) -> Result<Response, ApiError> {
        let key = self.key();
        let bytes = {
            let state = self.shared.state.read();
            state.get(self.req.res, &key).map(|s| s.object.clone())
        };
        let bytes = bytes.ok_or_else(|| ApiError::not_found(self.info(), &key.1))?;
        if let Some(include) = self.table {
            let obj: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let rv = obj
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null);
            let t = table::table(
                self.info().plural,
                serde_json::json!({"resourceVersion": rv}),
                &[obj],
                include,
                true,
            );
            return Ok(json_response(StatusCode::OK, t.to_string()));
        }
        self.object_response(StatusCode::OK, bytes)
    }

    fn selectors(&self) -> Result<(LabelSelector, FieldSelector), ApiError> {
        let labels =
            LabelSelector::parse(self.query.get("labelSelector").map_or("", String::as_str))
                .map_err(ApiError::bad_request)?;
        let fields = FieldSelector::parse(
            self.query.get("fieldSelector").map_or("", String::as_str),
            self.info().plural,
        )
        .map_err(ApiError::bad_request)?;
        Ok((labels, fields))
    }

    fn list(&self) -> Result<Response, ApiError> {
        let (labels, fields) = self.selectors()?;
        let limit = match self.query.get("limit") {
            Some(l) => l
                .parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit {l:?}")))?,
            None => 0,
        };
        let token = match self.query.get("continue").filter(|c| !c.is_empty()) {
            Some(c) => Some(decode_continue(c)?),
            None => None,
        };
        let info = self.info();
        let state = self.shared.state.read();
        let table = &state.tables[self.req.res];
        let list_rv = token.as_ref().map_or(state.rv, |t| t.0);
        let start = match (&token, &self.req.namespace) {
            (Some((_, key)), _) => std::ops::Bound::Excluded(key.clone()),
            (None, Some(ns)) => std::ops::Bound::Included((ns.clone(), String::new())),
            (None, None) => std::ops::Bound::Unbounded,
        };
        let mut items: Vec<Bytes> = Vec::new();
        let mut last_key: Option<ObjectKey> = None;
        let mut remaining = 0usize;
        for (key, stored) in table.objects.range((start, std::ops::Bound::Unbounded)) {
            if self.req.namespace.as_ref().is_some_and(|ns| *ns != key.0) {
                break;
            }
            if !labels.matches(&stored.labels) {
                continue;
            }
            if !fields.is_empty() {
                let parsed = if fields.needs_object() {
                    Some(stored.value())
                } else {
                    None
                };
                if !fields.matches(&key.0, &key.1, parsed.as_ref()) {
                    continue;
                }
            }
            if limit > 0 && items.len() >= limit {
                remaining += 1;
                continue;
            }
            items.push(stored.object.clone());
            last_key = Some(key.clone());
        }
        drop(state);
        let continuation = (remaining > 0)
            .then(|| last_key.map(|k| encode_continue(list_rv, &k)))
            .flatten();
        if let Some(include) = self.table {
            let objects: Vec<Value> = items
                .iter()
                .filter_map(|b| serde_json::from_slice(b).ok())
                .collect();
            let meta = list_meta(list_rv, continuation.as_deref(), remaining);
            let t = table::table(info.plural, meta, &objects, include, true);
            return Ok(json_response(StatusCode::OK, t.to_string()));
        }
        let body = list_body(info, list_rv, continuation.as_deref(), remaining, &items);
        Ok(json_response(StatusCode::OK, body))
    }

    fn watch(&self) -> Result<Response, ApiError> {
        let (labels, fields) = self.selectors()?;
        let resource_version = match self.query.get("resourceVersion").filter(|v| !v.is_empty()) {
            Some(v) => Some(
                v.parse::<u64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {v:?}")))?,
            ),
            None => None,
        };
        let timeout = match self.query.get("timeoutSeconds") {
            Some(t) => Some(Duration::from_secs(t.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("invalid timeoutSeconds {t:?}"))
            })?)),
            None => None,
        };
        let params = WatchParams {
            res: self.req.res,
            namespace: self.req.namespace.clone(),
            labels,
            fields,
            resource_version,
            bookmarks: flag(self.query, "allowWatchBookmarks"),
            send_initial_events: flag(self.query, "sendInitialEvents"),
            timeout,
            table: self.table,
        };
        let faults = self.shared.faults.config();
        let body = watch::start(
            self.shared.clone(),
            params,
            WatchFaults {
                disconnect_after: faults.watch_disconnect_every,
                unwatched_label: faults.unwatched_label,
                lag: faults.watch_lag,
            },
        );
        Ok(json_response(StatusCode::OK, body))
    }

    fn create(&self) -> Result<Response, ApiError> {
        if self.req.sub == Some("eviction") {
            return self.evict();
        }
        let info = self.info();
        if info.namespaced && self.req.namespace.is_none() {
            return Err(ApiError::method_not_allowed());
        }
        let obj = self.body_json()?;
        let ns = self.req.namespace.clone().unwrap_or_default();
        let bytes = self.shared.state.write().create(self.req.res, &ns, obj)?;
        Ok(json_response(StatusCode::CREATED, bytes))
    }

    /// `POST pods/{name}/eviction`: see [`crate::eviction`].
    fn evict(&self) -> Result<Response, ApiError> {
        let status = eviction::evict(&mut self.shared.state.write(), &self.key(), self.body)?;
        Ok(json_response(StatusCode::CREATED, status.to_string()))
    }

    fn update(&self) -> Result<Response, ApiError> {
        let key = self.key();
        let body = self.body_json()?;
        let bytes = {
            let mut state = self.shared.state.write();
            match self.req.sub {
                Some("scale") => {
                    let current = state
                        .get(self.req.res, &key)
                        .ok_or_else(|| ApiError::not_found(self.info(), &key.1))?
                        .value();
                    let mut obj = current;
                    apply_scale(&mut obj, &body)?;
                    state.update(self.req.res, &key, obj, UpdateMode::Main)?
                }
                Some(_) => state.update(self.req.res, &key, body, UpdateMode::Status)?,
                None => state.update(self.req.res, &key, body, UpdateMode::Main)?,
            }
        };
        self.object_response(StatusCode::OK, bytes)
    }

    fn patch(&self) -> Result<Response, ApiError> {
        let key = self.key();
        let patch_type = PatchType::from_content_type(self.content_type)?;
        let mut state = self.shared.state.write();
        let current = state.get(self.req.res, &key).map(|s| s.value());
        let Some(current) = current else {
            if patch_type == PatchType::Apply && self.req.sub.is_none() {
                let mut obj = Value::Object(serde_json::Map::new());
                patch::apply(patch_type, &mut obj, self.body)?;
                meta_mut(&mut obj).insert("name".into(), Value::from(key.1.clone()));
                let bytes = state.create(self.req.res, &key.0, obj)?;
                return Ok(json_response(StatusCode::CREATED, bytes));
            }
            return Err(ApiError::not_found(self.info(), &key.1));
        };
        let bytes = match self.req.sub {
            Some("scale") => {
                let mut scale = scale_of(&current);
                patch::apply(patch_type, &mut scale, self.body)?;
                let mut obj = current;
                apply_scale(&mut obj, &scale)?;
                state.update(self.req.res, &key, obj, UpdateMode::Main)?
            }
            Some(_) => {
                let mut obj = current;
                patch::apply(patch_type, &mut obj, self.body)?;
                state.update(self.req.res, &key, obj, UpdateMode::Status)?
            }
            None => {
                let mut obj = current;
                patch::apply(patch_type, &mut obj, self.body)?;
                state.update(self.req.res, &key, obj, UpdateMode::Main)?
            }
        };
        drop(state);
        self.object_response(StatusCode::OK, bytes)
    }

    /// The request's delete options, and whether to warn that the dependents are orphaned by
    /// default: a resource that orphans by default (batch/v1 Jobs) does so when the request
    /// names neither a propagation policy nor `orphanDependents`, with upstream's warning.
    fn delete_options(&self) -> Result<(DeleteOptions, bool), ApiError> {
        let body: Value = if self.body.is_empty() {
            Value::Null
        } else {
            self.body_json()?
        };
        let mut opts = DeleteOptions::from_request(&body, self.query)?;
        let orphaned = self.info().orphans_by_default && opts.propagation.is_none();
        if orphaned {
            opts.propagation = Some(Propagation::Orphan);
        }
        Ok((opts, orphaned))
    }

    fn delete(&self) -> Result<Response, ApiError> {
        let (opts, orphaned) = self.delete_options()?;
        let key = self.key();
        let bytes = self
            .shared
            .state
            .write()
            .delete(self.req.res, &key, &opts)?;
        Ok(with_orphan_warning(
            json_response(StatusCode::OK, bytes),
            orphaned,
        ))
    }

    fn delete_collection(&self) -> Result<Response, ApiError> {
        let (opts, orphaned) = self.delete_options()?;
        let (labels, fields) = self.selectors()?;
        let mut state = self.shared.state.write();
        let keys: Vec<ObjectKey> = state.tables[self.req.res]
            .objects
            .iter()
            .filter(|(k, _)| self.req.namespace.as_ref().is_none_or(|ns| *ns == k.0))
            .filter(|(_, s)| labels.matches(&s.labels))
            .filter(|(k, s)| {
                fields.is_empty()
                    || fields.matches(
                        &k.0,
                        &k.1,
                        fields.needs_object().then(|| s.value()).as_ref(),
                    )
            })
            .map(|(k, _)| k.clone())
            .collect();
        let mut items = Vec::new();
        for key in keys {
            if let Ok(bytes) = state.delete(self.req.res, &key, &opts) {
                items.push(bytes);
            }
        }
        let rv = state.rv;
        drop(state);
        Ok(with_orphan_warning(
            json_response(StatusCode::OK, list_body(self.info(), rv, None, 0, &items)),
            orphaned,
        ))
    }
}

/// Adds upstream's `Warning` header about orphaned Job pods when `orphaned`.
fn with_orphan_warning(mut response: Response, orphaned: bool) -> Response {
    if orphaned
        && let Ok(value) = HeaderValue::from_str(&format!("299 - \"{}\"", jobs::ORPHAN_WARNING))
    {
        response.headers_mut().insert(header::WARNING, value);
    }
    response
}

/// `{"kind":"XList","apiVersion":...,"metadata":{...},"items":[...]}` around stored bytes.
fn list_body(
    info: &resources::ResourceInfo,
    rv: u64,
    continuation: Option<&str>,
    remaining: usize,
    items: &[Bytes],
) -> Bytes {
    let size: usize = items.iter().map(|i| i.len() + 1).sum();
    let mut buf = BytesMut::with_capacity(size + 200);
    let meta = list_meta(rv, continuation, remaining);
    buf.put_slice(
        format!(
            "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
            info.list_kind(),
            info.api_version(),
            meta
        )
        .as_bytes(),
    );
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            buf.put_u8(b',');
        }
        buf.put_slice(item);
    }
    buf.put_slice(b"]}");
    buf.freeze()
}

/// A list's `metadata`: its resourceVersion and, for a partial page, the continue token.
fn list_meta(rv: u64, continuation: Option<&str>, remaining: usize) -> Value {
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), Value::from(rv.to_string()));
    if let Some(token) = continuation {
        meta.insert("continue".into(), Value::from(token));
        meta.insert("remainingItemCount".into(), Value::from(remaining));
    }
    Value::Object(meta)
}

/// An opaque continue token: hex of `rv/namespace/name`.
fn encode_continue(rv: u64, key: &ObjectKey) -> String {
    format!("{rv}/{}/{}", key.0, key.1)
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_continue(token: &str) -> Result<(u64, ObjectKey), ApiError> {
    let bad = || ApiError::bad_request("continue key is not valid");
    if !token.len().is_multiple_of(2) {
        return Err(bad());
    }
    let bytes: Vec<u8> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let mut parts = text.splitn(3, '/');
    let rv = parts
        .next()
        .and_then(|r| r.parse::<u64>().ok())
        .ok_or_else(bad)?;
    let ns = parts.next().ok_or_else(bad)?.to_string();
    let name = parts.next().ok_or_else(bad)?.to_string();
    Ok((rv, (ns, name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `plural namespace name sub` of the route, "-" for absent parts.
    fn resource(path: &str) -> Option<String> {
        match route(path, "x") {
            Route::Resource(r) => {
                let part = |p: Option<&str>| p.unwrap_or("-").to_string();
                Some(format!(
                    "{} {} {} {}",
                    RESOURCES[r.res].plural,
                    part(r.namespace.as_deref()),
                    part(r.name.as_deref()),
                    part(r.sub)
                ))
            }
            _ => None,
        }
    }

    #[test]
    fn routes() {
        let cases = [
            ("/api/v1/pods", Some("pods - - -")),
            ("/api/v1/namespaces", Some("namespaces - - -")),
            ("/api/v1/namespaces/default", Some("namespaces - default -")),
            (
                "/api/v1/namespaces/default/status",
                Some("namespaces - default status"),
            ),
            ("/api/v1/namespaces/default/pods", Some("pods default - -")),
            (
                "/api/v1/namespaces/default/pods/p/status",
                Some("pods default p status"),
            ),
            (
                "/apis/apps/v1/namespaces/ns/deployments/d/scale",
                Some("deployments ns d scale"),
            ),
            ("/apis/apps/v1/deployments", Some("deployments - - -")),
            (
                "/apis/apps/v1/namespaces/ns/controllerrevisions/r/scale",
                None,
            ),
            ("/api/v1/namespaces/default/pods/p/scale", None),
            (
                "/api/v1/namespaces/default/pods/p/eviction",
                Some("pods default p eviction"),
            ),
            (
                "/api/v1/namespaces/default/pods/eviction",
                Some("pods default eviction -"),
            ),
            ("/apis/apps/v1/namespaces/ns/deployments/d/eviction", None),
            ("/api/v1/pods/p", None),
            ("/apis/batch/v1/jobs", Some("jobs - - -")),
            (
                "/apis/batch/v1/namespaces/ns/jobs/pi/status",
                Some("jobs ns pi status"),
            ),
            ("/apis/batch/v1/namespaces/ns/jobs/pi/scale", None),
            ("/apis/batch/v2/jobs", None),
        ];
        for (path, expected) in cases {
            assert_eq!(resource(path).as_deref(), expected, "{path}");
        }
        assert!(matches!(route("/apis/apps/v1", "x"), Route::Document(_)));
        assert!(matches!(route("/openapi/v2", "x"), Route::OpenApiV2));
        assert!(matches!(route("/openapi/v1", "x"), Route::Unknown));
    }

    #[test]
    fn continue_tokens_round_trip() {
        let key = ("default".to_string(), "web-1".to_string());
        let token = encode_continue(42, &key);
        assert_eq!(decode_continue(&token).unwrap(), (42, key));
        assert!(decode_continue("zz").is_err());
        assert!(decode_continue("abc").is_err());
    }
}
