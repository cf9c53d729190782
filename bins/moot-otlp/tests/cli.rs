//! moot-otlp through the built binary: a run's events as OTLP/JSON, as OTLP/HTTP to a loopback
//! collector (what it receives), and the refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_moot-otlp");

const EVENTS: &str = r#"{"type":"start","runtime":"codex","cli_version":"1.0","model":"m","provider":"p","session_id":"s-1"}
{"type":"tool_call","id":"c1","name":"shell","kind":"execute","input":{"command":"touch /x"}}
{"type":"tool_result","id":"c1","name":"shell","kind":"execute","status":"denied","exit_code":1,"output_chars":44}
{"type":"usage","turn":null,"cumulative":{"input_tokens":7,"output_tokens":42,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0},"cost_usd":null}
{"type":"end","ok":false,"error_class":"truncated","stop_reason":null,"usage":{"input_tokens":7,"output_tokens":42,"cache_read_tokens":0,"cache_write_tokens":0,"reasoning_tokens":0,"cost_usd":null,"source":"result","reported":"cumulative"},"tools":{"calls":1,"completed":0,"failed":0,"denied":1,"by_kind":{"execute":1},"denials":[{"id":"c1","name":"shell","said":"touch: cannot touch '/x': Permission denied"}]}}
"#;

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|kv| kv["key"] == key)
        .map(|kv| &kv["value"])
}

#[test]
fn a_run_is_one_trace_of_otlp_json() {
    let out = run(&["--file", "-"], EVENTS.as_bytes());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace: Value = serde_json::from_slice(&out.stdout).unwrap();
    let spans = trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    assert_eq!(spans.len(), 2);
    let (root, tool) = (&spans[0], &spans[1]);
    assert_eq!(root["name"], "invoke_agent codex");
    assert_eq!(root["traceId"].as_str().unwrap().len(), 32);
    assert_eq!(tool["traceId"], root["traceId"]);
    assert_eq!(tool["parentSpanId"], root["spanId"]);
    assert_eq!(tool["name"], "execute_tool shell");
    // OTLP/JSON spells 64-bit integers as strings.
    assert_eq!(
        attribute(root, "gen_ai.usage.output_tokens").unwrap()["intValue"],
        "42"
    );
    assert_eq!(
        attribute(root, "gen_ai.conversation.id").unwrap()["stringValue"],
        "s-1"
    );
    assert_eq!(
        attribute(root, "moot.error_class").unwrap()["stringValue"],
        "truncated"
    );
    assert_eq!(root["status"]["code"], 2);
    assert_eq!(
        attribute(tool, "moot.tool.status").unwrap()["stringValue"],
        "denied"
    );
    assert_eq!(
        attribute(tool, "gen_ai.tool.call.id").unwrap()["stringValue"],
        "c1"
    );
    let denials = &attribute(root, "moot.denials").unwrap()["arrayValue"]["values"];
    assert_eq!(
        denials[0]["stringValue"],
        "touch: cannot touch '/x': Permission denied"
    );
}

/// One HTTP request from a loopback collector that answers `status`: its head and body.
fn collector(status: &'static str) -> (String, std::thread::JoinHandle<(String, Vec<u8>)>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        let (head, length) = loop {
            let n = stream.read(&mut buf).unwrap();
            seen.extend_from_slice(&buf[..n]);
            if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&seen[..end]).into_owned();
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap();
                seen.drain(..end + 4);
                break (head, length);
            }
        };
        while seen.len() < length {
            let n = stream.read(&mut buf).unwrap();
            seen.extend_from_slice(&buf[..n]);
        }
        let answer =
            format!("HTTP/1.1 {status}\r\ncontent-length: 2\r\nconnection: close\r\n\r\nno");
        stream.write_all(answer.as_bytes()).unwrap();
        (head, seen)
    });
    (origin, handle)
}

#[test]
fn a_collector_receives_protobuf_on_v1_traces_with_the_configured_headers() {
    let (origin, collector) = collector("200 OK");
    let mut child = Command::new(BIN)
        .args(["--endpoint", &origin])
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=a%20b")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(EVENTS.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (head, body) = collector.join().unwrap();
    assert!(head.starts_with("POST /v1/traces HTTP/1.1"), "{head}");
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains("content-type: application/x-protobuf"),
        "{head}"
    );
    assert!(lower.contains("x-api-key: a b"), "{head}");
    // Protobuf keeps strings as they are: the span names and attribute keys are in the body.
    for expected in [
        "invoke_agent codex",
        "execute_tool shell",
        "gen_ai.usage.input_tokens",
    ] {
        assert!(
            body.windows(expected.len())
                .any(|w| w == expected.as_bytes()),
            "{expected} not in the body"
        );
    }
}

#[test]
fn a_refusing_or_absent_collector_is_exit_one_and_one_line() {
    let (origin, collector) = collector("400 Bad Request");
    let out = run(&["--endpoint", &origin], EVENTS.as_bytes());
    collector.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("moot-otlp: ") && stderr.contains("HTTP 400"),
        "{stderr}"
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = run(
        &["--endpoint", &format!("http://{closed}")],
        EVENTS.as_bytes(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot reach the collector"), "{stderr}");
}

#[test]
fn input_that_is_not_events_and_a_missing_destination_are_usage_errors() {
    let out = run(&["--file", "-"], b"{\"type\":\"start\"}\nnot json\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("line 2 is not a moot event"), "{stderr}");
    assert!(out.stdout.is_empty());
    let out = run(&[], EVENTS.as_bytes());
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn events_that_end_before_the_verdict_still_make_a_trace_that_says_so() {
    let cut: String = EVENTS.lines().take(2).map(|l| format!("{l}\n")).collect();
    let out = run(&["--file", "-"], cut.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let trace: Value = serde_json::from_slice(&out.stdout).unwrap();
    let spans = trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    assert_eq!(spans[0]["status"]["code"], 2);
    assert_eq!(
        attribute(&spans[1], "moot.tool.status").unwrap()["stringValue"],
        "no_result"
    );
}

#[test]
fn man_page_documents_every_flag() {
    moot_testkit::check_man_page(BIN, "moot-otlp.1");
}
