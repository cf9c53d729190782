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

use std::borrow::Cow;

use serde::Deserialize;

use crate::dialect::{cut_row_among, Dialect, RunFailure, Verdict};
use crate::dialect::{decode, unreadable_row, Drift, Head, Row, TextPart, TokenFields, Tokens};
use crate::envelope::{ErrorClass, Facts, Usage, UsageSource};
use crate::event::Events;
use crate::sniff::{opening_type, opens_with_unread_type, raw_type_among};

/// The row types this parser decodes.
const READ: &[&str] = &[
    "thread.started",
    "turn.started",
    "turn.completed",
    "turn.failed",
    "item.completed",
    "error",
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

    fn line(&mut self, line: &[u8], _events: &mut Events) -> Result<(), Drift> {
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
        self.row(row)
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
    fn row(&mut self, row: AnyRow<'_>) -> Result<(), Drift> {
        match row.kind.as_deref() {
            Some("thread.started") => self.thread_started(row.thread_id),
            Some("turn.started") => self.turn_started(),
            Some("turn.completed") => self.turn_completed(row.usage),
            Some("turn.failed") => self.turn_failed(row.error),
            Some("item.completed") => self.item_completed(row.item)?,
            Some("error") => self.error(row.message),
            _ => {}
        }
        Ok(())
    }

    fn thread_started(&mut self, thread_id: Option<Cow<'_, str>>) {
        if let Some(id) = thread_id.filter(|id| !id.is_empty()) {
            self.thread_id = Some(id.into_owned());
        }
    }

    fn turn_started(&mut self) {
        self.turn = Turn::Open;
        self.message = None;
        self.plan = None;
        self.work_after_answer = None;
        self.reconnects = 0;
        self.open_reconnect = None;
    }

    fn turn_completed(&mut self, usage: Option<TurnUsage>) {
        self.turn = Turn::Completed;
        self.error = None;
        self.open_reconnect = None;
        // The figure is the thread's running total (codex reports `usage.total`), so the last
        // one is the run's.
        if let Some(usage) = usage {
            self.tokens = Some(Tokens::from(usage));
        }
    }

    fn turn_failed(&mut self, error: Option<ErrorRow<'_>>) {
        let message = error
            .and_then(|e| e.message)
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| "turn.failed carried no error message".into());
        self.turn = Turn::Failed(message);
        self.error = None;
        self.open_reconnect = None;
    }

    fn error(&mut self, message: Option<Cow<'_, str>>) {
        let message = message.as_deref().map(str::trim).unwrap_or_default();
        let message = if message.is_empty() {
            "an error row with no message".to_string()
        } else {
            message.to_string()
        };
        if message.starts_with(RECONNECTING) {
            self.reconnects += 1;
            self.open_reconnect = Some(message);
        } else {
            self.open_reconnect = None;
            self.error = Some(message);
        }
    }

    fn item_completed(&mut self, item: Option<CompletedItem<'_>>) -> Result<(), Drift> {
        let Some(CompletedItem {
            kind: Some(kind),
            text,
        }) = item
        else {
            return Err(Drift::Incomplete {
                row: "an item.completed with no item type".into(),
                why: "the parser cannot tell whether it was the answer",
            });
        };
        match kind.as_ref() {
            "agent_message" => {
                let text = item_text(text, "agent_message")?;
                if !text.trim().is_empty() {
                    self.last_text = Some(text.clone());
                }
                self.message = Some(text);
                self.work_after_answer = None;
                self.open_reconnect = None;
            }
            "plan" => {
                self.plan = Some(item_text(text, "plan")?);
                if self.message.is_none() {
                    self.work_after_answer = None;
                }
                self.open_reconnect = None;
            }
            work if WORK_ITEMS.contains(&work) => {
                self.work_after_answer = Some(work.to_string());
                self.open_reconnect = None;
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
        _ => {}
    }
    row.kind = kind;
    Ok(Some(row))
}

/// An `item.completed` item: its type, then its text only for the types whose text is read.
fn read_item_by_type(line: &[u8]) -> Result<Option<CompletedItem<'_>>, Drift> {
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
    Ok(Some(CompletedItem {
        kind: Some(kind),
        text,
    }))
}

/// A line that is not a readable row at all ([`unreadable_row`]).
fn unidentified(line: &[u8]) -> Result<(), Drift> {
    unreadable_row(raw_type_among(line, VERDICT_ROWS))
}

/// The hot path: `item.started` and `item.updated` rows (command output) are skipped exactly as
/// the full reading would skip them, without decoding, unless they name a verdict row.
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
    item: Option<CompletedItem<'a>>,
}

/// The `item` of an `item.completed` row: its type and, for an answer, its text.
type CompletedItem<'a> = TextPart<'a>;

#[derive(Deserialize)]
struct ThreadStarted<'a> {
    #[serde(borrow)]
    thread_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TurnCompleted {
    usage: Option<TurnUsage>,
}

/// OpenAI's usage: `cached_input_tokens` is part of `input_tokens`, and reasoning tokens are
/// part of `output_tokens`, so neither is added.
type TurnUsage = TokenFields;

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

    /// The state one row leaves a fresh reader in, and what reading it returned.
    fn effect(row: AnyRow<'_>) -> String {
        let mut codex = Codex::default();
        let result = codex.row(row);
        format!("{result:?} {codex:?}")
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
                    let strict = read_by_type(variant).map(|row| row.map(effect));
                    let shown = String::from_utf8_lossy(variant);
                    assert_eq!(Ok(Some(effect(one_pass))), strict, "{shown}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 1000, "only {compared} rows compared");
    }

    #[test]
    fn glance_skips_item_progress_but_not_verdict_rows() {
        assert!(is_skippable_at_a_glance(
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
}
