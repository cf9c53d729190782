//! How every tool ends: one place that prints an error chain once, as
//! `moot-<tool>: <what>: <why>` on stderr, and maps the outcome to an exit status.

use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap_complete::Shell;

/// Runs a tool's body. An `Err` is printed on one line and exits with `failure_status`. A
/// broken pipe on stdout is such an error too: output that did not arrive is a failure, or an
/// orchestrator would take a verdict nobody read for one that was delivered.
fn run_tool(
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
    crate::eprintln_whole!("{tool}: {}", one_line(&format!("{error:#}")));
}

/// `eprintln!` in one `write(2)`: stderr is unbuffered and `eprintln!` writes each piece of its
/// format on its own, so in a pipeline whose tools share one stderr another tool's line could
/// land inside this one.
#[macro_export]
macro_rules! eprintln_whole {
    ($($arg:tt)*) => {
        $crate::report::write_stderr_line(format!($($arg)*))
    };
}

/// Writes `line` and a newline to stderr at once (see [`crate::eprintln_whole!`]).
pub fn write_stderr_line(mut line: String) {
    use std::io::Write;
    line.push('\n');
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// A tool's whole `main`: parses the command line ([`parse_args`]), runs `body` on the flags and
/// ends the way [`run_tool`] does, with `failure_status` when the body returns an error. Each
/// binary is then its clap struct (whose doc comments are its `--help`) and this one call.
pub fn main<P: clap::Parser>(
    tool: &str,
    usage_status: u8,
    failure_status: u8,
    body: impl FnOnce(P) -> anyhow::Result<ExitCode>,
) -> ExitCode {
    match parse_args::<P>(tool, usage_status) {
        Ok(cli) => run_tool(tool, failure_status, || body(cli)),
        Err(code) => code,
    }
}

/// Parses the command line like clap's `parse`, except that a usage error is one line on stderr,
/// `tool: <clap's message> (see --help)`, ending the tool with `usage_status` (moot-run's is 125,
/// as timeout(1)'s, so it cannot be mistaken for the command's own status). `--help` and
/// `--version` print as clap formats them and exit 0, and so does `--completions SHELL`, the
/// tool's completion script generated from the same definitions (`make install` installs them).
///
/// Every tool starts here, so this is also where each makes itself undumpable
/// (src/privilege.rs): it holds the caller's whole environment, secrets included, which a
/// sandboxed agent of the same user must not read through `/proc/<pid>/environ`.
pub fn parse_args<P: clap::Parser>(tool: &str, usage_status: u8) -> Result<P, ExitCode> {
    crate::privilege::hide_from_same_user();
    let refuse = |error: clap::Error| {
        if error.exit_code() == 0 {
            // Nothing useful is left to do if stdout is gone.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        crate::eprintln_whole!("{tool}: {}", usage_line(&error));
        ExitCode::from(usage_status)
    };
    let mut command = with_completions(P::command());
    let mut matches = command.clone().try_get_matches().map_err(refuse)?;
    if let Some(&shell) = matches.get_one::<Shell>(COMPLETIONS) {
        let mut stdout = std::io::stdout().lock();
        clap_complete::generate(shell, &mut command, tool, &mut stdout);
        return Err(ExitCode::SUCCESS);
    }
    P::from_arg_matches_mut(&mut matches).map_err(refuse)
}

/// The id of the flag every tool gets from [`with_completions`].
const COMPLETIONS: &str = "completions";

/// Adds `--completions SHELL` to a tool's flags. It is hidden from `--help` (it is for
/// packagers, and every tool has it: man/moot.7 documents it once, under FILES) and must be
/// given alone, so a tool with required arguments still prints its script.
fn with_completions(command: clap::Command) -> clap::Command {
    command.arg(
        clap::Arg::new(COMPLETIONS)
            .long(COMPLETIONS)
            .value_name("SHELL")
            .value_parser(clap::value_parser!(Shell))
            .exclusive(true)
            .hide(true),
    )
}

/// The unit test every tool has: clap's own consistency checks of its flags (conflicts naming
/// flags that exist, no two flags with one name, `--completions` free, ...), which clap
/// otherwise runs only when a debug build parses a command line that reaches the fault.
pub fn check_cli<P: clap::CommandFactory>() {
    with_completions(P::command()).debug_assert();
}

/// A usage error on one line, built from clap's error kind and context rather than its rendered
/// text: the usage block and the `--help` tip are left out (one line is what scripts and logs
/// can hold), a list is joined with commas, and clap's tips follow after `; `.
fn usage_line(error: &clap::Error) -> String {
    let mut line = message(error).unwrap_or_else(|| fallback_message(error));
    for tip in tips(error) {
        line.push_str("; tip: ");
        line.push_str(&tip);
    }
    one_line(&format!("{line} (see --help)"))
}

/// The message of the error kinds the tools can meet, from their context; `None` for another
/// kind, or a kind without the context it needs.
fn message(error: &clap::Error) -> Option<String> {
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(text)) => Some(text.as_str()),
        _ => None,
    };
    let list = |kind| match error.get(kind) {
        Some(ContextValue::Strings(items)) => Some(items.join(", ")),
        _ => None,
    };
    let arg = text(ContextKind::InvalidArg);
    let value = text(ContextKind::InvalidValue);
    Some(match error.kind() {
        ErrorKind::UnknownArgument => format!("unexpected argument '{}' found", arg?),
        ErrorKind::InvalidValue => {
            let (arg, value) = (arg?, value?);
            let mut line = if value.is_empty() {
                format!("a value is required for '{arg}' but none was supplied")
            } else {
                format!("invalid value '{value}' for '{arg}'")
            };
            if let Some(valid) = list(ContextKind::ValidValue).filter(|v| !v.is_empty()) {
                line.push_str(&format!("; [possible values: {valid}]"));
            }
            line
        }
        ErrorKind::ValueValidation => {
            let mut line = format!("invalid value '{}' for '{}'", value?, arg?);
            if let Some(why) = std::error::Error::source(error) {
                line.push_str(&format!(": {why}"));
            }
            line
        }
        ErrorKind::TooManyValues => format!(
            "unexpected value '{}' for '{}' found; no more were expected",
            value?, arg?
        ),
        ErrorKind::MissingRequiredArgument => format!(
            "the following required arguments were not provided: {}",
            list(ContextKind::InvalidArg)?
        ),
        ErrorKind::ArgumentConflict => {
            let arg = arg?;
            match error.get(ContextKind::PriorArg) {
                Some(ContextValue::String(prior)) if prior == arg => {
                    format!("the argument '{arg}' cannot be used multiple times")
                }
                Some(ContextValue::String(prior)) => {
                    format!("the argument '{arg}' cannot be used with '{prior}'")
                }
                Some(ContextValue::Strings(prior)) => {
                    format!(
                        "the argument '{arg}' cannot be used with: {}",
                        prior.join(", ")
                    )
                }
                _ => format!(
                    "the argument '{arg}' cannot be used with one or more of the other specified \
                     arguments"
                ),
            }
        }
        _ => return None,
    })
}

/// Any other kind: clap's own words for it, or the error its value parser returned.
fn fallback_message(error: &clap::Error) -> String {
    match (error.kind().as_str(), std::error::Error::source(error)) {
        (Some(words), _) => words.to_string(),
        (None, Some(source)) => source.to_string(),
        (None, None) => "the command line was refused".to_string(),
    }
}

/// Clap's suggestions (a similar flag, how to pass a value that looks like one), each a
/// sentence of its own.
fn tips(error: &clap::Error) -> Vec<String> {
    let mut tips = Vec::new();
    for (kind, what) in [
        (ContextKind::SuggestedSubcommand, "subcommand"),
        (ContextKind::SuggestedArg, "argument"),
        (ContextKind::SuggestedValue, "value"),
    ] {
        match error.get(kind) {
            Some(ContextValue::String(similar)) => {
                tips.push(format!("a similar {what} exists: '{similar}'"))
            }
            Some(ContextValue::Strings(similar)) if similar.len() == 1 => {
                tips.push(format!("a similar {what} exists: '{}'", similar[0]))
            }
            Some(ContextValue::Strings(similar)) => tips.push(format!(
                "some similar {what}s exist: '{}'",
                similar.join("', '")
            )),
            _ => {}
        }
    }
    if let Some(ContextValue::StyledStrs(suggested)) = error.get(ContextKind::Suggested) {
        tips.extend(suggested.iter().map(ToString::to_string));
    }
    tips
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_folds_control_characters() {
        assert_eq!(one_line("a\nb\r\tc\u{7}\n"), "a b  c");
    }

    /// Runs `argv` through a small command shaped like the tools' and returns the one line.
    fn refusal(argv: &[&str]) -> String {
        #[derive(clap::Parser, Debug)]
        #[command(name = "tool")]
        struct Cli {
            #[arg(long, conflicts_with_all = ["policy", "runtime"])]
            list: bool,
            #[arg(long, requires = "list")]
            json: bool,
            #[arg(long, value_parser = ["read-only", "auto"])]
            policy: Option<String>,
            #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u16))]
            deadline: Option<u16>,
            #[arg(required_unless_present = "list")]
            runtime: Option<String>,
        }
        let error = <Cli as clap::Parser>::try_parse_from(
            std::iter::once("tool").chain(argv.iter().copied()),
        )
        .err();
        usage_line(&error.unwrap_or_else(|| panic!("{argv:?} was accepted")))
    }

    #[test]
    fn usage_errors_are_one_line_from_clap_context() {
        assert_eq!(
            refusal(&["--json"]),
            "the following required arguments were not provided: --list, <RUNTIME> (see --help)"
        );
        assert_eq!(
            refusal(&["--foo"]),
            "unexpected argument '--foo' found; tip: to pass '--foo' as a value, use '-- --foo' \
             (see --help)"
        );
        assert_eq!(
            refusal(&["--jsn"]),
            "unexpected argument '--jsn' found; tip: a similar argument exists: '--json' \
             (see --help)"
        );
        assert_eq!(
            refusal(&["--policy", "yolo", "x"]),
            "invalid value 'yolo' for '--policy <POLICY>'; [possible values: read-only, auto] \
             (see --help)"
        );
        assert_eq!(
            refusal(&["--policy=", "x"]),
            "a value is required for '--policy <POLICY>' but none was supplied; [possible values: \
             read-only, auto] (see --help)"
        );
        assert_eq!(
            refusal(&["--policy"]),
            "a value is required for '--policy <POLICY>' but none was supplied; [possible values: \
             read-only, auto] (see --help)"
        );
        assert_eq!(
            refusal(&["--deadline", "70000", "x"]),
            "invalid value '70000' for '--deadline <SECS>': 70000 is not in 0..=65535 (see --help)"
        );
        assert_eq!(
            refusal(&["--list", "--policy", "auto"]),
            "the argument '--list' cannot be used with '--policy <POLICY>' (see --help)"
        );
        assert_eq!(
            refusal(&["--list", "--list"]),
            "the argument '--list' cannot be used multiple times (see --help)"
        );
        assert_eq!(
            refusal(&["x", "y"]),
            "unexpected argument 'y' found (see --help)"
        );
    }
}
