//! The job-local broker omp talks to: one provider's credentials, its own generations, and
//! every write kept local. Only a refresh of an allowed credential reaches upstream, and its
//! answer must be that credential of that provider.
//!
//! The view omp sees is the upstream snapshot filtered to the provider, minus the credentials
//! omp disabled during the job, with the blocks omp set during the job merged in. Its
//! generation is the proxy's own, bumped whenever that view changes, so long-polls (`wait`,
//! `If-None-Match`, `304`) and the SSE stream behave as omp expects whatever upstream does.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, ETAG, IF_NONE_MATCH};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};
use tokio::sync::watch;

use super::upstream::{generation_tag, Upstream};
use crate::http::{self, Body};

/// The longest a snapshot long-poll is held (the reference broker's ceiling).
const MAX_WAIT: Duration = Duration::from_secs(30);
/// How often an idle stream carries a keepalive comment.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// The largest request body read from omp.
const BODY_LIMIT: usize = 64 * 1024;
/// The most blocks the job keeps per credential; the oldest goes first. omp sets one per key
/// and scope it saw fail, a handful in a job: the bound only keeps a hostile seat from growing
/// every snapshot (and every open stream's queue of them) without limit.
const MAX_LOCAL_BLOCKS: usize = 32;
/// How long one upstream refresh answers every refresh of its credential. omp refreshes after a
/// model 401, once; a seat asking again within this gets the same answer.
const REFRESH_INTERVAL: Duration = Duration::from_secs(5);
/// The longest `providerKey` or `blockScope` a block may carry (omp's are a provider and an
/// auth kind, such as `kimi-code:api_key`).
const MAX_BLOCK_FIELD: usize = 256;
/// The keys of a snapshot entry omp accepts; anything else upstream adds is dropped, since omp
/// rejects unknown keys.
const ENTRY_KEYS: [&str; 6] = [
    "id",
    "provider",
    "credential",
    "identityKey",
    "rotatesInMs",
    "blocks",
];

/// What the proxy knows; shared by every connection.
pub struct Proxy {
    provider: String,
    bearer: String,
    upstream: Upstream,
    view: Mutex<View>,
    changed: watch::Sender<u64>,
    /// The last refresh forwarded upstream; held while one is in flight.
    last_refresh: tokio::sync::Mutex<Option<Refreshed>>,
    /// Whether the seat ever made an authorized request: a seat that failed without one could
    /// not reach its proxy (a sandbox without the proxy's port), which moot-broker then says.
    reached: AtomicBool,
}

/// A refresh upstream answered, replayed to the seat for [`REFRESH_INTERVAL`].
struct Refreshed {
    id: i64,
    at: Instant,
    status: StatusCode,
    answer: Value,
}

#[derive(Default)]
struct View {
    generation: u64,
    generated_at: Value,
    refresher: Value,
    /// The provider's upstream entries by id (unknown keys dropped, local state not applied).
    entries: BTreeMap<i64, Map<String, Value>>,
    /// Credentials omp disabled during the job: (type, cause, when).
    disabled: BTreeMap<i64, (Value, String, u64)>,
    /// Blocks omp set during the job, by credential.
    blocks: BTreeMap<i64, Vec<Value>>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl View {
    /// The entries omp may see, each with upstream's and the job's blocks.
    fn visible(&self) -> BTreeMap<i64, Value> {
        self.entries
            .iter()
            .filter(|(id, _)| !self.disabled.contains_key(id))
            .map(|(id, entry)| {
                let mut entry = entry.clone();
                if let Some(local) = self.blocks.get(id) {
                    let same = |a: &Value, b: &Value| {
                        a["providerKey"] == b["providerKey"] && a["blockScope"] == b["blockScope"]
                    };
                    let mut blocks: Vec<Value> = entry
                        .get("blocks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|b| !local.iter().any(|l| same(l, b)))
                        .cloned()
                        .collect();
                    blocks.extend(local.iter().cloned());
                    if !blocks.is_empty() {
                        entry.insert("blocks".into(), Value::Array(blocks));
                    }
                }
                (*id, Value::Object(entry))
            })
            .collect()
    }

    fn head(&self) -> Map<String, Value> {
        let mut head = Map::new();
        head.insert("generation".into(), json!(self.generation));
        head.insert("generatedAt".into(), self.generated_at.clone());
        head.insert("serverNowMs".into(), json!(now_ms()));
        head.insert("refresher".into(), self.refresher.clone());
        head
    }

    fn snapshot(&self) -> Value {
        let mut body = self.head();
        body.insert(
            "credentials".into(),
            Value::Array(self.visible().into_values().collect()),
        );
        Value::Object(body)
    }

    /// An upstream entry of `provider`, with only the keys omp accepts; `None` for another
    /// provider's or a malformed one.
    fn admit(provider: &str, entry: &Value) -> Option<(i64, Map<String, Value>)> {
        let object = entry.as_object()?;
        if object.get("provider")?.as_str()? != provider {
            return None;
        }
        let id = object.get("id")?.as_i64()?;
        let credential = object.get("credential")?.as_object()?;
        // omp runs an API key that starts with `!` as a shell command: never hand one over.
        if credential
            .get("key")
            .and_then(Value::as_str)
            .is_some_and(|key| key.starts_with('!'))
        {
            return None;
        }
        let kept = object
            .iter()
            .filter(|(key, _)| ENTRY_KEYS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        Some((id, kept))
    }
}

/// The refresher schedule omp requires when upstream sends none it would accept.
fn default_refresher() -> Value {
    json!({"enabled": false, "intervalMs": 60000, "skewMs": 0, "nextSweepInMs": 60000})
}

impl Proxy {
    /// A proxy for `provider`'s credentials, guarded by `bearer`, starting from `snapshot`.
    pub fn new(
        provider: String,
        bearer: String,
        upstream: Upstream,
        snapshot: &Value,
    ) -> Arc<Self> {
        let (changed, _) = watch::channel(0);
        let proxy = Arc::new(Proxy {
            provider,
            bearer,
            upstream,
            view: Mutex::new(View::default()),
            changed,
            last_refresh: tokio::sync::Mutex::new(None),
            reached: AtomicBool::new(false),
        });
        proxy.apply(snapshot);
        proxy
    }

    /// Whether the seat has made an authorized request.
    pub fn was_reached(&self) -> bool {
        self.reached.load(Ordering::Relaxed)
    }

    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    fn view(&self) -> MutexGuard<'_, View> {
        // A poisoned lock only means a panic elsewhere; the view itself is always whole.
        self.view.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes in an upstream snapshot; the generation moves only when omp's view changes.
    pub fn apply(&self, snapshot: &Value) {
        let entries: BTreeMap<i64, Map<String, Value>> = snapshot["credentials"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| View::admit(&self.provider, entry))
            .collect();
        let refresher = match &snapshot["refresher"] {
            Value::Object(r) if r.len() == 4 => Value::Object(r.clone()),
            _ => default_refresher(),
        };
        let mut view = self.view();
        view.generated_at = snapshot["generatedAt"]
            .as_f64()
            .map_or_else(|| json!(now_ms()), |_| snapshot["generatedAt"].clone());
        view.refresher = refresher;
        if view.generation == 0 || view.entries != entries {
            view.entries = entries;
            self.bump(&mut view);
        }
    }

    fn bump(&self, view: &mut View) {
        view.generation += 1;
        self.changed.send_replace(view.generation);
    }

    /// Answers one request from the seat.
    pub async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let method = request.method().clone();
        let path = request.uri().path().to_string();
        if method == Method::GET && path == "/v1/healthz" {
            return http::json(StatusCode::OK, &json!({"ok": true}));
        }
        if !self.authorized(request.headers().get(AUTHORIZATION)) {
            return error(StatusCode::UNAUTHORIZED, "unauthorized");
        }
        self.reached.store(true, Ordering::Relaxed);
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (&method, segments.as_slice()) {
            (&Method::GET, ["v1", "snapshot"]) => self.snapshot(&request).await,
            (&Method::GET, ["v1", "snapshot", "stream"]) => self.stream(),
            (&Method::POST, ["v1", "credential"]) => error(
                StatusCode::FORBIDDEN,
                "credential upload is not allowed through a job's broker",
            ),
            (_, ["v1", "credential", id, action]) => match id.parse::<i64>() {
                Ok(id) => self.credential(&method, id, action, request).await,
                Err(_) => not_found(),
            },
            (&Method::POST, ["v1", "usage", "observed" | "stale"]) => ok(),
            (&Method::GET, ["v1", "usage"]) => self.emptied("reports"),
            (&Method::GET, ["v1", "usage", "history"]) => self.emptied("entries"),
            (&Method::GET, ["v1", "usage", "clients"]) => self.emptied("clients"),
            (&Method::GET, ["v1", "credentials", "disabled"]) => self.disabled(),
            _ => not_found(),
        }
    }

    /// The job bearer, compared in constant time (a timing difference must not spell it out).
    fn authorized(&self, header: Option<&HeaderValue>) -> bool {
        let Some(given) = header
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
        else {
            return false;
        };
        constant_time_eq(given.as_bytes(), self.bearer.as_bytes())
    }

    async fn snapshot(&self, request: &Request<Incoming>) -> Response<Body> {
        let known = request
            .headers()
            .get(IF_NONE_MATCH)
            .and_then(generation_tag);
        let wait = request
            .uri()
            .query()
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|pair| pair.strip_prefix("wait="))
            .and_then(|ms| ms.parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms > 0.0)
            .map(|ms| Duration::from_millis(ms as u64).min(MAX_WAIT));
        let mut changes = self.changed.subscribe();
        if let (Some(known), Some(wait)) = (known, wait) {
            if *changes.borrow_and_update() == known {
                // Held until the view moves or the wait is over; a closed channel ends it too.
                let _ = tokio::time::timeout(wait, changes.changed()).await;
            }
        }
        let view = self.view();
        if known == Some(view.generation) {
            let mut response =
                http::respond(StatusCode::NOT_MODIFIED, "application/json", http::empty());
            set_etag(&mut response, view.generation);
            return response;
        }
        let mut response = http::json(StatusCode::OK, &view.snapshot());
        set_etag(&mut response, view.generation);
        response
    }

    /// The SSE stream: the whole view first, then an `entry` or `removed` event per change.
    fn stream(self: &Arc<Self>) -> Response<Body> {
        let (sender, body) = http::channel();
        let proxy = Arc::clone(self);
        tokio::spawn(async move {
            let mut changes = proxy.changed.subscribe();
            let (first, mut shown) = {
                let view = proxy.view();
                changes.borrow_and_update();
                let mut first = view.snapshot();
                first["kind"] = json!("snapshot");
                (first, view.visible())
            };
            if !sender.send(sse("snapshot", &first)).await {
                return;
            }
            loop {
                match tokio::time::timeout(KEEPALIVE, changes.changed()).await {
                    Err(_) => {
                        if !sender.send(": keepalive\n\n").await {
                            return;
                        }
                        continue;
                    }
                    Ok(Err(_)) => return,
                    Ok(Ok(())) => {}
                }
                let (events, now) = {
                    let view = proxy.view();
                    changes.borrow_and_update();
                    let now = view.visible();
                    (deltas(&view, &shown, &now), now)
                };
                shown = now;
                for event in events {
                    if !sender.send(event).await {
                        return;
                    }
                }
            }
        });
        http::respond(StatusCode::OK, "text/event-stream", body)
    }

    async fn credential(
        &self,
        method: &Method,
        id: i64,
        action: &str,
        request: Request<Incoming>,
    ) -> Response<Body> {
        if !self.view().entries.contains_key(&id) {
            return error(
                StatusCode::NOT_FOUND,
                &format!("No credential with id={id}"),
            );
        }
        match (method, action) {
            (&Method::POST, "refresh") if self.view().disabled.contains_key(&id) => error(
                StatusCode::NOT_FOUND,
                &format!("No credential with id={id}"),
            ),
            (&Method::POST, "refresh") => self.refresh(id).await,
            (&Method::POST, "disable") => {
                let cause = match read_json(request).await {
                    Some(body) => body["cause"].as_str().unwrap_or("disabled").to_string(),
                    None => return error(StatusCode::BAD_REQUEST, "invalid body"),
                };
                let mut view = self.view();
                let kind = view.entries.get(&id).map_or(Value::Null, |e| {
                    e.get("credential")
                        .map_or(Value::Null, |c| c["type"].clone())
                });
                view.disabled.insert(id, (kind, cause, now_ms()));
                self.bump(&mut view);
                ok()
            }
            (&Method::POST, "block") => {
                let Some(block) = read_json(request).await.filter(is_block) else {
                    return error(StatusCode::BAD_REQUEST, "invalid block");
                };
                let mut view = self.view();
                let blocks = view.blocks.entry(id).or_default();
                blocks.retain(|b| {
                    b["providerKey"] != block["providerKey"]
                        || b["blockScope"] != block["blockScope"]
                });
                if blocks.len() >= MAX_LOCAL_BLOCKS {
                    blocks.remove(0);
                }
                blocks.push(block);
                self.bump(&mut view);
                ok()
            }
            (&Method::DELETE, "blocks") => {
                let mut view = self.view();
                if view.blocks.remove(&id).is_some() {
                    self.bump(&mut view);
                }
                ok()
            }
            _ => not_found(),
        }
    }

    /// A refresh of an allowed credential, at most one upstream per [`REFRESH_INTERVAL`]: a
    /// refresh rotates shared state (an OAuth token at the provider), so concurrent and repeated
    /// ones wait for the one in flight and get its answer rather than each reaching upstream.
    async fn refresh(&self, id: i64) -> Response<Body> {
        let mut last = self.last_refresh.lock().await;
        if let Some(done) = last.as_ref() {
            if done.id == id && done.at.elapsed() < REFRESH_INTERVAL {
                return http::json(done.status, &done.answer);
            }
        }
        let (status, answer) = self.forward_refresh(id).await;
        *last = Some(Refreshed {
            id,
            at: Instant::now(),
            status,
            answer: answer.clone(),
        });
        http::json(status, &answer)
    }

    /// Forwards a refresh upstream; the answer must be that credential, of this provider, or
    /// omp gets a 502 and the view keeps the old one.
    async fn forward_refresh(&self, id: i64) -> (StatusCode, Value) {
        let failed = |status, message: &str| (status, json!({ "error": message }));
        let (status, body) = match self.upstream.refresh(id).await {
            Ok(answer) => answer,
            Err(e) => return failed(StatusCode::BAD_GATEWAY, &format!("{e:#}")),
        };
        if status != StatusCode::OK {
            return failed(status, &format!("upstream refused the refresh ({status})"));
        }
        let entry = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|answer| View::admit(&self.provider, &answer["entry"]));
        let Some((answered, fresh)) = entry.filter(|(answered, _)| *answered == id) else {
            return failed(
                StatusCode::BAD_GATEWAY,
                "upstream answered the refresh with another credential or provider",
            );
        };
        let mut view = self.view();
        if let Some(entry) = view.entries.get_mut(&answered) {
            for key in ["credential", "identityKey"] {
                if let Some(value) = fresh.get(key) {
                    entry.insert(key.into(), value.clone());
                }
            }
        }
        self.bump(&mut view);
        let mut reply = Map::new();
        for key in ["id", "provider", "credential", "identityKey"] {
            reply.insert(key.into(), fresh.get(key).cloned().unwrap_or(Value::Null));
        }
        (StatusCode::OK, json!({ "entry": reply }))
    }

    fn emptied(&self, list: &str) -> Response<Body> {
        http::json(StatusCode::OK, &json!({"generatedAt": now_ms(), list: []}))
    }

    /// The credentials omp disabled during this job (identity and cause, no key material).
    fn disabled(&self) -> Response<Body> {
        let view = self.view();
        let disabled: Vec<Value> = view
            .disabled
            .iter()
            .map(|(id, (kind, cause, at))| {
                json!({"id": id, "provider": self.provider, "type": kind, "cause": cause, "disabledAtMs": at})
            })
            .collect();
        http::json(
            StatusCode::OK,
            &json!({"generatedAt": now_ms(), "disabled": disabled}),
        )
    }
}

/// The stream events that take omp from `shown` to `now`.
fn deltas(view: &View, shown: &BTreeMap<i64, Value>, now: &BTreeMap<i64, Value>) -> Vec<String> {
    let mut events = Vec::new();
    for (id, entry) in now {
        if shown.get(id) != Some(entry) {
            let mut event = Map::new();
            event.insert("kind".into(), json!("entry"));
            event.extend(view.head().into_iter().filter(|(k, _)| k != "generatedAt"));
            event.insert("entry".into(), entry.clone());
            events.push(sse("entry", &Value::Object(event)));
        }
    }
    for id in shown.keys().filter(|id| !now.contains_key(id)) {
        let mut event = Map::new();
        event.insert("kind".into(), json!("removed"));
        event.extend(view.head().into_iter().filter(|(k, _)| k != "generatedAt"));
        event.insert("id".into(), json!(id));
        events.push(sse("removed", &Value::Object(event)));
    }
    events
}

fn sse(event: &str, body: &Value) -> String {
    format!("event: {event}\ndata: {body}\n\n")
}

fn is_block(body: &Value) -> bool {
    let Some(object) = body.as_object() else {
        return false;
    };
    let field = |name: &str| body[name].as_str().map(str::len);
    field("providerKey").is_some_and(|len| (1..=MAX_BLOCK_FIELD).contains(&len))
        && field("blockScope").is_some_and(|len| len <= MAX_BLOCK_FIELD)
        && body["blockedUntilMs"].is_number()
        && object.get("updatedAtMs").is_none_or(Value::is_number)
        && object.keys().all(|k| {
            ["providerKey", "blockScope", "blockedUntilMs", "updatedAtMs"].contains(&k.as_str())
        })
}

async fn read_json(request: Request<Incoming>) -> Option<Value> {
    let bytes = http::read_body(request.into_body(), BODY_LIMIT)
        .await
        .ok()?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Some(json!({}));
    }
    serde_json::from_slice(&bytes).ok()
}

fn set_etag(response: &mut Response<Body>, generation: u64) {
    if let Ok(value) = HeaderValue::from_str(&format!("\"{generation}\"")) {
        response.headers_mut().insert(ETAG, value);
    }
}

fn ok() -> Response<Body> {
    http::json(StatusCode::OK, &json!({"ok": true}))
}

fn error(status: StatusCode, message: &str) -> Response<Body> {
    http::json(status, &json!({ "error": message }))
}

fn not_found() -> Response<Body> {
    error(StatusCode::NOT_FOUND, "not found")
}

/// Equal bytes, in time that depends only on the lengths.
pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearers_compare_whole() {
        assert!(constant_time_eq(b"moot-abc", b"moot-abc"));
        assert!(!constant_time_eq(b"moot-abc", b"moot-abd"));
        assert!(!constant_time_eq(b"moot-ab", b"moot-abc"));
    }

    #[test]
    fn only_the_providers_entries_are_admitted_with_known_keys() {
        let entry = json!({"id": 3, "provider": "kimi-code", "credential": {"type": "api_key", "key": "k"},
                           "identityKey": null, "rotatesInMs": null, "extra": 1});
        let (id, kept) = View::admit("kimi-code", &entry).unwrap();
        assert_eq!(id, 3);
        assert!(!kept.contains_key("extra"));
        assert!(View::admit("anthropic", &entry).is_none());
        assert!(View::admit("kimi-code", &json!({"id": "3", "provider": "kimi-code"})).is_none());
        let command = json!({"id": 4, "provider": "kimi-code", "credential": {"type": "api_key", "key": "!cat /etc/passwd"}});
        assert!(View::admit("kimi-code", &command).is_none());
    }

    #[test]
    fn blocks_are_checked_for_omps_shape() {
        assert!(is_block(
            &json!({"providerKey": "k:api_key", "blockScope": "", "blockedUntilMs": 1})
        ));
        assert!(!is_block(
            &json!({"providerKey": "", "blockScope": "", "blockedUntilMs": 1})
        ));
        assert!(!is_block(
            &json!({"providerKey": "k", "blockScope": "", "blockedUntilMs": 1, "x": 1})
        ));
        assert!(!is_block(&json!([])));
        let long = "k".repeat(MAX_BLOCK_FIELD + 1);
        assert!(!is_block(
            &json!({"providerKey": long, "blockScope": "", "blockedUntilMs": 1})
        ));
        assert!(!is_block(
            &json!({"providerKey": "k", "blockScope": long, "blockedUntilMs": 1})
        ));
    }
}
