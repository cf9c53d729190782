//! Every real codex capture that succeeds fails when cut at any point before its end: the last
//! row is then missing or cut mid-write, and neither may pass for a finished run.
//! codex writes one run to a stream, so no cut is exempt.

use moot::runtime::codex::stream::Codex;

#[test]
fn truncating_a_successful_capture_never_succeeds() {
    let checked = moot::testkit::check_truncation("codex", Codex::default, |_| false);
    assert!(checked > 1000, "only {checked} cuts checked");
}
