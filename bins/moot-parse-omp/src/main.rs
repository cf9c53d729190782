//! moot-parse-omp: omp's `-p --mode=json` NDJSON on stdin, one verdict on stdout.

use std::process::ExitCode;

use clap::Parser;

use moot::parse::{help_footer, run_parser, ParseArgs, EXIT_USAGE};
use moot::runtime::omp::stream::Omp;

const TOOL: &str = "moot-parse-omp";

/// Read omp's `-p --mode=json` NDJSON on stdin and print one JSON envelope on stdout: the
/// validated gitmoot_result and a run report whose `ok` is derived from the stream, never from
/// omp's exit status (omp exits 0 when a turn fails).
#[derive(Parser)]
#[command(name = TOOL, version, after_help = help_footer(EXAMPLES))]
struct Cli {
    #[command(flatten)]
    args: ParseArgs,
}

const EXAMPLES: &str = "\
Examples:
  cat run.ndjson | moot-parse-omp
  moot-run --status-file s.json -- omp -p --mode=json ... | moot-parse-omp --status-file s.json
  moot-parse-omp --text < run.ndjson        # only the answer, for adapter.sh";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
        run_parser(TOOL, Omp::default(), &cli.args)
    })
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
