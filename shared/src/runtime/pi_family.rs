//! The `--mode json` stream of the pi family (pi and its fork omp), read into a verdict.
//!
//! omp forked pi and kept its event vocabulary: a `session` header, `message_end` rows whose
//! assistant messages carry `stopReason`, `errorMessage` and `usage`, `auto_retry_start` /
//! `auto_retry_end` around the CLI's own retries, and an `agent_end` per low-level run. So the
//! verdict rules (the numbered list under DESCRIPTION in man/moot-parse-omp.1) are implemented
//! once, here, and each CLI is a [`Flavor`] that says only where it differs: how its `agent_end`
//! marks a scheduled continuation, which extra event types it writes, and what else its verdict
//! needs.
//!
//! Both CLIs can exit 0 when a turn fails, retry provider failures on the same stream and close a
//! deadline trip with a clean-looking terminal event, so success is derived from the stream
//! alone. Only the flavor's load-bearing event types are read; every other type is skipped
//! whether or not it decodes, so new events keep working. A load-bearing row that cannot be read
//! fails the run instead: it may have been the failure, the answer or the terminal event.

use std::borrow::Cow;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;
use serde_json::error::Category;
use serde_json::Value;

use crate::dialect::{Dialect, RunFailure, Verdict};
use crate::dialect::{Drift, Head, MessageSum, OutputPart, Row, Tokens};
use crate::envelope::{ErrorClass, Facts, UsageSource};
use crate::event::{Events, ToolKind, ToolOutcome, ToolOutput};
use crate::sniff::{opening_type, raw_field_is, raw_type_among};

/// The event types every member of the family writes and this module reads.
pub const FAMILY_EVENTS: &[&str] = &[
    "session",
    "agent_start",
    "message_end",
    "auto_retry_start",
    "auto_retry_end",
    "agent_end",
];

/// What one CLI of the family does differently.
pub trait Flavor {
    /// The runtime name printed as `run.runtime` and used in every message.
    const RUNTIME: &'static str;
    /// The flag that selects the stream, named when the stream never reached its terminal event.
    const MODE_FLAG: &'static str;
    /// The event types read beyond [`FAMILY_EVENTS`].
    const OWN_EVENTS: &'static [&'static str] = &[];
    /// The kinds of this CLI's own tools, by their exact names.
    const TOOL_KINDS: &'static [(&'static str, ToolKind)];
    /// The `not_terminal` message: what the CLI's `agent_end` said and what it means.
    const NOT_TERMINAL: &'static str;

    /// The `agent_end` row as this CLI writes it (only the fields the rules read).
    type AgentEnd: DeserializeOwned;

    /// What an `agent_end` proves.
    fn agent_end(&mut self, end: Self::AgentEnd) -> AgentEnd;

    /// Reads an event of one of [`Flavor::OWN_EVENTS`].
    fn own_event(&mut self, _kind: &str, _line: &[u8]) -> Result<(), Drift> {
        Ok(())
    }

    /// The runtime family of the provider that answered (see [`family_of`]).
    fn family(provider: &str) -> String {
        family_of(Self::RUNTIME, provider)
    }

    /// A flavor's own terminal-state rule, judged right after the family's `not_terminal`.
    fn unfinished(&self) -> Option<RunFailure> {
        None
    }

    /// A flavor's own rule on a final message that every family rule accepted as the answer.
    fn suspect_answer(&self, _last: &Assistant) -> Option<RunFailure> {
        None
    }
}

/// True when the flavor reads events of type `kind` (they are load-bearing).
fn reads<F: Flavor>(kind: &str) -> bool {
    FAMILY_EVENTS.contains(&kind) || F::OWN_EVENTS.contains(&kind)
}

/// What one `agent_end` proves, whatever the CLI calls its fields.
#[derive(Debug, Default, Clone, Copy)]
pub struct AgentEnd {
    /// The CLI scheduled more work after this run (a retry, a fallback, a compaction).
    pub continues: bool,
    /// A run-level usage rollup, when the CLI reported one.
    pub rollup: Option<Tokens>,
}

/// The runtime family of a provider: the merge gate compares upstream families, not the wrapper
/// CLI, so a route through a native runtime's provider counts as that runtime.
pub fn family_of(runtime: &str, provider: &str) -> String {
    match provider {
        "openai" | "openai-codex" => "codex".into(),
        "anthropic" => "claude".into(),
        "kimi-code" => "kimi".into(),
        other => format!("{runtime}:{other}"),
    }
}

/// The family's state while the stream is read.
#[derive(Debug)]
pub struct PiFamily<F> {
    flavor: F,
    session_id: Option<String>,
    /// The final assistant message so far.
    last: Option<Assistant>,
    last_text: Option<String>,
    saw_text: bool,
    summed: MessageSum,
    rollup: Tokens,
    rollups: u64,
    agent_ends: u64,
    last_continues: bool,
    /// An `agent_start` came after the last `agent_end`: a run is under way.
    run_open: bool,
    /// The first failure of the current, unrecovered failure saga.
    failure: Option<RunFailure>,
    /// Set by `auto_retry_end` with `success: false`: the CLI's verdict on itself, never cleared.
    gave_up: bool,
    /// The `errorMessage` of an `auto_retry_start` still waiting for its `auto_retry_end`.
    open_retry: Option<String>,
    /// The model has streamed text, thinking or a tool call, or ended a message with one.
    spoke: bool,
    /// The sum of the assistant messages' `usage.cost.total`, when any carried one.
    cost: Option<f64>,
    /// The start event has been reported.
    announced: bool,
}

/// A `message_update` whose assistant event starts or extends text, thinking or a tool call
/// (`text_delta`, `thinking_start`, `toolcall_delta`, ...).
fn streams_model_content(line: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Update<'a> {
        #[serde(rename = "assistantMessageEvent", borrow)]
        event: Option<Head<'a>>,
    }
    serde_json::from_slice::<Update<'_>>(line)
        .ok()
        .and_then(|update| update.event?.kind)
        .is_some_and(|kind| {
            ["text_", "thinking_", "toolcall_"]
                .iter()
                .any(|prefix| kind.starts_with(prefix))
        })
}

/// What the verdict needs of one assistant `message_end`.
#[derive(Debug, Default)]
pub struct Assistant {
    pub text: String,
    pub has_tool_call: bool,
    pub stop_reason: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// The message's own usage, when it carried any.
    pub usage: Option<Tokens>,
}

impl<F: Flavor> PiFamily<F> {
    pub fn new(flavor: F) -> Self {
        PiFamily {
            flavor,
            session_id: None,
            last: None,
            last_text: None,
            saw_text: false,
            summed: MessageSum::default(),
            rollup: Tokens::default(),
            rollups: 0,
            agent_ends: 0,
            last_continues: false,
            run_open: false,
            failure: None,
            gave_up: false,
            open_retry: None,
            spoke: false,
            cost: None,
            announced: false,
        }
    }
}

impl<F: Flavor + Default> Default for PiFamily<F> {
    fn default() -> Self {
        Self::new(F::default())
    }
}

impl<F: Flavor> Dialect for PiFamily<F> {
    const RUNTIME: &'static str = F::RUNTIME;

    fn line(&mut self, line: &[u8], events: &mut Events) -> Result<(), Drift> {
        let kind = match opening_type(line).and_then(|kind| std::str::from_utf8(kind).ok()) {
            // The hot path: most lines of a long run are message_update deltas and tool
            // output. One whose type is not read, and that cannot be a malformed assistant
            // message_end, is skipped without decoding, exactly as a decode would skip it.
            Some(kind) if !reads::<F>(kind) => {
                if !self.spoke && kind == "message_update" {
                    self.spoke = streams_model_content(line);
                }
                if memchr::memmem::find(line, b"message_end\"").is_none() {
                    return Ok(());
                }
                return match serde_json::from_slice::<Head>(line) {
                    Ok(_) => Ok(()),
                    Err(_) => unidentified(line),
                };
            }
            Some(kind) => Cow::Borrowed(kind),
            // An event is a JSON object. serde reads an array positionally into a struct, so
            // without this `["session","x"]` would pass for a session event and
            // `["message_end"]` for an undecodable one; an array identifies nothing.
            None if line.trim_ascii_start().first() != Some(&b'{') => return unidentified(line),
            None => match serde_json::from_slice::<Head>(line) {
                Ok(Head { kind: Some(kind) }) => kind,
                Ok(Head { kind: None }) => return Ok(()),
                Err(_) => return unidentified(line),
            },
        };
        match kind.as_ref() {
            "session" => decode_event(line, "session")?.map(|row| self.session(row)),
            "agent_start" => {
                decode_event::<TypeOnly>(line, "agent_start")?.map(|_| self.run_open = true)
            }
            "message_end" => self.message_end(line, events)?,
            "auto_retry_start" => {
                decode_event(line, "auto_retry_start")?.map(|row| self.retry_start(row, events))
            }
            "auto_retry_end" => {
                decode_event(line, "auto_retry_end")?.map(|row| self.retry_end(row, events))
            }
            "agent_end" => decode_event::<F::AgentEnd>(line, "agent_end")?.map(|row| {
                let end = self.flavor.agent_end(row);
                self.agent_end(end, events);
            }),
            own if F::OWN_EVENTS.contains(&own) => {
                self.flavor.own_event(own, line)?;
                None
            }
            _ => None,
        };
        Ok(())
    }

    fn cut_line(&self, tail: &[u8]) -> Result<(), Drift> {
        // The family's types first, as one list of them all would name them.
        let named =
            raw_type_among(tail, FAMILY_EVENTS).or_else(|| raw_type_among(tail, F::OWN_EVENTS));
        match named {
            Some(kind) => Err(Drift::Cut(Row::event(kind))),
            None => unidentified(tail),
        }
    }

    fn model_spoke(&self) -> bool {
        self.spoke
    }

    fn finish(self) -> Verdict {
        let failure = self.judge();
        let (usage, source) = self.usage();
        let mut usage = usage.usage(source);
        usage.cost_usd = self.cost;
        let last = self.last.unwrap_or_default();
        Verdict {
            facts: Facts {
                session_id: self.session_id,
                family: last.provider.as_deref().map(F::family),
                provider: last.provider,
                model: last.model,
                // The session header's `version` is its format; the CLI's is not in the stream.
                cli_version: None,
                stop_reason: last.stop_reason,
                usage,
                tools: Default::default(),
            },
            last_text: self.last_text,
            failure,
            answer: last.text,
        }
    }
}

impl<F: Flavor> PiFamily<F> {
    fn session(&mut self, event: Session<'_>) {
        if let Some(id) = event.id.filter(|id| !id.is_empty()) {
            self.session_id = Some(id.into_owned());
        }
    }

    /// The role decides whether the row is read at all, so it is probed first: user, developer,
    /// custom and tool-result messages (often MiBs of tool output, with legally string content)
    /// are then skipped without being decoded or copied.
    fn message_end(&mut self, line: &[u8], events: &mut Events) -> Result<Option<()>, Drift> {
        let role = match serde_json::from_slice::<RoleProbe<'_>>(line) {
            Ok(probe) => probe.message.and_then(|message| message.role),
            Err(e) if is_syntax(&e) => return unidentified(line).map(|()| None),
            Err(e) => return Err(drift("message_end", &e)),
        };
        match role.as_deref() {
            None => Err(Drift::Incomplete {
                row: "a message_end with no role".into(),
                why: "the parser cannot tell whether it was the answer",
            }),
            Some("assistant") => {
                let event: MessageEnd<'_> =
                    serde_json::from_slice(line).map_err(|e| drift("message_end", &e))?;
                if let Some(message) = event.message {
                    self.assistant(message, events);
                }
                Ok(Some(()))
            }
            Some("toolResult") => {
                self.tool_result(line, events);
                Ok(None)
            }
            Some(_) => Ok(None),
        }
    }

    /// Reports the start once, with what the stream has named so far; called before any
    /// other event, so the first assistant message can add its model and provider.
    fn announce(&mut self, events: &mut Events, model: Option<&str>, provider: Option<&str>) {
        if !self.announced {
            self.announced = true;
            events.start(None, model, provider, self.session_id.as_deref());
        }
    }

    fn assistant(&mut self, message: Message<'_>, events: &mut Events) {
        self.announce(
            events,
            message.model.as_deref(),
            message.provider.as_deref(),
        );
        // The family counts cached prompt tokens apart from `input` (pi-ai subtracts OpenAI's
        // cached_tokens from prompt_tokens, and Anthropic reports them apart), so they are
        // added back: `input` is every prompt token.
        let usage = message.usage.as_ref().map(|usage| Tokens {
            input: usage
                .input
                .saturating_add(usage.cache_read)
                .saturating_add(usage.cache_write),
            output: usage.output,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
            reasoning: 0,
        });
        if let Some(usage) = usage {
            self.summed.add(usage);
        }
        let cost = message
            .usage
            .as_ref()
            .and_then(|usage| usage.cost.as_ref())
            .and_then(|cost| cost.total);
        if let Some(cost) = cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + cost);
        }
        let mut current = Assistant {
            stop_reason: message.stop_reason.map(Cow::into_owned),
            provider: message.provider.map(Cow::into_owned),
            model: message.model.map(Cow::into_owned),
            usage,
            ..Assistant::default()
        };
        let mut reasoning = 0;
        for part in message.content.unwrap_or_default() {
            match part.kind.as_deref() {
                Some("text") => current
                    .text
                    .push_str(part.text.as_deref().unwrap_or_default()),
                Some("toolCall") => {
                    current.has_tool_call = true;
                    // The message's toolCall part is the one source of calls: the
                    // tool_execution_* events that run it repeat the same call and are skipped.
                    events.tool_call(
                        part.id.as_deref().unwrap_or_default(),
                        part.name.as_deref().unwrap_or_default(),
                        F::TOOL_KINDS,
                        part.arguments.as_ref().unwrap_or(&Value::Null),
                    );
                }
                Some("thinking") => {
                    self.spoke = true;
                    if events.writing() {
                        reasoning += part.thinking.as_deref().map_or(0, |t| t.chars().count());
                    }
                }
                _ => {}
            }
        }
        events.reasoning(reasoning);
        events.text(&current.text);
        if let Some(usage) = usage {
            events.turn_usage(usage, cost);
        }
        let has_text = !current.text.trim().is_empty();
        self.spoke |= has_text || current.has_tool_call;
        match current.stop_reason.as_deref() {
            Some(reason @ ("error" | "aborted")) => {
                let failure = turn_failure::<F>(
                    reason,
                    message.error_message.as_deref(),
                    message.error_status.as_ref(),
                );
                events.error(&failure.message);
                self.failure.get_or_insert(failure);
            }
            // Only real content recovers a failed saga; the CLI's own classifier treats a turn
            // with no text and no tool call as a failure shape.
            _ if !self.gave_up && (has_text || current.has_tool_call) => self.failure = None,
            _ => {}
        }
        if has_text {
            self.saw_text = true;
            self.last_text = Some(current.text.clone());
        }
        self.last = Some(current);
    }

    /// A `toolResult` message: the one source of results (`tool_execution_end` repeats it).
    /// The row is no verdict row, so one that does not decode is still counted as far as it
    /// can be read, and never fails the run.
    fn tool_result(&mut self, line: &[u8], events: &mut Events) {
        let message = match serde_json::from_slice::<ToolResultEnd<'_>>(line) {
            Ok(row) => row.message,
            Err(_) => match serde_json::from_slice::<ToolResultEnd<'_, IgnoredAny>>(line) {
                Ok(row) => row.message.map(|message| ToolResultMessage {
                    tool_call_id: message.tool_call_id,
                    tool_name: message.tool_name,
                    content: None,
                    is_error: message.is_error,
                }),
                Err(_) => None,
            },
        };
        let Some(message) = message else {
            return;
        };
        self.announce(events, None, None);
        let parts = message.content.unwrap_or_default();
        let texts = OutputPart::texts(&parts);
        let output = ToolOutput::Json(&texts);
        let failed = message.is_error == Some(true);
        // Only a failed result's text is read here: the exit code and a refusal are in it.
        let text = if failed {
            output.text()
        } else {
            Cow::Borrowed("")
        };
        events.tool_result(
            message.tool_call_id.as_deref().unwrap_or_default(),
            message.tool_name.as_deref().unwrap_or_default(),
            F::TOOL_KINDS,
            ToolOutcome {
                failed,
                exit_code: if failed { exit_code(&text) } else { None },
                output,
                refused_by_cli: failed && refused_by_cli(&text),
            },
        );
    }

    fn retry_start(&mut self, event: RetryStart<'_>, events: &mut Events) {
        self.announce(events, None, None);
        events.retry(event.error_message.as_deref().unwrap_or_default());
        self.open_retry = Some(event.error_message.map(Cow::into_owned).unwrap_or_default());
    }

    fn retry_end(&mut self, event: RetryEnd<'_>, events: &mut Events) {
        self.open_retry = None;
        if event.success == Some(false) {
            self.gave_up = true;
            // The first failure of the saga stays the cause; finalError is the cause only when
            // nothing earlier carried one.
            let cause = match (
                self.failure.take(),
                event.final_error.as_deref().map(str::trim),
            ) {
                (Some(earlier), _) => format!(": {}", earlier.message),
                (None, Some(error)) if !error.is_empty() => format!(": {error}"),
                (None, _) => " and reported no finalError".to_string(),
            };
            let failure = RunFailure::new(
                ErrorClass::RetryExhausted,
                format!(
                    "{} gave up retrying (auto_retry_end success false){cause}",
                    F::RUNTIME
                ),
            );
            self.announce(events, None, None);
            events.error(&failure.message);
            self.failure = Some(failure);
        }
    }

    fn agent_end(&mut self, end: AgentEnd, events: &mut Events) {
        self.announce(events, None, None);
        self.agent_ends += 1;
        self.run_open = false;
        self.last_continues = end.continues;
        if let Some(usage) = end.rollup {
            self.rollups += 1;
            self.rollup.add(usage);
            // A rollup covers its whole run, so the segments' sum is the stream's total so far.
            events.cumulative_usage(self.rollup, None);
        }
    }

    /// The verdict, in the order of man/moot-parse-omp.1 (an unreadable row, which outranks all of these,
    /// is applied by the parse driver).
    fn judge(&self) -> Option<RunFailure> {
        let rt = F::RUNTIME;
        if let Some(failure) = &self.failure {
            return Some(failure.clone());
        }
        if self.agent_ends == 0 {
            return Some(RunFailure::new(
                ErrorClass::NoAgentEnd,
                format!("{rt} stream ended without an agent_end event: the CLI died mid-stream or its {} envelope changed", F::MODE_FLAG),
            ));
        }
        if self.last_continues {
            return Some(RunFailure::new(ErrorClass::NotTerminal, F::NOT_TERMINAL));
        }
        if let Some(failure) = self.flavor.unfinished() {
            return Some(failure);
        }
        if let Some(error) = &self.open_retry {
            let cause = if error.trim().is_empty() {
                String::new()
            } else {
                format!(" after: {error}")
            };
            return Some(RunFailure::new(
                ErrorClass::RetryOpen,
                format!("{rt} stream ended with a retry saga still open (an auto_retry_start with no auto_retry_end){cause}"),
            ));
        }
        // Both CLIs open every run, and every retry attempt, with agent_start, and a stream
        // can hold several runs (pi ends a failed attempt with its own agent_end before it
        // retries; omp 18 runs one per prompt of an @file delivery). An earlier run's
        // agent_end does not end a later one, or a stream cut inside it would pass.
        if self.run_open {
            return Some(RunFailure::new(
                ErrorClass::NoAgentEnd,
                format!("{rt} stream ended inside a run (an agent_start with no agent_end after it): the CLI died mid-stream after an earlier run had ended"),
            ));
        }
        let last = self.last.as_ref();
        if let Some(reason @ ("toolUse" | "length")) = last.and_then(|m| m.stop_reason.as_deref()) {
            return Some(RunFailure::new(
                ErrorClass::Truncated,
                format!("TRUNCATED: {rt}'s final assistant message stopped on {reason:?} instead of \"stop\", so its text is not a finished answer"),
            ));
        }
        let final_blank = last.is_none_or(|m| m.text.trim().is_empty());
        if final_blank && (self.saw_text || last.is_some_and(|m| m.has_tool_call)) {
            return Some(RunFailure::new(
                ErrorClass::Truncated,
                format!("TRUNCATED: {rt}'s final assistant message carried no text (a tool call it never answered, or a turn cut short)"),
            ));
        }
        if final_blank {
            return Some(RunFailure::new(
                ErrorClass::EmptyAnswer,
                format!("{rt} stream carried no assistant text"),
            ));
        }
        last.and_then(|m| self.flavor.suspect_answer(m))
    }

    /// The per-message sum is a floor of what was billed; a rollup replaces it only when every
    /// agent_end carried one and it is at least the sum on both axes.
    fn usage(&self) -> (Tokens, UsageSource) {
        let rollup_complete = self.rollups > 0 && self.rollups == self.agent_ends;
        let summed = self.summed.tokens;
        if rollup_complete
            && self.rollup.input >= summed.input
            && self.rollup.output >= summed.output
        {
            return (self.rollup, UsageSource::Telemetry);
        }
        (summed, self.summed.usage().source)
    }
}

fn turn_failure<F: Flavor>(
    reason: &str,
    message: Option<&str>,
    status: Option<&Value>,
) -> RunFailure {
    let status = match status {
        Some(Value::String(s)) => format!(", errorStatus {s}"),
        Some(Value::Null) | None => String::new(),
        Some(other) => format!(", errorStatus {other}"),
    };
    let message = match message.map(str::trim) {
        Some(m) if !m.is_empty() => m,
        _ => "no errorMessage reported",
    };
    RunFailure::new(
        ErrorClass::ModelError,
        format!(
            "{} turn failed (stopReason {reason}{status}): {message}",
            F::RUNTIME
        ),
    )
}

/// The exit code a failed shell tool reports in its output: both CLIs end it with `Command
/// exited with code N` (omp may add a wall-time notice after it, or word a signal's death as
/// `... the shell reports this as exit code N`).
fn exit_code(output: &str) -> Option<i64> {
    output.lines().rev().take(4).find_map(|line| {
        let line = line.trim();
        let rest = line.strip_prefix("Command exited with code ").or_else(|| {
            line.starts_with("Command was killed by")
                .then(|| line.rsplit_once("exit code ").map(|(_, code)| code))
                .flatten()
        })?;
        rest.trim_end_matches('.').parse().ok()
    })
}

/// Whether a failed result is the CLI's own refusal: omp's approval gate, which fails a gated
/// call closed when no one can answer it (print mode), or turns it down on the user's word.
fn refused_by_cli(output: &str) -> bool {
    output.contains("requires approval but no interactive UI")
        || output.trim_start().starts_with("Tool call denied by")
}

/// Decodes one load-bearing row. A row that is not even JSON identifies nothing and gets the
/// garbage rule; valid JSON of the wrong shape is drift and fails the run.
pub fn decode_event<'a, T: Deserialize<'a>>(
    line: &'a [u8],
    kind: &str,
) -> Result<Option<T>, Drift> {
    match serde_json::from_slice(line) {
        Ok(row) => Ok(Some(row)),
        Err(e) if is_syntax(&e) => unidentified(line).map(|()| None),
        Err(e) => Err(drift(kind, &e)),
    }
}

fn is_syntax(e: &serde_json::Error) -> bool {
    matches!(e.classify(), Category::Syntax | Category::Eof)
}

fn drift(kind: &str, e: &serde_json::Error) -> Drift {
    Drift::undecodable(Row::event(kind), e)
}

/// A line that is not a readable event at all. It is skipped, unless it still identifies itself
/// as an assistant message_end: that row may have been the failed final turn.
fn unidentified(line: &[u8]) -> Result<(), Drift> {
    if raw_field_is(line, "type", "message_end") && raw_field_is(line, "role", "assistant") {
        return Err(Drift::Malformed {
            what: "assistant message_end".into(),
            at_stake: "final turn",
        });
    }
    Ok(())
}

// Wire shapes: only the fields the rules read. Unknown fields are ignored; a field that is read
// and has the wrong type fails the decode, which fails the run (fail closed).

/// A row read for its type alone (`agent_start`, pi's `agent_settled`): it carries nothing the
/// rules read, but it must still be a well-formed row to count.
#[derive(Deserialize)]
pub struct TypeOnly {
    /// Declared so that a row naming its type twice fails to decode instead of being guessed.
    #[serde(rename = "type")]
    _kind: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Session<'a> {
    /// Declared so that a row naming its type twice fails to decode instead of being guessed.
    #[serde(rename = "type")]
    _kind: Option<IgnoredAny>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct MessageEnd<'a> {
    /// Declared so that a row naming its type twice fails to decode instead of being guessed.
    #[serde(rename = "type")]
    _kind: Option<IgnoredAny>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Message<'a> {
    #[serde(borrow)]
    content: Option<Vec<Part<'a>>>,
    usage: Option<MessageUsage>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(borrow)]
    error_message: Option<Cow<'a, str>>,
    /// A number or a string on the wire.
    error_status: Option<Value>,
    #[serde(borrow)]
    provider: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
}

/// An assistant message's content part: text, thinking or a tool call.
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    arguments: Option<Value>,
}

/// The family spells usage `input`/`output`, not `input_tokens`/`output_tokens`; `input`
/// leaves out the cached prompt tokens, which come as `cacheRead`/`cacheWrite`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageUsage {
    #[serde(default)]
    input: u64,
    #[serde(default)]
    output: u64,
    #[serde(default)]
    cache_read: u64,
    #[serde(default)]
    cache_write: u64,
    cost: Option<Cost>,
}

/// What the CLI priced the message at, from its own model table.
#[derive(Deserialize)]
struct Cost {
    total: Option<f64>,
}

/// A `toolResult` message_end; `C` is how its content is read (skipped by the fallback).
#[derive(Deserialize)]
struct ToolResultEnd<'a, C = Vec<OutputPart<'a>>> {
    #[serde(borrow)]
    message: Option<ToolResultMessage<'a, C>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolResultMessage<'a, C> {
    #[serde(borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_name: Option<Cow<'a, str>>,
    content: Option<C>,
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct RoleProbe<'a> {
    #[serde(rename = "type")]
    _kind: Option<IgnoredAny>,
    #[serde(borrow)]
    message: Option<MessageRole<'a>>,
}

#[derive(Deserialize)]
struct MessageRole<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetryStart<'a> {
    /// Declared so that a row naming its type twice fails to decode instead of being guessed.
    #[serde(rename = "type")]
    _kind: Option<IgnoredAny>,
    #[serde(rename = "attempt")]
    _attempt: Option<u64>,
    #[serde(borrow)]
    error_message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetryEnd<'a> {
    /// Declared so that a row naming its type twice fails to decode instead of being guessed.
    #[serde(rename = "type")]
    _kind: Option<IgnoredAny>,
    success: Option<bool>,
    #[serde(borrow)]
    final_error: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::runtime::omp::stream::Omp;
    use crate::runtime::pi::stream::Pi;

    use crate::event::testing::Sink;

    /// Reads `rows` with `dialect`, writing events; returns the verdict, the tally and the
    /// events written.
    fn read<D: Dialect>(mut dialect: D, rows: &[&str]) -> (Verdict, Events, Vec<Value>) {
        let sink = Sink::default();
        let mut events = Events::tally(D::RUNTIME).writing_to(Box::new(sink.clone()));
        for row in rows {
            dialect.line(row.as_bytes(), &mut events).unwrap();
        }
        let verdict = dialect.finish();
        let written = sink
            .0
            .borrow()
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        (verdict, events, written)
    }

    const CALL: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"touch /etc/x"}}],"provider":"fake","model":"m","usage":{"input":10,"output":2},"stopReason":"toolUse"}}"#;
    const ANSWER: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"fake","model":"m","usage":{"input":20,"output":3},"stopReason":"stop"}}"#;

    fn result_row(text: &str, is_error: bool) -> String {
        serde_json::json!({"type":"message_end","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":[{"type":"text","text":text}],"isError":is_error}}).to_string()
    }

    #[test]
    fn a_kernel_refusal_is_a_denial() {
        let denied = result_row(
            "touch: cannot touch '/etc/x': Permission denied\n\nCommand exited with code 1",
            true,
        );
        let (_, events, written) = read(Pi::default(), &[CALL, &denied, ANSWER]);
        let tally = events.summary();
        assert_eq!((tally.calls, tally.denied, tally.failed), (1, 1, 0));
        let result = written.iter().find(|e| e["type"] == "tool_result").unwrap();
        assert_eq!(result["status"], "denied");
        assert_eq!(result["exit_code"], 1);
    }

    #[test]
    fn omps_approval_gate_is_a_denial() {
        let refused = result_row(
            "Tool \"bash\" requires approval but no interactive UI available.\nOptions:",
            true,
        );
        let (_, events, _) = read(Omp::default(), &[CALL, &refused, ANSWER]);
        let tally = events.summary();
        assert_eq!((tally.calls, tally.denied), (1, 1));
        assert_eq!(
            tally.denials[0].said,
            "Tool \"bash\" requires approval but no interactive UI available."
        );
    }

    #[test]
    fn a_failed_command_keeps_its_exit_code() {
        let failed = result_row(
            "no such file\n\nCommand exited with code 2\n\nWall time: 0.01 seconds",
            true,
        );
        let (_, events, written) = read(Omp::default(), &[CALL, &failed, ANSWER]);
        assert_eq!(
            (events.summary().failed, events.summary().completed),
            (1, 0)
        );
        let result = written.iter().find(|e| e["type"] == "tool_result").unwrap();
        assert_eq!(
            (result["status"].as_str(), result["exit_code"].as_i64()),
            (Some("failed"), Some(2))
        );
        // Only a failed result is searched for one: a successful output may quote the words.
        let quoted = result_row("grep found: Command exited with code 3", false);
        let (_, _, written) = read(Omp::default(), &[CALL, &quoted, ANSWER]);
        let result = written.iter().find(|e| e["type"] == "tool_result").unwrap();
        assert!(result["exit_code"].is_null());
    }

    #[test]
    fn exit_codes_in_both_wordings() {
        assert_eq!(exit_code("x\n\nCommand exited with code 127"), Some(127));
        assert_eq!(
            exit_code("Command was killed by SIGKILL (9); the shell reports this as exit code 137"),
            Some(137)
        );
        assert_eq!(exit_code("Command aborted"), None);
    }

    #[test]
    fn a_call_executed_through_tool_execution_is_counted_once() {
        let rows = [
            CALL,
            r#"{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"ls"}}"#,
            r#"{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{"content":[{"type":"text","text":"a"}]},"isError":false}"#,
            &result_row("a", false),
            r#"{"type":"turn_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{}}]},"toolResults":[]}"#,
            ANSWER,
        ];
        let (_, events, written) = read(Omp::default(), &rows);
        let tally = events.summary();
        assert_eq!((tally.calls, tally.completed), (1, 1));
        let of = |kind: &str| written.iter().filter(|e| e["type"] == kind).count();
        assert_eq!((of("tool_call"), of("tool_result")), (1, 1));
    }

    #[test]
    fn a_call_whose_result_never_came_has_none() {
        let (verdict, events, _) = read(Pi::default(), &[CALL]);
        let tally = events.summary();
        assert_eq!((tally.calls, tally.completed, tally.failed), (1, 0, 0));
        assert!(verdict.failure.is_some());
    }

    #[test]
    fn an_unreadable_tool_result_is_counted_and_fails_nothing() {
        let odd = r#"{"type":"message_end","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":"plain","isError":false}}"#;
        let (verdict, events, _) = read(
            Pi::default(),
            &[CALL, odd, ANSWER, r#"{"type":"agent_end"}"#],
        );
        assert_eq!(events.summary().completed, 1);
        assert!(verdict.failure.is_none(), "{:?}", verdict.failure);
    }

    #[test]
    fn cached_tokens_count_into_input_and_cost_is_summed() {
        let turn = |cost: f64| {
            serde_json::json!({"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"provider":"anthropic","model":"m","usage":{"input":10,"output":3,"cacheRead":100,"cacheWrite":5,"totalTokens":118,"cost":{"total":cost}},"stopReason":"stop"}}).to_string()
        };
        let (verdict, _, written) = read(Pi::default(), &[&turn(0.25), &turn(0.5)]);
        let usage = verdict.facts.usage;
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens
            ),
            (230, 6, 200, 10)
        );
        assert_eq!(usage.cost_usd, Some(0.75));
        let first = written.iter().find(|e| e["type"] == "usage").unwrap();
        assert_eq!(first["turn"]["input_tokens"], 115);
        assert_eq!(first["cost_usd"], 0.25);
        let start = &written[0];
        assert_eq!(
            (start["type"].as_str(), start["model"].as_str()),
            (Some("start"), Some("m"))
        );
    }

    #[test]
    fn omps_rollup_is_a_cumulative_usage_event() {
        let end = r#"{"type":"agent_end","telemetry":{"usage":{"inputTokens":500,"outputTokens":9,"cachedInputTokens":400,"cacheWriteTokens":0,"reasoningOutputTokens":4}}}"#;
        let (verdict, _, written) = read(Omp::default(), &[ANSWER, end]);
        let rollup = written.iter().rfind(|e| e["type"] == "usage").unwrap();
        assert!(rollup["turn"].is_null());
        assert_eq!(rollup["cumulative"]["cache_read_tokens"], 400);
        assert_eq!(verdict.facts.usage.source, UsageSource::Telemetry);
        assert_eq!(verdict.facts.usage.reasoning_tokens, 4);
    }

    #[test]
    fn families() {
        assert_eq!(family_of("pi", "openai"), "codex");
        assert_eq!(family_of("pi", "openai-codex"), "codex");
        assert_eq!(family_of("pi", "anthropic"), "claude");
        assert_eq!(family_of("pi", "kimi-code"), "kimi");
        assert_eq!(family_of("pi", "google"), "pi:google");
        assert_eq!(family_of("omp", "devin"), "omp:devin");
    }
}
