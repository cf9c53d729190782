//! The one HTTP stack moot speaks, for moot-doctor's fake model and moot-broker's proxy.
//!
//! hyper (HTTP/1.1 only) on a single-threaded tokio runtime, with rustls on the ring backend for
//! an https upstream. hyper parses and frames HTTP for most of the Rust ecosystem; it flushes each
//! body frame as it is produced, which server-sent events and long-polls need. ring
//! builds with a C compiler alone (no cmake, no OpenSSL headers), and the trust roots are the
//! system's, so a corporate CA works as it does for every other tool on the machine.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full, Limited};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{mpsc, Semaphore};

use crate::egress;

/// A response or request body: whole, empty or streamed.
pub type Body = BoxBody<Bytes, io::Error>;

/// A client for an http or https origin, verifying TLS against the system's trust roots.
pub type Client =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<egress::Connector>, Body>;

/// A runtime on the calling thread: every connection is a task on it, so a tool stays one thread.
pub fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Binds 127.0.0.1 on a port the kernel picks: never another address, never a fixed port.
pub fn bind_loopback() -> io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// How many connections [`serve`] holds at once; past it, new ones wait in the listen backlog.
const MAX_CONNECTIONS: usize = 256;
/// How long a client has to send a request's headers (hyper's default once a timer is set is
/// 30 s; a local client needs far less).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a connection buffers of a request's head: omp's and the CLIs' are a few KiB.
const MAX_HEAD: usize = 64 * 1024;

/// Serves HTTP/1.1 on `listener` until the task is dropped, one task per connection.
///
/// Must run inside a tokio runtime ([`runtime`]). A connection that fails (a client that hangs up
/// mid-request, a handler that aborts its body) ends only that connection. Any local process can
/// connect, so a connection's head is bounded in size and time, and the connections in number:
/// slow or idle clients cannot pin memory without limit.
pub async fn serve<H, F>(listener: std::net::TcpListener, handler: H) -> io::Result<()>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    serve_with_header_timeout(listener, None, handler, HEADER_TIMEOUT).await
}

/// [`serve`], behind `tls` when given: each connection's handshake (bounded in time as a head
/// is), then HTTP/1.1.
pub async fn serve_with<H, F>(
    listener: std::net::TcpListener,
    tls: Option<Tls>,
    handler: H,
) -> io::Result<()>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    serve_with_header_timeout(listener, tls, handler, HEADER_TIMEOUT).await
}

/// A server's certificate chain and key, for [`serve_with`].
#[derive(Clone)]
pub struct Tls(tokio_rustls::TlsAcceptor);

impl Tls {
    /// The PEM certificate chain in `chain` (leaf first) and the PEM private key in `key`.
    pub fn from_pem(chain: &[u8], key: &[u8]) -> anyhow::Result<Tls> {
        use anyhow::Context as _;
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let chain = CertificateDer::pem_slice_iter(chain)
            .collect::<Result<Vec<_>, _>>()
            .context("not a PEM certificate chain")?;
        if chain.is_empty() {
            anyhow::bail!("no PEM certificate in the chain");
        }
        let key = PrivateKeyDer::from_pem_slice(key).context("not a PEM private key")?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .context("configuring TLS")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("a certificate and key rustls refuses (do they match?)")?;
        Ok(Tls(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
    }

    /// [`Tls::from_pem`] of the files `chain` and `key`.
    pub fn from_pem_files(chain: &std::path::Path, key: &std::path::Path) -> anyhow::Result<Tls> {
        use anyhow::Context as _;
        let read = |path: &std::path::Path| {
            std::fs::read(path).with_context(|| format!("reading {}", path.display()))
        };
        Tls::from_pem(&read(chain)?, &read(key)?)
    }
}

/// [`serve`] with a header timeout of its own (the test of the timeout waits one second, not ten),
/// behind `tls` when given.
async fn serve_with_header_timeout<H, F>(
    listener: std::net::TcpListener,
    tls: Option<Tls>,
    handler: H,
    header_timeout: Duration,
) -> io::Result<()>
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return Ok(());
        };
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors or a connection reset before accept: keep serving the rest.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // Answers and streamed events go out as they are written (no Nagle delay).
        let _ = stream.set_nodelay(true);
        let handler = handler.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => serve_connection(stream, handler, header_timeout).await,
                Some(Tls(acceptor)) => {
                    let handshake = tokio::time::timeout(header_timeout, acceptor.accept(stream));
                    if let Ok(Ok(stream)) = handshake.await {
                        serve_connection(stream, handler, header_timeout).await;
                    }
                }
            }
            drop(slot);
        });
    }
}

/// Serves HTTP/1.1 on one connection until it ends.
async fn serve_connection<S, H, F>(stream: S, handler: H, header_timeout: Duration)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
    F: Future<Output = Response<Body>> + Send + 'static,
{
    let service = service_fn(move |request| {
        let response = handler(request);
        async move { Ok::<_, Infallible>(response.await) }
    });
    // Errors here are the peer's (a reset, a head too slow or too big) or a deliberately
    // aborted body.
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEAD)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// A body of `bytes`, sent whole with a Content-Length.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

/// A body with nothing in it.
pub fn empty() -> Body {
    Empty::new()
        .map_err(|never: Infallible| match never {})
        .boxed()
}

/// A JSON response with `status`.
pub fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    respond(status, "application/json", full(value.to_string()))
}

/// A response with `status`, a Content-Type and `body`.
pub fn respond(status: StatusCode, content_type: &str, body: Body) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

/// Reads a whole body, refusing one over `limit` bytes (a peer cannot make us buffer without end).
pub async fn read_body<B>(body: B, limit: usize) -> io::Result<Bytes>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    Limited::new(body, limit)
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error.to_string()))
}

/// The sending half of a [`channel`] body.
pub struct BodySender {
    frames: mpsc::Sender<Bytes>,
}

impl BodySender {
    /// Sends `bytes` as one frame, flushed to the peer. False once the peer has gone.
    pub async fn send(&self, bytes: impl Into<Bytes>) -> bool {
        self.frames.send(bytes.into()).await.is_ok()
    }
}

/// A streamed body and its sender; the body ends cleanly when the sender is dropped.
pub fn channel() -> (BodySender, Body) {
    let (frames, receiver) = mpsc::channel(16);
    (BodySender { frames }, ChannelBody { receiver }.boxed())
}

struct ChannelBody {
    receiver: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        self.receiver
            .poll_recv(cx)
            .map(|next| next.map(|bytes| Ok(Frame::data(bytes))))
    }
}

/// An http/https client using the system's trust roots, plus the PEM certificates in `extra_ca`
/// (a private CA, or a test's self-signed upstream), through the proxy the environment names
/// ([`egress`]).
pub fn client(extra_ca: Option<&std::path::Path>) -> anyhow::Result<Client> {
    use anyhow::Context as _;
    let mut roots = rustls::RootCertStore::empty();
    // A store that has no readable certificate is not fatal here: an http upstream needs none,
    // and an https one then fails its handshake with a clear error.
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if let Some(path) = extra_ca {
        let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&pem) {
            let cert: rustls::pki_types::CertificateDer<'static> =
                cert.with_context(|| format!("{}: not a PEM certificate", path.display()))?;
            roots
                .add(cert)
                .with_context(|| format!("{}: a certificate rustls refuses", path.display()))?;
        }
    }
    let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .context("configuring TLS")?
    .with_root_certificates(roots)
    .with_no_client_auth();
    // No Nagle delay: a request's head and a streamed body's first frame go out at once, and a
    // server-sent event is not held back waiting for the previous one's acknowledgement.
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(egress::Connector::from_env(tcp));
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serves one handler on a fresh loopback port and runs `client_side` against its origin.
    fn with_server<H, F, T>(handler: H, client_side: impl FnOnce(String) -> T)
    where
        H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
        F: Future<Output = Response<Body>> + Send + 'static,
        T: Future<Output = ()>,
    {
        with_server_timing_out(HEADER_TIMEOUT, handler, client_side)
    }

    /// The header timeout of the servers [`raw_answer`] talks to.
    const SHORT_HEADER_TIMEOUT: Duration = Duration::from_secs(1);

    fn with_server_timing_out<H, F, T>(
        header_timeout: Duration,
        handler: H,
        client_side: impl FnOnce(String) -> T,
    ) where
        H: Fn(Request<Incoming>) -> F + Clone + Send + 'static,
        F: Future<Output = Response<Body>> + Send + 'static,
        T: Future<Output = ()>,
    {
        let rt = runtime().unwrap();
        let listener = bind_loopback().unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        rt.block_on(async move {
            let server = tokio::spawn(serve_with_header_timeout(
                listener,
                None,
                handler,
                header_timeout,
            ));
            client_side(origin).await;
            server.abort();
        });
    }

    #[test]
    fn a_whole_body_and_a_streamed_one_arrive() {
        with_server(
            |request: Request<Incoming>| async move {
                if request.uri().path() == "/whole" {
                    return json(StatusCode::OK, &serde_json::json!({"ok": true}));
                }
                let (tx, body) = channel();
                tokio::spawn(async move {
                    tx.send("data: 1\n\n").await;
                    tx.send("data: 2\n\n").await;
                });
                respond(StatusCode::OK, "text/event-stream", body)
            },
            |origin| async move {
                let client = client(None).unwrap();
                let whole = client
                    .get(format!("{origin}/whole").parse().unwrap())
                    .await
                    .unwrap();
                assert_eq!(whole.status(), StatusCode::OK);
                let bytes = read_body(whole.into_body(), 1024).await.unwrap();
                assert_eq!(&bytes[..], br#"{"ok":true}"#);
                let streamed = client
                    .get(format!("{origin}/sse").parse().unwrap())
                    .await
                    .unwrap();
                let bytes = read_body(streamed.into_body(), 1024).await.unwrap();
                assert_eq!(&bytes[..], b"data: 1\n\ndata: 2\n\n");
            },
        );
    }

    /// What a raw client gets back for `head`, sent as is and never finished, from a server whose
    /// header timeout is [`SHORT_HEADER_TIMEOUT`]; and how long the server took to end the
    /// connection.
    fn raw_answer(head: Vec<u8>) -> (String, std::time::Duration) {
        use std::io::{Read, Write};
        let mut answer = (String::new(), std::time::Duration::ZERO);
        with_server_timing_out(
            SHORT_HEADER_TIMEOUT,
            |_request: Request<Incoming>| async move { json(StatusCode::OK, &serde_json::json!({})) },
            |origin| {
                let answer = &mut answer;
                async move {
                    let address = origin.trim_start_matches("http://").to_string();
                    let client = tokio::task::spawn_blocking(move || {
                        let started = std::time::Instant::now();
                        let mut stream = std::net::TcpStream::connect(address).unwrap();
                        stream
                            .set_read_timeout(Some(std::time::Duration::from_secs(20)))
                            .unwrap();
                        let _ = stream.write_all(&head);
                        let mut text = Vec::new();
                        // The server's close is an end of file; the client's own timeout an
                        // error, which no answer of the server's can look like.
                        let closed = stream.read_to_end(&mut text).is_ok();
                        let mut answer = String::from_utf8_lossy(&text).into_owned();
                        if !closed {
                            answer.push_str("<the client gave up: the server held the connection>");
                        }
                        (answer, started.elapsed())
                    });
                    *answer = client.await.unwrap();
                }
            },
        );
        answer
    }

    #[test]
    fn a_head_never_finished_is_dropped_after_the_header_timeout() {
        let (answer, took) = raw_answer(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n".to_vec());
        assert!(took >= SHORT_HEADER_TIMEOUT, "{took:?}");
        // Closed by the server, not held until the client gave up (at 20 s, twenty times the
        // timeout and short of hyper's default of 30 s, so a server that kept the default
        // fails here).
        assert!(!answer.contains("the client gave up"), "{answer:?}");
    }

    #[test]
    fn a_head_over_the_limit_is_refused_at_once() {
        let mut head = b"GET / HTTP/1.1\r\nX-Pad: ".to_vec();
        head.extend(std::iter::repeat_n(b'a', MAX_HEAD * 2));
        // A 431 is the size refusal itself: a timeout ends the connection with no answer.
        let (answer, _) = raw_answer(head);
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    }

    /// Past [`MAX_CONNECTIONS`] held connections a new one is not served (it waits in the listen
    /// backlog, it is not refused), and it is served once one of them ends.
    #[test]
    fn a_connection_past_the_cap_waits_for_a_free_slot() {
        use std::io::{ErrorKind, Read, Write};
        use std::net::TcpStream;
        with_server(
            |_request: Request<Incoming>| async move { json(StatusCode::OK, &serde_json::json!({})) },
            |origin| async move {
                let address = origin.trim_start_matches("http://").to_string();
                let client = tokio::task::spawn_blocking(move || {
                    let mut held: Vec<TcpStream> = (0..MAX_CONNECTIONS)
                        .map(|_| TcpStream::connect(&address).unwrap())
                        .collect();
                    let mut late = TcpStream::connect(&address).unwrap();
                    late.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                        .unwrap();
                    late.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
                    let waiting = late.read(&mut [0; 1]).map_err(|e| e.kind());
                    assert!(
                        matches!(waiting, Err(ErrorKind::WouldBlock | ErrorKind::TimedOut)),
                        "a connection past the cap was served: {waiting:?}"
                    );
                    drop(held.pop());
                    late.set_read_timeout(Some(HEADER_TIMEOUT * 3)).unwrap();
                    let mut answer = String::new();
                    late.read_to_string(&mut answer).unwrap();
                    answer
                });
                let answer = client.await.unwrap();
                assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            },
        );
    }

    #[test]
    fn a_body_over_the_limit_is_refused() {
        with_server(
            |_request: Request<Incoming>| async move {
                respond(StatusCode::OK, "text/plain", full(vec![b'x'; 2048]))
            },
            |origin| async move {
                let client = client(None).unwrap();
                let response = client.get(origin.parse().unwrap()).await.unwrap();
                assert!(read_body(response.into_body(), 1024).await.is_err());
            },
        );
    }
}
