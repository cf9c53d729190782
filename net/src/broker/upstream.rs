//! The proxy's side towards the shared broker: the upstream token goes only here. Two calls
//! reach upstream: a snapshot long-poll and a credential refresh. The long-poll is paced, so an
//! upstream that ignores `wait` (or answers at once with an error) is asked at most once per
//! [`MIN_POLL_INTERVAL`], never in a loop.

use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use bytes::Bytes;
use hyper::header::{HeaderValue, AUTHORIZATION, ETAG, IF_NONE_MATCH};
use hyper::{Method, Request, StatusCode};
use serde_json::Value;

use crate::http;

/// The fewest milliseconds between two upstream snapshot requests.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_secs(2);
/// How long each upstream long-poll asks to be held (the reference broker's ceiling).
const POLL_WAIT_MS: u64 = 30_000;
/// The longest pause after upstream failures.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Timeout of a call that is not a long-poll (omp's own is 10 s).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest upstream answer read.
const BODY_LIMIT: usize = 8 * 1024 * 1024;
/// The header omp sends with snapshot requests, passed on so upstream shows the same blocks.
pub const CAPABILITIES: (&str, &str) = ("omp-auth-broker-capabilities", "codex-meter-block-scopes");

/// The shared broker, with its token.
pub struct Upstream {
    base: String,
    token: String,
    client: http::Client,
}

/// A snapshot answer: new content with its generation, or unchanged.
pub enum Polled {
    Changed {
        generation: Option<u64>,
        snapshot: Value,
    },
    Unchanged,
}

impl Upstream {
    pub fn new(base: String, token: String, client: http::Client) -> Self {
        Upstream {
            base,
            token,
            client,
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        extra: &[(&str, String)],
        timeout: Duration,
    ) -> anyhow::Result<(StatusCode, Option<u64>, Bytes)> {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header(AUTHORIZATION, format!("Bearer {}", self.token));
        for (name, value) in extra {
            request = request.header(*name, value);
        }
        let request = request
            .body(http::empty())
            .context("building the request")?;
        let exchange = async {
            let response = self.client.request(request).await?;
            let status = response.status();
            let generation = response.headers().get(ETAG).and_then(generation_tag);
            let body = http::read_body(response.into_body(), BODY_LIMIT).await?;
            anyhow::Ok((status, generation, body))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| anyhow!("no answer in {} s", timeout.as_secs()))?
            .with_context(|| format!("upstream {path}"))
    }

    /// `GET /v1/snapshot`, long-polled past `known` when given.
    pub async fn snapshot(&self, known: Option<u64>) -> anyhow::Result<Polled> {
        let mut headers = vec![(CAPABILITIES.0, CAPABILITIES.1.to_string())];
        let (path, timeout) = match known {
            Some(generation) => {
                headers.push((IF_NONE_MATCH.as_str(), format!("\"{generation}\"")));
                (
                    format!("/v1/snapshot?wait={POLL_WAIT_MS}"),
                    Duration::from_millis(POLL_WAIT_MS) + CALL_TIMEOUT,
                )
            }
            None => ("/v1/snapshot".to_string(), CALL_TIMEOUT),
        };
        let (status, etag, body) = self.call(Method::GET, &path, &headers, timeout).await?;
        match status {
            StatusCode::NOT_MODIFIED => Ok(Polled::Unchanged),
            StatusCode::OK => {
                let snapshot: Value =
                    serde_json::from_slice(&body).context("upstream /v1/snapshot: not JSON")?;
                let generation = etag.or_else(|| snapshot["generation"].as_u64());
                if !snapshot["credentials"].is_array() {
                    bail!("upstream /v1/snapshot: no credentials list");
                }
                Ok(Polled::Changed {
                    generation,
                    snapshot,
                })
            }
            other => bail!("upstream /v1/snapshot answered {other}"),
        }
    }

    /// `POST /v1/credential/<id>/refresh`: the answer's status and body, unchecked.
    pub async fn refresh(&self, id: i64) -> anyhow::Result<(StatusCode, Bytes)> {
        let path = format!("/v1/credential/{id}/refresh");
        let (status, _, body) = self.call(Method::POST, &path, &[], CALL_TIMEOUT).await?;
        Ok((status, body))
    }
}

/// The generation in an ETag (`"12"` or `12`).
pub fn generation_tag(value: &HeaderValue) -> Option<u64> {
    let text = value.to_str().ok()?.trim();
    let text = text.strip_prefix("W/").unwrap_or(text);
    text.trim_matches('"').parse().ok()
}

/// Keeps the proxy's view in step with upstream for the rest of the job: long-polls, each
/// request at least [`MIN_POLL_INTERVAL`] after the previous one started, and backs off up to
/// [`MAX_BACKOFF`] while upstream fails (omp keeps the last good view meanwhile).
pub async fn follow(upstream: &Upstream, mut known: Option<u64>, apply: impl Fn(Value)) {
    let mut backoff = MIN_POLL_INTERVAL;
    loop {
        let started = tokio::time::Instant::now();
        let pause = match upstream.snapshot(known).await {
            Ok(Polled::Changed {
                generation,
                snapshot,
            }) => {
                known = generation;
                apply(snapshot);
                backoff = MIN_POLL_INTERVAL;
                MIN_POLL_INTERVAL
            }
            Ok(Polled::Unchanged) => {
                backoff = MIN_POLL_INTERVAL;
                MIN_POLL_INTERVAL
            }
            Err(_) => {
                let pause = backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                pause
            }
        };
        tokio::time::sleep_until(started + pause).await;
    }
}
