//! Two properties of every omp stream the tests hold: a successful real capture cut at any
//! point before its end is never a success (the last row is then missing or cut mid-write),
//! and rows of types the parser does not read never change a verdict, wherever they stand.
//! A stream cut just after an earlier run's `agent_end` is a whole run, byte for byte, and is
//! the one cut allowed to succeed.

use moot::runtime::omp::stream::Omp;
use moot::testkit::{ends_a_pi_family_run, PI_FAMILY_UNKNOWN_ROWS};

#[test]
fn truncating_a_successful_capture_never_succeeds() {
    let checked = moot::testkit::check_truncation("omp", Omp::default, ends_a_pi_family_run);
    assert!(checked > 1000, "only {checked} cuts checked");
}

#[test]
fn unknown_rows_anywhere_never_change_the_verdict() {
    let compared = moot::testkit::check_unknown_rows("omp", Omp::default, PI_FAMILY_UNKNOWN_ROWS);
    assert!(compared > 300, "only {compared} streams compared");
}
