//! How every tool ends: one place that prints an error chain once, as
//! `moot-<tool>: <what>: <why>` on stderr, and maps the outcome to an exit status.

use std::process::ExitCode;

/// Runs a tool's body. An `Err` is printed on one line and exits with `failure_status`. A
/// broken pipe on stdout is such an error too: output that did not arrive is a failure, or an
/// orchestrator would take a verdict nobody read for one that was delivered.
pub fn run_tool(
    tool: &str,
    failure_status: u8,
    body: impl FnOnce() -> anyhow::Result<ExitCode>,
) -> ExitCode {
    match body() {
        Ok(code) => code,
        Err(e) => {
            print_error(tool, &e);
            ExitCode::from(failure_status)
        }
    }
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
/// `tool: <clap's message> (see --help)`, ending the tool with `usage_status` (moot-run's is 125,
/// as timeout(1)'s, so it cannot be mistaken for the command's own status). `--help` and
/// `--version` print as clap formats them and exit 0.
///
/// Every tool starts here, so this is also where each makes itself undumpable
/// (src/privilege.rs): it holds the caller's whole environment, secrets included, which a
/// sandboxed agent of the same user must not read through `/proc/<pid>/environ`.
pub fn parse_args<P: clap::Parser>(tool: &str, usage_status: u8) -> Result<P, ExitCode> {
    crate::privilege::hide_from_same_user();
    P::try_parse().map_err(|error| {
        if error.exit_code() == 0 {
            // Nothing useful is left to do if stdout is gone.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        eprintln!("{tool}: {}", usage_line(&error.render().to_string()));
        ExitCode::from(usage_status)
    })
}

/// Clap's message folded onto one line: the usage block and the `--help` tip are left out (one
/// line is what scripts and logs can hold), and an indented list is joined with commas.
fn usage_line(rendered: &str) -> String {
    let mut line = String::new();
    let (mut in_usage, mut in_list) = (false, false);
    for raw in rendered.lines() {
        let text = raw.trim();
        if text.starts_with("Usage:") {
            in_usage = true;
            continue;
        }
        if text.is_empty() {
            (in_usage, in_list) = (false, false);
            continue;
        }
        if in_usage || text.starts_with("For more information") {
            continue;
        }
        // An indented run of lines after one ending in ':' is a list: keep it on one line.
        let opens_list = line.ends_with(':');
        in_list = opens_list || (in_list && raw.starts_with(' '));
        let separator = match (line.is_empty(), opens_list, in_list) {
            (true, _, _) => "",
            (false, true, _) => " ",
            (false, false, true) => ", ",
            (false, false, false) => "; ",
        };
        line.push_str(separator);
        line.push_str(text.strip_prefix("error: ").unwrap_or(text));
    }
    one_line(&format!("{line} (see --help)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_control_characters() {
        assert_eq!(one_line("a\nb\r\tc\u{7}\n"), "a b  c");
    }

    #[test]
    fn usage_errors_fold_to_one_line_without_the_usage_block() {
        assert_eq!(
            usage_line(
                "error: the following required arguments were not provided:\n  --list\n  \
                 <RUNTIME>\n\nUsage: moot-render --list\n"
            ),
            "the following required arguments were not provided: --list, <RUNTIME> (see --help)"
        );
        let rendered = "error: unexpected argument '--foo' found\n\n  tip: to pass '--foo' as a \
                        value, use '-- --foo'\n\nUsage: moot-render [OPTIONS] [RUNTIME]\n       \
                        moot-render --list\n\nFor more information, try '--help'.\n";
        assert_eq!(
            usage_line(rendered),
            "unexpected argument '--foo' found; tip: to pass '--foo' as a value, use '-- --foo' \
             (see --help)"
        );
    }
}
