//! moot-parse-kimi: Kimi's `--output-format stream-json` output on stdin, one verdict on stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use moot::parse::{help_footer, run_parser_with, ParseArgs, EXIT_USAGE};
use moot::runtime::kimi::{beside, stream::Kimi};

const TOOL: &str = "moot-parse-kimi";

/// Read the `--output-format stream-json` output of Kimi Code (`kimi -p`) or of the legacy
/// kimi-cli (`kimi --print`) on stdin and print one JSON envelope on stdout: the validated
/// gitmoot_result and a run report. Kimi prints no terminal event, so pass the process outcome
/// (--exit-code or --status-file): a run it marks failed is failed whatever the stream shows.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = help_footer(EXAMPLES))]
struct Cli {
    #[command(flatten)]
    args: ParseArgs,

    /// Kimi's stderr, read once stdin ends, for the session id of its resume hint ("To resume
    /// this session: kimi -r <id>"), which the legacy CLI prints nowhere else.
    #[arg(long, value_name = "FILE")]
    stderr_file: Option<PathBuf>,

    /// Kimi Code's session store ($KIMI_CODE_HOME/sessions): once stdin ends, the final answer's
    /// finish reason is read there, since the stream is the same for a complete, a length-cut
    /// and a dropped answer. Anything but "completed", or a session the store does not have,
    /// fails the run as truncated.
    #[arg(long, value_name = "DIR")]
    session_store: Option<PathBuf>,
}

const EXAMPLES: &str = "\
Examples:
  kimi --print --output-format stream-json -p \"$PROMPT\" 2>err.txt >run.ndjson
  moot-parse-kimi --exit-code $? --stderr-file err.txt < run.ndjson
  moot-run --status-file s.json -- kimi -p ... --output-format stream-json \\
    | moot-parse-kimi --status-file s.json
  moot-parse-kimi --text --exit-code 0 < run.ndjson   # only the answer, for adapter.sh";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
        run_parser_with(TOOL, Kimi::default(), &cli.args, |kimi| {
            beside::hand_in(
                kimi,
                cli.stderr_file.as_deref(),
                cli.session_store.as_deref(),
            )
        })
    })
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
