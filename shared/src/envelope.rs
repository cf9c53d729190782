//! The one JSON object every parser prints: the validated `gitmoot_result` and the `run` report.
//!
//! Field order is fixed by the struct order, so outputs are byte-stable and golden-testable.
//! `run.answer` is non-null exactly when `run.ok` is true, so a script that reads the answer can
//! never pick up a failed run's text; the last text a failed run produced is kept in
//! `run.error.last_text` for diagnosis and repair prompts.

use serde::Serialize;
use serde_json::Value;

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
    pub session_id: Option<String>,
    pub provider: Option<String>,
    pub family: Option<String>,
    pub model: Option<String>,
    pub stop_reason: Option<String>,
    pub usage: Usage,
    /// The process outcome folded in from `--exit-code` / `--status-file`, when one was given.
    pub process: Option<ProcessOutcome>,
    pub lines: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RunError {
    pub class: ErrorClass,
    pub message: String,
    /// The last non-blank assistant text the stream carried, when there was one.
    pub last_text: Option<String>,
}

/// Why a run failed. Scripts branch on these names; they are part of the interface.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The final answer was cut off (tool loop stopped, output cap, no text after a tool call).
    Truncated,
    /// The model turn failed (an error or aborted stop, a provider error event).
    ModelError,
    /// The runtime gave up retrying a provider failure.
    RetryExhausted,
    /// The stream ended while a retry was still pending.
    RetryOpen,
    /// The stream never reached its terminal event.
    NoAgentEnd,
    /// The stream ended on a terminal event that says more was scheduled.
    NotTerminal,
    /// The final answer carried no text.
    EmptyAnswer,
    /// A row the parser had to read could not be read, or a stream limit was exceeded.
    MalformedStream,
    /// The answer carries no `gitmoot_result` object.
    NoResult,
    /// The answer carries a `gitmoot_result` object that does not validate.
    InvalidResult,
    /// The process outcome (deadline, signal, exit status) failed the run.
    Process,
}

impl ErrorClass {
    /// The wire name, as printed in `run.error.class`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Truncated => "truncated",
            ErrorClass::ModelError => "model_error",
            ErrorClass::RetryExhausted => "retry_exhausted",
            ErrorClass::RetryOpen => "retry_open",
            ErrorClass::NoAgentEnd => "no_agent_end",
            ErrorClass::NotTerminal => "not_terminal",
            ErrorClass::EmptyAnswer => "empty_answer",
            ErrorClass::MalformedStream => "malformed_stream",
            ErrorClass::NoResult => "no_result",
            ErrorClass::InvalidResult => "invalid_result",
            ErrorClass::Process => "process",
        }
    }
}

/// Token usage. Always reported, on failures too, as a floor of what was billed.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
    pub source: UsageSource,
}

/// Where the usage figures came from.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// The stream carried no usage at all.
    #[default]
    None,
    /// Summed over the assistant messages.
    Messages,
    /// A run-level rollup the runtime reported (omp's OTEL telemetry).
    Telemetry,
    /// The runtime's final result or turn event.
    Result,
}
