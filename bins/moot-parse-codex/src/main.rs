//! moot-parse-codex: `codex exec --json` JSONL on stdin, one verdict on stdout.

use std::process::ExitCode;

use clap::Parser;
use moot::parse::{run_parser, ParseArgs, EXIT_USAGE};
use moot::runtime::codex::stream::Codex;

const TOOL: &str = "moot-parse-codex";

/// Read `codex exec --json` JSONL on stdin and print one JSON envelope on stdout: the validated
/// gitmoot_result and a run report whose `ok` requires a `turn.completed` and a final agent
/// message, so a killed, interrupted or failed turn is never a success.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = EXAMPLES)]
struct Cli {
    #[command(flatten)]
    args: ParseArgs,
}

const EXAMPLES: &str = "\
Error classes (run.error.class): truncated, model_error, retry_exhausted, retry_open,
no_agent_end, empty_answer, malformed_stream, no_result, invalid_result, process.

Exit status: 0 the run succeeded; 1 the run or its result failed (the envelope says why);
2 usage or I/O error.

Examples:
  cat run.jsonl | moot-parse-codex
  moot-run --status-file s.json -- codex exec --json -- \"$PROMPT\" \\
    | moot-parse-codex --status-file s.json
  moot-parse-codex --text < run.jsonl        # only the answer, for adapter.sh";

fn main() -> ExitCode {
    let cli = Cli::parse();
    moot::report::run_tool(TOOL, EXIT_USAGE, || {
        run_parser(TOOL, Codex::default(), &cli.args)
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        super::Cli::command().debug_assert();
    }
}
