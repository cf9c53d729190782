//! moot-otlp: one run's events in, one OpenTelemetry trace out (OTLP/HTTP or OTLP/JSON).

use std::io::{self, BufRead};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use moot_net::otlp::{self, now_nanos, TraceBuilder};

const TOOL: &str = "moot-otlp";
/// Exit status: the collector could not be reached or refused the trace.
const EXIT_EXPORT_FAILED: u8 = 1;
/// Exit status: a usage error, or input that cannot be read or is not a moot event.
const EXIT_USAGE: u8 = 2;

/// Read one run's typed events (NDJSON, as `moot-parse-<rt> --events` writes them) on stdin
/// and export them as one trace: an `invoke_agent <runtime>` span with the OpenTelemetry GenAI
/// usage attributes, an `execute_tool <name>` child per tool call, cost, verdict and denials
/// under `moot.*`. Each event is timed when it is read, so a trace piped live from a parser has
/// the run's timing. The parsers' --otlp-endpoint and --otlp-file run this tool.
#[derive(Parser)]
#[command(name = TOOL, version, after_help = EXAMPLES)]
struct Cli {
    /// Send the trace as OTLP/HTTP protobuf to this collector (its base URL: `/v1/traces` is
    /// added unless the URL ends with it). Headers come from OTEL_EXPORTER_OTLP_HEADERS.
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,

    /// Write the trace as OTLP/JSON (one ExportTraceServiceRequest) to FILE; `-` is stdout.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,

    /// How long the collector has to answer.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = moot::seconds::parse_seconds)]
    timeout: Duration,
}

const EXAMPLES: &str = "\
Exit status: 0 the trace was exported; 1 the collector could not be reached or refused it (one
line on stderr says why); 2 a usage error, or input that is not moot events.

Examples:
  moot-parse-omp --events - < run.ndjson | moot-otlp --endpoint http://127.0.0.1:6006
  moot-otlp --file trace.json < events.ndjson
  moot-parse-codex --otlp-endpoint http://collector:4318 < run.jsonl   # the same, in one step";

fn main() -> ExitCode {
    moot::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, run)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Checked here rather than by a required clap group, which would refuse `--completions`.
    if cli.endpoint.is_none() && cli.file.is_none() {
        moot::eprintln_whole!("{TOOL}: give --endpoint URL or --file FILE (see --help)");
        return Ok(ExitCode::from(EXIT_USAGE));
    }
    let headers = otlp::headers_from_env()?;
    let mut trace = TraceBuilder::new();
    for (n, line) in io::stdin().lock().lines().enumerate() {
        let line = line.context("cannot read stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let event: serde_json::Value = serde_json::from_str(&line)
            .ok()
            .filter(|event: &serde_json::Value| event["type"].is_string())
            .with_context(|| {
                format!(
                    "line {} is not a moot event (a JSON object with a type)",
                    n + 1
                )
            })?;
        trace.event(&event, now_nanos());
    }
    let request = trace.finish();
    if let Some(path) = &cli.file {
        let json = serde_json::to_string(&request).context("cannot serialise the trace")? + "\n";
        if path.as_os_str() == "-" {
            use std::io::Write;
            io::stdout()
                .lock()
                .write_all(json.as_bytes())
                .context("cannot write to stdout")?;
        } else {
            moot::atomic_file::write(path, json.as_bytes())
                .with_context(|| format!("cannot write --file ({})", path.display()))?;
        }
    }
    if let Some(endpoint) = &cli.endpoint {
        let url = otlp::traces_url(endpoint);
        if let Err(error) = otlp::send(&url, &headers, &request, cli.timeout) {
            moot::report::print_error(TOOL, &error);
            return Ok(ExitCode::from(EXIT_EXPORT_FAILED));
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[test]
fn cli_is_well_formed() {
    moot::report::check_cli::<Cli>();
}
