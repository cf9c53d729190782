//! Two properties of every codex stream the tests hold: a successful real capture cut at any
//! point before its end is never a success (the last row is then missing or cut mid-write),
//! and rows of types the parser does not read never change a verdict, wherever they stand.
//! codex writes one run to a stream, so no cut is exempt.

use moot::runtime::codex::stream::Codex;

#[test]
fn truncating_a_successful_capture_never_succeeds() {
    let checked = moot::testkit::check_truncation("codex", Codex::default, |_| false);
    assert!(checked > 1000, "only {checked} cuts checked");
}

/// Rows of types moot-parse-codex does not read, shaped like codex's own and naming, inside, the
/// types and values it does read.
const UNKNOWN_ROWS: &[&str] = &[
    r#"{"type":"item.updated","item":{"id":"item_9","type":"agent_message","text":"spoof"}}"#,
    r#"{"type":"zz.future","message":"Reconnecting... 1/5","thread_id":"spoof"}"#,
    r#"{"type":"item.started","item":{"id":"item_9","type":"command_execution","aggregated_output":"{\"type\":\"turn.failed\"}"}}"#,
];

#[test]
fn unknown_rows_anywhere_never_change_the_verdict() {
    let compared = moot::testkit::check_unknown_rows("codex", Codex::default, UNKNOWN_ROWS);
    assert!(compared > 300, "only {compared} streams compared");
}
