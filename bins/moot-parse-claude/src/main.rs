//! moot-parse-claude: Claude Code's print-mode output on stdin, one verdict on stdout.

use std::process::ExitCode;

use clap::Parser;

use moot::parse::{help_footer, run_parser, ParseArgs, EXIT_USAGE};
use moot::runtime::claude::stream::Claude;

const TOOL: &str = "moot-parse-claude";

/// Read Claude Code's `-p --output-format stream-json --verbose` NDJSON (or `--output-format
/// json`) on stdin and print one JSON envelope on stdout: the validated gitmoot_result and a run
/// report whose `ok` comes from the final `result` row, never from claude's exit status alone
/// (claude can exit 0 with `is_error: true`).
#[derive(Parser)]
#[command(name = TOOL, version, after_help = help_footer(EXAMPLES))]
struct Cli {
    #[command(flatten)]
    args: ParseArgs,
}

const EXAMPLES: &str = "\
Examples:
  cat run.ndjson | moot-parse-claude
  moot-run --status-file s.json -- claude -p --output-format stream-json --verbose -- \"$PROMPT\" \\
    | moot-parse-claude --status-file s.json
  claude -p --output-format json -- \"$PROMPT\" | moot-parse-claude --text";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
        run_parser(TOOL, Claude::default(), &cli.args)
    })
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
