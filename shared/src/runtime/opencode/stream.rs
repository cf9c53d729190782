//! opencode's `opencode run --format json` events, read into a verdict.
//!
//! Every row names its session (`sessionID`). A run is a series of steps, one model call each:
//! `step_start`, then the step's parts as they end (`text`, `tool_use`, and `reasoning` with
//! `--thinking`), then `step_finish` with the model's finish reason, its tokens and cost. A step
//! that finishes for `tool-calls` is followed by another; the run is over when a step finishes
//! for `stop`. opencode prints nothing when it goes idle, so the last step's finish decides:
//! `stop` with a text is the answer (that step's last text), `length` is a cut answer,
//! `tool-calls` says more was scheduled (opencode stops there when it rejects a permission it
//! would have asked for), and any other reason (`unknown`, when the provider's stream broke off)
//! fails. An `error` row is a failed run (opencode exits 1): a provider error it retried and gave
//! up on (`APIError` marked retryable or 5xx: it retries those itself), any other error, or
//! `MessageOutputLengthError`, a cut answer. Five row types are read (`step_start`, `text`,
//! `tool_use`, `step_finish`, `error`); every other type is skipped whether or not it decodes,
//! and a row of those five that does not decode fails the run.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::dialect::{cut_row_among, TextPart, Tokens};
use crate::dialect::{decode, unreadable_row, Dialect, Drift, Head, Row, RunFailure, Verdict};
use crate::envelope::{ErrorClass, Facts, Usage, UsageSource};
use crate::event::Events;
use crate::sniff::{opening_type, opens_with_unread_type, raw_type_among};

/// The row types this parser decodes, each of which can change the verdict: a line that names
/// one and cannot be read fails the run.
const READ: &[&str] = &["step_start", "text", "tool_use", "step_finish", "error"];

/// A part the model wrote as it thought: not read, but it shows the model has spoken.
const REASONING: &[u8] = b"reasoning";

/// The finish reason of the step that ends a run.
const STOP: &str = "stop";

/// The opencode dialect's state while the stream is read.
#[derive(Debug, Default)]
pub struct Opencode {
    session_id: Option<String>,
    step: Step,
    /// The open or last finished step's last text, and the tool it ran after that text.
    text: Option<String>,
    tool_after_text: Option<String>,
    /// The tools whose permission opencode rejected in the current step.
    rejected: Vec<String>,
    last_text: Option<String>,
    error: Option<ErrorRow>,
    spent: Option<Spent>,
    /// A text, a tool call or a thought has come from the model.
    spoke: bool,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum Step {
    #[default]
    None,
    Open,
    Finished(String),
}

/// What the steps cost: tokens and money, summed.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    tokens: Tokens,
    cost: f64,
}

impl Dialect for Opencode {
    const RUNTIME: &'static str = "opencode";

    fn line(&mut self, line: &[u8], _events: &mut Events) -> Result<(), Drift> {
        if opens_with_unread_type(line, READ) {
            self.spoke |= opening_type(line) == Some(REASONING);
            return Ok(());
        }
        let Ok(head) = serde_json::from_slice::<Head<'_>>(line) else {
            return unreadable_row(raw_type_among(line, READ));
        };
        match head.kind.as_deref() {
            Some("step_start") => self.step_start(decode(line, || Row::typed("step_start"))?),
            Some("text") => self.text(decode(line, || Row::typed("text"))?)?,
            Some("tool_use") => self.tool_use(decode(line, || Row::typed("tool_use"))?)?,
            Some("step_finish") => self.step_finish(decode(line, || Row::typed("step_finish"))?)?,
            Some("error") => self.error(decode(line, || Row::typed("error"))?),
            _ => {}
        }
        Ok(())
    }

    fn cut_line(&self, tail: &[u8]) -> Result<(), Drift> {
        cut_row_among(tail, READ)
    }

    fn model_spoke(&self) -> bool {
        self.spoke
    }

    fn finish(self) -> Verdict {
        let failure = self.judge();
        let usage = match self.spent {
            Some(spent) => Usage {
                cost_usd: Some(spent.cost),
                ..spent.tokens.usage(UsageSource::Messages)
            },
            None => Usage::default(),
        };
        let stop_reason = match &self.step {
            Step::Finished(reason) if !reason.is_empty() => Some(reason.clone()),
            Step::Finished(_) => None,
            Step::None | Step::Open => None,
        };
        Verdict {
            facts: Facts {
                session_id: self.session_id,
                // opencode's events name neither the provider nor the model, and it drives
                // any provider, so the family is unknown.
                provider: None,
                family: None,
                model: None,
                cli_version: None,
                stop_reason,
                usage,
                tools: Default::default(),
            },
            failure,
            answer: self.text.unwrap_or_default(),
            last_text: self.last_text,
        }
    }
}

impl Opencode {
    /// The session every read row names; the first one counts (a run has one).
    fn session(&mut self, id: Option<&str>) {
        if self.session_id.is_none() {
            self.session_id = id.filter(|id| !id.is_empty()).map(String::from);
        }
    }

    fn step_start(&mut self, row: PartRow<'_, IgnoredAny>) {
        self.session(row.session_id.as_deref());
        self.step = Step::Open;
        self.text = None;
        self.tool_after_text = None;
        self.rejected.clear();
    }

    fn text(&mut self, row: PartRow<'_, TextPart<'_>>) -> Result<(), Drift> {
        self.session(row.session_id.as_deref());
        self.spoke = true;
        let text = row
            .part
            .and_then(|part| part.text)
            .ok_or_else(|| incomplete("a text row with no part.text", "the answer may be lost"))?;
        if !text.trim().is_empty() {
            self.last_text = Some(text.to_string());
        }
        self.text = Some(text.into_owned());
        self.tool_after_text = None;
        Ok(())
    }

    fn tool_use(&mut self, row: PartRow<'_, ToolPart<'_>>) -> Result<(), Drift> {
        self.session(row.session_id.as_deref());
        self.spoke = true;
        let part = row.part.ok_or_else(|| {
            incomplete(
                "a tool_use row with no part",
                "the parser cannot tell whether it was the answer's last work",
            )
        })?;
        let tool = part.tool.as_deref().unwrap_or("a tool").to_string();
        let state = part.state.unwrap_or_default();
        if state.status.as_deref() == Some("error")
            && state.error.as_deref().is_some_and(is_rejection)
        {
            self.rejected.push(tool.clone());
        }
        self.tool_after_text = Some(tool);
        Ok(())
    }

    fn step_finish(&mut self, row: PartRow<'_, FinishPart<'_>>) -> Result<(), Drift> {
        self.session(row.session_id.as_deref());
        let part = row.part.ok_or_else(|| {
            incomplete(
                "a step_finish row with no part",
                "the parser cannot tell how the step ended",
            )
        })?;
        let reason = part.reason.map(Cow::into_owned).unwrap_or_default();
        if let Some(tokens) = part.tokens {
            let spent = self.spent.get_or_insert_with(Spent::default);
            spent.tokens.add(Tokens {
                input: tokens.prompt(),
                output: tokens.completion(),
                ..Tokens::default()
            });
            spent.cost += part.cost.unwrap_or(0.0);
        }
        self.step = Step::Finished(reason);
        Ok(())
    }

    fn error(&mut self, row: ErrorLine<'_>) {
        self.session(row.session_id.as_deref());
        self.error = Some(row.error.unwrap_or_default());
    }

    /// The verdict, most specific cause first (an unreadable row, which outranks all of these,
    /// is applied by the parse driver).
    fn judge(&self) -> Option<RunFailure> {
        if let Some(error) = &self.error {
            return Some(error.failure());
        }
        match &self.step {
            Step::None => Some(RunFailure::new(
                ErrorClass::NoAgentEnd,
                "opencode stream carried no step: the CLI died before its first model call, or its --format json events changed",
            )),
            Step::Open => Some(RunFailure::new(
                ErrorClass::NoAgentEnd,
                "opencode stream ended inside a step, without its step_finish: the CLI was stopped or died mid-step",
            )),
            Step::Finished(reason) => self.finished(reason),
        }
    }

    fn finished(&self, reason: &str) -> Option<RunFailure> {
        match reason {
            STOP => self.answer_failure(),
            "length" => Some(RunFailure::new(
                ErrorClass::Truncated,
                "TRUNCATED: opencode's last step finished for length: the model hit its output token limit",
            )),
            "tool-calls" if !self.rejected.is_empty() => Some(RunFailure::new(
                ErrorClass::NotTerminal,
                format!(
                    "opencode stopped after rejecting a permission it would have asked for ({}): \
                     headless nobody can approve it; run in a seat or with --policy danger-full-access",
                    self.rejected.join(", ")
                ),
            )),
            "tool-calls" => Some(RunFailure::new(
                ErrorClass::NotTerminal,
                "opencode stream ended after a step that finished for tool-calls: another step was due",
            )),
            "" => Some(RunFailure::new(
                ErrorClass::ModelError,
                "opencode's last step finished with no reason",
            )),
            "unknown" => Some(RunFailure::new(
                ErrorClass::ModelError,
                "opencode's last step finished for unknown, not stop: the provider's stream broke off before its finish reason",
            )),
            other => Some(RunFailure::new(
                ErrorClass::ModelError,
                format!("opencode's last step finished for {other}, not stop"),
            )),
        }
    }

    /// A stopped run's answer: the last step's last text, written after its last tool.
    fn answer_failure(&self) -> Option<RunFailure> {
        if let Some(tool) = &self.tool_after_text {
            let message = match &self.text {
                Some(_) => format!("TRUNCATED: opencode's last text was followed by a {tool} call and no later text, so it is narration, not an answer"),
                None => format!("TRUNCATED: opencode's last step ran {tool} and wrote no text after it"),
            };
            return Some(RunFailure::new(ErrorClass::Truncated, message));
        }
        match &self.text {
            Some(text) if !text.trim().is_empty() => None,
            Some(_) => Some(RunFailure::new(
                ErrorClass::EmptyAnswer,
                "opencode's final text was blank",
            )),
            None => Some(RunFailure::new(
                ErrorClass::EmptyAnswer,
                "opencode's last step finished for stop with no text",
            )),
        }
    }
}

/// How opencode words a tool call whose permission it rejected.
fn is_rejection(error: &str) -> bool {
    error.contains("rejected permission")
}

/// A read row that decoded but lacks what the rules need.
fn incomplete(row: &str, why: &'static str) -> Drift {
    Drift::Incomplete {
        row: row.into(),
        why,
    }
}

// Wire shapes: only the fields the rules read. Unknown fields are ignored; a field that is read
// and has the wrong type fails the decode, which fails the run (fail closed).

/// A part row: its session and its part, of the shape its type has.
#[derive(Deserialize)]
struct PartRow<'a, P> {
    #[serde(rename = "sessionID", borrow)]
    session_id: Option<Cow<'a, str>>,
    part: Option<P>,
}

/// An `error` row: its session and its error.
#[derive(Deserialize)]
struct ErrorLine<'a> {
    #[serde(rename = "sessionID", borrow)]
    session_id: Option<Cow<'a, str>>,
    error: Option<ErrorRow>,
}

#[derive(Deserialize)]
struct ToolPart<'a> {
    #[serde(borrow)]
    tool: Option<Cow<'a, str>>,
    state: Option<ToolState>,
}

#[derive(Default, Deserialize)]
struct ToolState {
    status: Option<String>,
    error: Option<String>,
}

#[derive(Deserialize)]
struct FinishPart<'a> {
    #[serde(borrow)]
    reason: Option<Cow<'a, str>>,
    tokens: Option<StepTokens>,
    cost: Option<f64>,
}

/// opencode's step tokens: `input` leaves out the cached part of the prompt (`cache.read`,
/// `cache.write`) and `output` the reasoning, so both are added back: the figures then compare
/// with the other runtimes' (prompt tokens including cached input, every generated token).
#[derive(Deserialize)]
struct StepTokens {
    #[serde(default)]
    input: u64,
    #[serde(default)]
    output: u64,
    #[serde(default)]
    reasoning: u64,
    #[serde(default)]
    cache: CacheTokens,
}

#[derive(Default, Deserialize)]
struct CacheTokens {
    #[serde(default)]
    read: u64,
    #[serde(default)]
    write: u64,
}

impl StepTokens {
    fn prompt(&self) -> u64 {
        self.input
            .saturating_add(self.cache.read)
            .saturating_add(self.cache.write)
    }

    fn completion(&self) -> u64 {
        self.output.saturating_add(self.reasoning)
    }
}

/// An `error` row's error: opencode's named errors (`APIError`, `ProviderAuthError`,
/// `MessageOutputLengthError`, `MessageAbortedError`, `UnknownError`...) with their data.
#[derive(Debug, Default, Deserialize)]
struct ErrorRow {
    name: Option<String>,
    data: Option<ErrorData>,
}

#[derive(Debug, Default, Deserialize)]
struct ErrorData {
    message: Option<String>,
    #[serde(rename = "statusCode")]
    status_code: Option<u64>,
    #[serde(rename = "isRetryable")]
    is_retryable: Option<bool>,
}

impl ErrorRow {
    fn failure(&self) -> RunFailure {
        let name = self.name.as_deref().unwrap_or("an unnamed error");
        let data = self.data.as_ref();
        let message = data
            .and_then(|d| d.message.as_deref())
            .map(str::trim)
            .filter(|m| !m.is_empty());
        let status = data.and_then(|d| d.status_code);
        let said = match (message, status) {
            (Some(message), Some(status)) => format!("{name} {status}: {message}"),
            (Some(message), None) => format!("{name}: {message}"),
            (None, Some(status)) => format!("{name} {status}"),
            (None, None) => name.to_string(),
        };
        let retried = name == "APIError"
            && (data.and_then(|d| d.is_retryable) == Some(true)
                || status.is_some_and(|s| s >= 500));
        if name == "MessageOutputLengthError" {
            RunFailure::new(
                ErrorClass::Truncated,
                format!("TRUNCATED: opencode's answer hit the output token limit ({said})"),
            )
        } else if retried {
            RunFailure::new(
                ErrorClass::RetryExhausted,
                format!("opencode gave up retrying a provider error: {said}"),
            )
        } else {
            RunFailure::new(
                ErrorClass::ModelError,
                format!("opencode reported an error: {said}"),
            )
        }
    }
}
