//! The job-local broker omp talks to: one provider's credentials, its own generations, and
//! every write kept local. Only a refresh of an allowed credential reaches upstream, and its
//! answer must be that credential of that provider.
//!
//! The view omp sees (view.rs) is the upstream snapshot filtered to the provider, minus the
//! credentials omp disabled during the job, with the blocks omp set during the job merged in.
//! This module routes omp's requests to it and guards them. The view's generation is the
//! proxy's own, bumped whenever the view changes, so long-polls (`wait`, `If-None-Match`, `304`)
//! and the SSE stream behave as omp expects whatever upstream does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, ETAG, IF_NONE_MATCH};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};
use tokio::sync::watch;

use super::upstream::{generation_tag, Upstream};
use super::view::{deltas, is_block, now_ms, View};
use crate::http::{self, Body};

/// The longest a snapshot long-poll is held (the reference broker's ceiling).
const MAX_WAIT: Duration = Duration::from_secs(30);
/// How often an idle stream carries a keepalive comment.
const KEEPALIVE: Duration = Duration::from_secs(15);
/// The largest request body read from omp.
const BODY_LIMIT: usize = 64 * 1024;
/// How long one upstream refresh answers every refresh of its credential. omp refreshes after a
/// model 401, once; a seat asking again within this gets the same answer.
const REFRESH_INTERVAL: Duration = Duration::from_secs(5);

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
        let mut view = self.view();
        if view.take_in(&self.provider, snapshot) {
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
                    let events = deltas(&view, &shown, &now);
                    (
                        events
                            .iter()
                            .map(|(name, body)| sse(name, body))
                            .collect::<Vec<_>>(),
                        now,
                    )
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
        if !self.view().knows(id) {
            return error(
                StatusCode::NOT_FOUND,
                &format!("No credential with id={id}"),
            );
        }
        match (method, action) {
            (&Method::POST, "refresh") if self.view().is_disabled(id) => error(
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
                view.disable(id, cause);
                self.bump(&mut view);
                ok()
            }
            (&Method::POST, "block") => {
                let Some(block) = read_json(request).await.filter(is_block) else {
                    return error(StatusCode::BAD_REQUEST, "invalid block");
                };
                let mut view = self.view();
                view.block(id, block);
                self.bump(&mut view);
                ok()
            }
            (&Method::DELETE, "blocks") => {
                let mut view = self.view();
                if view.clear_blocks(id) {
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
        view.refreshed(answered, &fresh);
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
        let disabled = self.view().disabled(&self.provider);
        http::json(
            StatusCode::OK,
            &json!({"generatedAt": now_ms(), "disabled": disabled}),
        )
    }
}

fn sse(event: &str, body: &Value) -> String {
    format!("event: {event}\ndata: {body}\n\n")
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
}
