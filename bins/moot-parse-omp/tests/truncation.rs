//! Every real omp capture that succeeds fails when cut at any point before its end: the last
//! row is then missing or cut mid-write, and neither may pass for a finished run.
//! A stream cut just after an earlier run's `agent_end` is a whole run, byte for byte, and is
//! the one cut allowed to succeed.

use moot::runtime::omp::stream::Omp;

#[test]
fn truncating_a_successful_capture_never_succeeds() {
    let checked = moot::testkit::check_truncation("omp", Omp::default, |line| {
        line.starts_with(br#"{"type":"agent_end""#)
    });
    assert!(checked > 1000, "only {checked} cuts checked");
}
