//! Claude Code's print-mode output, read into a verdict: `--output-format stream-json --verbose`
//! (with or without `--include-partial-messages`), and `--output-format json` (the result object
//! alone, or with `--verbose` a JSON array of every row).
//!
//! Claude Code closes a print-mode run with one `result` row, and that row is the verdict: it can
//! say `is_error: true` while the CLI exits 0, and a run that never printed it (killed, crashed,
//! still retrying) proved nothing. So the result decides and a stream without one fails. Three row
//! types are read: `system` (subtype `init`: the session and model; `api_retry`: a retry in
//! flight), `assistant` (the model, the last text for diagnosis, a usage floor) and `result`.
//! Every other row (`user`, `stream_event` deltas, other `system` subtypes, types to come) is
//! skipped by the verdict whether or not it decodes; a row of those three that does not decode
//! fails the run.
//!
//! Events (see [`crate::event`]) come from the same rows: tool calls from the assistant rows'
//! `tool_use` parts, their results from the `user` rows' `tool_result` parts (decoded leniently:
//! a user row never changes the verdict), refusals of Claude Code's own permission layer from
//! `system/permission_denied` rows and the user rows' `tool_result_meta`, usage per message from
//! the assistant rows and the run's total (with its cost) from the result row.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::Value;

use crate::dialect::{decode, unreadable_row, Drift, Head, MessageSum, ResultContent, Row, Tokens};
use crate::dialect::{Dialect, RunFailure, Verdict};
use crate::envelope::{ErrorClass, Facts, Usage, UsageSource};
use crate::event::{Events, ToolKind, ToolOutcome};
use crate::sniff::{opening_type, opens_with_unread_type, raw_has_key, raw_type_among};

/// Claude Code's own tools by kind (ACP's words, as Anthropic's ACP adapter gives them where it
/// names one). Tools that would fall to a misleading shared word (`CronDelete` is no file
/// deletion, `ReportFindings` no search) are named here as `other`; MCP tools (`mcp__*`) fall
/// through to the shared words.
pub const TOOL_KINDS: &[(&str, ToolKind)] = &[
    ("Bash", ToolKind::Execute),
    ("BashOutput", ToolKind::Execute),
    ("KillShell", ToolKind::Execute),
    ("KillBash", ToolKind::Execute),
    ("Read", ToolKind::Read),
    ("NotebookRead", ToolKind::Read),
    ("Edit", ToolKind::Edit),
    ("MultiEdit", ToolKind::Edit),
    ("Write", ToolKind::Edit),
    ("NotebookEdit", ToolKind::Edit),
    ("Glob", ToolKind::Search),
    ("Grep", ToolKind::Search),
    ("LS", ToolKind::Search),
    ("WebFetch", ToolKind::Fetch),
    ("WebSearch", ToolKind::Fetch),
    ("Task", ToolKind::Think),
    ("Agent", ToolKind::Think),
    ("TodoRead", ToolKind::Think),
    ("TodoWrite", ToolKind::Think),
    ("TaskCreate", ToolKind::Think),
    ("TaskUpdate", ToolKind::Think),
    ("TaskList", ToolKind::Think),
    ("TaskGet", ToolKind::Think),
    ("TaskStop", ToolKind::Other),
    ("ExitPlanMode", ToolKind::Other),
    ("EnterPlanMode", ToolKind::Other),
    ("EnterWorktree", ToolKind::Other),
    ("ExitWorktree", ToolKind::Other),
    ("CronCreate", ToolKind::Other),
    ("CronDelete", ToolKind::Other),
    ("CronList", ToolKind::Other),
    ("ListAgents", ToolKind::Other),
    ("SendMessage", ToolKind::Other),
    ("ScheduleWakeup", ToolKind::Other),
    ("ReportFindings", ToolKind::Other),
    ("ToolSearch", ToolKind::Other),
    ("Skill", ToolKind::Other),
    ("SlashCommand", ToolKind::Other),
    ("Workflow", ToolKind::Other),
    ("Monitor", ToolKind::Other),
];

/// The name a result is counted under when its call was never seen (a stream that began late).
const UNKNOWN_TOOL: &str = "unknown";

/// At most this many refusals announced by `system/permission_denied` rows wait for their
/// result; a stream that never brings them cannot grow the set.
const MAX_PENDING_REFUSALS: usize = 16;

/// What Claude Code's permission layer writes as the result of a call it did not run (older
/// versions, before `tool_result_meta`): "Claude requested permissions to use Bash, but you
/// haven't granted it yet."
const NOT_GRANTED: &str = "you haven't granted it yet";

/// The row types this parser decodes.
const READ: &[&str] = &["system", "assistant", "result"];

/// Rows that can change the verdict: a line that names one and cannot be read fails the run.
const VERDICT_ROWS: &[&str] = &["result", "assistant"];

/// Claude Code talks to Anthropic models only (directly or through Bedrock or Vertex).
const PROVIDER: &str = "anthropic";
const FAMILY: &str = "claude";

/// The model Claude Code gives the assistant message it makes up to carry an API error.
const SYNTHETIC_MODEL: &str = "<synthetic>";

/// The claude dialect's state while the stream is read.
#[derive(Debug, Default)]
pub struct Claude {
    session_id: Option<String>,
    init_model: Option<String>,
    /// `claude_code_version` of the init row.
    cli_version: Option<String>,
    /// The model of the last real main-thread assistant message.
    model: Option<String>,
    last_text: Option<String>,
    /// Usage summed over main-thread assistant messages, once per message id: the floor when no
    /// result arrives. Claude Code prints one row per content block of a message, each repeating
    /// the message's usage, so consecutive rows of one id are counted once.
    summed: MessageSum,
    last_message_id: Option<String>,
    /// `api_retry` rows since the last real assistant message, and a description of the latest.
    retries: u64,
    last_retry: Option<String>,
    result: Option<RunResult>,
    /// An assistant message came after the last result: the stream went on, so that result is not
    /// the run's verdict.
    past_result: bool,
    /// A main-thread model event (text, thinking or a tool call) has been read.
    spoke: bool,
    /// Calls Claude Code's permission layer refused (`system/permission_denied`), until their
    /// result comes.
    refused: Vec<String>,
}

/// The content a model produces, as block and delta types name it: a stream event or a
/// message part of one of these kinds is the model speaking.
const MODEL_CONTENT: &[&str] = &[
    "text",
    "text_delta",
    "thinking",
    "thinking_delta",
    "redacted_thinking",
    "tool_use",
    "input_json_delta",
];

/// What the verdict needs of one `result` row.
#[derive(Debug, Default)]
struct RunResult {
    subtype: String,
    is_error: bool,
    text: Option<String>,
    stop_reason: Option<String>,
    terminal_reason: Option<String>,
    api_error: Option<String>,
    api_error_status: Option<String>,
    errors: Vec<String>,
    num_turns: Option<u64>,
    tokens: Tokens,
    cost_usd: Option<f64>,
    /// The model `modelUsage` names, when it names exactly one.
    model: Option<String>,
}

impl Dialect for Claude {
    const RUNTIME: &'static str = "claude";

    fn line(&mut self, line: &[u8], events: &mut Events) -> Result<(), Drift> {
        if is_skippable_at_a_glance(line) {
            match opening_type(line) {
                // The partial messages are skipped too, once the model has spoken: until then
                // they are the first sign of it.
                Some(b"stream_event") if !self.spoke => self.spoke = streams_model_content(line),
                Some(b"user") => self.user(line, events),
                _ => {}
            }
            return Ok(());
        }
        if line.trim_ascii_start().starts_with(b"[") {
            return self.array(line, events);
        }
        self.row(line, events)
    }

    fn cut_line(&self, tail: &[u8]) -> Result<(), Drift> {
        match names_verdict_row(tail) {
            Some(_) if tail.trim_ascii_start().starts_with(b"[") => {
                Err(Drift::Cut(Row::Named("the --output-format json array")))
            }
            Some(kind) => Err(Drift::Cut(Row::typed(kind))),
            None => Ok(()),
        }
    }

    fn model_spoke(&self) -> bool {
        self.spoke
    }

    fn finish(self) -> Verdict {
        let failure = self.judge();
        let final_result = self.final_result();
        let usage = self.usage();
        let answer = final_result
            .filter(|r| !r.is_error)
            .and_then(|r| r.text.clone())
            .unwrap_or_default();
        let stop_reason = final_result.and_then(|r| r.stop_reason.clone());
        let result_model = final_result.and_then(|r| r.model.clone());
        Verdict {
            facts: Facts {
                session_id: self.session_id,
                provider: Some(PROVIDER.into()),
                family: Some(FAMILY.into()),
                model: self.model.or(self.init_model).or(result_model),
                cli_version: self.cli_version,
                stop_reason,
                usage,
                tools: Default::default(),
            },
            last_text: self.last_text,
            failure,
            answer,
        }
    }
}

impl Claude {
    /// `--output-format json --verbose` prints every row as one JSON array on one line; each
    /// element is read exactly as the same row in stream-json would be.
    fn array(&mut self, line: &[u8], events: &mut Events) -> Result<(), Drift> {
        let rows = match serde_json::from_slice::<Vec<Value>>(line) {
            Ok(rows) => rows,
            Err(_) => return unidentified(line),
        };
        let mut first_error = None;
        for (index, row) in rows.iter().enumerate() {
            let finding = serde_json::to_vec(row)
                .map_err(|e| Drift::undecodable(Row::Named("an array element"), &e))
                .and_then(|bytes| self.row(&bytes, events));
            if let Err(drift) = finding {
                first_error.get_or_insert(Drift::InArray {
                    index: index + 1,
                    drift: Box::new(drift),
                });
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn row(&mut self, row: &[u8], events: &mut Events) -> Result<(), Drift> {
        let head = match serde_json::from_slice::<TypeAndSubtype<'_>>(row) {
            Ok(head) => head,
            Err(_) => return unidentified(row),
        };
        match (head.kind.as_deref(), head.subtype.as_deref()) {
            (Some("system"), Some("init")) => {
                self.init(decode(row, || Row::typed("system/init"))?, events)
            }
            (Some("system"), Some("api_retry")) => {
                self.retry(decode(row, || Row::typed("system/api_retry"))?, events)
            }
            // Read for the events only: one that does not decode changes nothing.
            (Some("system"), Some("permission_denied")) => {
                if let Ok(denied) = serde_json::from_slice::<PermissionDenied<'_>>(row) {
                    self.permission_denied(denied);
                }
            }
            (Some("assistant"), _) => {
                self.assistant(decode(row, || Row::typed("assistant"))?, events)?
            }
            (Some("result"), _) => self.result(decode(row, || Row::typed("result"))?, events)?,
            (Some("user"), _) => self.user(row, events),
            // Only until the model has spoken: the verdict never reads these partial messages.
            (Some("stream_event"), _) if !self.spoke => self.spoke = streams_model_content(row),
            _ => {}
        }
        Ok(())
    }

    fn init(&mut self, row: Init<'_>, events: &mut Events) {
        if let Some(id) = row.session_id.filter(|id| !id.is_empty()) {
            self.session_id = Some(id.into_owned());
        }
        self.init_model = row.model.map(Cow::into_owned);
        self.cli_version = row
            .claude_code_version
            .and_then(|version| version.as_str().map(str::to_owned));
        events.start(
            self.cli_version.as_deref(),
            self.init_model.as_deref(),
            Some(PROVIDER),
            self.session_id.as_deref(),
        );
    }

    fn retry(&mut self, row: ApiRetry<'_>, events: &mut Events) {
        self.retries += 1;
        let mut parts = Vec::new();
        match (row.attempt, row.max_retries) {
            (Some(attempt), Some(max)) => parts.push(format!("attempt {attempt} of {max}")),
            (Some(attempt), None) => parts.push(format!("attempt {attempt}")),
            _ => {}
        }
        if let Some(status) = row.error_status.as_ref().and_then(scalar) {
            parts.push(format!("error_status {status}"));
        }
        if let Some(error) = row.error.filter(|e| !e.trim().is_empty()) {
            parts.push(format!("error {error}"));
        }
        let retry = if parts.is_empty() {
            "with no details".into()
        } else {
            parts.join(", ")
        };
        events.retry(&format!("api_retry {retry}"));
        self.last_retry = Some(retry);
    }

    fn permission_denied(&mut self, row: PermissionDenied<'_>) {
        let Some(id) = row.tool_use_id.filter(|id| !id.is_empty()) else {
            return;
        };
        if self.refused.len() >= MAX_PENDING_REFUSALS {
            self.refused.remove(0);
        }
        self.refused.push(id.into_owned());
    }

    /// A `user` row: the results of the model's tool calls, main thread and subagents alike.
    /// Decoded leniently and for the events only: the verdict never reads a user row.
    fn user(&mut self, row: &[u8], events: &mut Events) {
        // A user row with no tool result (the prompt, a subagent's task) is not decoded at all.
        static RESULT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("tool_result"));
        if RESULT.find(row).is_none() {
            return;
        }
        let Ok(row) = serde_json::from_slice::<UserRow<'_>>(row) else {
            return;
        };
        let Some(UserContent(parts)) = row.message.and_then(|message| message.content) else {
            return;
        };
        for part in parts {
            let Some(id) = part.tool_use_id.filter(|_| part.is_tool_result) else {
                continue;
            };
            let content = part.content.unwrap_or_default();
            let output = content.output();
            let failed = part.is_error.unwrap_or(false);
            // Only a failed result's text is read here: its exit code is in it.
            let text = if failed {
                output.text()
            } else {
                Cow::Borrowed("")
            };
            let announced = self.refused.iter().position(|refused| *refused == *id);
            if let Some(at) = announced {
                self.refused.remove(at);
            }
            let refused_by_cli = announced.is_some()
                || row
                    .tool_result_meta
                    .as_ref()
                    .is_some_and(|meta| meta_rejects(meta, &id))
                || output.mentions(NOT_GRANTED);
            events.tool_result(
                &id,
                UNKNOWN_TOOL,
                TOOL_KINDS,
                ToolOutcome {
                    failed,
                    exit_code: failed.then(|| exit_code(&text)).flatten(),
                    output,
                    refused_by_cli,
                },
            );
        }
    }

    fn assistant(&mut self, row: AssistantRow<'_>, events: &mut Events) -> Result<(), Drift> {
        let Some(message) = row.message else {
            return Err(Drift::Incomplete {
                row: "an assistant row with no message".into(),
                why: "the parser cannot read it",
            });
        };
        if self.result.is_some() {
            self.past_result = true;
        }
        let content = message.content.unwrap_or_default();
        // A subagent's tool calls act on the workspace as much as the main thread's: counted.
        for part in content
            .iter()
            .filter(|part| part.kind.as_deref() == Some("tool_use"))
        {
            let id = part.id.as_ref().and_then(Value::as_str).unwrap_or_default();
            let name = part
                .name
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or(UNKNOWN_TOOL);
            events.tool_call(
                id,
                name,
                TOOL_KINDS,
                part.input.as_ref().unwrap_or(&Value::Null),
            );
        }
        // A subagent's messages (Task tool) belong to its own thread, not to this run's answer.
        if row.parent_tool_use_id.is_some() {
            return Ok(());
        }
        if message.model.as_deref() == Some(SYNTHETIC_MODEL) {
            return Ok(());
        }
        self.retries = 0;
        self.last_retry = None;
        if let Some(model) = message.model {
            self.model = Some(model.into_owned());
        }
        self.spoke |= content
            .iter()
            .any(|part| MODEL_CONTENT.contains(&part.kind.as_deref().unwrap_or_default()));
        if events.writing() {
            let reasoned: usize = content
                .iter()
                .filter(|part| part.kind.as_deref() == Some("thinking"))
                .filter_map(|part| part.thinking.as_ref().and_then(Value::as_str))
                .map(|thinking| thinking.chars().count())
                .sum();
            events.reasoning(reasoned);
        }
        let text: String = content
            .into_iter()
            .filter(|part| part.kind.as_deref() == Some("text"))
            .filter_map(|part| part.text)
            .collect();
        events.text(&text);
        if !text.trim().is_empty() {
            self.last_text = Some(text);
        }
        if let Some(usage) = message.usage {
            let id = message.id.map(Cow::into_owned);
            // Claude Code prints one row per content block, each repeating its message's usage:
            // one turn, counted once.
            if id.is_none() || id != self.last_message_id {
                let turn = usage.tokens();
                self.summed.add(turn);
                events.turn_usage(turn, None);
            }
            self.last_message_id = id;
        }
        Ok(())
    }

    fn result(&mut self, row: ResultRow<'_>, events: &mut Events) -> Result<(), Drift> {
        let Some(subtype) = row.subtype else {
            return Err(Drift::Incomplete {
                row: "a result with no subtype".into(),
                why: "the parser cannot tell success from failure",
            });
        };
        if let Some(id) = row.session_id.filter(|id| !id.is_empty()) {
            self.session_id = Some(id.into_owned());
        }
        let usage = row.usage.unwrap_or_default();
        let mut models = row.model_usage.unwrap_or_default().into_keys();
        let model = match (models.next(), models.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        };
        // `--output-format json` without `--verbose` prints this row alone: it starts the run.
        events.start(
            None,
            model.as_deref(),
            Some(PROVIDER),
            self.session_id.as_deref(),
        );
        let result = RunResult {
            subtype: subtype.into_owned(),
            is_error: row.is_error.unwrap_or(false),
            text: row.result.map(Cow::into_owned),
            stop_reason: row.stop_reason.map(Cow::into_owned),
            terminal_reason: row.terminal_reason.map(Cow::into_owned),
            api_error: row.api_error.map(Cow::into_owned),
            api_error_status: row.api_error_status.as_ref().and_then(scalar),
            errors: row
                .errors
                .unwrap_or_default()
                .iter()
                .filter_map(scalar)
                .collect(),
            num_turns: row.num_turns,
            tokens: usage.tokens(),
            cost_usd: row.total_cost_usd,
            model,
        };
        events.cumulative_usage(result.tokens, result.cost_usd);
        if result.is_error || result.subtype != "success" {
            events.error(&format!("{}{}", describe(&result), cause(&result)));
        }
        self.result = Some(result);
        self.past_result = false;
        Ok(())
    }

    fn final_result(&self) -> Option<&RunResult> {
        self.result.as_ref().filter(|_| !self.past_result)
    }

    /// The verdict, most specific cause first (an unreadable row, which outranks all of these,
    /// is applied by the parse driver).
    fn judge(&self) -> Option<RunFailure> {
        let Some(result) = self.final_result() else {
            return Some(self.no_result());
        };
        let said = describe(result);
        if result.api_error.as_deref() == Some("max_output_tokens")
            || result.stop_reason.as_deref() == Some("max_tokens")
        {
            return Some(RunFailure::new(
                ErrorClass::Truncated,
                format!(
                    "TRUNCATED: claude's answer hit the output token limit ({said}){}",
                    cause(result)
                ),
            ));
        }
        // A limit the caller set stopped the agent loop mid-work, as omp's --max-time does.
        if matches!(
            result.subtype.as_str(),
            "error_max_turns" | "error_max_budget_usd"
        ) {
            return Some(RunFailure::new(
                ErrorClass::Truncated,
                format!(
                    "TRUNCATED: claude stopped at a run limit before finishing ({said}){}",
                    cause(result)
                ),
            ));
        }
        if result.is_error || result.subtype != "success" {
            return Some(self.run_failure(result, &said));
        }
        match result.stop_reason.as_deref() {
            Some("tool_use") => return Some(RunFailure::new(
                ErrorClass::Truncated,
                "TRUNCATED: claude's final turn stopped on \"tool_use\" instead of \"end_turn\", so its text is not a finished answer",
            )),
            Some("refusal") => return Some(RunFailure::new(
                ErrorClass::ModelError,
                "claude's final turn stopped on \"refusal\": the model declined to answer",
            )),
            _ => {}
        }
        if result.num_turns == Some(0) {
            return Some(RunFailure::new(
                ErrorClass::ModelError,
                format!(
                    "claude's result ran no model turn (num_turns 0), so its text is the CLI's own, not an answer{}",
                    cause(result)
                ),
            ));
        }
        if result.text.as_deref().is_none_or(|t| t.trim().is_empty()) {
            return Some(RunFailure::new(
                ErrorClass::EmptyAnswer,
                "claude's result carried no answer text",
            ));
        }
        None
    }

    fn no_result(&self) -> RunFailure {
        if let Some(retry) = &self.last_retry {
            return RunFailure::new(
                ErrorClass::RetryOpen,
                format!("claude stream ended while an API retry was pending (api_retry {retry}) and before any result row"),
            );
        }
        let why = if self.past_result {
            "claude stream went on past its result row and ended without another: the run was cut off after it resumed"
        } else {
            "claude stream ended without a result row: the CLI died mid-stream or its print-mode envelope changed"
        };
        RunFailure::new(ErrorClass::NoAgentEnd, why)
    }

    /// A result that says the run failed: an API error Claude Code gave up retrying, or any
    /// other error subtype or `is_error`, reported with the CLI's own text.
    fn run_failure(&self, result: &RunResult, said: &str) -> RunFailure {
        let api_error = result.subtype == "success";
        match &self.last_retry {
            Some(retry) if api_error && self.retries > 0 => RunFailure::new(
                ErrorClass::RetryExhausted,
                format!(
                    "claude gave up retrying the API after {} api_retry row(s) (the last: {retry}; {said}){}",
                    self.retries,
                    cause(result)
                ),
            ),
            _ => RunFailure::new(
                ErrorClass::ModelError,
                format!("claude run failed ({said}){}", cause(result)),
            ),
        }
    }

    /// The final result's figures when there is one; else the per-message floor.
    fn usage(&self) -> Usage {
        match self.final_result() {
            Some(result) => Usage {
                cost_usd: result.cost_usd,
                ..result.tokens.usage(UsageSource::Result)
            },
            None => self.summed.usage(),
        }
    }
}

/// The result's own verdict fields, as `key value` pairs, for a failure message.
fn describe(result: &RunResult) -> String {
    let mut parts = vec![format!("result subtype {}", result.subtype)];
    if result.is_error {
        parts.push("is_error true".into());
    }
    let fields = [
        ("api_error", &result.api_error),
        ("api_error_status", &result.api_error_status),
        ("stop_reason", &result.stop_reason),
        ("terminal_reason", &result.terminal_reason),
    ];
    for (name, value) in fields {
        if let Some(value) = value {
            parts.push(format!("{name} {value}"));
        }
    }
    parts.join(", ")
}

/// `: <the CLI's own words>`: the result text, else its `errors`, else nothing.
fn cause(result: &RunResult) -> String {
    let text = result.text.as_deref().map(str::trim).unwrap_or_default();
    if !text.is_empty() {
        return format!(": {text}");
    }
    if !result.errors.is_empty() {
        return format!(": {}", result.errors.join("; "));
    }
    String::new()
}

/// A string as itself, a number or boolean as JSON; null and containers as nothing.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(_) | Value::Bool(_) => Some(value.to_string()),
        _ => None,
    }
}

/// A line that is not a readable row at all ([`unreadable_row`]).
fn unidentified(line: &[u8]) -> Result<(), Drift> {
    unreadable_row(names_verdict_row(line))
}

/// The hot path: with `--include-partial-messages` most lines are `stream_event` deltas, and
/// tool results arrive as large `user` rows. A line that opens with a type this parser does not
/// read, and nowhere names a verdict row, is skipped exactly as the full reading would skip it.
fn is_skippable_at_a_glance(line: &[u8]) -> bool {
    opens_with_unread_type(line, READ) && names_verdict_row(line).is_none()
}

/// The verdict row raw bytes name, if any: by `type`, or, for a result row cut before its `type`
/// (Claude Code writes that key near the end of the row), by the result-only `total_cost_usd`.
fn names_verdict_row(raw: &[u8]) -> Option<&'static str> {
    raw_type_among(raw, VERDICT_ROWS)
        .or_else(|| raw_has_key(raw, "total_cost_usd").then_some("result"))
}

// Wire shapes: only the fields the rules read. Unknown fields are ignored; a field that is read
// and has the wrong type fails the decode, which fails the run (fail closed).

/// A row's type and subtype, which together say whether it is read.
/// A partial-message event of the main thread that starts or extends a block of model content.
fn streams_model_content(row: &[u8]) -> bool {
    let Ok(event) = serde_json::from_slice::<StreamEventRow<'_>>(row) else {
        return false;
    };
    let Some(event) = event.event.filter(|_| event.parent_tool_use_id.is_none()) else {
        return false;
    };
    let part = match event.kind.as_deref() {
        Some("content_block_start") => event.content_block,
        Some("content_block_delta") => event.delta,
        _ => None,
    };
    part.and_then(|part| part.kind)
        .is_some_and(|kind| MODEL_CONTENT.contains(&kind.as_ref()))
}

/// A `stream_event` row (`--include-partial-messages`), as far as activity needs it.
#[derive(Deserialize)]
struct StreamEventRow<'a> {
    #[serde(borrow)]
    event: Option<StreamEvent<'a>>,
    #[serde(borrow)]
    parent_tool_use_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct StreamEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content_block: Option<Head<'a>>,
    #[serde(borrow)]
    delta: Option<Head<'a>>,
}

#[derive(Deserialize)]
struct TypeAndSubtype<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subtype: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Init<'a> {
    #[serde(borrow)]
    session_id: Option<Cow<'a, str>>,
    /// Any JSON: a reshaped version costs the record its version, never the verdict.
    claude_code_version: Option<serde_json::Value>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ApiRetry<'a> {
    attempt: Option<u64>,
    max_retries: Option<u64>,
    /// An HTTP status number, or null when the connection itself failed.
    error_status: Option<Value>,
    #[serde(borrow)]
    error: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct AssistantRow<'a> {
    #[serde(borrow)]
    message: Option<Message<'a>>,
    #[serde(borrow)]
    parent_tool_use_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Vec<ContentPart<'a>>>,
    usage: Option<TokenUsage>,
}

/// A part of an assistant message: text, thinking or a tool call. The fields only the events
/// read are any JSON, so a reshaped one costs an event, never the verdict.
#[derive(Deserialize)]
struct ContentPart<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    thinking: Option<Value>,
    id: Option<Value>,
    name: Option<Value>,
    input: Option<Value>,
}

/// A `system/permission_denied` row: Claude Code's permission layer refused a call.
#[derive(Deserialize)]
struct PermissionDenied<'a> {
    #[serde(borrow)]
    tool_use_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct UserRow<'a> {
    #[serde(borrow)]
    message: Option<UserMessage<'a>>,
    /// Per result, how the permission layer decided (`permission_decision.decision`).
    tool_result_meta: Option<Value>,
}

#[derive(Deserialize)]
struct UserMessage<'a> {
    #[serde(borrow)]
    content: Option<UserContent<'a>>,
}

/// A user message's content: a plain string (a prompt: no results) or parts.
struct UserContent<'a>(Vec<ResultPart<'a>>);

#[derive(Deserialize)]
struct ResultPart<'a> {
    #[serde(rename = "type", deserialize_with = "is_tool_result", default)]
    is_tool_result: bool,
    #[serde(borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    is_error: Option<bool>,
    #[serde(borrow)]
    content: Option<ResultContent<'a>>,
}

fn is_tool_result<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    let kind = Option::<Cow<'de, str>>::deserialize(deserializer)?;
    Ok(kind.as_deref() == Some("tool_result"))
}

impl<'de: 'a, 'a> Deserialize<'de> for UserContent<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = UserContent<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(UserContent(Vec::new()))
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(
                self,
                mut seq: S,
            ) -> Result<Self::Value, S::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element::<ResultPart<'a>>()? {
                    parts.push(part);
                }
                Ok(UserContent(parts))
            }
        }
        deserializer.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// Whether `tool_result_meta` says the permission layer rejected the call `id`.
fn meta_rejects(meta: &Value, id: &str) -> bool {
    meta.as_array().is_some_and(|entries| {
        entries.iter().any(|entry| {
            entry["id"].as_str() == Some(id)
                && entry["permission_decision"]["decision"].as_str() == Some("reject")
        })
    })
}

/// The exit code a failed Bash call's output opens with (`Exit code 2`), if it does.
fn exit_code(output: &str) -> Option<i64> {
    let rest = output.strip_prefix("Exit code ")?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit() && c != '-')
        .map_or(rest, |end| &rest[..end]);
    digits.parse().ok()
}

/// Anthropic's usage: `input_tokens` counts only the uncached part of the prompt; cache reads
/// and writes are counted apart.
#[derive(Deserialize, Default)]
struct TokenUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    /// Any JSON: a reshaped breakdown costs the reasoning figure, never the verdict.
    output_tokens_details: Option<Value>,
}

impl TokenUsage {
    /// Every prompt token the model read, cached or not, so the figure compares with the other
    /// runtimes' `input_tokens` (which include cached input).
    fn prompt_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
    }

    fn tokens(&self) -> Tokens {
        let reasoning = self
            .output_tokens_details
            .as_ref()
            .and_then(|details| details["thinking_tokens"].as_u64())
            .unwrap_or(0);
        Tokens {
            input: self.prompt_tokens(),
            output: self.output_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write: self.cache_creation_input_tokens,
            reasoning,
        }
    }
}

#[derive(Deserialize)]
struct ResultRow<'a> {
    #[serde(borrow)]
    subtype: Option<Cow<'a, str>>,
    is_error: Option<bool>,
    #[serde(borrow)]
    result: Option<Cow<'a, str>>,
    #[serde(borrow)]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    terminal_reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    api_error: Option<Cow<'a, str>>,
    /// A number on the wire, a string in some versions.
    api_error_status: Option<Value>,
    errors: Option<Vec<Value>>,
    num_turns: Option<u64>,
    total_cost_usd: Option<f64>,
    usage: Option<TokenUsage>,
    #[serde(rename = "modelUsage")]
    model_usage: Option<BTreeMap<String, IgnoredAny>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glance_skips_only_unread_rows_that_name_no_verdict_row() {
        assert!(is_skippable_at_a_glance(
            br#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#
        ));
        assert!(is_skippable_at_a_glance(br#"{"type":"user","message":{}}"#));
        assert!(!is_skippable_at_a_glance(
            br#"{"type":"system","subtype":"init"}"#
        ));
        assert!(!is_skippable_at_a_glance(br#"{"type":"assistant"}"#));
        assert!(!is_skippable_at_a_glance(
            br#"{"type":"user","x":{"type":"result"}}"#
        ));
        assert!(!is_skippable_at_a_glance(
            br#"{"is_error":false,"type":"result"}"#
        ));
    }

    #[test]
    fn prompt_tokens_count_cache_reads_and_writes() {
        let usage = TokenUsage {
            input_tokens: 3,
            cache_creation_input_tokens: 100,
            cache_read_input_tokens: 2000,
            output_tokens: 9,
            output_tokens_details: None,
        };
        assert_eq!(usage.prompt_tokens(), 2103);
    }

    fn version_after_init(init: &[u8]) -> Option<String> {
        let mut claude = Claude::default();
        claude.line(init, &mut Events::tally("claude")).unwrap();
        claude.finish().facts.cli_version
    }

    #[test]
    fn the_init_row_names_the_version_and_a_reshaped_one_costs_only_the_version() {
        let init = br#"{"type":"system","subtype":"init","session_id":"s","claude_code_version":"2.1.332"}"#;
        assert_eq!(version_after_init(init).as_deref(), Some("2.1.332"));
        let reshaped = br#"{"type":"system","subtype":"init","session_id":"s","claude_code_version":{"major":3}}"#;
        assert_eq!(version_after_init(reshaped), None);
    }

    /// Reads `lines` with events written, and returns them with the verdict's tool tally.
    fn events_of(lines: &[&str]) -> (Vec<Value>, crate::event::ToolSummary) {
        use crate::event::testing::Sink;
        let sink = Sink::default();
        let mut events = Events::tally("claude").writing_to(Box::new(sink.clone()));
        let mut claude = Claude::default();
        for line in lines {
            claude.line(line.as_bytes(), &mut events).unwrap();
        }
        let written = sink.0.borrow().clone();
        let events_read = written
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        (events_read, events.summary().clone())
    }

    const BASH_CALL: &str = r#"{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"touch x"}}],"usage":{"input_tokens":5,"output_tokens":1}}}"#;

    #[test]
    fn a_call_the_permission_layer_refused_is_denied() {
        let refused = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"Claude requested permissions to use Bash, but you haven't granted it yet.","is_error":true,"tool_use_id":"t1"}]}}"#;
        let (_, tally) = events_of(&[BASH_CALL, refused]);
        assert_eq!((tally.calls, tally.denied), (1, 1));
        assert_eq!(tally.denials[0].name, "Bash");
        // The newer spelling: a system row names the call, the result's text says nothing of it.
        let announced = r#"{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"t1","message":"needs approval"}"#;
        let needs_approval = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"touch needs approval","is_error":true,"tool_use_id":"t1"}]}}"#;
        let (_, tally) = events_of(&[BASH_CALL, announced, needs_approval]);
        assert_eq!(tally.denied, 1);
        let with_meta = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"touch needs approval","is_error":true,"tool_use_id":"t1"}]},"tool_result_meta":[{"id":"t1","permission_decision":{"decision":"reject","source":"config"}}]}"#;
        let (_, tally) = events_of(&[BASH_CALL, with_meta]);
        assert_eq!(tally.denied, 1);
    }

    #[test]
    fn a_failed_call_gives_its_exit_code_and_array_content_is_read() {
        let failed = r#"{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"Exit code 2"},{"type":"text","text":"no such file"}],"is_error":true,"tool_use_id":"t1"}]}}"#;
        let (events, tally) = events_of(&[BASH_CALL, failed]);
        assert_eq!((tally.failed, tally.denied, tally.completed), (1, 0, 0));
        let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
        assert_eq!(result["exit_code"], 2);
        assert_eq!(result["status"], "failed");
        assert_eq!(result["output_chars"], "Exit code 2\nno such file".len());
    }

    #[test]
    fn a_call_whose_result_never_came_is_counted_once_and_never_ended() {
        // Claude Code repeats a message's usage on each of its rows: one turn.
        let text_row = r#"{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"Let me look."}],"usage":{"input_tokens":5,"output_tokens":1}}}"#;
        let (events, tally) = events_of(&[text_row, BASH_CALL]);
        assert_eq!((tally.calls, tally.completed, tally.failed), (1, 0, 0));
        let usage: Vec<_> = events.iter().filter(|e| e["type"] == "usage").collect();
        assert_eq!(usage.len(), 1);
        assert!(events.iter().all(|e| e["type"] != "tool_result"));
    }

    #[test]
    fn usage_carries_cache_figures_and_the_result_its_cost() {
        let message = r#"{"type":"assistant","message":{"id":"m1","model":"claude-x","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":9}}}"#;
        let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"ok","num_turns":1,"total_cost_usd":0.5,"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":40,"output_tokens_details":{"thinking_tokens":7}}}"#;
        let (events, _) = events_of(&[message, result]);
        let usage: Vec<_> = events.iter().filter(|e| e["type"] == "usage").collect();
        assert_eq!(usage[0]["turn"]["input_tokens"], 2103);
        assert_eq!(usage[0]["turn"]["cache_read_tokens"], 2000);
        assert_eq!(usage[0]["turn"]["cache_write_tokens"], 100);
        assert!(usage[0]["cost_usd"].is_null());
        assert!(usage[1]["turn"].is_null());
        assert_eq!(usage[1]["cumulative"]["output_tokens"], 40);
        assert_eq!(usage[1]["cumulative"]["reasoning_tokens"], 7);
        assert_eq!(usage[1]["cost_usd"], 0.5);
    }

    #[test]
    fn a_user_row_that_does_not_decode_changes_nothing() {
        let odd =
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":7}]}}"#;
        let (_, tally) = events_of(&[BASH_CALL, odd]);
        assert_eq!((tally.calls, tally.completed), (1, 0));
    }
}
