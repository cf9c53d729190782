//! moot-doctor: certify the installed coding-agent CLI before a real job depends on it.

use std::process::ExitCode;

use clap::Parser;
use moot_net::doctor::{run, DoctorArgs, EXIT_DIFFERS, EXIT_USAGE};

const TOOL: &str = "moot-doctor";

/// Certify the coding-agent CLIs installed here: read each one's version and say whether it is in
/// the known-good range moot is tested on (the pinned version up to the next minor release), then
/// run it against a fake model on 127.0.0.1, from a private temporary HOME and config (never
/// yours), through moot-render | moot-run | moot-sandbox | moot-parse-<rt>, for a plain answer, a
/// tool call that writes, a provider error, a length cut, a dropped stream, an empty answer, a
/// retry that recovers and a session resume, and compare moot's verdict on each with the
/// expected one. The first command to run after installing or upgrading a CLI.
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
    args: DoctorArgs,
}

const USAGE: &str = "moot-doctor [OPTIONS] [RUNTIME...]
       moot-doctor --program PATH [OPTIONS] RUNTIME
       moot-doctor --serve [--port N] [--scenario-file F] [--dump-dir D] [--log F] [--retry-fails N]
                           [--tls-cert F --tls-key F]
       moot-doctor --fake-home DIR --origin URL [--key-file F] RUNTIME";

const EXAMPLES: &str = "\
Exit status: 0 every scenario matched; 1 a scenario differed (a line on stderr names it, expected
vs observed), a CLI could not be run, or, with --strict, a version is outside its known-good
range; 2 usage error (one line on stderr).

Examples:
  moot-doctor                        # every installed CLI moot has a parser for
  moot-doctor claude codex --strict
  moot-doctor --program ~/.local/bin/omp-next omp --keep doctor-evidence
  moot-doctor pi --scenario drop --scenario resume --json | jq '.runtimes[].scenarios'
  moot-doctor --serve --port 18300 --scenario-file scenario   # only the fake model
  (eval \"$(moot-doctor --fake-home h --origin http://127.0.0.1:18300 claude)\" && HOME=$PWD/h claude -p hi)";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_DIFFERS, |cli| run(TOOL, &cli.args))
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
