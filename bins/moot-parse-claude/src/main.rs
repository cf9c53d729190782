//! moot-parse-claude: Claude Code's print-mode output on stdin, one verdict on stdout.

use std::process::ExitCode;

use clap::Parser;
use moot::parse::{run_parser, ParseArgs, EXIT_USAGE};
use moot::runtime::claude::stream::Claude;

const TOOL: &str = "moot-parse-claude";

/// Read Claude Code's `-p --output-format stream-json --verbose` NDJSON (or `--output-format
/// json`) on stdin and print one JSON envelope on stdout: the validated gitmoot_result and a run
/// report whose `ok` comes from the final `result` row, never from claude's exit status alone
/// (claude can exit 0 with `is_error: true`).
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
  cat run.ndjson | moot-parse-claude
  moot-run --status-file s.json -- claude -p --output-format stream-json --verbose -- \"$PROMPT\" \\
    | moot-parse-claude --status-file s.json
  claude -p --output-format json -- \"$PROMPT\" | moot-parse-claude --text";

fn main() -> ExitCode {
    let cli = Cli::parse();
    moot::report::run_tool(TOOL, EXIT_USAGE, || {
        run_parser(TOOL, Claude::default(), &cli.args)
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
