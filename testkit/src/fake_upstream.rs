//! A fake shared broker on 127.0.0.1 for moot-broker's tests (a dev-dependency of its tests): omp's wire
//! shapes, a log of every request it got (with the bearer it carried), and two behaviours a
//! real broker has: a proper one (long-poll held, `304`) and an old or naive one (no stream
//! route, `wait` ignored, `200` at once), against which the proxy must pace itself.

// Test support: a failed expectation here is a failed test, so panicking is the point.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, ETAG, IF_NONE_MATCH};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use moot_net::http::{self, Body};

/// One request the fake upstream saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub authorization: Option<String>,
    pub at: Instant,
}

/// How the fake upstream behaves.
#[derive(Clone)]
pub struct Behaviour {
    pub token: String,
    /// Snapshot entries (omp's shape).
    pub credentials: Vec<Value>,
    /// No stream route and `wait` ignored: every snapshot request answered 200 at once.
    pub naive: bool,
    /// Answer refreshes as this provider instead of the credential's own.
    pub refresh_as: Option<String>,
    /// Serve https with this certificate chain and key (PEM) instead of http.
    pub tls: Option<(Vec<u8>, Vec<u8>)>,
}

/// An entry of `provider` with an API key.
pub fn api_key_entry(id: i64, provider: &str, key: &str) -> Value {
    json!({"id": id, "provider": provider, "credential": {"type": "api_key", "key": key},
           "identityKey": null, "rotatesInMs": null})
}

/// A running fake upstream; stops when dropped.
pub struct FakeUpstream {
    pub origin: String,
    log: Arc<Mutex<Vec<Seen>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeUpstream {
    /// Starts on a fresh loopback port, on its own thread.
    pub fn start(behaviour: Behaviour) -> Self {
        let listener = http::bind_loopback().unwrap();
        let scheme = if behaviour.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let origin = format!("{scheme}://{}", listener.local_addr().unwrap());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let tls = behaviour
            .tls
            .as_ref()
            .map(|(chain, key)| http::Tls::from_pem(chain, key).unwrap());
        let state = Arc::new((behaviour, Arc::clone(&log)));
        let thread = std::thread::spawn(move || {
            let runtime = http::runtime().unwrap();
            runtime.block_on(async move {
                let handler = move |request| {
                    let state = Arc::clone(&state);
                    async move { answer(&state.0, &state.1, request).await }
                };
                tokio::select! {
                    _ = http::serve_with(listener, tls, handler) => {}
                    _ = stopped => {}
                }
            });
        });
        FakeUpstream {
            origin,
            log,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for FakeUpstream {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

const GENERATION: u64 = 7;

async fn answer(
    behaviour: &Behaviour,
    log: &Mutex<Vec<Seen>>,
    request: Request<Incoming>,
) -> Response<Body> {
    let authorization = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string);
    let target = request
        .uri()
        .path_and_query()
        .map_or_else(String::new, |p| p.to_string());
    log.lock().unwrap().push(Seen {
        method: request.method().to_string(),
        target: target.clone(),
        authorization: authorization.clone(),
        at: Instant::now(),
    });
    let path = request.uri().path().to_string();
    if path == "/v1/healthz" {
        return http::json(StatusCode::OK, &json!({"ok": true}));
    }
    if authorization.as_deref() != Some(&format!("Bearer {}", behaviour.token)) {
        return http::json(StatusCode::UNAUTHORIZED, &json!({"error": "unauthorized"}));
    }
    if path == "/v1/snapshot/stream" {
        return http::json(StatusCode::NOT_FOUND, &json!({"error": "not found"}));
    }
    if path == "/v1/snapshot" {
        let current = request
            .headers()
            .get(IF_NONE_MATCH)
            .and_then(moot_net::broker::upstream::generation_tag)
            == Some(GENERATION);
        if current && !behaviour.naive {
            let wait = target
                .split_once("wait=")
                .and_then(|(_, ms)| ms.parse::<u64>().ok())
                .unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(wait.min(30_000))).await;
            let mut response =
                http::respond(StatusCode::NOT_MODIFIED, "application/json", http::empty());
            response
                .headers_mut()
                .insert(ETAG, format!("\"{GENERATION}\"").parse().unwrap());
            return response;
        }
        let mut response = http::json(
            StatusCode::OK,
            &json!({"generation": GENERATION, "generatedAt": 1, "serverNowMs": 1,
                    "refresher": {"enabled": true, "intervalMs": 60000, "skewMs": 0, "nextSweepInMs": 1000},
                    "credentials": behaviour.credentials}),
        );
        response
            .headers_mut()
            .insert(ETAG, format!("\"{GENERATION}\"").parse().unwrap());
        return response;
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if let (&Method::POST, ["v1", "credential", id, "refresh"]) =
        (request.method(), segments.as_slice())
    {
        let found = behaviour
            .credentials
            .iter()
            .find(|e| e["id"].as_i64().is_some_and(|n| n.to_string() == *id));
        return match found {
            Some(entry) => {
                let provider = behaviour
                    .refresh_as
                    .clone()
                    .map_or_else(|| entry["provider"].clone(), Value::from);
                http::json(
                    StatusCode::OK,
                    &json!({"entry": {"id": entry["id"], "provider": provider,
                            "credential": entry["credential"], "identityKey": null}}),
                )
            }
            None => http::json(
                StatusCode::NOT_FOUND,
                &json!({"error": format!("No credential with id={id}")}),
            ),
        };
    }
    // Any write that reached this far is logged above; the tests assert none does.
    http::json(StatusCode::OK, &json!({"ok": true}))
}

/// A self-signed certificate for 127.0.0.1 and `provider.test` (a name only a test's egress
/// proxy resolves) (PEM chain, PEM key; the chain is its own CA,
/// `cert.pem` in `dir`), made by openssl(1); `None` after a loud skip when there is no openssl.
pub fn self_signed(dir: &std::path::Path, test: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
        ])
        .args([
            "-subj",
            "/CN=moot-test",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:provider.test",
        ])
        .args(["-addext", "basicConstraints=critical,CA:FALSE", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    match made {
        Ok(out) if out.status.success() => {
            Some((std::fs::read(&cert).unwrap(), std::fs::read(&key).unwrap()))
        }
        other => {
            crate::skip(test, &format!("openssl: {other:?}"));
            None
        }
    }
}
