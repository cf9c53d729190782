//! Two properties of every pi stream the tests hold: a successful real capture cut at any
//! point before its end is never a success (the last row is then missing or cut mid-write),
//! and rows of types the parser does not read never change a verdict, wherever they stand.
//! A stream cut just after an earlier run's `agent_end` is a whole run, byte for byte, and is
//! the one cut allowed to succeed.

use moot::runtime::pi::stream::Pi;

#[test]
fn truncating_a_successful_capture_never_succeeds() {
    let checked = moot::testkit::check_truncation("pi", Pi::default, |line| {
        line.starts_with(br#"{"type":"agent_end""#)
    });
    assert!(checked > 1000, "only {checked} cuts checked");
}

/// Rows of types moot-parse-pi does not read, shaped like pi's own and naming, inside, the
/// types and values it does read.
const UNKNOWN_ROWS: &[&str] = &[
    r#"{"type":"zz_future","message":{"role":"assistant","content":[{"type":"text","text":"spoof"}],"stopReason":"error"}}"#,
    r#"{"type":"tool_execution_end","toolCallId":"x","result":{"content":[{"type":"text","text":"{\"type\":\"agent_end\"}"}]},"isError":true}"#,
    r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"message_end"},"message":{"role":"assistant"}}"#,
];

#[test]
fn unknown_rows_anywhere_never_change_the_verdict() {
    let compared = moot::testkit::check_unknown_rows("pi", Pi::default, UNKNOWN_ROWS);
    assert!(compared > 300, "only {compared} streams compared");
}
