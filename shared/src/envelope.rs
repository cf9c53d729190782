//! The one JSON object every parser prints: the validated `gitmoot_result` and the `run` report.
//!
//! Field order is fixed by the struct order, so outputs are byte-stable and golden-testable.
//! `run.answer` is non-null exactly when `run.ok` is true, so a script that reads the answer can
//! never pick up a failed run's text; the last text a failed run produced is kept in
//! `run.error.last_text` for diagnosis and repair prompts.

use serde::Serialize;
use serde_json::Value;

pub use crate::event::{Reported, ToolSummary, Usage, UsageSource};
use crate::outcome::ProcessOutcome;

#[derive(Debug, Serialize)]
pub struct Envelope {
    pub gitmoot_result: Option<Value>,
    pub run: Run,
}

#[derive(Debug, Serialize)]
pub struct Run {
    pub runtime: &'static str,
    pub ok: bool,
    pub error: Option<RunError>,
    pub answer: Option<String>,
    #[serde(flatten)]
    pub facts: Facts,
    /// The process outcome folded in from `--exit-code` / `--status-file`, when one was given.
    pub process: Option<ProcessOutcome>,
    pub lines: u64,
    pub bytes: u64,
}

/// What the stream proved, whatever the verdict: printed in `run` between `answer` and
/// `process`.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Facts {
    pub session_id: Option<String>,
    pub provider: Option<String>,
    /// The runtime family of the answering model, reported only when the run succeeds.
    pub family: Option<String>,
    pub model: Option<String>,
    /// The CLI's own version, where its stream names it (claude's init row, Kimi Code's
    /// `system.version` line), so a job's record shows what ran. Null where the stream carries
    /// none: omp's and pi's session header `version` is the session format, not the CLI's.
    pub cli_version: Option<String>,
    pub stop_reason: Option<String>,
    pub usage: Usage,
    /// What the agent's tool calls came to (filled in by the parse driver from its tally).
    pub tools: ToolSummary,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RunError {
    pub class: ErrorClass,
    pub message: String,
    /// The last non-blank assistant text the stream carried, when there was one.
    pub last_text: Option<String>,
}

/// Declares [`ErrorClass`] from one list of variants and wire names, so the enum, its names
/// ([`ErrorClass::name`]) and the list of every class ([`ErrorClass::ALL`], which the help text
/// and the tests print and check) can never disagree.
macro_rules! error_classes {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// Why a run failed. Scripts branch on these names; they are part of the interface.
        #[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
        pub enum ErrorClass {
            $($(#[$doc])* #[serde(rename = $name)] $variant,)*
        }

        impl ErrorClass {
            /// Every class, in the order the help text lists them.
            pub const ALL: &'static [ErrorClass] = &[$(ErrorClass::$variant),*];

            /// The wire name, as printed in `run.error.class`.
            pub fn name(self) -> &'static str {
                match self {
                    $(ErrorClass::$variant => $name,)*
                }
            }
        }
    };
}

error_classes! {
    /// The final answer was cut off (tool loop stopped, output cap, no text after a tool call).
    Truncated => "truncated",
    /// The model turn failed (an error or aborted stop, a provider error event).
    ModelError => "model_error",
    /// The runtime gave up retrying a provider failure.
    RetryExhausted => "retry_exhausted",
    /// The stream ended while a retry was still pending.
    RetryOpen => "retry_open",
    /// The stream never reached its terminal event.
    NoAgentEnd => "no_agent_end",
    /// The CLI printed nothing on stdout: it failed before its first event (a CLI that cannot
    /// start, a sandbox or state it cannot open). Its stderr's last line is in the message
    /// when moot-run's status file kept it.
    NoOutput => "no_output",
    /// The stream ended on a terminal event that says more was scheduled.
    NotTerminal => "not_terminal",
    /// The final answer carried no text.
    EmptyAnswer => "empty_answer",
    /// A row the parser had to read could not be read, or a stream limit was exceeded.
    MalformedStream => "malformed_stream",
    /// The answer carries no `gitmoot_result` object.
    NoResult => "no_result",
    /// The answer carries a `gitmoot_result` object that does not validate.
    InvalidResult => "invalid_result",
    /// The process outcome (deadline, signal, exit status) failed the run.
    Process => "process",
    /// The command's stdout or stderr passed moot-run's limit (`--max-output`, `--max-stderr`).
    OutputLimit => "output_limit",
    /// The job changed what moot-run's `--protect` keeps (a worktree's git config or hooks, a
    /// `.git` entry, `.gitmodules`): moot-run put the originals back.
    Tampered => "tampered",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_serialised_names() {
        for class in ErrorClass::ALL {
            let wire = serde_json::to_value(class).unwrap_or_default();
            assert_eq!(wire.as_str(), Some(class.name()));
        }
    }
}
