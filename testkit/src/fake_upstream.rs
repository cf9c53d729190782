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
        let acceptor = behaviour
            .tls
            .as_ref()
            .map(|(chain, key)| acceptor(chain, key));
        let state = Arc::new((behaviour, Arc::clone(&log)));
        let thread = std::thread::spawn(move || {
            let runtime = http::runtime().unwrap();
            runtime.block_on(async move {
                let handler = move |request| {
                    let state = Arc::clone(&state);
                    async move { answer(&state.0, &state.1, request).await }
                };
                match acceptor {
                    Some(acceptor) => tokio::select! {
                        _ = serve_tls(listener, acceptor, handler) => {}
                        _ = stopped => {}
                    },
                    None => tokio::select! {
                        _ = http::serve(listener, handler) => {}
                        _ = stopped => {}
                    },
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

/// A TLS acceptor for the PEM certificate chain and key.
pub fn acceptor(chain: &[u8], key: &[u8]) -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(chain)
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_slice(key).unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// [`http::serve`] behind TLS: each connection's handshake, then HTTP/1.1.
pub async fn serve_tls<H, F>(
    listener: std::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    handler: H,
) where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    while let Ok((stream, _)) = listener.accept().await {
        let acceptor = acceptor.clone();
        let handler = handler.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                return;
            };
            let service = hyper::service::service_fn(move |request| {
                let response = handler(request);
                async move { Ok::<_, std::convert::Infallible>(response.await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
        });
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
