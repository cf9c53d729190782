//! moot-parse-kimi as a command: `--text` (the adapter.sh contract) and `--stderr-file`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use moot_testkit::{run_plain_in, text_answer, text_failure};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-kimi");

#[test]
fn text_prints_only_the_final_answer() {
    assert_eq!(
        text_answer(BIN, "kimi", "narration-not-in-answer", &["--exit-code", "0"]),
        "I ran `ls` and saw the workspace files.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"listed files\",\"findings\":[],\"changes_made\":[],\"tests_run\":[\"ls\"],\"needs\":[],\"delegations\":[]}}\n"
    );
}

#[test]
fn text_never_leaks_thinking() {
    let answer = text_answer(BIN, "kimi", "real-thinking-with-exit", &[]);
    assert!(answer.starts_with("I looked at the task"), "{answer}");
    assert!(!answer.contains("The user wants me"), "{answer}");
}

/// The legacy CLI's error is its own text, folded at 80 columns: one stderr line, unfolded,
/// with the exit cause, and never relabelled.
#[test]
fn text_failure_reports_the_cli_words_on_one_line() {
    assert_eq!(
        text_failure(BIN, "kimi", "real-error", &["--exit-code", "75"]),
        "moot-parse-kimi: model_error: Error code: 500 - {'error': {'message': 'The server had an error while processing your request (fake)', 'type': 'server_error', 'param': None, 'code': 'server_error'}} (the process exited with status 75)\n"
    );
}

/// A failed exit status fails a stream that looks like a finished answer.
#[test]
fn text_fails_a_clean_looking_stream_with_a_failed_exit() {
    assert_eq!(
        text_failure(BIN, "kimi", "real-plain", &["--exit-code", "1"]),
        "moot-parse-kimi: process: the process exited with status 1, although the stream looked complete\n"
    );
}

#[test]
fn stderr_file_gives_the_legacy_session_id() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("err.txt"),
        "\nTo resume this session: kimi -r 22fa99bf-9ce4-4a5e-934a-4e69d64971b6\n",
    )
    .unwrap();
    let out = run_plain_in(BIN, "kimi", &["--stderr-file", "err.txt"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        envelope["run"]["session_id"],
        "22fa99bf-9ce4-4a5e-934a-4e69d64971b6"
    );
}

#[test]
fn help_shows_an_example_and_version_prints() {
    moot_testkit::check_help_and_version(
        BIN,
        "moot-parse-kimi",
        "moot-parse-kimi --exit-code $? --stderr-file err.txt < run.ndjson",
    );
}

#[test]
fn a_usage_error_is_one_line() {
    moot_testkit::check_usage_error(BIN, "moot-parse-kimi", 2);
}

/// A Kimi Code answer is checked against its session store or fails closed: without
/// --session-store a complete-looking answer (here, one the provider cut at its length limit)
/// is truncated, naming both ways on; --no-session-store accepts it unchecked; the two flags
/// together are a usage error.
#[test]
fn kimi_code_without_its_session_store_fails_closed_unless_told() {
    let cut = text_failure(
        BIN,
        "kimi",
        "real-code-length-with-exit",
        &["--exit-code", "0"],
    );
    assert!(
        cut.starts_with("moot-parse-kimi: truncated: cannot verify that the answer is complete: ")
            && cut.contains("--session-store DIR")
            && cut.contains("--no-session-store"),
        "{cut}"
    );
    let accepted = text_answer(
        BIN,
        "kimi",
        "real-code-length-with-exit",
        &["--exit-code", "0", "--no-session-store"],
    );
    assert!(!accepted.is_empty());
    // The legacy kimi-cli has no store: its stream needs neither flag.
    assert!(!text_answer(BIN, "kimi", "real-plain", &["--exit-code", "0"]).is_empty());
    let both = std::process::Command::new(BIN)
        .args(["--session-store", "/tmp", "--no-session-store"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
}
