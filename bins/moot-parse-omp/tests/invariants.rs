//! Three properties of every omp stream the tests hold: a successful real capture cut at any
//! point before its end is never a success (the last row is then missing or cut mid-write),
//! rows of types the parser does not read never change a verdict, wherever they stand, and the
//! model's first event shows before a real stream ends (`--activity-dir`), never in a silent one.
//! A stream cut just after an earlier run's `agent_end` is a whole run, byte for byte, and is
//! the one cut allowed to succeed.

use moot::runtime::omp::stream::Omp;
use moot_testkit::{ends_a_pi_family_run, PI_FAMILY_UNKNOWN_ROWS};

moot_testkit::dialect_invariant_tests!(
    "omp",
    Omp::default,
    ends_a_run = ends_a_pi_family_run,
    unknown_rows = PI_FAMILY_UNKNOWN_ROWS,
    // Real runs whose provider failed before the model said anything.
    silent = &[
        "real-error",
        "real-overloaded",
        "real-empty",
        "real-error-default-settings-timeout"
    ]
);
