//! Three properties of every kimi stream the tests hold: a successful real capture cut at any
//! point before its end is never a success (the last row is then missing or cut mid-write),
//! rows of types the parser does not read never change a verdict, wherever they stand, and the
//! model's first event shows before a real stream ends (`--activity-dir`), never in a silent one.
//! kimi writes one run to a stream, so no cut is exempt.

use moot::runtime::kimi::stream::Kimi;

/// Rows of types moot-parse-kimi does not read, shaped like kimi's own and naming, inside, the
/// types and values it does read. (A `role:"tool"` row is read now, for `run.tools`, so it is
/// no longer one of them; the legacy CLI's `role:"user"` row, which carries a tool's non-text
/// output, takes its place.)
const UNKNOWN_ROWS: &[&str] = &[
    r#"{"role":"zz_future","content":"spoof"}"#,
    r#"{"type":"zz.future","message":"spoof","retryable":true}"#,
    r#"{"role":"user","content":"{\"role\":\"assistant\",\"content\":\"spoof\"}","tool_call_id":"x"}"#,
];

moot_testkit::dialect_invariant_tests!(
    "kimi",
    Kimi::default,
    ends_a_run = |_| false,
    unknown_rows = UNKNOWN_ROWS,
    // Real runs whose provider failed before the model said anything.
    silent = &[
        "real-error",
        "real-overloaded-with-exit",
        "real-code-error",
        "real-code-kill-midstream"
    ]
);
