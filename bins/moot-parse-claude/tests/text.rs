//! `--text`, the adapter.sh contract: the answer alone on success, nothing but one stderr line on
//! failure.

use moot::testkit::{golden_answer, text_answer, text_failure};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-claude");

#[test]
fn text_prints_only_the_answer() {
    let case = "real-plain-json-verbose";
    assert_eq!(
        text_answer(BIN, "claude", case, &[]),
        golden_answer("claude", case)
    );
}

#[test]
fn text_prints_nothing_for_a_failed_run() {
    let stderr = text_failure(BIN, "claude", "real-length", &[]);
    assert!(
        stderr.starts_with("moot-parse-claude: truncated: TRUNCATED: "),
        "{stderr:?}"
    );
}

#[test]
fn text_does_not_require_a_gitmoot_result() {
    assert_eq!(
        text_answer(BIN, "claude", "no-gitmoot-result", &[]),
        "All good, nothing to change.\n"
    );
}

#[test]
fn a_usage_error_is_one_line() {
    moot::testkit::check_usage_error(BIN, "moot-parse-claude", 2);
}
