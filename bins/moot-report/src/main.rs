//! moot-report: many verdict envelopes in, one summary out, for the job that merges a matrix.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use moot::summary::{self, Format, Summary};

const TOOL: &str = "moot-report";
/// Exit status: with --strict, a job failed or there was none.
const EXIT_FAILED: u8 = 1;
/// Exit status: a usage error, or an input that cannot be read or is not an envelope.
const EXIT_USAGE: u8 = 2;

/// Read the verdict envelopes of many jobs (each FILE holds one, or many as NDJSON; none or `-`
/// is standard input) and print one summary: jobs ok and failed by class, the agents' decisions,
/// tokens and cost by runtime and model (cost only as the CLIs reported it), and the slowest
/// jobs. It streams: a thousand envelopes take no more memory than one.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = EXAMPLES, args_override_self = true)]
struct Cli {
    /// Envelope files (moot-parse-<rt>'s output); `-` or none: standard input.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,

    /// How to print the summary.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,

    /// Exit 1 when a job failed, or when there was no job (a merge step that must fail then).
    #[arg(long)]
    strict: bool,
}

const EXAMPLES: &str = "\
Exit status: 0 the summary was printed; 1 with --strict, a job failed or there was none; 2 a
usage error, or an input that cannot be read or is not an envelope (one line on stderr naming it).

Examples:
  moot-report results/*.json
  cat results/*.json | moot-report --format markdown >> \"$GITHUB_STEP_SUMMARY\"
  moot-report --format json --strict results/*.json";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, run)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let mut summary = Summary::default();
    let stdin = [PathBuf::from("-")];
    let files = if cli.files.is_empty() {
        &stdin[..]
    } else {
        &cli.files[..]
    };
    for path in files {
        let read = if path.as_os_str() == "-" {
            summary.read("stdin", io::stdin().lock())
        } else {
            let file = File::open(path).with_context(|| path.display().to_string())?;
            summary.read(&path.display().to_string(), file)
        };
        read.map_err(anyhow::Error::msg)?;
    }
    let mut out = io::stdout().lock();
    summary::print(&summary, cli.format, &mut out)?;
    out.flush()?;
    Ok(if cli.strict && (summary.failed > 0 || summary.jobs == 0) {
        ExitCode::from(EXIT_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}
