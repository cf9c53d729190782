//! moot-parse-kimi: Kimi's `--output-format stream-json` output on stdin, one verdict on stdout.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use moot::parse::{help_footer, run_parser_with, ParseArgs, EXIT_USAGE};
use moot::runtime::kimi::beside::{self, Store};
use moot::runtime::kimi::stream::Kimi;

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
    /// fails the run as truncated; so does a Kimi Code run without this flag, unless
    /// --no-session-store is given.
    #[arg(long, value_name = "DIR")]
    session_store: Option<PathBuf>,

    /// Accept a Kimi Code answer without its session store (a replay whose store is gone): a
    /// length cut or a dropped stream then passes as complete. The legacy kimi-cli has no store
    /// and needs neither flag.
    #[arg(long, conflicts_with = "session_store")]
    no_session_store: bool,
}

const EXAMPLES: &str = "\
Examples:
  kimi --print --output-format stream-json -p \"$PROMPT\" 2>err.txt >run.ndjson   # kimi-cli
  moot-parse-kimi --exit-code $? --stderr-file err.txt < run.ndjson
  moot-run --status-file s.json --stderr-file err.txt -- kimi -p ... --output-format stream-json \\
    | moot-parse-kimi --status-file s.json --stderr-file err.txt \\
        --session-store \"${KIMI_CODE_HOME:-$HOME/.kimi-code}/sessions\"   # Kimi Code
  moot-parse-kimi --text --no-session-store --exit-code 0 < run.ndjson   # a replay, unchecked";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
        run_parser_with(TOOL, Kimi::default(), &cli.args, |kimi| {
            let store = match (&cli.session_store, cli.no_session_store) {
                (Some(dir), _) => Store::At(dir),
                (None, true) => Store::Unchecked,
                (None, false) => Store::NotGiven,
            };
            beside::hand_in(kimi, cli.stderr_file.as_deref(), store)
        })
    })
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
