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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_control_characters() {
        assert_eq!(one_line("a\nb\r\tc\u{7}\n"), "a b  c");
    }
}
