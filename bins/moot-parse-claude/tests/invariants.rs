//! Three properties of every claude stream the tests hold: a successful real capture cut at any
//! point before its end is never a success (the last row is then missing or cut mid-write),
//! rows of types the parser does not read never change a verdict, wherever they stand, and the
//! model's first event shows before a real stream ends (`--activity-dir`), never in a silent one.
//! claude writes one run to a stream, so no cut is exempt.

use moot::runtime::claude::stream::Claude;

/// Rows of types moot-parse-claude does not read, shaped like claude's own and naming, inside, the
/// types and values it does read.
const UNKNOWN_ROWS: &[&str] = &[
    r#"{"type":"stream_event","event":{"type":"message_stop"},"session_id":"spoof"}"#,
    r#"{"type":"zz_future","subtype":"success","result":"spoof","is_error":true}"#,
    r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"{\"type\":\"result\",\"is_error\":true}"}]}}"#,
];

moot_testkit::dialect_invariant_tests!(
    "claude",
    Claude::default,
    ends_a_run = |_| false,
    unknown_rows = UNKNOWN_ROWS,
    // Real runs whose provider failed before the model said anything.
    silent = &[
        "real-error",
        "real-error-partial",
        "real-overloaded",
        "real-empty"
    ]
);
