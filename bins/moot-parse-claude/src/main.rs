//! moot-parse-claude: Claude Code's print-mode output on stdin, one verdict on stdout.

use moot::runtime::claude::stream::Claude;

const EXAMPLES: &str = "\
Examples:
  cat run.ndjson | moot-parse-claude
  moot-run --status-file s.json -- claude -p --output-format stream-json --verbose -- \"$PROMPT\" \\
    | moot-parse-claude --status-file s.json
  claude -p --output-format json -- \"$PROMPT\" | moot-parse-claude --text";

moot::parser_main! {
    /// Read Claude Code's `-p --output-format stream-json --verbose` NDJSON (or `--output-format
    /// json`) on stdin and print one JSON envelope on stdout: the validated gitmoot_result and a run
    /// report whose `ok` comes from the final `result` row, never from claude's exit status alone
    /// (claude can exit 0 with `is_error: true`).
    tool: "moot-parse-claude",
    dialect: Claude::default(),
    examples: EXAMPLES,
}
