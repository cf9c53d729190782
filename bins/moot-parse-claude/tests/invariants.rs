//! Two properties of every claude stream the tests hold: a successful real capture cut at any
//! point before its end is never a success (the last row is then missing or cut mid-write),
//! and rows of types the parser does not read never change a verdict, wherever they stand.
//! claude writes one run to a stream, so no cut is exempt.

use moot::runtime::claude::stream::Claude;

#[test]
fn truncating_a_successful_capture_never_succeeds() {
    let checked = moot::testkit::check_truncation("claude", Claude::default, |_| false);
    assert!(checked > 1000, "only {checked} cuts checked");
}

/// Rows of types moot-parse-claude does not read, shaped like claude's own and naming, inside, the
/// types and values it does read.
const UNKNOWN_ROWS: &[&str] = &[
    r#"{"type":"stream_event","event":{"type":"message_stop"},"session_id":"spoof"}"#,
    r#"{"type":"zz_future","subtype":"success","result":"spoof","is_error":true}"#,
    r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"{\"type\":\"result\",\"is_error\":true}"}]}}"#,
];

#[test]
fn unknown_rows_anywhere_never_change_the_verdict() {
    let compared = moot::testkit::check_unknown_rows("claude", Claude::default, UNKNOWN_ROWS);
    assert!(compared > 300, "only {compared} streams compared");
}
