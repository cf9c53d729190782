//! moot-run: run one command bounded in time, in its own process group, and record how it ended.

use std::process::ExitCode;

use clap::Parser;
use moot::exec::RunArgs;
use moot::outcome::EXIT_RUNNER_FAILED;

const TOOL: &str = "moot-run";

/// Run one command (an agent CLI) in its own process group with stdin on /dev/null, stream its
/// stdout through unchanged (and to a transcript), end the whole group at a deadline or when
/// moot-run is told to stop, and exit the way timeout(1) does.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = EXAMPLES)]
struct Cli {
    #[command(flatten)]
    args: RunArgs,
}

const EXAMPLES: &str = "\
Exit status: the command's own; 124 the deadline expired; 125 moot-run itself failed (a usage
error too, as timeout(1) does, so it is never mistaken for the command's own status; the
--cleanup directories are still removed); 126 the command could not be run; 127 it was not found; 128+N signal N ended it;
123 an output passed --max-output or --max-stderr; 122 the command changed what --protect keeps
(put back).

Environment presets keep PATH HOME USER LOGNAME SHELL TMPDIR TZ LANG LC_* TERM XDG_*, a proxy's
and the certificate variables, plus the runtime's names and provider keys (omp: OMP_PROFILE PI_PROFILE PI_CODING_AGENT_DIR PI_SMOL_MODEL PI_SLOW_MODEL
PI_PLAN_MODEL, and OMP_AUTH_BROKER_URL with OMP_AUTH_BROKER_TOKEN, kept or dropped together),
and every variable its sandbox profile reads (moot-sandbox --profile; CODEX_HOME,
ANTHROPIC_BASE_URL, KIMI_CODE_HOME, ...).

Examples:
  moot-run --deadline 600 --transcript run.ndjson --status-file s.json -- omp -p --mode=json -- hi \\
    | moot-parse-omp --status-file s.json
  moot-render omp --stage-dir \"$stage\" -- \"$prompt\" | moot-run --cleanup \"$stage\" --env-preset omp";

/// Not `moot::report::main`: after a usage error moot-run still removes the `--cleanup`
/// directories of its raw command line, so a refused call leaves no staged prompt behind.
fn main() -> ExitCode {
    match moot::report::parse_args::<Cli>(TOOL, EXIT_RUNNER_FAILED as u8) {
        Ok(cli) => moot::exec::run(TOOL, &cli.args),
        Err(code) => {
            if code != ExitCode::SUCCESS {
                let args: Vec<_> = std::env::args_os().collect();
                moot::exec::clean_up_unrun(TOOL, &args);
            }
            code
        }
    }
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
