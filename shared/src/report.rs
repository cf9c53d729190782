//! How every tool ends: one place that prints an error chain once, as
//! `moot-<tool>: <what>: <why>` on stderr, and maps the outcome to an exit status.

use std::io;
use std::process::ExitCode;

/// Runs a tool's body. An `Err` is printed on one line and exits with `failure_status`; a broken
/// pipe on stdout is success (the reader went away, as with `moot-parse-omp | head -c 10`).
pub fn run_tool(
    tool: &str,
    failure_status: u8,
    body: impl FnOnce() -> anyhow::Result<ExitCode>,
) -> ExitCode {
    match body() {
        Ok(code) => code,
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{tool}: {}", one_line(&format!("{e:#}")));
            ExitCode::from(failure_status)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Folds a message onto one line: control characters (newlines included) become spaces, so a
/// diagnostic is always exactly one line however the runtime formatted its own error text.
pub fn one_line(message: &str) -> String {
    let folded: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    folded.trim().to_string()
}

/// Prints an error chain once, on one line, as `tool: what (value): why`.
pub fn print_error(tool: &str, error: &anyhow::Error) {
    eprintln!("{tool}: {}", one_line(&format!("{error:#}")));
}

/// Parses the command line like clap's `parse`, except that a usage error is one line on stderr,
/// `tool: <clap's message>`, ending the tool with `usage_status` (moot-run's is 125, as
/// timeout(1)'s, so it cannot be mistaken for the command's own status). `--help` and `--version`
/// print and exit 0.
pub fn parse_args<P: clap::Parser>(tool: &str, usage_status: u8) -> Result<P, ExitCode> {
    P::try_parse().map_err(|error| match error.kind() {
        clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
            // Nothing useful is left to do if stdout is gone.
            let _ = error.print();
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("{tool}: {}", usage_summary(&error));
            ExitCode::from(usage_status)
        }
    })
}

/// Clap's message without its usage block and `--help` tip, folded onto one line.
fn usage_summary(error: &clap::Error) -> String {
    let text = error.render().to_string();
    let message = text.split("\n\n").next().unwrap_or_default();
    let words: Vec<&str> = message
        .trim_start_matches("error: ")
        .split_whitespace()
        .collect();
    one_line(&words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_control_characters() {
        assert_eq!(one_line("a\nb\r\tc\u{7}\n"), "a b  c");
    }
}
