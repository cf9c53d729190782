//! The parsers' side outputs through the built tools: `--events` beside `--text`, the refusal of
//! `--events -` with `--text`, `--progress` in a log, `--otlp-file` through moot-otlp beside the
//! parser, and every failure of a side output (a file that cannot be opened, an exporter that
//! cannot start or reach its collector) costing one warning and never the verdict.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use moot_e2e::{root, tool};
use serde_json::Value;

/// A real capture whose agent made one shell call: codex writing a file.
const CAPTURE: &str = "testdata/codex/real-toolwrite-workspace-write";

fn capture() -> Vec<u8> {
    std::fs::read(root().join(format!("{CAPTURE}.ndjson"))).unwrap()
}

fn golden_envelope() -> Value {
    serde_json::from_slice(&std::fs::read(root().join(format!("{CAPTURE}.json"))).unwrap()).unwrap()
}

fn parse(parser: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(parser)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn events_go_to_a_private_file_beside_the_answer_and_progress_to_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let events = dir.path().join("events.ndjson");
    let out = parse(
        &tool("moot-parse-codex"),
        &["--text", "--progress", "--events", events.to_str().unwrap()],
        &capture(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("gitmoot_result"));
    let written = std::fs::read(&events).unwrap();
    assert_eq!(
        written,
        std::fs::read(root().join(format!("{CAPTURE}.events"))).unwrap(),
        "--events FILE differs from --events -"
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&events).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            "moot-parse-codex: tool command_execution (execute) called",
            "moot-parse-codex: tool command_execution completed, exit 0",
            "moot-parse-codex: turn 1: 19670 tokens in, 84 out (run: 19670 in, 84 out)",
        ],
        "{stderr}"
    );
}

#[test]
fn events_on_stdout_with_the_answer_are_refused_before_reading() {
    let out = parse(
        &tool("moot-parse-codex"),
        &["--text", "--events", "-"],
        &capture(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("moot-parse-codex: --events - "),
        "{stderr}"
    );
}

#[test]
fn an_events_file_that_cannot_be_opened_costs_a_warning_not_the_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let inside_a_file = dir.path().join("file");
    std::fs::write(&inside_a_file, "").unwrap();
    let target = inside_a_file.join("events.ndjson");
    let out = parse(
        &tool("moot-parse-codex"),
        &["--events", target.to_str().unwrap()],
        &capture(),
    );
    assert_eq!(out.status.code(), Some(0));
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope, golden_envelope());
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("moot-parse-codex: warning: cannot open --events"),
        "{stderr}"
    );
}

#[test]
fn otlp_file_holds_the_runs_trace_with_the_envelopes_usage() {
    let dir = tempfile::tempdir().unwrap();
    let trace_file = dir.path().join("trace.json");
    let out = parse(
        &tool("moot-parse-codex"),
        &["--otlp-file", trace_file.to_str().unwrap()],
        &capture(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope, golden_envelope());
    let trace: Value = serde_json::from_slice(&std::fs::read(&trace_file).unwrap()).unwrap();
    let spans = trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    assert_eq!(spans.len(), 2);
    assert_eq!(spans[0]["name"], "invoke_agent codex");
    assert_eq!(spans[1]["name"], "execute_tool command_execution");
    let input = spans[0]["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|kv| kv["key"] == "gen_ai.usage.input_tokens")
        .unwrap();
    assert_eq!(
        input["value"]["intValue"],
        envelope["run"]["usage"]["input_tokens"].to_string()
    );
}

#[test]
fn an_exporter_that_fails_costs_a_warning_not_the_verdict() {
    // A collector that is not there: moot-otlp says why, the parser warns once more.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let endpoint = format!("http://{closed}");
    let out = parse(
        &tool("moot-parse-codex"),
        &["--otlp-endpoint", &endpoint],
        &capture(),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        golden_envelope()
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("moot-otlp: cannot reach the collector"),
        "{stderr}"
    );
    assert!(
        stderr.contains("moot-parse-codex: warning: the run's trace was not exported"),
        "{stderr}"
    );

    // A parser with no moot-otlp beside it or on PATH.
    let alone = tempfile::tempdir().unwrap();
    let parser = alone.path().join("moot-parse-codex");
    std::fs::copy(tool("moot-parse-codex"), &parser).unwrap();
    let mut child = Command::new(&parser)
        .args(["--otlp-endpoint", &endpoint])
        .env("PATH", alone.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&capture()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        golden_envelope()
    );
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("moot-parse-codex: warning: no trace exported: cannot start moot-otlp"),
        "{stderr}"
    );
}
