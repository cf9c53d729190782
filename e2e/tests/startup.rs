//! A CLI that fails before its first event: the verdict says it printed nothing (`no_output`,
//! not a stream that "died mid-stream") and quotes the last line of its stderr, which moot-run
//! keeps in the status file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use moot_e2e::tool;
use serde_json::Value;

/// `moot-run --status-file DIR/status -- COMMAND | moot-parse-omp --status-file DIR/status`.
fn pipeline(dir: &Path, command: &str) -> Output {
    let status = dir.join("status");
    let script = format!(
        "{run} --status-file {status} -- {command} 2>/dev/null | {parse} --status-file {status}",
        run = tool("moot-run").display(),
        parse = tool("moot-parse-omp").display(),
        status = status.display(),
    );
    Command::new("sh").args(["-c", &script]).output().unwrap()
}

fn error_of(out: &Output) -> (String, String) {
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = &envelope["run"]["error"];
    (
        error["class"].as_str().unwrap().to_string(),
        error["message"].as_str().unwrap().to_string(),
    )
}

#[test]
fn a_sandbox_that_refuses_to_start_is_named_with_its_own_words() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = tool("moot-sandbox");
    let out = pipeline(
        dir.path(),
        &format!("{} --rw '' -- true", sandbox.display()),
    );
    let (class, message) = error_of(&out);
    assert_eq!(class, "no_output");
    assert!(
        message.starts_with("the CLI printed nothing on stdout: it could not start, or ended before its first event (the process exited with status 2); its stderr ends: moot-sandbox: "),
        "{message}"
    );
    // The one line the parser prints on stderr says it too.
    assert!(String::from_utf8_lossy(&out.stderr).contains("its stderr ends: moot-sandbox: "));
}

#[test]
fn the_last_line_of_a_long_stderr_is_quoted_and_the_status_keeps_whole_lines() {
    let dir = tempfile::tempdir().unwrap();
    // 3 KiB of progress, a line with a terminal escape, then the cause.
    let cli = "sh -c 'i=0; while [ $i -lt 100 ]; do echo \"loading module $i of 100 ....\" >&2; \
               i=$((i+1)); done; printf \"\\033[31merror\\033[0m: cannot open state directory \
               /nope: Permission denied\\n\\n\" >&2; exit 3'";
    let (class, message) = error_of(&pipeline(dir.path(), cli));
    assert_eq!(class, "no_output");
    assert!(
        message.ends_with(
            "(the process exited with status 3); its stderr ends: error: cannot open state \
             directory /nope: Permission denied"
        ),
        "{message}"
    );
    let status: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("status")).unwrap()).unwrap();
    let tail = status["stderr_tail"].as_str().unwrap();
    assert!(tail.len() <= 1024, "{} bytes kept", tail.len());
    assert!(
        tail.starts_with("loading module "),
        "a cut line was kept: {tail:.60}"
    );
    assert!(tail.ends_with("Permission denied"), "{tail}");
}

/// A run that printed its events keeps its own class; a clean exit quotes no stderr.
#[test]
fn a_stream_that_started_keeps_its_class_and_a_clean_exit_quotes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let capture = moot_e2e::root().join("testdata/omp/real-plain.ndjson");
    let lines = std::fs::read_to_string(&capture).unwrap();
    let head: String = lines.lines().take(3).map(|l| format!("{l}\n")).collect();
    let cut = dir.path().join("cut.ndjson");
    std::fs::write(&cut, head).unwrap();
    let died = format!(
        "sh -c 'cat {}; echo \"segfault\" >&2; exit 139'",
        cut.display()
    );
    let (class, message) = error_of(&pipeline(dir.path(), &died));
    assert_eq!(class, "no_agent_end", "{message}");
    assert!(
        message.ends_with("; its stderr ends: segfault"),
        "{message}"
    );

    let quiet = format!("sh -c 'cat {}; echo \"a warning\" >&2'", cut.display());
    let (class, message) = error_of(&pipeline(dir.path(), &quiet));
    assert_eq!(class, "no_agent_end");
    assert!(!message.contains("a warning"), "{message}");
}
