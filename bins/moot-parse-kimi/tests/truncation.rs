//! Every real kimi capture that succeeds fails when cut at any point before its end: the last
//! row is then missing or cut mid-write, and neither may pass for a finished run.
//! kimi writes one run to a stream, so no cut is exempt.

use moot::runtime::kimi::stream::Kimi;

#[test]
fn truncating_a_successful_capture_never_succeeds() {
    let checked = moot::testkit::check_truncation("kimi", Kimi::default, |_| false);
    assert!(checked > 1000, "only {checked} cuts checked");
}
