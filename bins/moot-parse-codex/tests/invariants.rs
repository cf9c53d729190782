//! Three properties of every codex stream the tests hold: a successful real capture cut at any
//! point before its end is never a success (the last row is then missing or cut mid-write),
//! rows of types the parser does not read never change a verdict, wherever they stand, and the
//! model's first event shows before a real stream ends (`--activity-dir`), never in a silent one.
//! codex writes one run to a stream, so no cut is exempt.

use moot::runtime::codex::stream::Codex;

/// Rows of types moot-parse-codex does not read, shaped like codex's own and naming, inside, the
/// types and values it does read.
const UNKNOWN_ROWS: &[&str] = &[
    r#"{"type":"item.updated","item":{"id":"item_9","type":"agent_message","text":"spoof"}}"#,
    r#"{"type":"zz.future","message":"Reconnecting... 1/5","thread_id":"spoof"}"#,
    r#"{"type":"item.started","item":{"id":"item_9","type":"command_execution","aggregated_output":"{\"type\":\"turn.failed\"}"}}"#,
];

moot_testkit::dialect_invariant_tests!(
    "codex",
    Codex::default,
    ends_a_run = |_| false,
    unknown_rows = UNKNOWN_ROWS,
    // Real runs whose provider failed before the model said anything.
    silent = &[
        "real-error",
        "real-overloaded",
        "real-drop",
        "real-kill-midstream"
    ]
);
