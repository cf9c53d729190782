//! The server run for real on a loopback port: routes, scenario selection, the request list,
//! the log and dump dir, retries, pacing and the dropped stream.

use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use serde_json::{json, Value};

use super::*;
use crate::http;

/// A chat completions body offering a bash tool.
fn chat_body(stream: bool) -> String {
    json!({"model": "m1", "stream": stream, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "bash",
            "parameters": {"properties": {"command": {"type": "string"}}}}}]})
    .to_string()
}

/// Sends one request to `model` and returns the status, the retry-after header and the whole
/// body (an error when the stream was cut).
fn call(
    model: &FakeModel,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, Option<String>, std::io::Result<String>) {
    let runtime = http::runtime().unwrap();
    runtime.block_on(async {
        let client = http::client(None).unwrap();
        let request = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", model.origin()))
            .header("content-type", "application/json")
            .header("authorization", "Bearer dummy")
            .body(http::full(body.to_string()))
            .unwrap();
        let response = client.request(request).await.unwrap();
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let body = http::read_body(response.into_body(), 1 << 20)
            .await
            .map(|bytes| String::from_utf8(bytes.to_vec()).unwrap());
        (status, retry_after, body)
    })
}

fn chat(model: &FakeModel, path: &str) -> (u16, Option<String>, std::io::Result<String>) {
    call(model, "POST", path, &chat_body(true))
}

fn action(request: &Request) -> String {
    let plan = serde_json::to_value(&request.plan).unwrap();
    plan["action"].as_str().unwrap_or("none").to_string()
}

#[test]
fn models_are_listed_with_and_without_the_v1_prefix() {
    let model = FakeModel::start(Options::default()).unwrap();
    for path in [
        "/v1/models",
        "/models",
        "/s/error/v1/models",
        "/openai/v1/models",
    ] {
        let (status, _, body) = call(&model, "GET", path, "");
        assert_eq!(status, 200, "{path}");
        assert!(body.unwrap().contains("\"fake-model\""), "{path}");
    }
    assert_eq!(call(&model, "GET", "/v1/nothing", "").0, 404);
    let requests = model.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[0].api, Api::Models);
    assert_eq!(requests[2].scenario, "error");
    assert_eq!(requests[4].api, Api::Unknown);
}

#[test]
fn the_url_beats_set_scenario_which_beats_the_file_reread_on_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scenario");
    std::fs::write(&file, "tool\nignored second line\n").unwrap();
    let model = FakeModel::start(Options {
        scenario_file: Some(file.clone()),
        ..Options::default()
    })
    .unwrap();
    assert_eq!(chat(&model, "/v1/chat/completions").0, 200);
    std::fs::write(&file, "fatal\n").unwrap();
    assert_eq!(chat(&model, "/chat/completions").0, 400);
    model.set_scenario("toolcmd touch x").unwrap();
    assert_eq!(chat(&model, "/v1/chat/completions").0, 200);
    assert_eq!(chat(&model, "/s/error/v1/chat/completions").0, 500);
    let requests = model.requests();
    let seen: Vec<(&str, String)> = requests
        .iter()
        .map(|r| (r.scenario.as_str(), action(r)))
        .collect();
    assert_eq!(
        seen,
        [
            ("tool", "tool".to_string()),
            ("fatal", "http_error".to_string()),
            ("toolcmd touch x", "tool".to_string()),
            ("error", "http_error".to_string()),
        ]
    );
    let Some(Plan::Tool { call, .. }) = &requests[2].plan else {
        panic!("{:?}", requests[2].plan);
    };
    assert_eq!(call.args, json!({"command": "touch x"}));
    assert!(requests.iter().all(|r| r.auth && r.tool_names == ["bash"]));
    assert_eq!(requests[0].model.as_deref(), Some("m1"));
}

#[test]
fn an_unknown_scenario_is_refused_by_name() {
    let model = FakeModel::start(Options::default()).unwrap();
    let error = model.set_scenario("plian").unwrap_err();
    assert!(error.contains("plian"), "{error}");
    let (status, _, body) = chat(&model, "/s/plian/v1/chat/completions");
    assert_eq!(status, 400);
    assert!(body.unwrap().contains("plian"));
    // The failed set_scenario changed nothing: the default is still plain.
    assert_eq!(chat(&model, "/v1/chat/completions").0, 200);
    let bad = Options {
        retry_then: Some("nope".into()),
        ..Options::default()
    };
    assert!(FakeModel::start(bad).is_err());
}

#[test]
fn retry_fails_with_retry_after_then_recovers_and_reset_starts_over() {
    let model = FakeModel::start(Options {
        retry_fails: 2,
        ..Options::default()
    })
    .unwrap();
    let path = "/s/retry/v1/chat/completions";
    for _ in 0..2 {
        let (status, retry_after, _) = chat(&model, path);
        assert_eq!((status, retry_after.as_deref()), (429, Some("1")));
    }
    let (status, _, body) = chat(&model, path);
    assert_eq!(status, 200);
    assert!(body.unwrap().contains("gitmoot_result"));
    model.reset();
    assert!(model.requests().is_empty());
    assert_eq!(chat(&model, path).0, 429);
}

#[test]
fn a_dropped_stream_stops_without_its_terminator_and_a_plain_one_ends_with_it() {
    let model = FakeModel::start(Options::default()).unwrap();
    let (status, _, body) = chat(&model, "/s/drop/v1/chat/completions");
    assert_eq!(status, 200);
    let body = body.unwrap();
    assert!(body.contains("data: {"), "no delta before the stop: {body}");
    assert!(
        !body.contains("[DONE]") && !body.contains("finish_reason\":\"stop"),
        "{body}"
    );
    let body = chat(&model, "/s/plain/v1/chat/completions").2.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
}

#[test]
fn every_request_is_logged_and_every_model_body_dumped() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let dump = dir.path().join("dump");
    let model = FakeModel::start(Options {
        log: Some(log.clone()),
        dump_dir: Some(dump.clone()),
        legacy_result: true,
        ..Options::default()
    })
    .unwrap();
    let (_, _, body) = call(&model, "POST", "/v1/chat/completions", &chat_body(false));
    let body: Value = serde_json::from_str(&body.unwrap()).unwrap();
    let content = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(
        content.contains(r#"{"gitmoot_result":{"status":"ok""#),
        "{content}"
    );
    assert_eq!(call(&model, "GET", "/v1/models", "").0, 200);
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["api"], json!("chat"));
    assert_eq!(lines[0]["plan"]["action"], json!("text"));
    assert_eq!(lines[0]["stream"], json!(false));
    assert_eq!(lines[1]["path"], json!("/v1/models"));
    let dumped: Vec<_> = std::fs::read_dir(&dump).unwrap().collect();
    assert_eq!(dumped.len(), 1);
    let name = dumped[0].as_ref().unwrap().file_name();
    assert!(name.to_string_lossy().ends_with("-chat_completions.json"));
}

#[test]
fn a_slow_stream_is_flushed_frame_by_frame_at_its_pace() {
    let model = FakeModel::start(Options::default()).unwrap();
    let runtime = http::runtime().unwrap();
    runtime.block_on(async {
        let client = http::client(None).unwrap();
        let request = hyper::Request::builder()
            .method("POST")
            .uri(format!("{}/s/slow/v1/chat/completions", model.origin()))
            .body(http::full(chat_body(true)))
            .unwrap();
        let started = Instant::now();
        let mut body = client.request(request).await.unwrap().into_body();
        let mut arrivals = Vec::new();
        while arrivals.len() < 4 {
            let frame = body.frame().await.unwrap().unwrap();
            if frame.data_ref().is_some() {
                arrivals.push(started.elapsed());
            }
        }
        // The pieces come a quarter second apart, each as it is written: a stream buffered to
        // its end would bring them together. (Only lower bounds: a busy machine makes gaps
        // longer, never shorter.)
        assert!(
            arrivals[3] - arrivals[1] >= Duration::from_millis(450),
            "{arrivals:?}"
        );
    });
}

#[test]
fn dropping_the_server_frees_its_port() {
    let model = FakeModel::start(Options::default()).unwrap();
    let port = model.port();
    assert_eq!(model.origin(), format!("http://127.0.0.1:{port}"));
    drop(model);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn count_tokens_health_head_and_reset_answer_as_clients_expect() {
    let model = FakeModel::start(Options::default()).unwrap();
    let (status, _, body) = call(&model, "POST", "/v1/messages/count_tokens", "{\"a\":1}");
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body.unwrap()).unwrap();
    assert!(body["input_tokens"].as_u64().unwrap() >= 1, "{body}");
    assert_eq!(call(&model, "HEAD", "/v1/anything", "").0, 200);
    assert_eq!(call(&model, "GET", "/healthz", "").0, 200);
    assert_eq!(call(&model, "POST", "/v1/messages", "not json").0, 400);
    assert_eq!(call(&model, "POST", "/v1/chat/completions/x", "{}").0, 404);
    // /__reset clears the retry counters (not the request list).
    assert_eq!(chat(&model, "/s/retry/v1/chat/completions").0, 429);
    assert_eq!(call(&model, "GET", "/__reset", "").0, 200);
    assert_eq!(chat(&model, "/s/retry/v1/chat/completions").0, 429);
    let apis: Vec<Api> = model.requests().iter().map(|r| r.api).collect();
    assert_eq!(
        apis,
        [
            Api::CountTokens,
            Api::Health,
            Api::Health,
            Api::Anthropic,
            Api::Unknown,
            Api::Chat,
            Api::Reset,
            Api::Chat
        ]
    );
}

#[test]
fn serve_forever_serves_on_the_calling_thread_once_ready() {
    let (ready, port) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        serve_forever(Options::default(), None, |port| ready.send(port).unwrap())
    });
    let port = port.recv_timeout(moot_testkit::HANG_GUARD).unwrap();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    use std::io::{Read, Write};
    stream
        .write_all(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("fake-model"));
}

/// Behind TLS (`moot-doctor --serve --tls-cert`), a client that trusts the certificate is
/// answered, and one that does not never gets to send a request.
#[test]
fn serve_forever_behind_tls_answers_a_client_that_trusts_its_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let test = "serve_forever_behind_tls_answers_a_client_that_trusts_its_certificate";
    let Some((chain, key)) = moot_testkit::fake_upstream::self_signed(dir.path(), test) else {
        return;
    };
    let tls = http::Tls::from_pem(&chain, &key).unwrap();
    let (ready, port) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        serve_forever(Options::default(), Some(tls), |port| {
            ready.send(port).unwrap()
        })
    });
    let port = port.recv_timeout(moot_testkit::HANG_GUARD).unwrap();
    let models = format!("https://127.0.0.1:{port}/v1/models");
    let ca = dir.path().join("cert.pem");
    let get = |client: http::Client| {
        client.request(
            hyper::Request::get(models.as_str())
                .body(http::empty())
                .unwrap(),
        )
    };
    http::runtime().unwrap().block_on(async {
        let trusted = get(http::client(Some(&ca)).unwrap()).await.unwrap();
        assert_eq!(trusted.status(), hyper::StatusCode::OK);
        let body = http::read_body(trusted.into_body(), 1 << 20).await.unwrap();
        assert!(String::from_utf8_lossy(&body).contains("fake-model"));
        assert!(get(http::client(None).unwrap()).await.is_err());
    });
    assert!(matches!(
        http::Tls::from_pem(&key, &chain),
        Err(e) if e.to_string().contains("no PEM certificate")
    ));
}

#[test]
fn a_required_key_is_checked_on_model_calls_only() {
    let wrong = FakeModel::start(Options {
        required_key: Some("sk-the-real-one".into()),
        ..Options::default()
    })
    .unwrap();
    let (status, _, body) = chat(&wrong, "/v1/chat/completions");
    assert_eq!(status, 401, "{body:?}");
    assert_eq!(call(&wrong, "GET", "/health", "").0, 200);
    let right = FakeModel::start(Options {
        required_key: Some("dummy".into()),
        ..Options::default()
    })
    .unwrap();
    assert_eq!(chat(&right, "/v1/chat/completions").0, 200);
}
