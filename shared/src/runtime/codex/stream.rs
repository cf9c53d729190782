//! Codex's `codex exec --json` JSONL, read into a verdict.
//!
//! codex exec runs one turn and ends it with `turn.completed` (and the usage) or `turn.failed`
//! (and the error); an interrupted or killed turn prints neither, so a stream without
//! `turn.completed` fails. The answer is the text of the turn's last `agent_message` item, with
//! codex's own fallback (as for `--output-last-message`) to its last `plan` item; earlier agent
//! messages are narration between tool calls. Top-level `error` rows are settled by the turn:
//! transient ones ("Reconnecting... 2/5 (...)") and any other error that a completed turn follows
//! are not failures, an error the stream does not get past is. `item.completed` items of type
//! `error` are codex's non-fatal warnings (unknown model metadata, a config warning) and are
//! skipped. Six row types are read (`thread.started`, `turn.started`, `turn.completed`,
//! `turn.failed`, `item.completed`, `error`); every other type is skipped whether or not it
//! decodes, and a row of those six that does not decode fails the run.
//!
//! Events: a tool call is an item of one of [`WORK_ITEMS`]; codex prints it as `item.started`
//! and again as `item.completed` with the same id, which is one call (reported at the start, or
//! at the completion when no start was seen) and one result (at the completion). `item.started`
//! is decoded for that alone. The fields the events read and the verdict does not (a tool's
//! id, status, exit code and output, the cache and reasoning counts) decode whatever their
//! shape ([`Loose`]), so they can never fail a row the verdict reads.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::dialect::{cut_row_among, Dialect, RunFailure, Verdict};
use crate::dialect::{decode, unreadable_row, Drift, Head, Row, Tokens};
use crate::envelope::{ErrorClass, Facts, Usage, UsageSource};
use crate::event::{Events, Input, ToolKind, ToolOutcome, ToolOutput};
use crate::json_text::{JsonStr, LooseStr, RawFields};
use crate::sniff::{opening_type, opens_with_unread_type, raw_type_among};

/// The row types this parser decodes: the six the verdict reads, and `item.started` for the
/// tool calls (never for the verdict).
const READ: &[&str] = &[
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.completed",
    "error",
    "item.started",
];

/// Row and item types that can change the verdict: a line that names one and cannot be read
/// fails the run.
const VERDICT_ROWS: &[&str] = &[
    "turn.completed",
    "turn.failed",
    "error",
    "agent_message",
    "plan",
];

/// Item types that are the agent working (a tool call and its result), not answering.
const WORK_ITEMS: &[&str] = &[
    "command_execution",
    "file_change",
    "mcp_tool_call",
    "collab_tool_call",
    "web_search",
];

/// The kinds of codex's tool calls. The JSONL does not print the name the model called: a
/// call is named by its item type, an MCP call `server__tool` (as codex names MCP tools to the
/// model; their kind then comes from the shared words), a collab call by its `tool`.
const TOOL_KINDS: &[(&str, ToolKind)] = &[
    ("command_execution", ToolKind::Execute),
    ("file_change", ToolKind::Edit),
    ("web_search", ToolKind::Fetch),
    ("spawn_agent", ToolKind::Other),
    ("send_input", ToolKind::Other),
    ("wait", ToolKind::Other),
    ("close_agent", ToolKind::Other),
];

const FAMILY: &str = "codex";

/// How codex words a transient error it is retrying ("Reconnecting... 1/5 (...)").
const RECONNECTING: &str = "Reconnecting";

/// How codex words a response the provider cut at its output cap.
const OUTPUT_CAP: &str = "Incomplete response returned, reason: max_output_tokens";

/// The codex dialect's state while the stream is read.
#[derive(Debug, Default)]
pub struct Codex {
    thread_id: Option<String>,
    turn: Turn,
    /// The current turn's last `agent_message` text, and last `plan` text.
    message: Option<String>,
    plan: Option<String>,
    /// The type of a work item completed after the answer so far (or with none yet).
    work_after_answer: Option<String>,
    last_text: Option<String>,
    /// "Reconnecting" errors in the current turn, and the latest when no progress followed it.
    reconnects: u64,
    open_reconnect: Option<String>,
    /// A non-transient `error` that no completed turn has followed yet.
    error: Option<String>,
    tokens: Option<Tokens>,
    /// An item of the model's own (reasoning, a message, a tool call) has started or completed.
    spoke: bool,
    /// Tool items started and not completed yet: their call has been reported.
    calling: BTreeSet<String>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
enum Turn {
    #[default]
    NotStarted,
    Open,
    Completed,
    Failed(String),
}

impl Dialect for Codex {
    const RUNTIME: &'static str = "codex";

    fn line(&mut self, line: &[u8], events: &mut Events) -> Result<(), Drift> {
        if !self.spoke {
            self.spoke = starts_model_item(line);
        }
        if is_skippable_at_a_glance(line) {
            return Ok(());
        }
        // One decode reads every field any row type needs, so a multi-MiB command output is
        // scanned once. A row it cannot read (a field another type reads holds anything here,
        // a duplicate key) is read again type by type: that reading is the one that decides.
        let row = match serde_json::from_slice::<AnyRow<'_>>(line) {
            Ok(row) => row,
            Err(_) => match read_by_type(line)? {
                Some(row) => row,
                None => return Ok(()),
            },
        };
        self.row(row, line, events)
    }

    fn cut_line(&self, tail: &[u8]) -> Result<(), Drift> {
        cut_row_among(tail, VERDICT_ROWS)
    }

    fn model_spoke(&self) -> bool {
        self.spoke
    }

    fn finish(self) -> Verdict {
        let failure = self.judge();
        let usage = self
            .tokens
            .map_or_else(Usage::default, |tokens| tokens.usage(UsageSource::Result));
        Verdict {
            facts: Facts {
                session_id: self.thread_id,
                // codex's JSONL names neither the provider nor the model.
                provider: None,
                family: Some(FAMILY.into()),
                model: None,
                cli_version: None,
                stop_reason: None,
                usage,
                tools: Default::default(),
            },
            last_text: self.last_text,
            failure,
            answer: self.message.or(self.plan).unwrap_or_default(),
        }
    }
}

impl Codex {
    /// Reads a decoded row; `line` is its raw text, read again (its item's fields, undecoded)
    /// only for a tool call's input when events are written.
    fn row(&mut self, row: AnyRow<'_>, line: &[u8], events: &mut Events) -> Result<(), Drift> {
        match row.kind.as_deref() {
            Some("thread.started") => self.thread_started(row.thread_id, events),
            Some("turn.started") => self.turn_started(),
            Some("turn.completed") => self.turn_completed(row.usage, events),
            Some("turn.failed") => self.turn_failed(row.error, events),
            Some("item.started") => {
                if let Some(item) = &row.item {
                    self.item_started(item, line, events);
                }
            }
            Some("item.completed") => self.item_completed(row.item, line, events)?,
            Some("error") => self.error(row.message, events),
            _ => {}
        }
        Ok(())
    }

    fn thread_started(&mut self, thread_id: Option<Cow<'_, str>>, events: &mut Events) {
        if let Some(id) = thread_id.filter(|id| !id.is_empty()) {
            events.start(None, None, None, Some(&id));
            self.thread_id = Some(id.into_owned());
        }
    }

    /// A tool item started: its call, once per id.
    fn item_started(&mut self, item: &Item<'_>, line: &[u8], events: &mut Events) {
        let Some(kind) = item
            .kind
            .as_deref()
            .filter(|kind| WORK_ITEMS.contains(kind))
        else {
            return;
        };
        let id = item.id.text().unwrap_or_default();
        if !self.calling.insert(id.to_string()) {
            return;
        }
        let input = input(line, events);
        events.tool_call(id, &tool_name(kind, item), TOOL_KINDS, call_input(&input));
    }

    /// A tool item completed: its call unless its start was seen, then its result.
    fn tool_completed(&mut self, kind: &str, item: &Item<'_>, line: &[u8], events: &mut Events) {
        let id = item.id.text().unwrap_or_default();
        let name = tool_name(kind, item);
        if !self.calling.remove(id) {
            let input = input(line, events);
            events.tool_call(id, &name, TOOL_KINDS, call_input(&input));
        }
        let status = item.status.text().unwrap_or_default();
        let output = tool_output(kind, item);
        events.tool_result(
            id,
            &name,
            TOOL_KINDS,
            ToolOutcome {
                failed: status == "failed",
                exit_code: item.exit_code.int(),
                output: output.reported(),
                // Codex's own approval or sandbox policy refused the command.
                refused_by_cli: status == "declined",
            },
        );
    }

    fn turn_started(&mut self) {
        self.turn = Turn::Open;
        self.message = None;
        self.plan = None;
        self.work_after_answer = None;
        self.reconnects = 0;
        self.open_reconnect = None;
    }

    fn turn_completed(&mut self, usage: Option<TurnUsage>, events: &mut Events) {
        self.turn = Turn::Completed;
        self.error = None;
        self.open_reconnect = None;
        // The figure is the thread's running total (codex reports `usage.total`; after `exec
        // resume` it counts the resumed turns too), so the last one is the run's.
        if let Some(usage) = usage {
            let tokens = Tokens::from(usage);
            events.cumulative_usage(tokens, None);
            self.tokens = Some(tokens);
        }
    }

    fn turn_failed(&mut self, error: Option<ErrorRow<'_>>, events: &mut Events) {
        let message = error
            .and_then(|e| e.message)
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "turn.failed carried no error message".into());
        events.error(&message);
        self.turn = Turn::Failed(message);
        self.error = None;
        self.open_reconnect = None;
    }

    fn error(&mut self, message: Option<Cow<'_, str>>, events: &mut Events) {
        let message = message.as_deref().map(str::trim).unwrap_or_default();
        let message = if message.is_empty() {
            "an error row with no message".to_string()
        } else {
            message.to_string()
        };
        if message.starts_with(RECONNECTING) {
            events.retry(&message);
            self.reconnects += 1;
            self.open_reconnect = Some(message);
        } else {
            events.error(&message);
            self.open_reconnect = None;
            self.error = Some(message);
        }
    }

    fn item_completed(
        &mut self,
        item: Option<Item<'_>>,
        line: &[u8],
        events: &mut Events,
    ) -> Result<(), Drift> {
        let Some(mut item) = item else {
            return Err(no_item_type());
        };
        let Some(kind) = item.kind.take() else {
            return Err(no_item_type());
        };
        match kind.as_ref() {
            "agent_message" => {
                let text = item_text(item.text, "agent_message")?;
                events.text(&text);
                if !text.trim().is_empty() {
                    self.last_text = Some(text.clone());
                }
                self.message = Some(text);
                self.work_after_answer = None;
                self.open_reconnect = None;
            }
            "plan" => {
                let text = item_text(item.text, "plan")?;
                events.text(&text);
                self.plan = Some(text);
                if self.message.is_none() {
                    self.work_after_answer = None;
                }
                self.open_reconnect = None;
            }
            work if WORK_ITEMS.contains(&work) => {
                self.tool_completed(work, &item, line, events);
                self.work_after_answer = Some(work.to_string());
                self.open_reconnect = None;
            }
            "reasoning" if events.writing() => {
                events.reasoning(item.text.map_or(0, |text| text.chars().count()));
            }
            "error" => {
                if let Some(message) = item.message.text() {
                    events.error(message);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The verdict, most specific cause first (an unreadable row, which outranks all of these,
    /// is applied by the parse driver).
    fn judge(&self) -> Option<RunFailure> {
        match &self.turn {
            Turn::Failed(message) => Some(self.turn_failure(message)),
            Turn::Completed => match &self.error {
                Some(error) => Some(RunFailure::new(
                    ErrorClass::ModelError,
                    format!("codex reported an error after its turn completed: {error}"),
                )),
                None => self.answer_failure(),
            },
            Turn::NotStarted | Turn::Open => Some(self.no_turn_end()),
        }
    }

    fn turn_failure(&self, message: &str) -> RunFailure {
        if message.contains(OUTPUT_CAP) {
            return RunFailure::new(
                ErrorClass::Truncated,
                format!(
                    "TRUNCATED: codex's answer hit the output token limit (turn.failed): {message}"
                ),
            );
        }
        if self.reconnects > 0 {
            return RunFailure::new(
                ErrorClass::RetryExhausted,
                format!(
                    "codex gave up after {} reconnect attempt(s) (turn.failed): {message}",
                    self.reconnects
                ),
            );
        }
        RunFailure::new(
            ErrorClass::ModelError,
            format!("codex turn failed (turn.failed): {message}"),
        )
    }

    fn no_turn_end(&self) -> RunFailure {
        if let Some(reconnect) = &self.open_reconnect {
            return RunFailure::new(
                ErrorClass::RetryOpen,
                format!("codex stream ended while codex was still retrying ({reconnect}) and without turn.completed"),
            );
        }
        if let Some(error) = &self.error {
            return RunFailure::new(
                ErrorClass::ModelError,
                format!(
                    "codex reported an error and its stream ended without turn.completed: {error}"
                ),
            );
        }
        RunFailure::new(
            ErrorClass::NoAgentEnd,
            "codex stream ended without turn.completed: the turn was interrupted, the CLI died mid-stream, or its --json envelope changed",
        )
    }

    /// A completed turn's answer must be a message written after the agent's last tool work.
    fn answer_failure(&self) -> Option<RunFailure> {
        let answer = self.message.as_ref().or(self.plan.as_ref());
        if let Some(work) = &self.work_after_answer {
            let message = match answer {
                Some(_) => format!("TRUNCATED: codex's last agent_message was followed by {work} work and no later message, so it is narration, not an answer"),
                None => format!("TRUNCATED: codex ran {work} work and wrote no agent_message after it"),
            };
            return Some(RunFailure::new(ErrorClass::Truncated, message));
        }
        match answer {
            Some(text) if !text.trim().is_empty() => None,
            Some(_) => Some(RunFailure::new(
                ErrorClass::EmptyAnswer,
                "codex's final agent_message carried no text",
            )),
            None => Some(RunFailure::new(
                ErrorClass::EmptyAnswer,
                "codex's final turn carried no agent_message",
            )),
        }
    }
}

/// The `text` of an answer item: it must be there, or the row is drift.
fn item_text(text: Option<Cow<'_, str>>, kind: &str) -> Result<String, Drift> {
    text.map(Cow::into_owned).ok_or_else(|| Drift::Incomplete {
        row: format!("an item of type {kind} with no text"),
        why: "the answer may be lost",
    })
}

/// The row read the strict way, type by type: only the fields its own type reads are decoded,
/// so a field that another type reads may hold anything. `None` for a line that is no row.
fn read_by_type(line: &[u8]) -> Result<Option<AnyRow<'_>>, Drift> {
    let Ok(head) = serde_json::from_slice::<Head<'_>>(line) else {
        return unidentified(line).map(|()| None);
    };
    let mut row = AnyRow::default();
    let kind = head.kind;
    let of_type = || Row::typed(kind.as_deref().unwrap_or_default());
    match kind.as_deref() {
        Some("thread.started") => row.thread_id = decode::<ThreadStarted>(line, of_type)?.thread_id,
        Some("turn.completed") => row.usage = decode::<TurnCompleted>(line, of_type)?.usage,
        Some("turn.failed") => row.error = decode::<TurnFailed>(line, of_type)?.error,
        Some("error") => row.message = decode::<ErrorRow>(line, of_type)?.message,
        Some("item.completed") => row.item = read_item_by_type(line)?,
        Some("item.started") => row.item = read_started_item(line),
        _ => {}
    }
    row.kind = kind;
    Ok(Some(row))
}

/// An `item.completed` item: its type, then its text only for the types whose text is read,
/// and the fields the events read, whatever their shape.
fn read_item_by_type(line: &[u8]) -> Result<Option<Item<'_>>, Drift> {
    let Some(kind) = decode::<ItemCompleted>(line, || Row::typed("item.completed"))?
        .item
        .and_then(|item| item.kind)
    else {
        return Ok(None);
    };
    let text = match kind.as_ref() {
        "agent_message" | "plan" => decode::<ItemText>(line, || Row::typed(&kind))?.item.text,
        _ => None,
    };
    Ok(Some(loose_item(line, kind, text)))
}

/// An `item.started` item, read for the events alone: a row that does not decode is no call.
fn read_started_item(line: &[u8]) -> Option<Item<'_>> {
    let kind = serde_json::from_slice::<ItemCompleted<'_>>(line)
        .ok()?
        .item?
        .kind?;
    Some(loose_item(line, kind, None))
}

/// The item of `line` with `kind` and `text` as the strict reading found them, and the fields
/// only the events read, which decode whatever their shape (a row where even that fails, a
/// duplicate key, gives none).
fn loose_item<'a>(line: &'a [u8], kind: Cow<'a, str>, text: Option<Cow<'a, str>>) -> Item<'a> {
    let loose = serde_json::from_slice::<LooseItemRow<'_>>(line)
        .map(|row| row.item)
        .unwrap_or_default();
    Item {
        kind: Some(kind),
        text: text.or_else(|| loose.text.into_text()),
        id: loose.id,
        status: loose.status,
        exit_code: loose.exit_code,
        aggregated_output: loose.aggregated_output,
        server: loose.server,
        tool: loose.tool,
        message: loose.message,
        error: loose.error,
        result: loose.result,
    }
}

/// The name a tool item's call is reported under (see [`TOOL_KINDS`]).
fn tool_name<'a>(kind: &'a str, item: &'a Item<'_>) -> Cow<'a, str> {
    match (kind, item.server.text(), item.tool.text()) {
        ("mcp_tool_call", Some(server), Some(tool)) => Cow::Owned(format!("{server}__{tool}")),
        ("mcp_tool_call" | "collab_tool_call", _, Some(tool)) => Cow::Borrowed(tool),
        _ => Cow::Borrowed(kind),
    }
}

/// What a tool item returned to the model: a command's output, an MCP call's error message or
/// the text of its result; codex prints no output for the other items.
fn tool_output<'a>(kind: &str, item: &'a Item<'_>) -> Output<'a> {
    match (kind, &item.aggregated_output) {
        ("command_execution", LooseStr(Some(output))) => Output::Json(*output),
        ("mcp_tool_call", _) => {
            if let Some(message) = item.error.as_ref().and_then(|e| e["message"].as_str()) {
                return Output::Text(Cow::Borrowed(message));
            }
            let parts = item
                .result
                .as_ref()
                .and_then(|result| result["content"].as_array())
                .map(|content| {
                    content
                        .iter()
                        .filter_map(|part| part["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .unwrap_or_default();
            Output::Text(Cow::Owned(parts))
        }
        _ => Output::Text(Cow::Borrowed("")),
    }
}

/// A tool item's output: a command's as codex spelled it, an MCP call's text decoded.
enum Output<'a> {
    Json(JsonStr<'a>),
    Text(Cow<'a, str>),
}

impl Output<'_> {
    fn reported(&self) -> ToolOutput<'_> {
        match self {
            Output::Json(output) => ToolOutput::Json(std::slice::from_ref(output)),
            Output::Text(text) => ToolOutput::Text(text),
        }
    }
}

/// A tool call's input as codex printed it: the item's own fields, without its id, type,
/// status and result, each written as it was read. Read only when events are written; `None`
/// when they are not, or the item is not an object.
fn input<'a>(line: &'a [u8], events: &Events) -> Option<RawFields<'a>> {
    if !events.writing() {
        return None;
    }
    let RawFields(mut item) = serde_json::from_slice::<ItemFields<'_>>(line).ok()?.item?;
    const DONE: [&str; 7] = [
        "id",
        "type",
        "status",
        "aggregated_output",
        "exit_code",
        "result",
        "error",
    ];
    item.retain(|(name, _)| !DONE.contains(&&**name));
    Some(RawFields(item))
}

/// The item of a row, field by field.
#[derive(Deserialize)]
struct ItemFields<'a> {
    #[serde(borrow)]
    item: Option<RawFields<'a>>,
}

/// What [`input`] gives, as a tool call's input.
fn call_input<'a>(input: &'a Option<RawFields<'a>>) -> Input<'a> {
    match input {
        Some(RawFields(fields)) => Input::Fields(fields),
        None => Input::Value(&Value::Null),
    }
}

fn no_item_type() -> Drift {
    Drift::Incomplete {
        row: "an item.completed with no item type".into(),
        why: "the parser cannot tell whether it was the answer",
    }
}

/// A line that is not a readable row at all ([`unreadable_row`]).
fn unidentified(line: &[u8]) -> Result<(), Drift> {
    unreadable_row(raw_type_among(line, VERDICT_ROWS))
}

/// The items the model itself produces. A `file_change` is the workspace write a tool call made,
/// and counts no more than a tool's output does.
const MODEL_ITEMS: &[&str] = &[
    "reasoning",
    "agent_message",
    "plan",
    "command_execution",
    "mcp_tool_call",
    "collab_tool_call",
    "web_search",
    "todo_list",
];

/// An `item.started` or `item.completed` row of one of [`MODEL_ITEMS`].
fn starts_model_item(line: &[u8]) -> bool {
    if !matches!(
        opening_type(line),
        None | Some(b"item.started" | b"item.completed")
    ) {
        return false;
    }
    match serde_json::from_slice::<ItemRow<'_>>(line) {
        Ok(row) => {
            matches!(row.kind.as_deref(), Some("item.started" | "item.completed"))
                && row
                    .item
                    .and_then(|item| item.kind)
                    .is_some_and(|kind| MODEL_ITEMS.contains(&kind.as_ref()))
        }
        Err(_) => false,
    }
}

/// An item row, as far as activity needs it.
#[derive(Deserialize)]
struct ItemRow<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    item: Option<Head<'a>>,
}

/// The hot path: rows of a type no rule reads (`item.updated`) are skipped exactly as the full
/// reading would skip them, without decoding, unless they name a verdict row.
fn is_skippable_at_a_glance(line: &[u8]) -> bool {
    opens_with_unread_type(line, READ) && raw_type_among(line, VERDICT_ROWS).is_none()
}

// Wire shapes: only the fields the rules read. Unknown fields are ignored; a field that is read
// and has the wrong type fails the decode, which fails the run (fail closed).

/// Every field that any read row type reads, decoded in one pass.
#[derive(Default, Deserialize)]
struct AnyRow<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thread_id: Option<Cow<'a, str>>,
    usage: Option<TurnUsage>,
    #[serde(borrow)]
    error: Option<ErrorRow<'a>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    item: Option<Item<'a>>,
}

/// The `item` of an item row: its type and, for an answer, its text (both read strictly);
/// then what the events read of a tool item, a reasoning item or a warning, in any shape.
#[derive(Default, Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Loose<'a>,
    #[serde(default, borrow)]
    status: Loose<'a>,
    #[serde(default, borrow)]
    exit_code: Loose<'a>,
    /// A command's output, kept as its JSON text: the tally searches it, events count it.
    #[serde(default, borrow)]
    aggregated_output: LooseStr<'a>,
    #[serde(default, borrow)]
    server: Loose<'a>,
    #[serde(default, borrow)]
    tool: Loose<'a>,
    #[serde(default, borrow)]
    message: Loose<'a>,
    /// An MCP call's error and result (`Value` holds any shape).
    error: Option<Value>,
    result: Option<Value>,
}

/// [`Item`] as the strict reading decodes it after the fact: every field in any shape.
#[derive(Default, Deserialize)]
struct LooseItem<'a> {
    #[serde(default, borrow)]
    text: Loose<'a>,
    #[serde(default, borrow)]
    id: Loose<'a>,
    #[serde(default, borrow)]
    status: Loose<'a>,
    #[serde(default, borrow)]
    exit_code: Loose<'a>,
    /// A command's output, kept as its JSON text: the tally searches it, events count it.
    #[serde(default, borrow)]
    aggregated_output: LooseStr<'a>,
    #[serde(default, borrow)]
    server: Loose<'a>,
    #[serde(default, borrow)]
    tool: Loose<'a>,
    #[serde(default, borrow)]
    message: Loose<'a>,
    error: Option<Value>,
    result: Option<Value>,
}

#[derive(Deserialize)]
struct LooseItemRow<'a> {
    #[serde(borrow)]
    item: LooseItem<'a>,
}

/// A field only the events read: any JSON value decodes, so its shape can never fail a row the
/// verdict reads. A string or an integer is kept; null or a missing field is `Absent`.
#[derive(Debug, Default)]
enum Loose<'a> {
    #[default]
    Absent,
    Text(Cow<'a, str>),
    Int(i64),
    Other,
}

impl<'a> Loose<'a> {
    fn text(&self) -> Option<&str> {
        match self {
            Loose::Text(text) => Some(text),
            _ => None,
        }
    }

    fn into_text(self) -> Option<Cow<'a, str>> {
        match self {
            Loose::Text(text) => Some(text),
            _ => None,
        }
    }

    fn int(&self) -> Option<i64> {
        match self {
            Loose::Int(n) => Some(*n),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LooseVisitor(PhantomData))
    }
}

struct LooseVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for LooseVisitor<'a> {
    type Value = Loose<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Loose<'a>, E> {
        Ok(Loose::Text(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Loose<'a>, E> {
        Ok(Loose::Text(Cow::Owned(text.to_string())))
    }

    fn visit_string<E>(self, text: String) -> Result<Loose<'a>, E> {
        Ok(Loose::Text(Cow::Owned(text)))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Loose<'a>, E> {
        Ok(Loose::Int(n))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Loose<'a>, E> {
        Ok(i64::try_from(n).map_or(Loose::Other, Loose::Int))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Loose<'a>, E> {
        Ok(Loose::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Loose<'a>, E> {
        Ok(Loose::Other)
    }

    fn visit_unit<E>(self) -> Result<Loose<'a>, E> {
        Ok(Loose::Absent)
    }

    fn visit_none<E>(self) -> Result<Loose<'a>, E> {
        Ok(Loose::Absent)
    }

    fn visit_some<D: Deserializer<'de>>(self, inner: D) -> Result<Loose<'a>, D::Error> {
        Loose::deserialize(inner)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loose<'a>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Loose::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Loose<'a>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Loose::Other)
    }
}

/// A token count only the events read (cache and reasoning): any shape decodes, and one that
/// is no count is 0.
#[derive(Default)]
struct Count(u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let loose = Loose::deserialize(deserializer)?;
        Ok(Count(
            loose.int().and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
        ))
    }
}

#[derive(Deserialize)]
struct ThreadStarted<'a> {
    #[serde(borrow)]
    thread_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TurnCompleted {
    usage: Option<TurnUsage>,
}

/// OpenAI's usage: `cached_input_tokens` (and `cache_write_input_tokens`, which codex 0.171
/// prints) are part of `input_tokens`, and `reasoning_output_tokens` part of `output_tokens`,
/// so none is added. A figure left out is 0.
#[derive(Deserialize)]
struct TurnUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cached_input_tokens: Count,
    #[serde(default)]
    cache_write_input_tokens: Count,
    #[serde(default)]
    reasoning_output_tokens: Count,
}

impl From<TurnUsage> for Tokens {
    fn from(usage: TurnUsage) -> Tokens {
        Tokens {
            input: usage.input_tokens,
            output: usage.output_tokens,
            cache_read: usage.cached_input_tokens.0,
            cache_write: usage.cache_write_input_tokens.0,
            reasoning: usage.reasoning_output_tokens.0,
        }
    }
}

#[derive(Deserialize)]
struct TurnFailed<'a> {
    #[serde(borrow)]
    error: Option<ErrorRow<'a>>,
}

#[derive(Deserialize)]
struct ErrorRow<'a> {
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ItemCompleted<'a> {
    #[serde(borrow)]
    item: Option<Head<'a>>,
}

#[derive(Deserialize)]
struct ItemText<'a> {
    #[serde(borrow)]
    item: ItemTextOnly<'a>,
}

#[derive(Deserialize)]
struct ItemTextOnly<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::event::testing::Sink;

    /// The state one row leaves a fresh reader in, what reading it returned, and the events it
    /// wrote and tallied.
    fn effect(row: AnyRow<'_>, line: &[u8]) -> String {
        let sink = Sink::default();
        let mut events = Events::tally("codex").writing_to(Box::new(sink.clone()));
        let mut codex = Codex::default();
        let result = codex.row(row, line, &mut events);
        let written = String::from_utf8_lossy(&sink.0.borrow()).into_owned();
        format!("{result:?} {codex:?} {:?} {written}", events.summary())
    }

    /// Every event `stream` gives, one JSON value each, and the tally.
    fn events_of(stream: &str) -> (Vec<Value>, crate::event::ToolSummary) {
        let sink = Sink::default();
        let mut events = Events::tally("codex").writing_to(Box::new(sink.clone()));
        let mut codex = Codex::default();
        for line in stream.lines() {
            codex.line(line.as_bytes(), &mut events).unwrap();
        }
        let written = sink.0.borrow();
        let lines = written
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        (lines, events.summary().clone())
    }

    /// The one-pass decode is only a shortcut: wherever it succeeds, the row must have the
    /// effect the type-by-type reading gives it. Every line of every codex case, and each with
    /// a field that some row type reads put in front in an odd shape, is read both ways.
    #[test]
    fn one_decode_reads_every_row_as_the_strict_reading_does() {
        const FIELDS: &[&str] = &["type", "thread_id", "usage", "error", "message", "item"];
        const VALUES: &[&str] = &[
            "null",
            "7",
            r#""text""#,
            "{}",
            "[]",
            r#"{"type":"agent_message","text":"t"}"#,
            r#"{"type":"command_execution"}"#,
            r#"{"message":"m"}"#,
            r#"{"input_tokens":1,"output_tokens":2}"#,
            r#"{"type":"command_execution","id":7,"status":{},"exit_code":"1","aggregated_output":[]}"#,
            r#"{"type":"mcp_tool_call","id":"m","server":1,"tool":"t","error":"e","result":[]}"#,
        ];
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/codex");
        let mut compared = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|ext| ext != "ndjson") {
                continue;
            }
            for line in std::fs::read(&path).unwrap().split(|&b| b == b'\n') {
                let Some(rest) = line.strip_prefix(b"{") else {
                    continue;
                };
                let mut variants = vec![line.to_vec()];
                for field in FIELDS {
                    for value in VALUES {
                        variants
                            .push([format!(r#"{{"{field}":{value},"#).as_bytes(), rest].concat());
                    }
                }
                for variant in &variants {
                    let Ok(one_pass) = serde_json::from_slice::<AnyRow<'_>>(variant) else {
                        continue;
                    };
                    let strict =
                        read_by_type(variant).map(|row| row.map(|row| effect(row, variant)));
                    let shown = String::from_utf8_lossy(variant);
                    assert_eq!(Ok(Some(effect(one_pass, variant))), strict, "{shown}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 1000, "only {compared} rows compared");
    }

    #[test]
    fn glance_skips_item_progress_but_not_verdict_rows() {
        assert!(is_skippable_at_a_glance(
            br#"{"type":"item.updated","item":{"id":"item_0","type":"todo_list"}}"#
        ));
        // A tool call starts here: decoded for the events, never for the verdict.
        assert!(!is_skippable_at_a_glance(
            br#"{"type":"item.started","item":{"id":"item_0","type":"command_execution"}}"#
        ));
        assert!(!is_skippable_at_a_glance(br#"{"type":"turn.completed"}"#));
        assert!(!is_skippable_at_a_glance(
            br#"{"type":"item.updated","item":{"type":"agent_message"}}"#
        ));
        assert!(!is_skippable_at_a_glance(
            br#"{"item":{},"type":"turn.failed"}"#
        ));
    }

    fn of_type<'e>(events: &'e [Value], kind: &str) -> Vec<&'e Value> {
        events.iter().filter(|e| e["type"] == kind).collect()
    }

    #[test]
    fn a_started_and_completed_command_is_one_call_and_one_result() {
        let (events, tally) = events_of(concat!(
            r#"{"type":"thread.started","thread_id":"t1"}"#,
            "\n",
            r#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"ls","aggregated_output":"a\nb\n","exit_code":0,"status":"completed"}}"#,
        ));
        assert_eq!((tally.calls, tally.completed), (1, 1));
        assert_eq!(events[0]["session_id"], "t1");
        let call = of_type(&events, "tool_call");
        assert_eq!(call.len(), 1);
        assert_eq!(call[0]["name"], "command_execution");
        assert_eq!(call[0]["kind"], "execute");
        assert_eq!(call[0]["input"], serde_json::json!({"command": "ls"}));
        let result = of_type(&events, "tool_result");
        assert_eq!(result.len(), 1);
        assert_eq!(result[0]["exit_code"], 0);
        assert_eq!(result[0]["output_chars"], 4);
    }

    #[test]
    fn a_declined_command_is_denied_by_codex() {
        let (events, tally) = events_of(
            r#"{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"rm -rf /","aggregated_output":"rejected by policy","exit_code":null,"status":"declined"}}"#,
        );
        assert_eq!((tally.calls, tally.denied), (1, 1));
        assert_eq!(tally.denials[0].said, "rejected by policy");
        assert_eq!(of_type(&events, "tool_result")[0]["status"], "denied");
    }

    #[test]
    fn a_sandbox_refusal_in_the_output_is_a_denial_and_a_failure_is_failed() {
        let (_, tally) = events_of(concat!(
            r#"{"type":"item.completed","item":{"id":"a","type":"command_execution","command":"touch /x","aggregated_output":"touch: cannot touch '/x': Permission denied\n","exit_code":1,"status":"failed"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"b","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"c","type":"file_change","changes":[{"path":"x","kind":"add"}],"status":"failed"}}"#,
        ));
        assert_eq!(
            (tally.calls, tally.completed, tally.failed, tally.denied),
            (3, 0, 2, 1)
        );
        assert_eq!(tally.by_kind.get(ToolKind::Edit), 1);
    }

    #[test]
    fn a_call_whose_result_never_came_is_a_call_only() {
        let (events, tally) = events_of(
            r#"{"type":"item.started","item":{"id":"item_9","type":"command_execution","command":"sleep 9","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
        );
        assert_eq!((tally.calls, tally.completed, tally.failed), (1, 0, 0));
        assert!(of_type(&events, "tool_result").is_empty());
    }

    #[test]
    fn mcp_calls_are_named_by_server_and_tool_and_their_error_is_the_output() {
        let (events, tally) = events_of(concat!(
            r#"{"type":"item.started","item":{"id":"m","type":"mcp_tool_call","server":"fs","tool":"read_file","arguments":{"path":"a"},"result":null,"error":null,"status":"in_progress"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"m","type":"mcp_tool_call","server":"fs","tool":"read_file","arguments":{"path":"a"},"result":null,"error":{"message":"EACCES: permission denied, open 'a'"},"status":"failed"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"n","type":"mcp_tool_call","server":"fs","tool":"list","arguments":{},"result":{"content":[{"type":"text","text":"ab"},{"type":"text","text":"c"}]},"error":null,"status":"completed"}}"#,
        ));
        assert_eq!((tally.calls, tally.completed, tally.denied), (2, 1, 1));
        assert_eq!(tally.by_kind.get(ToolKind::Read), 2);
        let call = of_type(&events, "tool_call");
        assert_eq!(call[0]["name"], "fs__read_file");
        assert_eq!(
            call[0]["input"],
            serde_json::json!({"server": "fs", "tool": "read_file", "arguments": {"path": "a"}})
        );
        assert_eq!(of_type(&events, "tool_result")[1]["output_chars"], 4);
    }

    #[test]
    fn usage_is_the_running_total_with_its_cache_and_reasoning_parts() {
        let (events, _) = events_of(concat!(
            r#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":800,"cache_write_input_tokens":100,"output_tokens":42,"reasoning_output_tokens":13}}"#,
            "\n",
            r#"{"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":"x","output_tokens":50}}"#,
        ));
        let usage = of_type(&events, "usage");
        assert_eq!(usage[0]["turn"], Value::Null);
        assert_eq!(
            usage[0]["cumulative"],
            serde_json::json!({"input_tokens": 1200, "output_tokens": 42, "cache_read_tokens": 800, "cache_write_tokens": 100, "reasoning_tokens": 13})
        );
        // A second figure replaces the first: it is the thread's total, not a turn's.
        assert_eq!(usage[1]["cumulative"]["input_tokens"], 2000);
        assert_eq!(usage[1]["cumulative"]["cache_read_tokens"], 0);
        let mut codex = Codex::default();
        let mut tally = Events::tally("codex");
        codex
            .line(
                br#"{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":800,"output_tokens":42,"reasoning_output_tokens":13}}"#,
                &mut tally,
            )
            .unwrap();
        let usage = codex.finish().facts.usage;
        assert_eq!(
            (
                usage.input_tokens,
                usage.cache_read_tokens,
                usage.reasoning_tokens
            ),
            (1200, 800, 13)
        );
    }

    #[test]
    fn text_reasoning_retries_and_errors_are_reported() {
        let (events, _) = events_of(concat!(
            r#"{"type":"error","message":"Reconnecting... 1/5 (429)"}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"abc"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"item_1","type":"error","message":"a warning"}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"done"}}"#,
            "\n",
            r#"{"type":"turn.failed","error":{"message":"boom"}}"#,
        ));
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            ["start", "retry", "reasoning", "error", "text", "error"]
        );
        assert_eq!(events[2]["chars"], 3);
        assert_eq!(events[5]["message"], "boom");
    }
}
