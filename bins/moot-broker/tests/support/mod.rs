//! Shared by moot-broker's integration tests: the built binary with a token file and a fake
//! upstream, the seat it made, and a fake model on loopback that records the keys it was sent.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use moot_net::http::{self, Body};
use moot_testkit::fake_upstream::{api_key_entry, Behaviour, FakeUpstream};
pub use moot_testkit::{wait_for, HANG_GUARD};
use serde_json::{json, Value};

pub const BIN: &str = env!("CARGO_BIN_EXE_moot-broker");
pub const UPSTREAM_TOKEN: &str = "upstream-secret-token-0123456789";
pub const OWN_KEY: &str = "sk-own-provider-key-abc";
pub const FOREIGN_KEY: &str = "sk-foreign-anthropic-key-xyz";
pub const OWN_ID: i64 = 1;
pub const FOREIGN_ID: i64 = 2;

/// omp's bin directory (omp and the bun it runs on), or `None` after a loud skip (a failure
/// under MOOT_NO_SKIP).
pub fn omp_bin(test: &str) -> Option<PathBuf> {
    if let Some((omp, _)) = moot_testkit::realcli::installed("omp") {
        let bin = omp.parent().unwrap().to_path_buf();
        if bin.join("bun").is_file() {
            return Some(bin);
        }
    }
    moot_testkit::skip(
        test,
        &format!(
            "no omp and bun under {} (scripts/realcli/install.sh)",
            moot_testkit::realcli::realcli_dir().display()
        ),
    );
    None
}

/// A fake upstream holding one credential of `provider` (id 1) and one of another (id 2).
pub fn upstream(provider: &str, naive: bool) -> FakeUpstream {
    FakeUpstream::start(Behaviour {
        token: UPSTREAM_TOKEN.into(),
        credentials: vec![
            api_key_entry(OWN_ID, provider, OWN_KEY),
            api_key_entry(FOREIGN_ID, "anthropic", FOREIGN_KEY),
        ],
        naive,
        refresh_as: None,
        tls: None,
    })
}

/// The upstream token in an owner-only file under `dir`.
pub fn token_file(dir: &Path) -> PathBuf {
    let path = dir.join("upstream.token");
    std::fs::write(&path, format!("{UPSTREAM_TOKEN}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// moot-broker running a command, with the seat it made.
pub struct Running {
    pub child: Child,
    pub seat: PathBuf,
    pub url: String,
    pub bearer: String,
}

impl Running {
    /// Starts moot-broker for `model` against `upstream` with `command`, and waits until the
    /// seat's config.yml names the proxy.
    pub fn start(upstream: &str, dir: &Path, model: &str, command: &[&str]) -> Running {
        Running::start_with(upstream, dir, model, &[], command)
    }

    /// [`Running::start`] with more flags.
    pub fn start_with(
        upstream: &str,
        dir: &Path,
        model: &str,
        flags: &[&str],
        command: &[&str],
    ) -> Running {
        let seat = dir.join("seat");
        // Stopped with INT or TERM below, whatever this test run inherited.
        let child = moot_testkit::with_default_signals(&mut Command::new(BIN))
            .args(flags)
            .arg("--upstream")
            .arg(upstream)
            .arg("--token-file")
            .arg(token_file(dir))
            .args(["--model", model, "--seat-dir"])
            .arg(&seat)
            .arg("--")
            .args(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let config = seat.join("home/.omp/agent/config.yml");
        let text = wait_for("the seat's config", || {
            std::fs::read_to_string(&config)
                .ok()
                .filter(|text| text.contains("token:"))
        });
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(key))
                .unwrap()
                .trim()
                .trim_matches('"')
                .to_string()
        };
        Running {
            child,
            seat,
            url: value("url:"),
            bearer: value("token:"),
        }
    }

    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// Sends `signal` to moot-broker and waits for it: its status, stdout and stderr.
    /// The seat and the proxy's port must be gone afterwards.
    pub fn stop(mut self, signal: nix::sys::signal::Signal) -> (std::process::ExitStatus, String) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), signal).unwrap();
        let output = wait_output(&mut self.child);
        assert!(!self.seat.exists(), "the seat outlived {signal}");
        assert!(port_closed(self.port()), "the proxy outlived {signal}");
        assert_eq!(output.0.code(), Some(128 + signal as i32), "{}", output.1);
        (output.0, output.1)
    }
}

/// Waits for `child` (at most [`HANG_GUARD`]), then returns its status and stderr.
pub fn wait_output(child: &mut Child) -> (std::process::ExitStatus, String) {
    let (status, _stdout, stderr) = wait_all(child);
    (status, stderr)
}

/// Waits for `child` while draining its piped stdout and stderr (a full pipe would stall it:
/// omp's event stream alone can outgrow one), then returns its status and both outputs. Past
/// [`HANG_GUARD`] it is killed and the panic shows what it had printed.
pub fn wait_all(child: &mut Child) -> (std::process::ExitStatus, String, String) {
    fn drain(pipe: Option<impl std::io::Read + Send + 'static>) -> std::thread::JoinHandle<String> {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() >= HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "moot-broker did not end in {HANG_GUARD:?}; its stderr:\n{}",
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, stdout.join().unwrap(), stderr.join().unwrap())
}

/// True when nothing accepts connections on 127.0.0.1:`port`.
pub fn port_closed(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
}

/// A fake OpenAI-compatible model on loopback: answers chat completions with a streamed
/// answer (or 401 when `unauthorized`), recording the Authorization header of every request.
pub struct FakeModel {
    pub port: u16,
    pub keys: Arc<Mutex<Vec<String>>>,
    _thread: std::thread::JoinHandle<()>,
}

/// The answer the fake model streams: a complete gitmoot result, so moot-parse-omp's verdict
/// is a success.
pub const ANSWER: &str = "All good.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"done\",\"findings\":[],\"changes_made\":[],\"tests_run\":[],\"needs\":[],\"delegations\":[]}}";

impl FakeModel {
    pub fn start(unauthorized: bool) -> FakeModel {
        FakeModel::start_slow(unauthorized, Duration::ZERO)
    }

    /// A model that takes `delay` before each answer (omp stays up that long).
    pub fn start_slow(unauthorized: bool, delay: Duration) -> FakeModel {
        let listener = http::bind_loopback().unwrap();
        let port = listener.local_addr().unwrap().port();
        let keys = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&keys);
        let thread = std::thread::spawn(move || {
            let runtime = http::runtime().unwrap();
            let _ = runtime.block_on(http::serve(listener, move |request: Request<Incoming>| {
                let seen = Arc::clone(&seen);
                async move {
                    tokio::time::sleep(delay).await;
                    model_answer(request, &seen, unauthorized).await
                }
            }));
        });
        FakeModel {
            port,
            keys,
            _thread: thread,
        }
    }

    /// omp's models.yml for provider `provider` at this model.
    pub fn models_yml(&self, provider: &str) -> String {
        format!(
            "providers:\n  {provider}:\n    baseUrl: http://127.0.0.1:{}/v1\n    api: openai-completions\n    auth: none\n    models:\n      - id: fake-model\n        name: Fake Model\n        contextWindow: 128000\n        maxTokens: 4096\n",
            self.port
        )
    }

    pub fn keys(&self) -> Vec<String> {
        self.keys.lock().unwrap().clone()
    }
}

async fn model_answer(
    request: Request<Incoming>,
    seen: &Mutex<Vec<String>>,
    unauthorized: bool,
) -> Response<Body> {
    let key = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    let is_chat = request.uri().path().ends_with("/chat/completions");
    let _ = http::read_body(request.into_body(), 16 << 20).await;
    if !is_chat {
        return http::json(
            StatusCode::NOT_FOUND,
            &json!({"error": {"message": "not found"}}),
        );
    }
    seen.lock().unwrap().push(key);
    if unauthorized {
        return http::json(
            StatusCode::UNAUTHORIZED,
            &json!({"error": {"message": "invalid api key (fake)", "type": "invalid_request_error", "code": "invalid_api_key"}}),
        );
    }
    let chunk = |delta: Value, finish: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                   "model": "fake-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        )
    };
    let mut body = chunk(json!({"role": "assistant", "content": ANSWER}), Value::Null);
    body += &chunk(json!({}), json!("stop"));
    body += &format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "fake-model",
               "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    );
    body += "data: [DONE]\n\n";
    http::respond(StatusCode::OK, "text/event-stream", http::full(body))
}

/// The README's read-only seat pipeline: from its `moot-render omp --readonly-seat` line to its
/// `moot-parse-omp` line.
pub fn readme_pipeline() -> String {
    let readme = std::fs::read_to_string(moot_e2e::root().join("README.md")).unwrap();
    let start = readme
        .find("moot-render omp --readonly-seat")
        .expect("README.md shows the read-only seat pipeline");
    let rest = &readme[start..];
    let end = rest.find("moot-parse-omp").unwrap();
    let line_end = rest[end..].find('\n').unwrap();
    rest[..end + line_end].to_string()
}

/// The one envelope a pipeline printed.
pub fn envelope(output: &std::process::Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "not one envelope ({e}): {stdout} / {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}
