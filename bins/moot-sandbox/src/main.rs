//! moot-sandbox: confine one command with Landlock, then exec it.

use std::process::ExitCode;

use clap::Parser;
use moot::sandbox::{SandboxArgs, EXIT_USAGE};

const TOOL: &str = "moot-sandbox";

/// Set no_new_privs, restrict this process with Landlock (paths, TCP ports, signal and
/// abstract-socket scoping) and exec the command, so it and every process it starts are confined
/// by the kernel. Refuses to run the command when the kernel cannot enforce what was asked.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = EXAMPLES)]
struct Cli {
    #[command(flatten)]
    args: SandboxArgs,
}

const EXAMPLES: &str = "\
Defaults (off with --no-defaults): read+execute /usr /bin /sbin /lib /lib32 /lib64 /libx32 and the
command's own directory; read /etc /proc; read+write /dev/null /dev/zero /dev/full /dev/random
/dev/urandom /dev/tty. /tmp and $HOME are not granted unless asked.

Every capability is dropped before the command runs (root cannot chmod, mknod, read other
processes or open raw sockets past Landlock) unless --keep-caps; as root in CI, also run the
command as an unprivileged --user, since Landlock does not mediate chmod of one's own files.

Exit status: the command's own once it runs; 1 --check could not write its report; 2 usage
(bad flag, relative or missing path, unknown --user); 3 the kernel cannot enforce the policy
(the command did not run); 126 the command could not be executed; 127 it was not found.

Examples:
  moot-sandbox --rw \"$PWD\" --rw-try \"$HOME/.cache\" -- node agent.js
  moot-run --deadline 600 -- moot-sandbox --rw \"$worktree\" --ro \"$stage/p\" --connect 443 -- omp ...
  moot-sandbox --check | jq .probe.passed";

fn main() -> ExitCode {
    // sandbox::run reports its own failures, each with its own status.
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
        Ok(moot::sandbox::run(TOOL, &cli.args))
    })
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
