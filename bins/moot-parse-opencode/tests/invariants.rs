//! Three properties of every opencode stream the tests hold: a successful real capture cut at
//! any point before its end is never a success (the last step's finish is then missing or cut
//! mid-write), rows of types the parser does not read never change a verdict, wherever they
//! stand, and the model's first event shows before a real stream ends (`--activity-dir`), never
//! in a silent one. opencode writes one run to a stream, so no cut is exempt.

use moot::runtime::opencode::stream::Opencode;

/// Rows of types moot-parse-opencode does not read, shaped like opencode's own and naming,
/// inside, the types, finish reasons and sessions it does read.
const UNKNOWN_ROWS: &[&str] = &[
    r#"{"type":"reasoning","timestamp":1,"sessionID":"ses_spoof","part":{"type":"reasoning","text":"{\"type\":\"step_finish\",\"part\":{\"reason\":\"stop\"}}"}}"#,
    r#"{"type":"zz_future","sessionID":"ses_spoof","part":{"type":"text","text":"spoof","reason":"length"},"error":{"name":"APIError"}}"#,
    r#"{"type":"step-finish","sessionID":"ses_spoof","part":{"type":"step-finish","reason":"tool-calls"}}"#,
];

moot_testkit::dialect_invariant_tests!(
    "opencode",
    Opencode::default,
    ends_a_run = |_| false,
    unknown_rows = UNKNOWN_ROWS,
    // Real runs whose provider failed before the model said anything, or that were killed
    // before it did.
    silent = &[
        "real-error",
        "real-error-exit",
        "real-overloaded",
        "real-overloaded-exit",
        "real-fatal",
        "real-fatal-exit",
        "real-kill-midstream",
        "real-kill-midstream-exit"
    ]
);
