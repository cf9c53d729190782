//! `--text`, the adapter.sh contract: the answer alone on success, nothing but one stderr line on
//! failure.

use moot::testkit::{golden_answer, text_answer, text_failure};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-codex");

#[test]
fn text_prints_only_the_answer() {
    let case = "real-tool";
    assert_eq!(
        text_answer(BIN, "codex", case, &[]),
        golden_answer("codex", case)
    );
}

#[test]
fn text_prints_nothing_for_a_failed_run() {
    let stderr = text_failure(BIN, "codex", "real-length", &[]);
    assert!(
        stderr.starts_with("moot-parse-codex: truncated: TRUNCATED: "),
        "{stderr:?}"
    );
}

#[test]
fn text_does_not_require_a_gitmoot_result() {
    assert_eq!(
        text_answer(BIN, "codex", "no-gitmoot-result", &[]),
        "All good, nothing to change.\n"
    );
}

#[test]
fn a_usage_error_is_one_line() {
    moot::testkit::check_usage_error(BIN, "moot-parse-codex", 2);
}
