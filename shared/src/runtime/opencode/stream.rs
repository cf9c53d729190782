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
//!
//! Events (see `crate::event`): a `tool_use` row carries the whole call in its final state, so
//! it is one tool call and one result (a `pending` or `running` row, should a version print one,
//! is the call alone, and the final row of the same `callID` then only its result); the result
//! fails on status `error` (its `error` is the output) or on a nonzero `metadata.exit` (the
//! shell tool's exit code), and is denied when the output names a refusal or when opencode's
//! own permission layer refused the call. Each `step_finish` is one turn's usage and cost.
//! `text` rows are the assistant's texts and `reasoning` rows its thoughts (decoded only while
//! events are written). The fields read only for events never fail a row: any other shape of
//! them reads as absent.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::dialect::{cut_row_among, TextPart, Tokens};
use crate::dialect::{decode, unreadable_row, Dialect, Drift, Head, Row, RunFailure, Verdict};
use crate::envelope::{ErrorClass, Facts, Usage, UsageSource};
use crate::event::{Events, ToolKind, ToolOutcome, ToolOutput};
use crate::json_text::LooseStr;
use crate::sniff::{opening_type, opens_with_unread_type, raw_type_among};

/// The row types this parser decodes, each of which can change the verdict: a line that names
/// one and cannot be read fails the run.
const READ: &[&str] = &["step_start", "text", "tool_use", "step_finish", "error"];

/// A part the model wrote as it thought: not read, but it shows the model has spoken.
const REASONING: &[u8] = b"reasoning";

/// The finish reason of the step that ends a run.
const STOP: &str = "stop";

/// opencode's built-in tools by their ids, as `tool_use` rows name them (older and newer
/// releases' ids both); a plugin's or an MCP server's tool falls to the shared words.
pub const TOOL_KINDS: &[(&str, ToolKind)] = &[
    ("bash", ToolKind::Execute),
    ("shell", ToolKind::Execute),
    // Code mode: the model's script calls tools.
    ("execute", ToolKind::Execute),
    ("read", ToolKind::Read),
    ("list", ToolKind::Read),
    // Loads a skill's instructions.
    ("skill", ToolKind::Read),
    ("edit", ToolKind::Edit),
    ("multiedit", ToolKind::Edit),
    ("write", ToolKind::Edit),
    ("patch", ToolKind::Edit),
    ("apply_patch", ToolKind::Edit),
    ("glob", ToolKind::Search),
    ("grep", ToolKind::Search),
    ("lsp", ToolKind::Search),
    ("webfetch", ToolKind::Fetch),
    // Both ask an external search service.
    ("websearch", ToolKind::Fetch),
    ("codesearch", ToolKind::Fetch),
    ("todowrite", ToolKind::Think),
    ("todoread", ToolKind::Think),
    // A subagent's run, planned and reported back.
    ("task", ToolKind::Think),
    ("question", ToolKind::Other),
    ("plan_enter", ToolKind::Other),
    ("plan_exit", ToolKind::Other),
    ("batch", ToolKind::Other),
    ("invalid", ToolKind::Other),
];

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
    /// Calls of the open step reported by a `pending` or `running` row, whose final row is
    /// then only their result. A new step forgets them (opencode settles every call of a step
    /// before it finishes), so the set never outgrows one step.
    called: HashSet<String>,
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

    fn line(&mut self, line: &[u8], events: &mut Events) -> Result<(), Drift> {
        if opens_with_unread_type(line, READ) {
            if opening_type(line) == Some(REASONING) {
                self.spoke = true;
                if events.writing() {
                    reasoning(line, events);
                }
            }
            return Ok(());
        }
        let Ok(head) = serde_json::from_slice::<Head<'_>>(line) else {
            return unreadable_row(raw_type_among(line, READ));
        };
        match head.kind.as_deref() {
            Some("step_start") => {
                self.step_start(decode(line, || Row::typed("step_start"))?, events)
            }
            Some("text") => self.text(decode(line, || Row::typed("text"))?, events)?,
            // The call's input is decoded only to be written.
            Some("tool_use") if events.writing() => {
                self.tool_use::<Value>(decode(line, || Row::typed("tool_use"))?, events)?
            }
            Some("tool_use") => {
                self.tool_use::<IgnoredAny>(decode(line, || Row::typed("tool_use"))?, events)?
            }
            Some("step_finish") => {
                self.step_finish(decode(line, || Row::typed("step_finish"))?, events)?
            }
            Some("error") => self.error(decode(line, || Row::typed("error"))?, events),
            Some("reasoning") if events.writing() => reasoning(line, events),
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
    /// The session every read row names; the first one counts (a run has one), and starts the
    /// events (opencode's rows name neither the model, the provider nor the CLI's version).
    fn session(&mut self, id: Option<&str>, events: &mut Events) {
        if self.session_id.is_none() {
            self.session_id = id.filter(|id| !id.is_empty()).map(String::from);
            if let Some(id) = &self.session_id {
                events.start(None, None, None, Some(id));
            }
        }
    }

    fn step_start(&mut self, row: PartRow<'_, IgnoredAny>, events: &mut Events) {
        self.session(row.session_id.as_deref(), events);
        self.step = Step::Open;
        self.text = None;
        self.tool_after_text = None;
        self.rejected.clear();
        self.called.clear();
    }

    fn text(&mut self, row: PartRow<'_, TextPart<'_>>, events: &mut Events) -> Result<(), Drift> {
        self.session(row.session_id.as_deref(), events);
        self.spoke = true;
        let text = row
            .part
            .and_then(|part| part.text)
            .ok_or_else(|| incomplete("a text row with no part.text", "the answer may be lost"))?;
        events.text(&text);
        if !text.trim().is_empty() {
            self.last_text = Some(text.to_string());
        }
        self.text = Some(text.into_owned());
        self.tool_after_text = None;
        Ok(())
    }

    fn tool_use<I: CallInput>(
        &mut self,
        row: PartRow<'_, ToolPart<'_, I>>,
        events: &mut Events,
    ) -> Result<(), Drift> {
        self.session(row.session_id.as_deref(), events);
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
        let id = part.call_id.or(part.id).unwrap_or_default();
        self.report_tool(&id, &tool, &state, events);
        self.tool_after_text = Some(tool);
        Ok(())
    }

    /// The call, and its result once the row carries the final state; a call already
    /// reported by an earlier row of the same `callID` is not reported again.
    fn report_tool<I: CallInput>(
        &mut self,
        id: &str,
        tool: &str,
        state: &ToolState<'_, I>,
        events: &mut Events,
    ) {
        let failed = match state.status.as_deref() {
            Some("completed") => false,
            Some("error") => true,
            _ => {
                if self.called.insert(id.to_string()) {
                    events.tool_call(id, tool, TOOL_KINDS, state.input.value());
                }
                return;
            }
        };
        if !self.called.remove(id) {
            events.tool_call(id, tool, TOOL_KINDS, state.input.value());
        }
        let output = state.output.0.as_ref().map(std::slice::from_ref);
        let (output, error) = (output.map(ToolOutput::Json), state.error.as_deref());
        let output = if failed {
            error.map(ToolOutput::Text).or(output)
        } else {
            output.or(error.map(ToolOutput::Text))
        }
        .unwrap_or_default();
        events.tool_result(
            id,
            tool,
            TOOL_KINDS,
            ToolOutcome {
                failed,
                exit_code: state.metadata.exit,
                output,
                refused_by_cli: failed && is_refusal(&output.text()),
            },
        );
    }

    fn step_finish(
        &mut self,
        row: PartRow<'_, FinishPart<'_>>,
        events: &mut Events,
    ) -> Result<(), Drift> {
        self.session(row.session_id.as_deref(), events);
        let part = row.part.ok_or_else(|| {
            incomplete(
                "a step_finish row with no part",
                "the parser cannot tell how the step ended",
            )
        })?;
        let reason = part.reason.map(Cow::into_owned).unwrap_or_default();
        if let Some(tokens) = part.tokens {
            let turn = tokens.normalised();
            let spent = self.spent.get_or_insert_with(Spent::default);
            spent.tokens.add(turn);
            spent.cost += part.cost.unwrap_or(0.0);
            events.turn_usage(turn, part.cost);
        }
        self.step = Step::Finished(reason);
        Ok(())
    }

    fn error(&mut self, row: ErrorLine<'_>, events: &mut Events) {
        self.session(row.session_id.as_deref(), events);
        let error = row.error.unwrap_or_default();
        events.error(&error.said());
        self.error = Some(error);
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

/// A failed call's error that says it was refused rather than failed: opencode's permission
/// layer (a rejected ask, a deny rule) or its file system layer, which names the kernel's
/// EACCES and EPERM `PermissionDenied` (words the shared denial reading does not know).
fn is_refusal(error: &str) -> bool {
    is_rejection(error)
        || error.contains("specified a rule which prevents you from using this specific tool call")
        || error.starts_with("PermissionDenied")
}

/// A `reasoning` row, for its size: not a row the verdict reads, so one that does not decode
/// is passed over.
fn reasoning(line: &[u8], events: &mut Events) {
    if let Ok(row) = serde_json::from_slice::<PartRow<'_, TextPart<'_>>>(line) {
        if let Some(text) = row.part.and_then(|part| part.text) {
            events.reasoning(text.chars().count());
        }
    }
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

/// A tool part; `I` is how its input is read: a `Value` while events are written, skipped
/// otherwise.
#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a, I: Deserialize<'de> + Default"))]
struct ToolPart<'a, I> {
    #[serde(borrow)]
    tool: Option<Cow<'a, str>>,
    state: Option<ToolState<'a, I>>,
    // Read for events only, so never strict (see `Loose`).
    #[serde(rename = "callID", default, deserialize_with = "loose")]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "loose")]
    id: Option<Cow<'a, str>>,
}

#[derive(Default, Deserialize)]
#[serde(bound(deserialize = "'de: 'a, I: Deserialize<'de> + Default"))]
struct ToolState<'a, I> {
    status: Option<String>,
    error: Option<String>,
    #[serde(default)]
    input: I,
    /// Kept as its JSON text: the tally searches it, events count it.
    #[serde(default, borrow)]
    output: LooseStr<'a>,
    #[serde(default, deserialize_with = "loose")]
    metadata: ToolMetadata,
}

/// A call's input as events need it.
trait CallInput: Default {
    fn value(&self) -> &Value;
}

impl CallInput for Value {
    fn value(&self) -> &Value {
        self
    }
}

impl CallInput for IgnoredAny {
    fn value(&self) -> &Value {
        &Value::Null
    }
}

/// A tool state's `metadata`, for the shell tool's exit code (`exit`: null when the command
/// was killed by a signal).
#[derive(Default)]
struct ToolMetadata {
    exit: Option<i64>,
}

/// A field read for events only, in whatever shape it comes: what the type takes from that
/// shape, or its default for any other, so that such a field never fails a row the verdict
/// reads.
trait Loose<'de>: Default {
    fn text(_text: Cow<'de, str>) -> Self {
        Self::default()
    }

    fn integer(_value: i64) -> Self {
        Self::default()
    }

    fn object<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

impl<'de> Loose<'de> for Option<Cow<'de, str>> {
    fn text(text: Cow<'de, str>) -> Self {
        Some(text)
    }
}

impl<'de> Loose<'de> for Option<i64> {
    fn integer(value: i64) -> Self {
        Some(value)
    }
}

impl<'de> Loose<'de> for ToolMetadata {
    fn object<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut metadata = ToolMetadata::default();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "exit" {
                metadata.exit = map.next_value::<Lax<Option<i64>>>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(metadata)
    }
}

/// `deserialize_with` for a [`Loose`] field.
fn loose<'de, D: Deserializer<'de>, T: Loose<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_any(LooseVisitor(PhantomData))
}

/// A [`Loose`] value where a `Deserialize` one is wanted (a map's value).
struct Lax<T>(T);

impl<'de, T: Loose<'de>> Deserialize<'de> for Lax<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        loose(deserializer).map(Lax)
    }
}

struct LooseVisitor<T>(PhantomData<T>);

impl<'de, T: Loose<'de>> Visitor<'de> for LooseVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
        Ok(T::text(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok(T::text(Cow::Owned(v.to_string())))
    }
    fn visit_string<E>(self, v: String) -> Result<T, E> {
        Ok(T::text(Cow::Owned(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<T, E> {
        Ok(T::integer(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<T, E> {
        Ok(i64::try_from(v).map_or_else(|_| T::default(), T::integer))
    }
    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(T::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::object(map)
    }
}

#[derive(Deserialize)]
struct FinishPart<'a> {
    #[serde(borrow)]
    reason: Option<Cow<'a, str>>,
    tokens: Option<StepTokens>,
    cost: Option<f64>,
}

/// opencode's step tokens: `input` leaves out the cached part of the prompt (`cache.read`,
/// `cache.write`) and `output` the reasoning (its usage computation subtracts both from the
/// provider's figures), so both are added back: the figures then compare with the other
/// runtimes' (prompt tokens including cached input, every generated token).
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
    /// The step's tokens as moot counts them (see [`Tokens`]).
    fn normalised(&self) -> Tokens {
        Tokens {
            input: self
                .input
                .saturating_add(self.cache.read)
                .saturating_add(self.cache.write),
            output: self.output.saturating_add(self.reasoning),
            cache_read: self.cache.read,
            cache_write: self.cache.write,
            reasoning: self.reasoning,
        }
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
    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("an unnamed error")
    }

    /// What the error says: its name, its HTTP status and its message where it has them.
    fn said(&self) -> String {
        let name = self.name();
        let data = self.data.as_ref();
        let message = data
            .and_then(|d| d.message.as_deref())
            .map(str::trim)
            .filter(|m| !m.is_empty());
        match (message, data.and_then(|d| d.status_code)) {
            (Some(message), Some(status)) => format!("{name} {status}: {message}"),
            (Some(message), None) => format!("{name}: {message}"),
            (None, Some(status)) => format!("{name} {status}"),
            (None, None) => name.to_string(),
        }
    }

    fn failure(&self) -> RunFailure {
        let name = self.name();
        let data = self.data.as_ref();
        let status = data.and_then(|d| d.status_code);
        let said = self.said();
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::event::testing::Sink;

    /// Reads `rows` with events written; returns the events and the tally.
    fn read(rows: &[&str]) -> (Vec<Value>, crate::event::ToolSummary, Verdict) {
        let sink = Sink::default();
        let mut events = Events::tally("opencode").writing_to(Box::new(sink.clone()));
        let mut dialect = Opencode::default();
        for row in rows {
            dialect.line(row.as_bytes(), &mut events).unwrap();
        }
        let written = sink.0.borrow().clone();
        let lines = written
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        (lines, events.summary().clone(), dialect.finish())
    }

    fn tool(call: &str, tool: &str, state: &str) -> String {
        format!(
            r#"{{"type":"tool_use","sessionID":"ses_1","part":{{"type":"tool","tool":"{tool}","callID":"{call}","state":{state}}}}}"#
        )
    }

    const START: &str = r#"{"type":"step_start","sessionID":"ses_1","part":{}}"#;

    #[test]
    fn a_failed_call_and_a_nonzero_exit_fail() {
        let rows = [
            START.to_string(),
            tool(
                "c1",
                "read",
                r#"{"status":"error","input":{"filePath":"/x"},"error":"File not found: /x"}"#,
            ),
            tool(
                "c2",
                "bash",
                r#"{"status":"completed","input":{"command":"false"},"output":"","metadata":{"exit":1}}"#,
            ),
        ];
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let (events, tally, _) = read(&rows);
        assert_eq!((tally.calls, tally.failed, tally.denied), (2, 2, 0));
        let results: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "tool_result")
            .collect();
        assert_eq!(results[0]["status"], "failed");
        assert_eq!(results[0]["output_chars"], 18);
        assert_eq!(results[1]["exit_code"], 1);
        let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
        assert_eq!(call["input"]["filePath"], "/x");
        assert_eq!(call["kind"], "read");
    }

    #[test]
    fn refusals_by_opencode_or_the_kernel_are_denials() {
        let rows = [
            START.to_string(),
            tool(
                "c1",
                "bash",
                r#"{"status":"error","error":"The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules []"}"#,
            ),
            tool(
                "c2",
                "edit",
                r#"{"status":"error","error":"PermissionDenied: FileSystem.writeFile (/etc/x)"}"#,
            ),
            tool(
                "c3",
                "bash",
                r#"{"status":"completed","output":"rm: cannot remove '/x': Operation not permitted\n","metadata":{"exit":1}}"#,
            ),
            // Not a refusal: the question tool's dismissal.
            tool(
                "c4",
                "question",
                r#"{"status":"error","error":"The user dismissed this question"}"#,
            ),
        ];
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let (_, tally, _) = read(&rows);
        assert_eq!((tally.calls, tally.denied, tally.failed), (4, 3, 1));
        assert_eq!(
            tally.denials[1].said,
            "PermissionDenied: FileSystem.writeFile (/etc/x)"
        );
    }

    #[test]
    fn a_call_reported_under_way_is_one_call_and_one_whose_result_never_came_has_none() {
        let rows = [
            START.to_string(),
            tool("c1", "bash", r#"{"status":"pending","input":{}}"#),
            tool(
                "c1",
                "bash",
                r#"{"status":"running","input":{"command":"ls"}}"#,
            ),
            tool(
                "c1",
                "bash",
                r#"{"status":"completed","input":{"command":"ls"},"output":"a\n","metadata":{"exit":0}}"#,
            ),
            tool(
                "c2",
                "grep",
                r#"{"status":"running","input":{"pattern":"x"}}"#,
            ),
        ];
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let (events, tally, _) = read(&rows);
        assert_eq!((tally.calls, tally.completed, tally.failed), (2, 1, 0));
        let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["start", "tool_call", "tool_result", "tool_call"]);
    }

    #[test]
    fn event_only_fields_of_any_shape_never_fail_the_row() {
        let rows = [
            START.to_string(),
            tool(
                "c1",
                "bash",
                r#"{"status":"completed","input":7,"output":{"x":1},"metadata":{"exit":"one"}}"#,
            ),
            tool("c2", "bash", r#"{"status":"completed","metadata":[1]}"#),
            r#"{"type":"tool_use","part":{"tool":"bash","callID":5,"state":{"status":"completed","metadata":{"exit":1.5}}}}"#.to_string(),
        ];
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let (events, tally, _) = read(&rows);
        assert_eq!((tally.calls, tally.completed), (3, 3));
        let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
        assert_eq!(result["exit_code"], Value::Null);
        assert_eq!(result["output_chars"], 0);
    }

    #[test]
    fn cached_and_reasoning_tokens_fill_the_usage_per_step() {
        let finish = r#"{"type":"step_finish","sessionID":"ses_1","part":{"reason":"stop","tokens":{"input":100,"output":40,"reasoning":10,"cache":{"read":1350,"write":50}},"cost":0.25}}"#;
        let text = r#"{"type":"text","sessionID":"ses_1","part":{"text":"done"}}"#;
        let reasoning = r#"{"type":"reasoning","sessionID":"ses_1","part":{"text":"hmm"}}"#;
        let (events, _, verdict) = read(&[START, reasoning, text, finish, START, text, finish]);
        let usage = &verdict.facts.usage;
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.reasoning_tokens,
                usage.cost_usd
            ),
            (3000, 100, 2700, 100, 20, Some(0.5))
        );
        let turns: Vec<&Value> = events.iter().filter(|e| e["type"] == "usage").collect();
        assert_eq!(turns.len(), 2);
        assert_eq!(turns[0]["turn"]["input_tokens"], 1500);
        assert_eq!(turns[0]["turn"]["cache_read_tokens"], 1350);
        assert_eq!(turns[1]["cumulative"]["output_tokens"], 100);
        assert_eq!(turns[1]["cost_usd"], 0.25);
        assert_eq!(events[1]["type"], "reasoning");
        assert_eq!(events[1]["chars"], 3);
        assert!(verdict.failure.is_none());
    }
}
