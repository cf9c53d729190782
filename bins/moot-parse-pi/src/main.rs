//! moot-parse-pi: pi's `-p --mode json` NDJSON on stdin, one verdict on stdout.

use std::process::ExitCode;

use clap::Parser;
use moot::parse::{help_footer, run_parser, ParseArgs, EXIT_USAGE};
use moot::runtime::pi::stream::{Pi, PiFlavor};

const TOOL: &str = "moot-parse-pi";

/// Read pi's `-p --mode json` NDJSON on stdin and print one JSON envelope on stdout: the
/// validated gitmoot_result and a run report whose `ok` is derived from the stream, never from
/// pi's exit status (pi exits 0 even when the provider failed for good).
#[derive(Parser)]
#[command(name = TOOL, version, after_help = help_footer(EXAMPLES))]
struct Cli {
    #[command(flatten)]
    args: ParseArgs,

    /// Accept a final answer whose message reports zero token usage. By default it fails as
    /// truncated: pi 0.73 reports a provider stream that closed early as a finished answer with
    /// no usage. Give this only for a provider configured without streamed usage.
    #[arg(long)]
    accept_unmetered: bool,
}

const EXAMPLES: &str = "\
Examples:
  cat run.ndjson | moot-parse-pi
  moot-run --status-file s.json -- pi -p --mode json ... | moot-parse-pi --status-file s.json
  moot-parse-pi --text < run.ndjson        # only the answer, for adapter.sh";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
        run_parser(
            TOOL,
            Pi::new(PiFlavor::new(cli.accept_unmetered)),
            &cli.args,
        )
    })
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
