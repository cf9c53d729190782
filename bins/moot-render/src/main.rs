//! moot-render: the argument vector of one delivery of a coding-agent CLI, and nothing else.

use std::process::ExitCode;

use clap::Parser;
use moot::render::{run, RenderArgs, EXIT_FAILED, EXIT_REFUSED};

const TOOL: &str = "moot-render";

/// Build the exact argument vector of one delivery of a coding-agent CLI (the runtimes are
/// listed under RUNTIME and by --list) and print it. Reads flags and MOOT_<RUNTIME>_DEFAULT_MODEL /
/// MOOT_<RUNTIME>_DEFAULT_EFFORT only; never a config file; never runs the CLI. A prompt of
/// 102400 bytes or more never goes on argv: it is staged as prompt.md (0600) in a private
/// directory and the staged path is reported.
#[derive(Parser)]
#[command(
    name = TOOL,
    version,
    after_help = EXAMPLES,
    override_usage = USAGE,
    args_override_self = true
)]
struct Cli {
    #[command(flatten)]
    args: RenderArgs,
}

const USAGE: &str = "moot-render [OPTIONS] RUNTIME [-- PROMPT | --prompt-file FILE | -]
       moot-render --list [--json] [RUNTIME]";

const EXAMPLES: &str = "\
Exit status: 0 printed; 1 the staged prompt or stdout could not be written; 2 refused (bad input,
one line on stderr, nothing staged).

Examples:
  moot-render omp --policy workspace-write --action implement --deadline 600 -- 'Fix the bug' \\
    | moot-run --deadline 600 | moot-parse-omp
  moot-render claude --format sh --model sonnet -- 'Review this diff'
  moot-render kimi --format json --stage-dir \"$stage\" --prompt-file job.md
  moot-render --list --json | jq '.[] | select(.installed) | .name'";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_REFUSED, EXIT_FAILED, |cli| run(TOOL, &cli.args))
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
