//! moot-parse-codex: `codex exec --json` JSONL on stdin, one verdict on stdout.

use moot::runtime::codex::stream::Codex;

const EXAMPLES: &str = "\
Examples:
  cat run.jsonl | moot-parse-codex
  moot-run --status-file s.json -- codex exec --json -- \"$PROMPT\" \\
    | moot-parse-codex --status-file s.json
  moot-parse-codex --text < run.jsonl        # only the answer, for adapter.sh";

moot::parser_main! {
    /// Read `codex exec --json` JSONL on stdin and print one JSON envelope on stdout: the validated
    /// gitmoot_result and a run report whose `ok` requires a `turn.completed` and a final agent
    /// message, so a killed, interrupted or failed turn is never a success.
    tool: "moot-parse-codex",
    dialect: Codex::default(),
    examples: EXAMPLES,
}
