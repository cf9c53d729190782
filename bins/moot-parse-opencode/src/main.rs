//! moot-parse-opencode: `opencode run --format json` events on stdin, one verdict on stdout.

use moot::runtime::opencode::stream::Opencode;

const EXAMPLES: &str = "\
Examples:
  cat run.ndjson | moot-parse-opencode
  moot-run --status-file s.json -- opencode run --format json -- \"$PROMPT\" \\
    | moot-parse-opencode --status-file s.json
  moot-parse-opencode --text < run.ndjson    # only the answer, for adapter.sh";

moot::parser_main! {
    /// Read `opencode run --format json` events on stdin and print one JSON envelope on stdout: the
    /// validated gitmoot_result and a run report whose `ok` requires a last step that finished for
    /// `stop` with a text, so an error, a cut answer, a rejected permission or a killed run is never
    /// a success.
    tool: "moot-parse-opencode",
    dialect: Opencode::default(),
    examples: EXAMPLES,
}
