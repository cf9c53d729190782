//! moot-broker: give a read-only omp seat, or any command with --forward, a job-local
//! credential proxy, run the command with it, and remove it afterwards.

use std::process::ExitCode;

use clap::Parser;
use moot_net::broker::{BrokerArgs, EXIT_USAGE};

const TOOL: &str = "moot-broker";

/// Run a command as a read-only omp seat: a loopback proxy in front of the shared auth broker
/// that shows the seat one provider's credentials, forwards only their refreshes, answers every
/// write locally and keeps the upstream token to itself; a private HOME, PI_CONFIG_DIR and
/// PI_CODING_AGENT_DIR whose config.yml alone names the proxy and its random job bearer; no
/// OMP_AUTH_BROKER_* variable in the command's environment. The seat and the proxy are removed
/// when the command ends, however it ends. With --forward, a credential proxy to one provider
/// instead: the command gets MOOT_PROXY_URL and MOOT_PROXY_TOKEN, never the provider's key.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = EXAMPLES)]
struct Cli {
    #[command(flatten)]
    args: BrokerArgs,
}

const EXAMPLES: &str = "\
Refused before anything is created (one line, exit 2): an upstream that is neither https:// nor
http:// on a loopback address; a token file that is not a regular file owned by this user with
mode 0600 or stricter (symlinks, FIFOs and directories included); OMP_AUTH_BROKER_TOKEN in the
environment (the seat could read it from /proc); a --model without its provider. When the
command never starts and is moot-run, its --cleanup directories are removed as moot-run would
(a staged prompt is not left behind).

Every {port} in the command becomes the proxy's port, for moot-sandbox --connect, and every
{seat} the seat directory, for moot-sandbox --state {seat}/state (omp's private state in the
seat, removed with it).

Exit status: the command's own; 128+N when signal N ended it; 1 moot-broker failed (upstream
unreachable, the seat not creatable, or not removable after the command succeeded); 2 a refusal or usage error; 126 the command could not be
run; 127 it was not found.

Examples:
  moot-render omp --readonly-seat --model kimi-code/k3 --stage-dir \"$stage/p\" --prompt-file job.md |
    moot-broker --upstream https://broker.example --token-file ~/.omp/broker.token \\
      --model kimi-code/k3 --seat-dir \"$stage/seat\" -- \\
    moot-run --deadline 600 --env-preset omp --cleanup \"$stage/p\" --stdin-argv -- \\
      moot-sandbox --profile omp --state {seat}/state --connect {port} --ro-try \"$stage/p\" -- |
    moot-parse-omp
  moot-broker --upstream http://127.0.0.1:8765 --token-file t --model kimi-code/k3 -- omp -p hi
  moot-broker --forward https://api.anthropic.com --key-file ~/.config/anthropic.key \\
    --key-header x-api-key -- sh -c 'ANTHROPIC_BASE_URL=$MOOT_PROXY_URL \\
      ANTHROPIC_API_KEY=$MOOT_PROXY_TOKEN exec moot-sandbox --rw \"$PWD\" --connect {port} -- ./my-agent'
    (confine the agent: it runs as you, and could otherwise read the key file)";

fn main() -> ExitCode {
    // broker::run reports its own failures, each with its own status.
    match moot::report::parse_args::<Cli>(TOOL, EXIT_USAGE) {
        Ok(cli) => moot_net::broker::run(TOOL, &cli.args),
        Err(code) => {
            // A usage error still leaves no staged prompt behind: the command after `--` never
            // starts, so what its moot-run would have removed is removed here.
            if code != ExitCode::SUCCESS {
                let command: Vec<_> = std::env::args_os()
                    .skip_while(|arg| arg != "--")
                    .skip(1)
                    .collect();
                moot_net::broker::clean_up_unstarted(TOOL, &command);
            }
            code
        }
    }
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
