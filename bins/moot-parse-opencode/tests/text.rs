//! `--text`, the adapter.sh contract: the answer alone on success, nothing but one stderr line on
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use moot::testkit::{case, run, testdata};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-opencode");

#[test]
fn text_prints_only_the_answer() {
    let expected: serde_json::Value =
        serde_json::from_slice(&std::fs::read(testdata().join("opencode/real-tool.json")).unwrap())
            .unwrap();
    let answer = expected["run"]["answer"].as_str().unwrap();
    let output = run(BIN, &["--text".into()], &case("opencode", "real-tool"));
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("{answer}\n")
    );
    assert!(output.stderr.is_empty());
}

#[test]
fn text_prints_nothing_for_a_failed_run() {
    let output = run(BIN, &["--text".into()], &case("opencode", "real-length"));
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("moot-parse-opencode: truncated: TRUNCATED: ")
            && stderr.lines().count() == 1,
        "{stderr:?}"
    );
}

#[test]
fn text_does_not_require_a_gitmoot_result() {
    let output = run(
        BIN,
        &["--text".into()],
        &case("opencode", "no-gitmoot-result"),
    );
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(output.stdout, b"All good, nothing to change.\n");
}

#[test]
fn a_usage_error_is_one_line() {
    moot::testkit::check_usage_error(BIN, "moot-parse-opencode", 2);
}
