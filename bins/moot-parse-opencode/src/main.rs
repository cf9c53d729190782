//! moot-parse-opencode: `opencode run --format json` events on stdin, one verdict on stdout.

use std::process::ExitCode;

use clap::Parser;

use moot::parse::{help_footer, run_parser, ParseArgs, EXIT_USAGE};
use moot::runtime::opencode::stream::Opencode;

const TOOL: &str = "moot-parse-opencode";

/// Read `opencode run --format json` events on stdin and print one JSON envelope on stdout: the
/// validated gitmoot_result and a run report whose `ok` requires a last step that finished for
/// `stop` with a text, so an error, a cut answer, a rejected permission or a killed run is never
/// a success.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = help_footer(EXAMPLES))]
struct Cli {
    #[command(flatten)]
    args: ParseArgs,
}

const EXAMPLES: &str = "\
Examples:
  cat run.ndjson | moot-parse-opencode
  moot-run --status-file s.json -- opencode run --format json -- \"$PROMPT\" \\
    | moot-parse-opencode --status-file s.json
  moot-parse-opencode --text < run.ndjson    # only the answer, for adapter.sh";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
        run_parser(TOOL, Opencode::default(), &cli.args)
    })
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
