//! moot-parse-pi as a command: `--text` (the adapter.sh contract) and `--accept-unmetered`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use moot::testkit::{args, case, run};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-pi");

const PLAIN_ANSWER: &str = "I looked at the task and everything is in order.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"done\",\"findings\":[],\"changes_made\":[],\"tests_run\":[],\"needs\":[],\"delegations\":[]}}\n";

#[test]
fn text_prints_only_the_answer() {
    let out = run(BIN, &args(&["--text"]), &case("pi", "real-plain"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), PLAIN_ANSWER);
    assert!(out.stderr.is_empty());
}

#[test]
fn text_answer_of_a_recovered_retry_is_the_final_message() {
    let out = run(BIN, &args(&["--text"]), &case("pi", "real-retry-visible"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), PLAIN_ANSWER);
}

/// pi exits 0 after giving up; the adapter must still fail, with nothing on stdout.
#[test]
fn text_fails_a_terminal_provider_error_that_exited_0() {
    let out = run(BIN, &args(&["--text"]), &case("pi", "real-error-with-exit"));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "moot-parse-pi: retry_exhausted: pi gave up retrying (auto_retry_end success false): pi turn failed (stopReason error): 500 The server had an error while processing your request (fake)\n"
    );
}

/// Without the gitmoot_result requirement, only the dropped-stream rule stands between the
/// adapter and a cut sentence handed over as the answer.
#[test]
fn text_fails_a_dropped_stream() {
    let out = run(BIN, &args(&["--text"]), &case("pi", "real-drop"));
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.starts_with("moot-parse-pi: truncated: TRUNCATED: pi's final assistant message stopped on \"stop\" but reports zero token usage")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
}

#[test]
fn accept_unmetered_hands_over_an_answer_without_usage() {
    let out = run(
        BIN,
        &args(&["--text", "--accept-unmetered"]),
        &case("pi", "real-drop"),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"I looked at \n");
}

#[test]
fn help_shows_an_example_and_version_prints() {
    let help = run(BIN, &args(&["--help"]), b"");
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8(help.stdout)
        .unwrap()
        .contains("cat run.ndjson | moot-parse-pi"));
    let version = run(BIN, &args(&["--version"]), b"");
    assert_eq!(
        String::from_utf8(version.stdout).unwrap(),
        format!("moot-parse-pi {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn a_bad_flag_is_a_usage_error() {
    let out = run(BIN, &args(&["--max-events", "many"]), b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_usage_error_is_one_line() {
    moot::testkit::check_usage_error(BIN, "moot-parse-pi", 2);
}
