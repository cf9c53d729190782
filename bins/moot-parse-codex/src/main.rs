//! moot-parse-codex: `codex exec --json` JSONL on stdin, one verdict on stdout.

use std::process::ExitCode;

use clap::Parser;

use moot::parse::{help_footer, run_parser, ParseArgs, EXIT_USAGE};
use moot::runtime::codex::stream::Codex;

const TOOL: &str = "moot-parse-codex";

/// Read `codex exec --json` JSONL on stdin and print one JSON envelope on stdout: the validated
/// gitmoot_result and a run report whose `ok` requires a `turn.completed` and a final agent
/// message, so a killed, interrupted or failed turn is never a success.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = help_footer(EXAMPLES))]
struct Cli {
    #[command(flatten)]
    args: ParseArgs,
}

const EXAMPLES: &str = "\
Examples:
  cat run.jsonl | moot-parse-codex
  moot-run --status-file s.json -- codex exec --json -- \"$PROMPT\" \\
    | moot-parse-codex --status-file s.json
  moot-parse-codex --text < run.jsonl        # only the answer, for adapter.sh";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
        run_parser(TOOL, Codex::default(), &cli.args)
    })
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
