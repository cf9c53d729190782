//! The credential proxy's forwarding against a provider served over HTTPS with its own CA, as
//! a seat's CLI drives it: the provider sees the real key and never the job's token, the CLI's
//! own headers and body arrive whole, server-sent events stream through one by one, and a
//! request without the token, or after the job, never reaches the provider.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Request, Response, StatusCode};
use moot_net::broker::forward::{Forwarder, Scheme};
use moot_net::http::{self, Body};
use moot_testkit::fake_upstream::self_signed;
use tokio::sync::Semaphore;

const REAL_KEY: &str = "sk-ant-real-provider-key-4242";
const JOB_TOKEN: &str = "moot-job-token-0123";

/// What the fake provider was sent.
#[derive(Clone)]
struct Seen {
    target: String,
    headers: HeaderMap,
    body: Bytes,
}

/// A provider on https://127.0.0.1 that records every request; `/v1/stream` answers two
/// server-sent events and sends the second only once the test has read the first.
struct Provider {
    origin: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    second_event: Arc<Semaphore>,
}

impl Provider {
    /// A temporary directory holding a self-signed certificate (`cert.pem`), and a provider
    /// serving it; `None` after a loud skip when there is no openssl.
    fn in_tempdir(test: &str) -> Option<(tempfile::TempDir, Self)> {
        let dir = tempfile::tempdir().unwrap();
        let (chain, key) = self_signed(dir.path(), test)?;
        let provider = Provider::start(&chain, &key);
        Some((dir, provider))
    }

    /// Asserts that one request reached the provider: `/v1/messages`, with the real key.
    fn got_one_message_with_the_key(&self) {
        let seen = self.seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].target, "/v1/messages");
        assert_eq!(seen[0].headers["x-api-key"], REAL_KEY);
    }

    fn start(chain: &[u8], key: &[u8]) -> Self {
        let listener = http::bind_loopback().unwrap();
        let origin = format!("https://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let second_event = Arc::new(Semaphore::new(0));
        let tls = http::Tls::from_pem(chain, key).unwrap();
        let (log, gate) = (Arc::clone(&seen), Arc::clone(&second_event));
        std::thread::spawn(move || {
            http::runtime().unwrap().block_on(http::serve_with(
                listener,
                Some(tls),
                move |request| answer(Arc::clone(&log), Arc::clone(&gate), request),
            ))
        });
        Provider {
            origin,
            seen,
            second_event,
        }
    }
}

async fn answer(
    log: Arc<Mutex<Vec<Seen>>>,
    gate: Arc<Semaphore>,
    request: Request<Incoming>,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let target = parts.uri.path_and_query().unwrap().to_string();
    let body = http::read_body(body, 1 << 20).await.unwrap();
    log.lock().unwrap().push(Seen {
        target: target.clone(),
        headers: parts.headers,
        body,
    });
    if target != "/v1/stream" {
        let mut response = http::respond(StatusCode::OK, "application/json", http::full("{}"));
        response
            .headers_mut()
            .insert("request-id", "req_1".parse().unwrap());
        return response;
    }
    let (events, body) = http::channel();
    tokio::spawn(async move {
        events.send("data: one\n\n").await;
        let released = tokio::time::timeout(Duration::from_secs(30), gate.acquire()).await;
        if released.is_ok() {
            events.send("data: two\n\n").await;
        }
    });
    http::respond(StatusCode::OK, "text/event-stream", body)
}

/// A proxy on loopback to `upstream`, trusting `ca` besides the system's roots; its URL and
/// its forwarder.
async fn proxy(upstream: &str, ca: Option<&std::path::Path>) -> (String, Arc<Forwarder>) {
    proxy_as(upstream, ca, Scheme::XApiKey).await
}

async fn proxy_as(
    upstream: &str,
    ca: Option<&std::path::Path>,
    scheme: Scheme,
) -> (String, Arc<Forwarder>) {
    let client = http::client(ca).unwrap();
    let forwarder = Forwarder::new(upstream, JOB_TOKEN.into(), scheme, REAL_KEY, client).unwrap();
    let listener = http::bind_loopback().unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let served = Arc::clone(&forwarder);
    tokio::spawn(http::serve(listener, move |request| {
        Arc::clone(&served).handle(request)
    }));
    (url, forwarder)
}

/// A POST to the proxy as the seat's CLI sends it, with `key` in `x-api-key`.
async fn post(url: &str, path: &str, key: &str) -> Response<Incoming> {
    let request = Request::post(format!("{url}{path}"))
        .header("x-api-key", key)
        .header("anthropic-version", "2023-06-01")
        .header("user-agent", "claude-cli/2.0")
        .header("content-type", "application/json")
        .body(http::full(r#"{"model":"m","stream":true}"#))
        .unwrap();
    http::client(None).unwrap().request(request).await.unwrap()
}

/// The next data frame of a streamed answer, failing the test if none comes in 30 s.
async fn next_frame(body: &mut Incoming) -> Bytes {
    tokio::time::timeout(Duration::from_secs(30), body.frame())
        .await
        .expect("an event was held back")
        .unwrap()
        .unwrap()
        .into_data()
        .unwrap()
}

#[test]
fn the_provider_sees_the_real_key_and_the_seat_only_its_token() {
    let test = "the_provider_sees_the_real_key_and_the_seat_only_its_token";
    let Some((dir, provider)) = Provider::in_tempdir(test) else {
        return;
    };
    http::runtime().unwrap().block_on(async {
        let ca = dir.path().join("cert.pem");
        let (url, forwarder) = proxy(&format!("{}/v1", provider.origin), Some(&ca)).await;

        let answered = post(&url, "/messages?beta=true", JOB_TOKEN).await;
        assert_eq!(answered.status(), StatusCode::OK);
        assert_eq!(answered.headers()["request-id"], "req_1");
        let seen = provider.seen.lock().unwrap().clone();
        let [first] = seen.as_slice() else {
            panic!("{} requests reached the provider", seen.len())
        };
        assert_eq!(first.target, "/v1/messages?beta=true");
        assert_eq!(first.headers["x-api-key"], REAL_KEY);
        assert_eq!(first.headers["anthropic-version"], "2023-06-01");
        assert_eq!(first.headers["user-agent"], "claude-cli/2.0");
        assert_eq!(&first.body[..], br#"{"model":"m","stream":true}"#);
        let everything = format!("{:?}{:?}", first.headers, first.body);
        assert!(!everything.contains(JOB_TOKEN), "{everything}");

        // Without the job's token, nothing reaches the provider and no key comes back.
        for wrong in ["", "sk-guess", "moot-job-token-012", REAL_KEY] {
            let refused = post(&url, "/messages", wrong).await;
            assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{wrong:?}");
            let body = http::read_body(refused.into_body(), 1 << 16).await.unwrap();
            assert!(!String::from_utf8_lossy(&body).contains(REAL_KEY));
        }
        assert_eq!(provider.seen.lock().unwrap().len(), 1);

        // What would echo the key back, tunnel, or leave the base path is not forwarded.
        let client = http::client(None).unwrap();
        for (method, path, status) in [
            ("TRACE", "/messages", StatusCode::METHOD_NOT_ALLOWED),
            ("CONNECT", "/messages", StatusCode::METHOD_NOT_ALLOWED),
            ("GET", "/../admin", StatusCode::BAD_REQUEST),
            ("GET", "/%2e%2e/admin", StatusCode::BAD_REQUEST),
        ] {
            let request = Request::builder()
                .method(method)
                .uri(format!("{url}{path}"))
                .header("x-api-key", JOB_TOKEN)
                .body(http::empty())
                .unwrap();
            let answered = client.request(request).await.unwrap();
            assert_eq!(answered.status(), status, "{method} {path}");
        }
        assert_eq!(provider.seen.lock().unwrap().len(), 1);

        // The events stream through as they come: the provider sends the second only after
        // the client has read the first, which a buffering proxy would never deliver.
        let streamed = post(&url, "/stream", JOB_TOKEN).await;
        assert_eq!(streamed.headers()["content-type"], "text/event-stream");
        let mut body = streamed.into_body();
        assert_eq!(next_frame(&mut body).await, "data: one\n\n");
        provider.second_event.add_permits(1);
        assert_eq!(next_frame(&mut body).await, "data: two\n\n");

        // After the job, the token is worth nothing.
        forwarder.close();
        let after = post(&url, "/messages", JOB_TOKEN).await;
        assert_eq!(after.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(provider.seen.lock().unwrap().len(), 2);
    });
}

/// `--key-header auto`: the key goes in the header the CLI sent its token in, as Bearer or bare.
#[test]
fn the_key_goes_where_the_cli_put_its_token() {
    let Some((dir, provider)) = Provider::in_tempdir("the_key_goes_where_the_cli_put_its_token")
    else {
        return;
    };
    http::runtime().unwrap().block_on(async {
        let ca = dir.path().join("cert.pem");
        let (url, _forwarder) = proxy_as(&provider.origin, Some(&ca), Scheme::Auto).await;
        assert_eq!(
            post(&url, "/v1/messages", JOB_TOKEN).await.status(),
            StatusCode::OK
        );
        let request = Request::post(format!("{url}/v1/chat/completions"))
            .header("authorization", format!("Bearer {JOB_TOKEN}"))
            .body(http::full("{}"))
            .unwrap();
        let answered = http::client(None).unwrap().request(request).await.unwrap();
        assert_eq!(answered.status(), StatusCode::OK);
    });
    let seen = provider.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].headers["x-api-key"], REAL_KEY);
    assert!(seen[0].headers.get("authorization").is_none());
    assert_eq!(
        seen[1].headers["authorization"],
        format!("Bearer {REAL_KEY}")
    );
    assert!(seen[1].headers.get("x-api-key").is_none());
}

/// A provider whose certificate the proxy was not told to trust is not sent the key.
#[test]
fn a_provider_not_trusted_gets_no_request() {
    let Some((_dir, provider)) = Provider::in_tempdir("a_provider_not_trusted_gets_no_request")
    else {
        return;
    };
    http::runtime().unwrap().block_on(async {
        let (url, _forwarder) = proxy(&provider.origin, None).await;
        let answered = post(&url, "/v1/messages", JOB_TOKEN).await;
        assert_eq!(answered.status(), StatusCode::BAD_GATEWAY);
        let body = http::read_body(answered.into_body(), 1 << 16)
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("moot-broker: the provider"), "{text}");
        assert!(!text.contains(REAL_KEY), "{text}");
    });
    assert!(provider.seen.lock().unwrap().is_empty());
}

/// `moot-broker --forward` around a command that writes its environment and the `{port}` it
/// was given into `dir`, then waits for `dir/done` (or for `dir` to be gone: a test that failed
/// leaves no process behind). The environment names a proxy on a closed
/// port, which a provider on loopback is never sent through.
fn forwarding(dir: &std::path::Path, flags: &[&str]) -> std::process::Child {
    forwarding_via(dir, flags, CLOSED_PROXY)
}

/// Asserts that `child` was refused (exit 2, one line saying `says`) before its command ran in
/// `dir`; its stderr.
fn refused(dir: &std::path::Path, mut child: std::process::Child, says: &str) -> String {
    let (status, stderr) = support::wait_output(&mut child);
    assert_eq!(status.code(), Some(2), "{says}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("moot-broker: "), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
    assert!(!dir.join("env").exists(), "the command ran: {says}");
    stderr
}

/// Lets the command under [`forwarding`] end, and waits for moot-broker's exit.
fn done(
    work: &std::path::Path,
    child: &mut std::process::Child,
) -> (std::process::ExitStatus, String) {
    std::fs::write(work.join("done"), "").unwrap();
    support::wait_output(child)
}

/// A proxy nobody listens on.
const CLOSED_PROXY: &str = "http://127.0.0.1:9";

/// [`forwarding_via`] `proxy` to `upstream`, trusting the test provider's `dir/cert.pem`, the key
/// taken from `PROVIDER_KEY` and sent in `x-api-key`; the command writes in `dir/work`.
fn forward_to(
    dir: &std::path::Path,
    upstream: &str,
    proxy: &str,
) -> (std::path::PathBuf, std::process::Child) {
    let ca = dir.join("cert.pem");
    let work = dir.join("work");
    std::fs::create_dir(&work).unwrap();
    let flags = [
        "--forward",
        upstream,
        "--upstream-ca",
        ca.to_str().unwrap(),
        "--key-env",
        "PROVIDER_KEY",
        "--key-header",
        "x-api-key",
    ];
    let child = forwarding_via(&work, &flags, proxy);
    (work, child)
}

/// [`forwarding`] with `HTTPS_PROXY` set to `proxy`, and no other proxy variable.
fn forwarding_via(dir: &std::path::Path, flags: &[&str], proxy: &str) -> std::process::Child {
    let script =
        "env > \"$0/env.tmp\" && mv \"$0/env.tmp\" \"$0/env\"; echo {port} > \"$0/port\"; \
                  while [ ! -e \"$0/done\" ] && [ -d \"$0\" ]; do sleep 0.05; done";
    moot_testkit::with_default_signals(&mut std::process::Command::new(support::BIN))
        .args(flags)
        .args(["--", "sh", "-c", script])
        .arg(dir)
        .env("PROVIDER_KEY", REAL_KEY)
        .env("PROVIDER_KEY_NOTE", "another variable")
        .env("BROKEN_KEY", "sk-line\nInjected: 1")
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy")
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .env_remove("https_proxy")
        .env("HTTPS_PROXY", proxy)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// The environment the command under [`forwarding`] wrote, once it has.
struct Written(String);

impl Written {
    fn wait(work: &std::path::Path) -> Self {
        support::wait_for("the command's run", || {
            work.join("env").exists().then_some(())
        });
        Written(std::fs::read_to_string(work.join("env")).unwrap())
    }

    /// The value of `name`, failing the test when it is not set.
    fn value(&self, name: &str) -> String {
        self.0
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {}", self.0))
            .to_string()
    }
}

/// An egress proxy on loopback, as a CI runner's: it opens a `CONNECT` tunnel for any host to
/// `target` (so `provider.test` resolves only through it) and records every request head.
struct EgressProxy {
    url: String,
    heads: Arc<Mutex<Vec<String>>>,
}

impl EgressProxy {
    fn start(target: std::net::SocketAddr) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("127.0.0.1:{}", listener.local_addr().unwrap().port());
        let heads = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&heads);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || tunnel(client, target, &log));
            }
        });
        EgressProxy { url, heads }
    }
}

/// Reads one request head from `client`, records it, answers 200 and splices `client` to
/// `target` both ways until either side closes.
fn tunnel(mut client: std::net::TcpStream, target: std::net::SocketAddr, log: &Mutex<Vec<String>>) {
    use std::io::{Read, Write};
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if client.read(&mut byte).unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    log.lock()
        .unwrap()
        .push(String::from_utf8_lossy(&head).into_owned());
    let Ok(mut upstream) = std::net::TcpStream::connect(target) else {
        return;
    };
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .unwrap();
    let (mut from_client, mut to_upstream) =
        (client.try_clone().unwrap(), upstream.try_clone().unwrap());
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut from_client, &mut to_upstream);
        let _ = to_upstream.shutdown(std::net::Shutdown::Write);
    });
    let _ = std::io::copy(&mut upstream, &mut client);
    let _ = client.shutdown(std::net::Shutdown::Write);
}

/// The built binary on a runner whose only way out is its egress proxy: the provider is reached
/// through a `CONNECT` tunnel the proxy opens (with the proxy's own credentials, and the key only
/// inside the TLS the tunnel carries), and the command is told to reach moot-broker on loopback
/// directly, whatever the proxy variables say.
#[test]
fn a_provider_is_reached_through_the_egress_proxy_the_environment_names() {
    let test = "a_provider_is_reached_through_the_egress_proxy_the_environment_names";
    let Some((dir, provider)) = Provider::in_tempdir(test) else {
        return;
    };
    let at = provider.origin.strip_prefix("https://").unwrap();
    let egress = EgressProxy::start(at.parse().unwrap());
    let proxy = format!("http://moot:s3cret@{}", egress.url);
    let (work, mut child) = forward_to(dir.path(), "https://provider.test/v1", &proxy);
    let env = Written::wait(&work);
    assert_eq!(env.value("NO_PROXY"), "127.0.0.1,localhost");
    assert_eq!(env.value("no_proxy"), "127.0.0.1,localhost");
    let token = env.value("MOOT_PROXY_TOKEN");
    http::runtime().unwrap().block_on(async {
        let answered = post(&env.value("MOOT_PROXY_URL"), "/messages", &token).await;
        assert_eq!(answered.status(), StatusCode::OK);
    });
    let heads = egress.heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0].starts_with("CONNECT provider.test:443 HTTP/1.1\r\n"),
        "{heads:?}"
    );
    assert!(
        heads[0].contains("\r\nProxy-Authorization: Basic bW9vdDpzM2NyZXQ=\r\n"),
        "{heads:?}"
    );
    assert!(!heads[0].contains(REAL_KEY), "{heads:?}");
    provider.got_one_message_with_the_key();
    let (status, stderr) = done(&work, &mut child);
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// The built binary: the command gets the proxy's URL and token and never the key, a request
/// with the token reaches the provider with the key, and the proxy is gone with the command.
#[test]
fn the_command_gets_the_proxy_and_its_token_and_never_the_key() {
    let test = "the_command_gets_the_proxy_and_its_token_and_never_the_key";
    let Some((dir, provider)) = Provider::in_tempdir(test) else {
        return;
    };
    let upstream = format!("{}/v1", provider.origin);
    let (work, mut child) = forward_to(dir.path(), &upstream, CLOSED_PROXY);
    let env = Written::wait(&work);
    let value = |name: &str| env.value(name);
    let env = env.0.as_str();
    assert!(!env.contains(REAL_KEY), "{env}");
    // Only the key's own variable gets the token, not every one its name begins.
    assert!(
        env.contains("PROVIDER_KEY_NOTE=another variable\n"),
        "{env}"
    );
    let (url, token) = (value("MOOT_PROXY_URL"), value("MOOT_PROXY_TOKEN"));
    assert_eq!(value("PROVIDER_KEY"), token);
    assert_eq!(
        value("MOOT_PROXY_UPSTREAM"),
        format!("{}/v1", provider.origin)
    );
    assert!(value("MOOT_PROXY_KEY_PRINT").starts_with(&format!("v1:{}:", REAL_KEY.len())));
    // Written after the environment, and not at once: waited for until it parses.
    let port: u16 = support::wait_for("the command's port", || {
        std::fs::read_to_string(work.join("port"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
    });
    assert_eq!(url, format!("http://127.0.0.1:{port}"));
    assert!(token.starts_with("moot-") && token.len() > 40, "{token}");
    http::runtime().unwrap().block_on(async {
        assert_eq!(
            post(&url, "/messages", &token).await.status(),
            StatusCode::OK
        );
        assert_eq!(
            post(&url, "/messages", "moot-guess").await.status(),
            StatusCode::UNAUTHORIZED
        );
    });
    provider.got_one_message_with_the_key();
    let (status, stderr) = done(&work, &mut child);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(support::port_closed(port));
}

/// `moot-broker --forward` around a command that copies its own `/proc/PID/environ` and
/// `cmdline` into `dir`: the environment it was given at exec, which `/proc` shows for the
/// whole life of moot-run in that place, and of every child moot-run forks until that child
/// execs (it still has moot-run's name and memory then). The caller's environment has the key
/// in `PROVIDER_KEY`, and `more`; the command gets `words` after its script. moot-broker's
/// status and stderr.
fn command_sees(
    dir: &std::path::Path,
    flags: &[&str],
    more: &[(&str, String)],
    words: &[&str],
) -> (std::process::ExitStatus, String) {
    let script = "cat /proc/$$/environ > \"$0/environ\" && cat /proc/$$/cmdline > \"$0/cmdline\"";
    let mut command = std::process::Command::new(support::BIN);
    moot_testkit::with_default_signals(&mut command)
        .args(flags)
        .args(["--", "sh", "-c", script])
        .arg(dir)
        .args(words)
        .env("PROVIDER_KEY", REAL_KEY)
        .envs(more.iter().map(|(name, value)| (name, value)));
    for proxy in [
        "HTTP_PROXY",
        "http_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        command.env_remove(proxy);
    }
    let mut child = command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::wait_output(&mut child)
}

/// No byte of the key below moot-broker, whether it came from a file or a variable: every
/// variable of the caller's that holds it (a CI job that exports it under a second name as
/// well, an earlier tool's `Authorization` value) reaches the command with the job token in
/// its place, as the one `--key-env` names does, and a command line holding it (which any
/// process can read) is refused. Deterministic: what `/proc` shows of the command is read by
/// the command itself, no watcher racing it.
#[test]
fn no_process_below_the_broker_holds_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("provider.key");
    std::fs::write(&key_file, format!("{REAL_KEY}\n")).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let more = [
        ("STRAY_API_KEY", REAL_KEY.to_string()),
        (
            "STRAY_HEADER",
            format!("Authorization: Bearer {REAL_KEY}; again {REAL_KEY}"),
        ),
        ("PROVIDER_KEY_NOTE", "another variable".to_string()),
    ];
    let upstream = "http://127.0.0.1:9/v1";
    for flags in [
        [
            "--forward",
            upstream,
            "--key-file",
            key_file.to_str().unwrap(),
        ],
        ["--forward", upstream, "--key-env", "PROVIDER_KEY"],
    ] {
        let work = tempfile::tempdir_in(dir.path()).unwrap();
        let (status, stderr) = command_sees(work.path(), &flags, &more, &["an argument"]);
        assert_eq!(status.code(), Some(0), "{flags:?}: {stderr}");
        let environ = std::fs::read(work.path().join("environ")).unwrap();
        let environ = String::from_utf8(environ).unwrap().replace('\0', "\n");
        assert!(!environ.contains(REAL_KEY), "{flags:?}: {environ}");
        let env = Written(environ);
        let token = env.value("MOOT_PROXY_TOKEN");
        assert_eq!(env.value("STRAY_API_KEY"), token, "{flags:?}");
        assert_eq!(
            env.value("STRAY_HEADER"),
            format!("Authorization: Bearer {token}; again {token}"),
            "{flags:?}"
        );
        assert_eq!(env.value("PROVIDER_KEY_NOTE"), "another variable");
        // With --key-file, the caller's PROVIDER_KEY is one more variable holding the key.
        assert_eq!(env.value("PROVIDER_KEY"), token, "{flags:?}");
        let cmdline = std::fs::read(work.path().join("cmdline")).unwrap();
        assert!(cmdline.ends_with(b"an argument\0"), "{cmdline:?}");
    }
    // A command line is anyone's to read (/proc/PID/cmdline): one holding the key is refused
    // before anything runs.
    let work = tempfile::tempdir_in(dir.path()).unwrap();
    let flags = ["--forward", upstream, "--key-env", "PROVIDER_KEY"];
    let word = format!("--api-key={REAL_KEY}");
    let (status, stderr) = command_sees(work.path(), &flags, &[], &[&word]);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the command line holds the provider's key"),
        "{stderr}"
    );
    assert!(!stderr.contains(REAL_KEY), "{stderr}");
    assert!(!work.path().join("environ").exists(), "the command ran");
}

/// Refused before the command runs, with one line and exit 2.
#[test]
fn a_forward_that_would_leak_or_has_no_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let loose = dir.path().join("loose.key");
    std::fs::write(&loose, REAL_KEY).unwrap();
    std::fs::set_permissions(&loose, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let loose = loose.to_str().unwrap();
    for (flags, says) in [
        (
            vec![
                "--forward",
                "http://api.example.com",
                "--key-env",
                "PROVIDER_KEY",
            ],
            "plain http is allowed only to a loopback address",
        ),
        (
            vec![
                "--forward",
                "https://api.example.com",
                "--key-env",
                "NO_SUCH_KEY",
            ],
            "--key-env NO_SUCH_KEY: the variable is not set",
        ),
        (
            vec!["--forward", "https://api.example.com"],
            "give --key-file or --key-env",
        ),
        (
            vec![
                "--forward",
                "https://api.example.com",
                "--key-env",
                "BROKEN_KEY",
            ],
            "--key-env BROKEN_KEY: the credential has a byte no HTTP header may carry",
        ),
        (
            vec![
                "--forward",
                "http://127.0.0.1:84407/v1",
                "--key-env",
                "PROVIDER_KEY",
            ],
            "has a port that is not a TCP port",
        ),
        (
            vec!["--forward", "https://api.example.com", "--key-file", loose],
            "make it owner-only",
        ),
    ] {
        refused(dir.path(), forwarding(dir.path(), &flags), says);
    }
    // A proxy moot-broker cannot speak to is refused before the job, not at every request the
    // CLI would retry, and without its credentials.
    let flags = [
        "--forward",
        "https://api.example.com",
        "--key-env",
        "PROVIDER_KEY",
    ];
    let child = forwarding_via(dir.path(), &flags, "https://moot:s3cret@127.0.0.1:9");
    let stderr = refused(
        dir.path(),
        child,
        "the proxy https://127.0.0.1:9 the environment names",
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
    // One whose password hyper-util would misread (an unencoded '@'), and one it cannot read
    // at all, which it would go around.
    let child = forwarding_via(dir.path(), &flags, "http://moot:s3@cret@127.0.0.1:9");
    let stderr = refused(dir.path(), child, "write it as %40");
    assert!(!stderr.contains("cret"), "{stderr}");
    let child = forwarding_via(dir.path(), &flags, "socks://127.0.0.1:9");
    refused(
        dir.path(),
        child,
        "HTTPS_PROXY is not a proxy URL moot-broker can read",
    );
    // The omp seat's flags do not mix with a proxy's.
    let out = std::process::Command::new(support::BIN)
        .args(["--forward", "https://api.example.com", "--model", "a/b"])
        .args(["--key-env", "PROVIDER_KEY", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let seat = std::process::Command::new(support::BIN)
        .args([
            "--forward",
            "https://api.example.com",
            "--key-env",
            "PROVIDER_KEY",
        ])
        .args(["--", "moot-sandbox", "--state", "{seat}/state"])
        .env("PROVIDER_KEY", REAL_KEY)
        .output()
        .unwrap();
    assert_eq!(seat.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&seat.stderr).contains("{seat} names the omp seat"));
}

/// As moot-run does, an INT that moot-broker inherited as ignored (nohup, a background job)
/// stays ignored and is not caught; the command ends on its own, and INT changed nothing.
#[test]
fn an_interrupt_inherited_as_ignored_stays_ignored() {
    use nix::sys::signal::{kill, signal, SigHandler, Signal};
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mut command = std::process::Command::new(support::BIN);
    moot_testkit::with_default_signals(&mut command);
    // SAFETY: only sets a signal disposition between fork and exec.
    unsafe {
        command.pre_exec(|| {
            signal(Signal::SIGINT, SigHandler::SigIgn)?;
            Ok(())
        });
    }
    let mut child = command
        .args([
            "--forward",
            "https://api.example.com",
            "--key-env",
            "PROVIDER_KEY",
        ])
        .args(["--", "sh", "-c"])
        .arg(": > \"$0/ran\"; while [ ! -e \"$0/done\" ] && [ -d \"$0\" ]; do sleep 0.05; done")
        .arg(dir.path())
        .env("PROVIDER_KEY", REAL_KEY)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::wait_for("the command's run", || {
        dir.path().join("ran").exists().then_some(())
    });
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let mask = |field: &str| {
        let line = status.lines().find_map(|l| l.strip_prefix(field)).unwrap();
        u64::from_str_radix(line.trim(), 16).unwrap()
    };
    let int = 1u64 << (Signal::SIGINT as i32 - 1);
    let term = 1u64 << (Signal::SIGTERM as i32 - 1);
    assert_eq!(mask("SigIgn:") & int, int, "{status}");
    assert_eq!(mask("SigBlk:") & (int | term), term, "{status}");
    kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        Signal::SIGINT,
    )
    .unwrap();
    std::fs::write(dir.path().join("done"), "").unwrap();
    let (status, stderr) = support::wait_output(&mut child);
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// A seat behind the proxy: `moot-broker --forward` runs `moot-sandbox --profile pi --state`
/// for a CLI whose operator keeps the key in its provider config and a login beside it. The
/// seat's copy has the token and the proxy's URL, the login stays out, the CLI reaches the
/// provider only through the proxy (which sends the real key), no byte of the key is in the
/// state, the CLI's environment, its command line or its /proc, and a direct connection to the
/// provider's port is denied by the kernel.
#[test]
fn a_seat_behind_the_proxy_holds_only_the_token() {
    let test = "a_seat_behind_the_proxy_holds_only_the_token";
    let sandbox = moot_e2e::tool("moot-sandbox");
    if !moot_testkit::landlock_abi_at_least(&sandbox, 4, test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let Some((chain, key)) = self_signed(&root, test) else {
        return;
    };
    let provider = Provider::start(&chain, &key);
    let provider_port = provider.origin.rsplit(':').next().unwrap().to_string();
    let home = root.join("home");
    let agent = home.join(".pi/agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("models.json"),
        format!(
            r#"{{"providers":{{"p":{{"baseUrl":"{}/v1","apiKey":"{REAL_KEY}"}}}}}}"#,
            provider.origin
        ),
    )
    .unwrap();
    std::fs::write(
        agent.join("auth.json"),
        r#"{"p":{"access":"oauth-login-secret"}}"#,
    )
    .unwrap();
    let key_file = root.join("key");
    std::fs::write(&key_file, REAL_KEY).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    // The CLI: shows what it has, calls its provider as its config says (bash's /dev/tcp, an
    // HTTP/1.1 request with the key from its config), tries the provider's port directly, and
    // waits so that the test reads its /proc.
    let bin = root.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let cli = bin.join("pi");
    std::fs::write(
        &cli,
        format!(
            r#"#!/bin/bash
env
find "$HOME" -type f -exec cat {{}} +
config=$(cat "$HOME/.pi/agent/models.json")
url=${{config#*\"baseUrl\":\"http://}}; url=${{url%%\"*}}
key=${{config#*\"apiKey\":\"}}; key=${{key%%\"*}}
hostport=${{url%%/*}}
path=${{url#"$hostport"}}
if exec 3<>"/dev/tcp/${{hostport%:*}}/${{hostport#*:}}"; then
  printf 'POST %s/messages HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}' "$path" "$key" >&3
  head -n 1 <&3
fi
exec 4<>/dev/tcp/127.0.0.1/{provider_port} && echo DIRECT-ALLOWED
echo $$ > "$WAIT/pid"
while [ ! -e "$WAIT/done" ]; do sleep 0.05; done
"#
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
    let wait = root.join("wait");
    std::fs::create_dir(&wait).unwrap();
    let state = root.join("state");
    let run = |extra: &[&str]| {
        let _ = std::fs::remove_file(wait.join("done"));
        let _ = std::fs::remove_file(wait.join("pid"));
        let origin = format!("{}/v1", provider.origin);
        let ca = root.join("cert.pem");
        let mut command = std::process::Command::new(support::BIN);
        command
            .args([
                "--forward",
                &origin,
                "--key-header",
                "x-api-key",
                "--upstream-ca",
            ])
            .arg(&ca)
            .arg("--key-file")
            .arg(&key_file)
            .arg("--")
            .arg(&sandbox)
            .args([
                "--profile",
                "pi",
                "--state",
                state.to_str().unwrap(),
                "--ro",
            ])
            .arg(&wait)
            .args(["--rw", wait.to_str().unwrap()])
            .args(extra)
            .args(["--", "pi"])
            .env("HOME", &home)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("WAIT", &wait)
            .env("LEAKED_COPY", format!("Bearer {REAL_KEY}"))
            // Another provider's key, which the proxy does not hold.
            .env("SECOND_PROVIDER_API_KEY", "sk-second-provider-key")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = moot_testkit::with_default_signals(&mut command)
            .spawn()
            .unwrap();
        // The whole pid: the shell makes the file before it writes it.
        let pid: u32 = support::wait_for("the seat's pid", || {
            std::fs::read_to_string(wait.join("pid"))
                .ok()
                .and_then(|text| text.trim().parse().ok())
        });
        let proc_of = |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap();
        let seen_in_proc = [proc_of("environ"), proc_of("cmdline")].concat();
        std::fs::write(wait.join("done"), "").unwrap();
        let (status, stdout, stderr) = support::wait_all(&mut child);
        assert_eq!(status.code(), Some(0), "{stderr}");
        (stdout, seen_in_proc)
    };
    let (stdout, seen_in_proc) = run(&[]);
    assert!(stdout.contains("HTTP/1.1 200"), "{stdout}");
    let seen = provider.seen.lock().unwrap().clone();
    let [request] = seen.as_slice() else {
        panic!("{} requests reached the provider", seen.len())
    };
    assert_eq!(request.target, "/v1/messages");
    assert_eq!(request.headers["x-api-key"], REAL_KEY);
    assert!(!stdout.contains("DIRECT-ALLOWED"), "{stdout}");
    assert!(!stdout.contains(REAL_KEY), "{stdout}");
    assert!(!stdout.contains("oauth-login-secret"), "{stdout}");
    assert!(!stdout.contains("MOOT_PROXY"), "{stdout}");
    assert!(stdout.contains("LEAKED_COPY=Bearer moot-"), "{stdout}");
    assert!(!stdout.contains("sk-second-provider-key"), "{stdout}");
    assert!(!String::from_utf8_lossy(&seen_in_proc).contains(REAL_KEY));
    let in_state = |needle: &str| {
        walk(&state)
            .iter()
            .any(|file| String::from_utf8_lossy(&std::fs::read(file).unwrap()).contains(needle))
    };
    assert!(!in_state(REAL_KEY));
    assert!(!in_state(&provider.origin));
    assert!(!state.join("home/.pi/agent/auth.json").exists());

    // The login goes in only when the caller says so, and so do the other keys.
    let (stdout, _) = run(&["--seat-holds-login"]);
    assert!(stdout.contains("oauth-login-secret"), "{stdout}");
    assert!(stdout.contains("sk-second-provider-key"), "{stdout}");
    assert!(!in_state(REAL_KEY));
    let (_, _) = run(&[]);
    assert!(!in_state("oauth-login-secret"));
}

/// Every regular file below `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            files.extend(walk(&entry.path()));
        } else if kind.is_file() {
            files.push(entry.path());
        }
    }
    files
}
