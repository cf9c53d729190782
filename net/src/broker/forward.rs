//! The credential proxy's forwarding: no provider key in any seat.
//!
//! A seat's CLI is pointed at 127.0.0.1 with the job's random token as its key. A request that
//! carries that token is sent on to the provider with the real credential in its place; every
//! other header (the CLI's own: its version, beta flags, request ids) goes through unchanged,
//! and the request and the answer stream through frame by frame as they come, so server-sent
//! events reach the CLI at the provider's pace. The real credential lives only in this process;
//! after the job ([`Forwarder::close`]) the token is worth nothing.
//!
//! This is a mode of moot-broker, not a tool of its own: the job-scoped lifetime a credential
//! proxy needs (the command run beside the proxy, signals passed on, everything gone when the
//! command ends, a guard should moot-broker die) is moot-broker's already, and the omp seat is
//! the same idea for one provider's auth broker.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONNECTION};
use hyper::{Method, Request, Response, StatusCode, Uri};
use serde_json::json;

use super::proxy::constant_time_eq;
use crate::http::{self, Body};

/// The headers a client sends its key in. The job token arrives in one of them; none is passed
/// on, and the real credential takes their place.
const KEY_HEADERS: [&str; 5] = [
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "proxy-authorization",
];

/// Headers of one connection, not of the message (RFC 9110, 7.6.1), never passed on; `host`
/// is the proxy's own and is set again from the provider's URL.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
];

/// The largest request body passed on. A provider's own limit is lower (Anthropic's Messages
/// take 32 MB); past this the request is cut off rather than streamed without end.
const REQUEST_BODY_LIMIT: usize = 64 << 20;

/// How the provider wants its credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scheme {
    /// In the header the CLI sent the job token in (`Authorization: Bearer`, `x-api-key`,
    /// `api-key`, `x-goog-api-key`): a CLI already speaks its provider's way.
    Auto,
    /// `Authorization: Bearer KEY`: OpenAI's APIs and most compatible ones, Kimi, OAuth tokens.
    Bearer,
    /// `x-api-key: KEY`: Anthropic's Messages API.
    XApiKey,
}

impl Scheme {
    /// The header that carries `secret`; refused when no HTTP header can carry it (a line
    /// break, a control byte).
    pub fn header(self, secret: &str) -> anyhow::Result<(HeaderName, HeaderValue)> {
        self.header_for(secret, AUTHORIZATION.as_str())
    }

    /// The header that carries `secret` when the job token came in `came_in` (one of
    /// [`KEY_HEADERS`]).
    fn header_for(self, secret: &str, came_in: &str) -> anyhow::Result<(HeaderName, HeaderValue)> {
        let bearer = || (AUTHORIZATION, format!("Bearer {secret}"));
        let (name, value) = match self {
            Scheme::Bearer => bearer(),
            Scheme::XApiKey => (HeaderName::from_static("x-api-key"), secret.to_string()),
            Scheme::Auto => match came_in {
                "authorization" | "proxy-authorization" => bearer(),
                other => (
                    HeaderName::from_bytes(other.as_bytes())?,
                    secret.to_string(),
                ),
            },
        };
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| anyhow!("the credential has a byte no HTTP header may carry"))?;
        value.set_sensitive(true);
        Ok((name, value))
    }
}

/// The proxy's side of one job: the provider, the job's token, the real credential.
pub struct Forwarder {
    upstream: Uri,
    token: String,
    scheme: Scheme,
    secret: String,
    client: http::Client,
    closed: AtomicBool,
}

impl Forwarder {
    /// A forwarder to `upstream` (an https:// URL, or http:// on a loopback address; its path is
    /// the prefix of every forwarded path) that accepts `token` and sends `secret` as `scheme`.
    pub fn new(
        upstream: &str,
        token: String,
        scheme: Scheme,
        secret: &str,
        client: http::Client,
    ) -> anyhow::Result<Arc<Self>> {
        let checked = super::refuse::upstream("--forward", upstream)?;
        let upstream: Uri = checked
            .base
            .parse()
            .with_context(|| format!("the provider URL ({upstream})"))?;
        Ok(Arc::new(Forwarder {
            upstream,
            token,
            scheme,
            secret: {
                for came_in in KEY_HEADERS {
                    scheme.header_for(secret, came_in)?;
                }
                secret.to_string()
            },
            client,
            closed: AtomicBool::new(false),
        }))
    }

    /// The job has ended: from now on every request is refused, whatever token it carries.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Answers one request of the seat's CLI: refused without the job's token, else the
    /// provider's answer, streamed.
    pub async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let came_in = match self.token_header(request.headers()) {
            Some(name) if !self.closed.load(Ordering::SeqCst) => name,
            _ => {
                return error(
                    StatusCode::UNAUTHORIZED,
                    "moot-broker: this proxy takes only the running job's token",
                )
            }
        };
        // TRACE would have the provider (or a gateway before it) echo the request, the real key
        // included; CONNECT asks for a tunnel. No model API uses either.
        if [Method::TRACE, Method::CONNECT].contains(request.method()) {
            return error(
                StatusCode::METHOD_NOT_ALLOWED,
                &format!("moot-broker: {} is not forwarded", request.method()),
            );
        }
        // A `.` or `..` segment would leave the provider's base path once the provider (or a
        // gateway) normalizes it, with the key: the key is for the base URL and below only. So
        // would an encoded `/` or a backslash, which a gateway may decode or read as `/` first.
        if has_dot_segment(request.uri().path()) || has_hidden_separator(request.uri().path()) {
            return error(
                StatusCode::BAD_REQUEST,
                "moot-broker: a path with a '.' or '..' segment, an encoded '/' or a '\\' is not \
                 forwarded",
            );
        }
        match self.forward(request, came_in).await {
            Ok(response) => response,
            Err(e) => error(
                StatusCode::BAD_GATEWAY,
                &format!("moot-broker: the provider: {e:#}"),
            ),
        }
    }

    /// The key header that holds the job's token (bare, or after `Bearer `), if one does.
    fn token_header(&self, headers: &HeaderMap) -> Option<&'static str> {
        KEY_HEADERS.into_iter().find(|name| {
            headers.get_all(*name).iter().any(|value| {
                let value = value.as_bytes();
                let key = match value.get(..7) {
                    Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => &value[7..],
                    _ => value,
                };
                constant_time_eq(key, self.token.as_bytes())
            })
        })
    }

    async fn forward(
        &self,
        request: Request<Incoming>,
        came_in: &str,
    ) -> anyhow::Result<Response<Body>> {
        let (parts, body) = request.into_parts();
        let mut outgoing = Request::builder()
            .method(parts.method)
            .uri(self.target(&parts.uri)?);
        let headers = outgoing
            .headers_mut()
            .ok_or_else(|| anyhow!("building the request"))?;
        copy_end_to_end(&parts.headers, headers, &KEY_HEADERS);
        let (name, mut value) = self.scheme.header_for(&self.secret, came_in)?;
        value.set_sensitive(true);
        headers.insert(name, value);
        let body = Limited::new(body, REQUEST_BODY_LIMIT)
            .map_err(io::Error::other)
            .boxed();
        let outgoing = outgoing.body(body).context("building the request")?;
        let response = self.client.request(outgoing).await?;
        let (parts, body) = response.into_parts();
        let mut answer = Response::new(body.map_err(io::Error::other).boxed());
        *answer.status_mut() = parts.status;
        copy_end_to_end(&parts.headers, answer.headers_mut(), &[]);
        Ok(answer)
    }

    /// The provider's URL for a request to the proxy: the provider's base path, then the
    /// request's path and query.
    fn target(&self, asked: &Uri) -> anyhow::Result<Uri> {
        let path = asked.path_and_query().map_or("/", |p| p.as_str());
        if !path.starts_with('/') {
            bail!("a request target that is not a path ({asked})");
        }
        let base = self.upstream.path().trim_end_matches('/');
        Uri::builder()
            .scheme(self.upstream.scheme_str().unwrap_or("https"))
            .authority(
                self.upstream
                    .authority()
                    .map_or("", |a| a.as_str())
                    .to_string(),
            )
            .path_and_query(format!("{base}{path}"))
            .build()
            .context("the provider URL of a request")
    }
}

/// Whether `path` hides a separator a server may decode before it normalizes: `%2f`, `%5c`, or a
/// backslash.
fn has_hidden_separator(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.contains("%2f") || lower.contains("%5c") || path.contains('\\')
}

/// Whether `path` has a `.` or `..` segment, plain or percent-encoded.
fn has_dot_segment(path: &str) -> bool {
    path.split('/').any(|segment| {
        let decoded = segment.to_ascii_lowercase().replace("%2e", ".");
        decoded == "." || decoded == ".."
    })
}

/// Copies the headers of the message, leaving out those of the connection (the hop-by-hop
/// ones and any `Connection` names) and `dropped`.
fn copy_end_to_end(from: &HeaderMap, to: &mut HeaderMap, dropped: &[&str]) {
    let named: Vec<String> = from
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    for (name, value) in from {
        let name_str = name.as_str();
        if HOP_BY_HOP.contains(&name_str)
            || dropped.contains(&name_str)
            || named.iter().any(|n| n == name_str)
        {
            continue;
        }
        to.append(name.clone(), value.clone());
    }
}

/// An error in the shape both OpenAI's and Anthropic's clients read (`error.message`), so the
/// CLI shows it as the provider's.
fn error(status: StatusCode, message: &str) -> Response<Body> {
    http::json(
        status,
        &json!({"type": "error", "error": {"type": "moot_proxy_error", "message": message}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forwarder(upstream: &str) -> Arc<Forwarder> {
        let client = http::client(None).unwrap();
        Forwarder::new(
            upstream,
            "moot-job".into(),
            Scheme::Bearer,
            "sk-real",
            client,
        )
        .unwrap()
    }

    #[test]
    fn a_request_goes_below_the_providers_base_path() {
        let below_v1 = forwarder("https://api.example.com/v1/");
        let target = |asked: &str| below_v1.target(&asked.parse().unwrap()).unwrap();
        assert_eq!(
            target("/chat/completions?x=1"),
            "https://api.example.com/v1/chat/completions?x=1"
        );
        let root = forwarder("https://api.example.com");
        assert_eq!(
            root.target(&"/v1/messages".parse().unwrap()).unwrap(),
            "https://api.example.com/v1/messages"
        );
    }

    #[test]
    fn the_token_is_found_in_any_key_header_and_only_whole() {
        let forwarder = forwarder("https://api.example.com");
        let with = |name: &'static str, value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(value).unwrap());
            forwarder.token_header(&headers).is_some()
        };
        assert!(with("authorization", "Bearer moot-job"));
        assert!(with("authorization", "bearer moot-job"));
        assert!(with("x-api-key", "moot-job"));
        assert!(with("api-key", "moot-job"));
        assert!(!with("authorization", "Bearer moot-jo"));
        assert!(!with("authorization", "Bearer moot-job2"));
        assert!(!with("x-other", "moot-job"));
        assert!(forwarder.token_header(&HeaderMap::new()).is_none());
    }

    #[test]
    fn dot_segments_are_found_however_spelled() {
        for path in [
            "/v1/../admin",
            "/..",
            "/./x",
            "/a/%2e%2E/b",
            "/%2E/x",
            "/a/.%2e",
        ] {
            assert!(has_dot_segment(path), "{path}");
        }
        for path in ["/v1/messages", "/v1/a.b", "/...", "/v1/.well-known", "/"] {
            assert!(!has_dot_segment(path), "{path}");
            assert!(!has_hidden_separator(path), "{path}");
        }
        for path in [
            "/v1/..%2fadmin",
            "/v1/..%2Fadmin",
            "/v1/a%5cb",
            "/v1/a\\..\\b",
        ] {
            assert!(has_hidden_separator(path), "{path}");
        }
    }

    #[test]
    fn connection_headers_and_keys_stay_behind() {
        let mut from = HeaderMap::new();
        from.insert("connection", HeaderValue::from_static("close, x-hop"));
        from.insert("x-hop", HeaderValue::from_static("1"));
        from.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        from.insert("host", HeaderValue::from_static("127.0.0.1:9"));
        from.insert("x-api-key", HeaderValue::from_static("moot-job"));
        from.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
        from.append("x-multi", HeaderValue::from_static("a"));
        from.append("x-multi", HeaderValue::from_static("b"));
        let mut to = HeaderMap::new();
        copy_end_to_end(&from, &mut to, &KEY_HEADERS);
        let mut names: Vec<_> = to.keys().map(|k| k.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["anthropic-version", "x-multi"]);
        assert_eq!(to.get_all("x-multi").iter().count(), 2);
    }

    #[test]
    fn a_provider_url_that_could_leak_the_key_is_refused() {
        let client = || http::client(None).unwrap();
        for url in [
            "http://api.example.com",
            "ftp://api.example.com",
            "https://api.example.com/v1?key=x",
        ] {
            assert!(
                Forwarder::new(url, "t".into(), Scheme::Bearer, "k", client()).is_err(),
                "{url}"
            );
        }
        assert!(Forwarder::new(
            "https://api.example.com",
            "t".into(),
            Scheme::Bearer,
            "k\nInjected: 1",
            client()
        )
        .is_err());
    }
}
