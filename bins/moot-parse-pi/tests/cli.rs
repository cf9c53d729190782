//! moot-parse-pi as a command: `--text` (the adapter.sh contract) and `--accept-unmetered`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use moot_testkit::{args, run, text_answer, text_failure, text_failure_starts_with};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-pi");

const PLAIN_ANSWER: &str = "I looked at the task and everything is in order.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"done\",\"findings\":[],\"changes_made\":[],\"tests_run\":[],\"needs\":[],\"delegations\":[]}}\n";

#[test]
fn text_prints_only_the_answer() {
    assert_eq!(text_answer(BIN, "pi", "real-plain", &[]), PLAIN_ANSWER);
}

#[test]
fn text_answer_of_a_recovered_retry_is_the_final_message() {
    assert_eq!(
        text_answer(BIN, "pi", "real-retry-visible", &[]),
        PLAIN_ANSWER
    );
}

/// pi exits 0 after giving up; the adapter must still fail, with nothing on stdout.
#[test]
fn text_fails_a_terminal_provider_error_that_exited_0() {
    assert_eq!(
        text_failure(BIN, "pi", "real-error-with-exit", &[]),
        "moot-parse-pi: retry_exhausted: pi gave up retrying (auto_retry_end success false): pi turn failed (stopReason error): 500 The server had an error while processing your request (fake)\n"
    );
}

/// Without the gitmoot_result requirement, only the dropped-stream rule stands between the
/// adapter and a cut sentence handed over as the answer.
#[test]
fn text_fails_a_dropped_stream() {
    text_failure_starts_with(
        BIN,
        "pi",
        "real-drop",
        "moot-parse-pi: truncated: TRUNCATED: pi's final assistant message stopped on \"stop\" but reports zero token usage",
    );
}

#[test]
fn accept_unmetered_hands_over_an_answer_without_usage() {
    assert_eq!(
        text_answer(BIN, "pi", "real-drop", &["--accept-unmetered"]),
        "I looked at \n"
    );
}

#[test]
fn help_shows_an_example_and_version_prints() {
    moot_testkit::check_help_and_version(BIN, "moot-parse-pi", "cat run.ndjson | moot-parse-pi");
}

#[test]
fn a_bad_flag_is_a_usage_error() {
    let out = run(BIN, &args(&["--max-events", "many"]), b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn a_usage_error_is_one_line() {
    moot_testkit::check_usage_error(BIN, "moot-parse-pi", 2);
}
