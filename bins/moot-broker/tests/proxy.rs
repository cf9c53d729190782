//! The built moot-broker against the fake upstream, its proxy driven over HTTP as omp drives
//! it: one provider, every write local, the bearer required, long-polls held, and everything
//! gone afterwards on every way the job can end.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::{Method, Request, StatusCode};
use moot_net::http;
use moot_testkit::fake_upstream::{api_key_entry, self_signed, Behaviour, FakeUpstream};
use nix::sys::signal::Signal;
use serde_json::{json, Value};
use support::*;

/// One request to the proxy: status, ETag and body.
struct Answer {
    status: StatusCode,
    etag: Option<String>,
    body: Value,
    took: Duration,
}

fn call(
    running: &Running,
    method: Method,
    path: &str,
    bearer: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Answer {
    let runtime = http::runtime().unwrap();
    runtime.block_on(async {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", running.url));
        if let Some(bearer) = bearer {
            request = request.header("authorization", format!("Bearer {bearer}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let body = body.map_or_else(http::empty, |b| http::full(b.to_string()));
        let started = Instant::now();
        let response = http::client(None)
            .unwrap()
            .request(request.body(body).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let etag = response
            .headers()
            .get("etag")
            .map(|v| v.to_str().unwrap().to_string());
        let bytes = http::read_body(response.into_body(), 1 << 20)
            .await
            .unwrap();
        Answer {
            status,
            etag,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            took: started.elapsed(),
        }
    })
}

/// The proxy's SSE stream: its content type, its first event, and the events that follow
/// `between` (run once the first event is in).
fn stream_events(running: &Running, between: impl FnOnce() + Send) -> (String, String, String) {
    let runtime = http::runtime().unwrap();
    runtime.block_on(async {
        let request = Request::get(format!("{}/v1/snapshot/stream", running.url))
            .header("authorization", format!("Bearer {}", running.bearer))
            .body(http::empty())
            .unwrap();
        let response = http::client(None).unwrap().request(request).await.unwrap();
        let kind = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        let mut body = response.into_body();
        let first = next_event(&mut body).await;
        // Another thread makes the change: this one's runtime is busy holding the stream.
        std::thread::scope(|scope| {
            scope.spawn(between);
        });
        let after = next_event(&mut body).await;
        (kind, first, after)
    })
}

async fn next_event(body: &mut hyper::body::Incoming) -> String {
    let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let bytes: Bytes = frame.into_data().unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// moot-broker for kimi-code/k3 against `upstream`, its command a long sleep.
fn sleeping(upstream: &FakeUpstream) -> (tempfile::TempDir, Running) {
    let dir = tempfile::tempdir().unwrap();
    let running = Running::start(
        &upstream.origin,
        dir.path(),
        "kimi-code/k3",
        &["sleep", "60"],
    );
    (dir, running)
}

/// A long-poll (or a conditional GET) of `path` past generation tag `etag`.
fn poll(running: &Running, path: &str, etag: &str) -> Answer {
    call(
        running,
        Method::GET,
        path,
        Some(&running.bearer),
        &[("if-none-match", etag)],
        None,
    )
}

fn credential_ids(snapshot: &Value) -> Vec<i64> {
    snapshot["credentials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect()
}

#[test]
fn the_proxy_shows_one_provider_and_keeps_every_write_local() {
    let upstream = upstream("kimi-code", false);
    let (_dir, running) = sleeping(&upstream);
    let bearer = running.bearer.clone();
    assert!(!bearer.starts_with('!') && bearer != UPSTREAM_TOKEN);
    let get =
        |path: &str, bearer: Option<&str>| call(&running, Method::GET, path, bearer, &[], None);
    let delete_blocks = || {
        let path = format!("/v1/credential/{OWN_ID}/blocks");
        call(&running, Method::DELETE, &path, Some(&bearer), &[], None)
    };
    let post = |path: &str, body: Option<Value>| {
        call(&running, Method::POST, path, Some(&bearer), &[], body)
    };

    // The bearer guards everything but healthz.
    assert_eq!(get("/v1/healthz", None).body, json!({"ok": true}));
    assert_eq!(get("/v1/snapshot", None).status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get("/v1/snapshot", Some(UPSTREAM_TOKEN)).status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(get("/v1/nope", None).status, StatusCode::UNAUTHORIZED);

    // One provider, with the proxy's own generation as ETag.
    let first = get("/v1/snapshot", Some(&bearer));
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(credential_ids(&first.body), [OWN_ID]);
    assert!(!first.body.to_string().contains(FOREIGN_KEY));
    let generation = first.body["generation"].as_u64().unwrap();
    let etag = format!("\"{generation}\"");
    assert_eq!(first.etag.as_deref(), Some(etag.as_str()));

    // Long-poll semantics: held for `wait`, then 304; at once without `wait`.
    let held = poll(&running, "/v1/snapshot?wait=800", &etag);
    assert_eq!(held.status, StatusCode::NOT_MODIFIED);
    assert!(held.took >= Duration::from_millis(700), "{:?}", held.took);
    assert_eq!(held.etag.as_deref(), Some(etag.as_str()));
    // Without `wait` nothing holds it: no change is coming, and it is answered all the same.
    let at_once = poll(&running, "/v1/snapshot", &etag);
    assert_eq!(at_once.status, StatusCode::NOT_MODIFIED);

    // The stream starts with the filtered snapshot; a local block follows as an entry event.
    let stream_block =
        json!({"providerKey": "kimi-code:api_key", "blockScope": "s", "blockedUntilMs": 1});
    let (kind, head, after) = stream_events(&running, || {
        post(
            &format!("/v1/credential/{OWN_ID}/block"),
            Some(stream_block.clone()),
        );
    });
    assert_eq!(kind, "text/event-stream");
    assert!(head.starts_with("event: snapshot\ndata: {"), "{head}");
    assert!(
        head.contains("\"kind\":\"snapshot\"") && !head.contains(FOREIGN_KEY),
        "{head}"
    );
    assert!(
        after.starts_with("event: entry\ndata: {\"kind\":\"entry\""),
        "{after}"
    );
    assert!(after.contains("\"blockScope\":\"s\""), "{after}");
    let cleared = delete_blocks();
    assert_eq!(cleared.body, json!({"ok": true}));
    let etag = get("/v1/snapshot", Some(&bearer)).etag.unwrap();

    // A block is kept locally and shows in the snapshot; a long-poll wakes for it. The poll
    // asks to be held for the longest wait: held to its end it would answer 304, so the 200
    // is the wake (were the block in before the poll, that 200 is the stale ETag's, also right).
    let block = json!({"providerKey": "kimi-code:api_key", "blockScope": "", "blockedUntilMs": 4_000_000_000_000u64});
    let blocked = std::thread::scope(|scope| {
        let held = scope.spawn(|| poll(&running, "/v1/snapshot?wait=30000", &etag));
        assert_eq!(
            post(
                &format!("/v1/credential/{OWN_ID}/block"),
                Some(block.clone())
            )
            .body,
            json!({"ok": true})
        );
        held.join().unwrap()
    });
    assert_eq!(blocked.status, StatusCode::OK);
    assert_eq!(blocked.body["credentials"][0]["blocks"], json!([block]));
    let deleted = delete_blocks();
    assert_eq!(deleted.body, json!({"ok": true}));
    assert!(get("/v1/snapshot", Some(&bearer)).body["credentials"][0]
        .get("blocks")
        .is_none());
    assert_eq!(
        post(
            &format!("/v1/credential/{OWN_ID}/block"),
            Some(json!({"x": 1}))
        )
        .status,
        StatusCode::BAD_REQUEST
    );

    // A seat cannot grow the view without bound: 32 local blocks a credential, the newest kept,
    // and no key or scope longer than 256 bytes.
    for n in 0..40 {
        let block = json!({"providerKey": format!("k{n}"), "blockScope": "", "blockedUntilMs": 1});
        post(&format!("/v1/credential/{OWN_ID}/block"), Some(block));
    }
    let kept = get("/v1/snapshot", Some(&bearer)).body["credentials"][0]["blocks"].clone();
    let keys: Vec<&str> = kept
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["providerKey"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), 32, "{kept}");
    assert_eq!((keys[0], keys[31]), ("k8", "k39"));
    let long = json!({"providerKey": "k".repeat(257), "blockScope": "", "blockedUntilMs": 1});
    assert_eq!(
        post(&format!("/v1/credential/{OWN_ID}/block"), Some(long)).status,
        StatusCode::BAD_REQUEST
    );
    delete_blocks();

    // Refresh: the foreign id is unknown here; the allowed one goes upstream and comes back.
    assert_eq!(
        post(&format!("/v1/credential/{FOREIGN_ID}/refresh"), None).status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        post("/v1/credential/99/refresh", None).status,
        StatusCode::NOT_FOUND
    );
    let refreshed = post(&format!("/v1/credential/{OWN_ID}/refresh"), None);
    assert_eq!(refreshed.status, StatusCode::OK);
    assert_eq!(refreshed.body["entry"]["id"], json!(OWN_ID));
    assert_eq!(refreshed.body["entry"]["provider"], json!("kimi-code"));
    assert_eq!(
        refreshed.body["entry"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["id", "provider", "credential", "identityKey"]
    );
    // A burst of refreshes (a hostile seat's) is answered from the one just made: upstream
    // rotates shared state on each, so it sees no more of them (counted below).
    std::thread::scope(|scope| {
        let burst: Vec<_> = (0..20)
            .map(|_| scope.spawn(|| post(&format!("/v1/credential/{OWN_ID}/refresh"), None)))
            .collect();
        for answer in burst {
            let answer = answer.join().unwrap();
            assert_eq!(answer.status, StatusCode::OK);
            assert_eq!(answer.body, refreshed.body);
        }
    });

    // Accounting and usage stay here.
    let observed = json!({"installId": "x", "entries": []});
    assert_eq!(
        post("/v1/usage/observed", Some(observed)).body,
        json!({"ok": true})
    );
    assert_eq!(post("/v1/usage/stale", None).body, json!({"ok": true}));
    assert_eq!(get("/v1/usage", Some(&bearer)).body["reports"], json!([]));
    assert_eq!(
        get("/v1/usage/history?sinceMs=0", Some(&bearer)).body["entries"],
        json!([])
    );
    assert_eq!(
        get("/v1/usage/clients?sinceMs=0", Some(&bearer)).body["clients"],
        json!([])
    );

    // Disable hides the credential for the rest of the job; upload and unknown routes refused.
    assert_eq!(
        post(
            &format!("/v1/credential/{OWN_ID}/disable"),
            Some(json!({"cause": "t"}))
        )
        .body,
        json!({"ok": true})
    );
    assert_eq!(
        credential_ids(&get("/v1/snapshot", Some(&bearer)).body),
        Vec::<i64>::new()
    );
    let disabled = get("/v1/credentials/disabled?provider=kimi-code", Some(&bearer)).body;
    assert_eq!(disabled["disabled"][0]["id"], json!(OWN_ID));
    assert_eq!(disabled["disabled"][0]["cause"], json!("t"));
    assert_eq!(
        post(&format!("/v1/credential/{OWN_ID}/refresh"), None).status,
        StatusCode::NOT_FOUND,
        "a disabled credential is refreshed no more"
    );
    let upload = json!({"provider": "kimi-code", "credential": {"type": "api_key", "key": "k"}});
    assert_eq!(
        post("/v1/credential", Some(upload)).status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(get("/v1/nope", Some(&bearer)).status, StatusCode::NOT_FOUND);
    assert_eq!(
        post(&format!("/v1/credential/{FOREIGN_ID}/disable"), None).status,
        StatusCode::NOT_FOUND
    );

    // Upstream saw only its own token, and only snapshot reads and the one refresh.
    for seen in upstream.seen() {
        assert_eq!(
            seen.authorization.as_deref(),
            Some(format!("Bearer {UPSTREAM_TOKEN}").as_str())
        );
        let allowed = (seen.method == "GET" && seen.target.starts_with("/v1/snapshot"))
            || (seen.method == "POST" && seen.target == format!("/v1/credential/{OWN_ID}/refresh"));
        assert!(allowed, "{} {} reached upstream", seen.method, seen.target);
    }
    assert_eq!(
        upstream
            .seen()
            .iter()
            .filter(|s| s.target.ends_with("/refresh"))
            .count(),
        1
    );

    let port = running.port();
    let seat = running.seat.clone();
    let (status, stderr) = running.stop(Signal::SIGTERM);
    assert_eq!(status.code(), Some(128 + 15), "{stderr}");
    assert!(!seat.exists(), "the seat outlived the job");
    assert!(port_closed(port), "the proxy outlived the job");
}

/// A SIGKILL leaves moot-broker no chance to clean up: its guard, in a session of its own,
/// removes the seat (the job bearer, omp's credential cache), and the command is told to stop
/// (SIGTERM as its parent dies). The command holds no descriptor of the guard's.
#[test]
fn a_killed_broker_leaves_no_seat_behind() {
    let upstream = upstream("kimi-code", false);
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("command.pid");
    let fds = dir.path().join("command.fds");
    let script = format!(
        "ls /proc/$$/fd > {fds}; echo $$ > {pid}; exec sleep 60",
        fds = fds.display(),
        pid = pid_file.display()
    );
    let mut running = Running::start(
        &upstream.origin,
        dir.path(),
        "kimi-code/k3",
        &["sh", "-c", &script],
    );
    // The seat is written before the command starts: wait for the command itself.
    let command: i32 = wait_for("the command's pid", || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse().ok())
    });
    // The same shell started by this test directly: what the test itself passes down.
    let baseline = dir.path().join("baseline.fds");
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ls /proc/$$/fd > {}", baseline.display()))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read_to_string(&fds).unwrap(),
        std::fs::read_to_string(&baseline).unwrap(),
        "the command inherited a descriptor of moot-broker's"
    );
    let broker = nix::unistd::Pid::from_raw(running.child.id() as i32);
    let children =
        std::fs::read_to_string(format!("/proc/{broker}/task/{broker}/children")).unwrap();
    let names: Vec<String> = children
        .split_whitespace()
        .map(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default())
        .collect();
    assert!(
        names.iter().any(|name| name.trim() == "moot-seat-guard"),
        "no guard among moot-broker's children: {names:?}"
    );
    nix::sys::signal::kill(broker, Signal::SIGKILL).unwrap();
    let (status, _) = wait_output(&mut running.child);
    assert_eq!(status.code(), None, "SIGKILL ended it");
    // Running, not a zombie its new parent has yet to reap.
    let alive = || {
        std::fs::read_to_string(format!("/proc/{command}/stat")).is_ok_and(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with(|c| c != 'Z')
        })
    };
    wait_for("the seat's removal and the command's end", || {
        (!running.seat.exists() && !alive()).then_some(())
    });
    assert!(port_closed(running.port()), "the proxy outlived the broker");
}

/// The command may leave the seat as it likes: 400 levels deep (more than moot-broker's 256
/// open files here, where a recursive removal ran out of descriptors), read-only, with a copy
/// of the bearer at the bottom. moot-broker still removes all of it and passes on the status.
#[test]
fn a_seat_the_command_made_deep_and_read_only_is_removed() {
    let upstream = upstream("kimi-code", false);
    let dir = tempfile::tempdir().unwrap();
    let seat = dir.path().join("seat");
    let script =
        "cd \"$HOME\" || exit 9; i=0; while [ $i -lt 400 ]; do mkdir z && cd z || exit 9; \
                  i=$((i+1)); done; cp \"$PI_CODING_AGENT_DIR/config.yml\" loot; \
                  chmod 500 \"$PI_CODING_AGENT_DIR\" \"$HOME\"";
    let mut command = std::process::Command::new(BIN);
    command
        .args(["--upstream", &upstream.origin, "--token-file"])
        .arg(token_file(dir.path()))
        .args(["--model", "kimi-code/k3", "--seat-dir"])
        .arg(&seat)
        .args(["--", "sh", "-c", script])
        .stdin(std::process::Stdio::null());
    moot_testkit::fs::limit_open_files(&mut command, 256);
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!seat.exists(), "the seat was left: {stderr}");
}

#[test]
fn a_refresh_answered_for_another_provider_is_refused() {
    let upstream = FakeUpstream::start(Behaviour {
        token: UPSTREAM_TOKEN.into(),
        credentials: vec![api_key_entry(OWN_ID, "kimi-code", OWN_KEY)],
        naive: false,
        refresh_as: Some("anthropic".into()),
        tls: None,
    });
    let (_dir, running) = sleeping(&upstream);
    let answer = call(
        &running,
        Method::POST,
        &format!("/v1/credential/{OWN_ID}/refresh"),
        Some(&running.bearer.clone()),
        &[],
        None,
    );
    assert_eq!(answer.status, StatusCode::BAD_GATEWAY);
    assert!(!answer.body.to_string().contains(OWN_KEY));
    running.stop(Signal::SIGINT);
}

/// An upstream with no stream route that ignores `wait` answers every poll at once; the proxy
/// still asks it at most once per interval, and still holds omp's long-polls.
#[test]
fn a_naive_upstream_is_polled_at_a_bounded_rate() {
    let upstream = upstream("kimi-code", true);
    let (_dir, running) = sleeping(&upstream);
    let bearer = running.bearer.clone();
    let first = call(
        &running,
        Method::GET,
        "/v1/snapshot",
        Some(&bearer),
        &[],
        None,
    );
    let etag = first.etag.unwrap();
    let started = Instant::now();
    let before = upstream.seen().len();
    // omp's fallback loop: long-polls back to back for 5 s.
    while started.elapsed() < Duration::from_secs(5) {
        let held = poll(&running, "/v1/snapshot?wait=1500", &etag);
        assert_eq!(held.status, StatusCode::NOT_MODIFIED);
        assert!(held.took >= Duration::from_millis(1400), "{:?}", held.took);
    }
    let asked = upstream.seen().len() - before;
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        asked as f64 <= seconds / 2.0 + 2.0,
        "{asked} upstream requests in {seconds:.1} s"
    );
    assert!(asked >= 1, "the proxy stopped following upstream");
    running.stop(Signal::SIGHUP);
}

#[test]
fn the_command_gets_the_seat_and_no_broker_variable_and_its_status_is_passed_on() {
    let upstream = upstream("kimi-code", false);
    let dir = tempfile::tempdir().unwrap();
    let seat = dir.path().join("seat");
    let out = dir.path().join("env.txt");
    let script = format!(
        "env > {0}; echo port={{port}} >> {0}; ls -la \"$HOME/.omp/agent\" >> {0}; exit 7",
        out.display()
    );
    let output = std::process::Command::new(BIN)
        .args(["--upstream", &upstream.origin, "--token-file"])
        .arg(token_file(dir.path()))
        .args(["--model", "kimi-code/k3", "--seat-dir"])
        .arg(&seat)
        .args(["--", "sh", "-c", &script])
        .env("OMP_AUTH_BROKER_URL", "http://127.0.0.1:1")
        .env("OMP_AUTH_BROKER_SNAPSHOT_CACHE", "/tmp/elsewhere")
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!seat.exists());
    let env = std::fs::read_to_string(&out).unwrap();
    assert!(!env.contains("OMP_AUTH_BROKER_"), "{env}");
    assert!(!env.contains(UPSTREAM_TOKEN), "{env}");
    assert!(
        env.contains(&format!("HOME={}", seat.join("home").display())),
        "{env}"
    );
    assert!(env.contains(&format!(
        "PI_CODING_AGENT_DIR={}",
        seat.join("home/.omp/agent").display()
    )));
    assert!(env.contains("PI_CONFIG_DIR=.omp"));
    let port: u16 = env
        .lines()
        .find_map(|l| l.strip_prefix("port="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(port_closed(port));
    assert!(
        env.contains("-rw------- ") && env.contains("config.yml"),
        "{env}"
    );
}

#[test]
fn a_command_that_cannot_run_still_leaves_nothing() {
    let upstream = upstream("kimi-code", false);
    let dir = tempfile::tempdir().unwrap();
    let seat = dir.path().join("seat");
    let output = std::process::Command::new(BIN)
        .args(["--upstream", &upstream.origin, "--token-file"])
        .arg(token_file(dir.path()))
        .args(["--model", "kimi-code/k3", "--seat-dir"])
        .arg(&seat)
        .args(["--", "/nonexistent/omp"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(127));
    assert_eq!(String::from_utf8_lossy(&output.stderr).lines().count(), 1);
    assert!(!seat.exists());
}

#[test]
fn an_unreachable_upstream_fails_before_the_seat() {
    let closed = http::bind_loopback().unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let seat = dir.path().join("seat");
    let marker = dir.path().join("ran");
    let output = std::process::Command::new(BIN)
        .args([
            "--upstream",
            &format!("http://127.0.0.1:{closed}"),
            "--token-file",
        ])
        .arg(token_file(dir.path()))
        .args(["--model", "kimi-code/k3", "--seat-dir"])
        .arg(&seat)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("moot-broker: the upstream broker"),
        "{stderr}"
    );
    assert!(!seat.exists() && !marker.exists());
}

#[test]
fn an_https_upstream_is_trusted_only_with_its_ca() {
    let dir = tempfile::tempdir().unwrap();
    let Some((cert, key)) =
        self_signed(dir.path(), "an_https_upstream_is_trusted_only_with_its_ca")
    else {
        return;
    };
    let upstream = FakeUpstream::start(Behaviour {
        token: UPSTREAM_TOKEN.into(),
        credentials: vec![
            api_key_entry(OWN_ID, "kimi-code", OWN_KEY),
            api_key_entry(FOREIGN_ID, "anthropic", FOREIGN_KEY),
        ],
        naive: false,
        refresh_as: None,
        tls: Some((cert, key)),
    });
    assert!(upstream.origin.starts_with("https://127.0.0.1:"));

    // Not trusted without the CA: refused before the seat.
    let untrusted = std::process::Command::new(BIN)
        .args(["--upstream", &upstream.origin, "--token-file"])
        .arg(token_file(dir.path()))
        .args(["--model", "kimi-code/k3", "--seat-dir"])
        .arg(dir.path().join("seat"))
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&untrusted.stderr);
    assert_eq!(untrusted.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!dir.path().join("seat").exists());

    let ca = dir.path().join("cert.pem");
    let running = Running::start_with(
        &upstream.origin,
        dir.path(),
        "kimi-code/k3",
        &["--upstream-ca", ca.to_str().unwrap()],
        &["sleep", "60"],
    );
    let snapshot = call(
        &running,
        Method::GET,
        "/v1/snapshot",
        Some(&running.bearer.clone()),
        &[],
        None,
    );
    assert_eq!(credential_ids(&snapshot.body), [OWN_ID]);
    let refreshed = call(
        &running,
        Method::POST,
        &format!("/v1/credential/{OWN_ID}/refresh"),
        Some(&running.bearer.clone()),
        &[],
        None,
    );
    assert_eq!(refreshed.status, StatusCode::OK);
    assert!(upstream
        .seen()
        .iter()
        .all(|s| s.authorization.as_deref() == Some(format!("Bearer {UPSTREAM_TOKEN}").as_str())));
    running.stop(Signal::SIGTERM);
}
