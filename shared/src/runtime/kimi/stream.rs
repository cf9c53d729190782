//! Kimi's `--output-format stream-json` output, read into a verdict. One reader serves both
//! CLIs, because they print the same role/content lines:
//!
//! - Kimi Code (`kimi -p … --output-format stream-json`, npm `@moonshot-ai/kimi-code`, 2.1.0
//!   captured) prints one assistant line per step (`content` a string, `tool_calls`
//!   OpenAI-style), `{"role":"tool",…}` results and `role:"meta"` lines: `system.version` first,
//!   `turn.step.retrying` for each provider retry, and `session.resume_hint` with the
//!   `session_id`, which it writes only once the prompt has completed. Its fatal errors go to
//!   stderr (`error: failed to run prompt: provider.api_error: …`, exit 1); a
//!   `{"type":"error","code","message","retryable"}` event on stdout is read too.
//! - The legacy kimi-cli (`kimi --print --output-format stream-json`, PyPI, 1.51.0 captured)
//!   prints the same role/content lines (`content` a string or parts: `text`, and `think`,
//!   which never reaches the answer) and no meta line; its errors are plain text on stdout,
//!   folded at 80 columns (`Error code: 500 - {…}`), with exit status 75 (retryable: 429, 5xx,
//!   timeouts, an empty response) or 1, and its session id is on stderr only.
//!
//! Neither prints a stop reason or (so far) usage, and the legacy CLI no terminal event at all:
//! a kill, a length cut or a dropped provider stream can leave a stream that looks finished. So
//! the process outcome (`--exit-code`/`--status-file`) is part of every real verdict, and the
//! stream adds what it proves: the CLI's own error text, a retry still pending, a Kimi Code run
//! that never completed, a final message that only called tools, no answer. A failure is
//! reported in the CLI's own words, never classified from them (no "authentication required"
//! label: kimi relays its tools' output on the same streams, so such a label could be a tool's).
//!
//! There is no glance fast path: kimi prints whole messages, not deltas, and an unparseable line
//! is the CLI's own text, which only a full JSON read can tell apart from a row.
//!
//! The CLIs' own text (Kimi Code's stderr, the legacy CLI's folded errors) is read by `text.rs`.
//!
//! Events (see `crate::event`): the assistant lines' `tool_calls` and the `role:"tool"` lines
//! are tallied always (kimi prints whole messages, so every line is decoded anyway); a tool
//! line and the event-only fields (a call's id and arguments, a `think` part) never fail the
//! run, since the verdict does not read them. Neither CLI flags a failed result: how each says
//! it is in `outcome`.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::store::Finish;
use super::text::{BoundedText, PlainText, Stderr};
use serde_json::Value;

use crate::dialect::{decode, Drift, ResultContent, Row, Tokens};
use crate::dialect::{Dialect, RunFailure, Verdict};
use crate::envelope::{ErrorClass, Facts, Usage, UsageSource};
use crate::event::{Events, ToolKind, ToolOutcome, ToolOutput};
use crate::sniff::raw_field_is;

/// The tools of both CLIs by their exact names (kimi-cli's Python tools, Kimi Code's agent-core
/// ones), where the shared words in [`ToolKind::of`] would guess wrong or not at all.
const TOOL_KINDS: &[(&str, ToolKind)] = &[
    // Both CLIs.
    ("Glob", ToolKind::Search),
    ("Grep", ToolKind::Search),
    ("FetchURL", ToolKind::Fetch),
    ("ReadMediaFile", ToolKind::Read),
    ("Agent", ToolKind::Other),
    ("AskUserQuestion", ToolKind::Other),
    ("TaskList", ToolKind::Other),
    ("TaskOutput", ToolKind::Other),
    ("TaskStop", ToolKind::Other),
    ("EnterPlanMode", ToolKind::Think),
    ("ExitPlanMode", ToolKind::Think),
    // The legacy kimi-cli.
    ("Shell", ToolKind::Execute),
    ("ReadFile", ToolKind::Read),
    ("WriteFile", ToolKind::Edit),
    ("StrReplaceFile", ToolKind::Edit),
    ("SearchWeb", ToolKind::Fetch),
    ("SetTodoList", ToolKind::Think),
    ("Think", ToolKind::Think),
    ("SendDMail", ToolKind::Other),
    // Kimi Code.
    ("Bash", ToolKind::Execute),
    ("Read", ToolKind::Read),
    ("Write", ToolKind::Edit),
    ("Edit", ToolKind::Edit),
    ("WebSearch", ToolKind::Fetch),
    ("TodoList", ToolKind::Think),
    ("AgentSwarm", ToolKind::Other),
    ("Skill", ToolKind::Other),
    ("WaitFor", ToolKind::Other),
    ("CronCreate", ToolKind::Other),
    ("CronDelete", ToolKind::Other),
    ("CronList", ToolKind::Other),
    ("CreateGoal", ToolKind::Think),
    ("GetGoal", ToolKind::Think),
    ("UpdateGoal", ToolKind::Think),
    ("SetGoalBudget", ToolKind::Think),
];

/// What both CLIs answer a call their approval layer refused (`ToolRejectedError`); print mode
/// approves every call itself, so it shows only under a policy that says no.
const REJECTED: &str = "The tool call is rejected by the user";
/// How the legacy CLI opens a failed tool's result (`tool_result_to_message`).
const LEGACY_ERROR: &str = "<system>ERROR: ";
/// The shell tools' last word on a nonzero exit (kimi-cli's `Shell`, Kimi Code's `Bash`).
const EXIT_CODE: &str = "Command failed with exit code: ";
/// kimi-cli's `Shell` on a zero exit.
const LEGACY_EXIT_0: &str = "<system>Command executed successfully.</system>";
/// Kimi Code's answer to a call its repeat breaker refused to run.
const REPEAT_BREAKER: &str = "This turn was ended by the repeat breaker";

/// The rows this reader must read, as its messages name them.
const ASSISTANT: &str = "an assistant message";
const RESUME_HINT_LINE: &str = "a session.resume_hint line";
const RETRYING_LINE: &str = "a turn.step.retrying line";
const ERROR_EVENT: &str = "an error event";

/// The kimi dialect's state while the stream is read.
#[derive(Debug, Default)]
pub struct Kimi {
    /// What the CLI's stderr said, handed in line by line once the stream has ended.
    stderr: Stderr,
    /// Why the CLI's stderr could not be read, when it could not.
    stderr_lost: Option<String>,
    /// How Kimi Code's session store says the final message ended (store.rs), when the caller
    /// looked it up; `Err` says why it cannot vouch for it.
    store_finish: Option<Result<Finish, String>>,
    session_id: Option<String>,
    /// The final assistant message so far.
    last: Option<Message>,
    last_text: Option<String>,
    /// The first `{"type":"error"}` event.
    error_event: Option<String>,
    /// The CLI's own plain text on stdout, unfolded.
    plain: PlainText,
    usage: Option<Tokens>,
    /// A `role:"meta"` line was seen: the stream is Kimi Code's.
    kimi_code: bool,
    /// The version Kimi Code's `system.version` line names.
    cli_version: Option<String>,
    /// Kimi Code wrote its `session.resume_hint`, which it does only once the prompt completed.
    completed: bool,
    /// An assistant message with content or a tool call has been read.
    spoke: bool,
    /// The last `turn.step.retrying` not followed by an assistant line.
    retrying: Option<Retry>,
}

/// A provider retry Kimi Code announced.
#[derive(Debug, Default)]
struct Retry {
    next_attempt: Option<u64>,
    max_attempts: Option<u64>,
    error: String,
}

/// What the verdict needs of one assistant line.
#[derive(Debug, Default)]
struct Message {
    text: String,
    tools: Vec<String>,
}

/// What the caller hands in once the stream has ended and before the verdict (see
/// `beside.rs`, which reads it): this dialect opens no file.
impl Kimi {
    /// Reads one line of the CLI's stderr (the legacy CLI prints its session id nowhere else).
    pub fn stderr_line(&mut self, raw: &[u8]) {
        self.stderr.line(raw);
    }

    /// The CLI's stderr could not be read, for the reason `why`: what was read of it is
    /// dropped, and the run fails as `process` unless the stream proves a failure of its own.
    pub fn stderr_lost(&mut self, why: String) {
        self.stderr = Stderr::default();
        self.stderr_lost = Some(why);
    }

    /// The stream is Kimi Code's, the one CLI whose session store records how its answer ended.
    pub fn is_kimi_code(&self) -> bool {
        self.kimi_code
    }

    /// The session the run named: on the stream, else in a resume hint on stderr.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id
            .as_deref()
            .or(self.stderr.session_id.as_deref())
    }

    /// How the session store records the final message's end, or why it cannot say: the stream
    /// alone cannot tell a complete Kimi Code answer from a cut one.
    pub fn store_finish(&mut self, finish: Result<Finish, String>) {
        self.store_finish = Some(finish);
    }
}

impl Dialect for Kimi {
    const RUNTIME: &'static str = "kimi";

    fn line(&mut self, line: &[u8], events: &mut Events) -> Result<(), Drift> {
        // A tool result is most of a stream's bytes, so a line that opens as one is decoded
        // once, whole. One that does not decode so is read as any other line: its head decides.
        if line.starts_with(br#"{"role":"tool""#) {
            if let Ok(result) = serde_json::from_slice::<ToolLine<'_>>(line) {
                if result.role.as_deref() == Some("tool") {
                    tool_result(result, events);
                    return Ok(());
                }
            }
        }
        let head = match serde_json::from_slice::<Head<'_>>(line) {
            Ok(head) => head,
            Err(_) if is_json(line) => return unidentified(line),
            Err(_) => return self.plain_line(line),
        };
        match (head.role.as_deref(), head.kind.as_deref()) {
            (Some("assistant"), _) => {
                self.assistant(decode(line, || Row::Named(ASSISTANT))?, events)
            }
            // Results never touch the verdict: one that does not decode is left out of the
            // tally (its call stays without a result) rather than failing the run.
            (Some("tool"), _) => {
                if let Ok(result) = serde_json::from_slice::<ToolLine<'_>>(line) {
                    tool_result(result, events);
                }
            }
            (Some("meta"), kind) => {
                self.kimi_code = true;
                match kind {
                    Some("session.resume_hint") => {
                        self.resume_hint(decode(line, || Row::Named(RESUME_HINT_LINE))?)
                    }
                    Some("turn.step.retrying") => {
                        self.retry(decode(line, || Row::Named(RETRYING_LINE))?, events)
                    }
                    // Informational: a reshaped version line costs the record its version,
                    // never the verdict.
                    Some("system.version") => {
                        self.cli_version = serde_json::from_slice::<VersionLine<'_>>(line)
                            .ok()
                            .and_then(|row| row.version)
                            .map(Cow::into_owned);
                        // Kimi Code's first line; the session id comes only with its last.
                        events.start(self.cli_version.as_deref(), None, None, None);
                    }
                    _ => {}
                }
            }
            (None, Some("error")) => {
                self.error_event(decode(line, || Row::Named(ERROR_EVENT))?, events)
            }
            _ => {}
        }
        Ok(())
    }

    /// Every kimi line ends with a newline, so bytes after the last one were cut mid-write,
    /// even when they parse: a row this reader needs, or the CLI's own text, fails the run;
    /// the start of any other JSON row identifies nothing and is skipped.
    fn cut_line(&self, tail: &[u8]) -> Result<(), Drift> {
        if let Some(row) = identified_row(tail) {
            return Err(Drift::Cut(Row::Named(row)));
        }
        if opens_like_json(tail) {
            return Ok(());
        }
        Err(Drift::CutText(String::from_utf8_lossy(tail).into_owned()))
    }

    fn model_spoke(&self) -> bool {
        self.spoke
    }

    fn finish(self) -> Verdict {
        let stderr_error = self.stderr.error.as_ref().map(BoundedText::message);
        let stderr_lost = self.stderr_lost.as_ref().map(|why| {
            RunFailure::new(
                ErrorClass::Process,
                format!("{why}; the session id and errors kimi prints there are lost"),
            )
        });
        let failure = self
            .judge(stderr_error.as_deref())
            .or(stderr_lost)
            .or_else(|| self.unfinished());
        let session_id = self.session_id().map(str::to_string);
        let last = self.last.unwrap_or_default();
        Verdict {
            facts: Facts {
                session_id,
                provider: None,
                family: Some("kimi".into()),
                model: None,
                cli_version: self.cli_version,
                stop_reason: None,
                usage: self
                    .usage
                    .map_or_else(Usage::default, |tokens| tokens.usage(UsageSource::Messages)),
                tools: Default::default(),
            },
            last_text: self.last_text,
            failure,
            answer: last.text,
        }
    }
}

impl Kimi {
    fn assistant(&mut self, line: AssistantLine<'_>, events: &mut Events) {
        self.retrying = None;
        let mut message = Message::default();
        let mut thought = false;
        let mut reasoning = 0;
        match line.content {
            Some(Content::Text(text)) => message.text.push_str(&text),
            Some(Content::Parts(parts)) => {
                for part in parts {
                    match part.kind.as_deref() {
                        Some("think") => {
                            thought = true;
                            if let Some(Loose::Text(think)) = &part.think {
                                reasoning += think.chars().count();
                            }
                        }
                        Some("text") => {
                            message
                                .text
                                .push_str(part.text.as_deref().unwrap_or_default());
                        }
                        _ => {}
                    }
                }
            }
            None => {}
        }
        self.spoke |= !message.text.is_empty() || line.tool_calls.is_some() || thought;
        if events.writing() {
            events.reasoning(reasoning);
            events.text(&message.text);
        }
        let calls = line.tool_calls.unwrap_or_default();
        message.tools = Vec::with_capacity(calls.len());
        for call in calls {
            let function = call.function.unwrap_or_default();
            let name = function.name.map_or(Cow::Borrowed("unnamed"), |name| name);
            let id = call.id.as_ref().map(Loose::text).unwrap_or_default();
            // The input is only written, never tallied: it is parsed only for --events.
            let input = match function.arguments {
                Some(arguments) if events.writing() => arguments.value(),
                _ => Value::Null,
            };
            events.tool_call(&id, &name, TOOL_KINDS, &input);
            message.tools.push(name.into_owned());
        }
        if let Some(usage) = line.usage {
            let tokens = Tokens::from(usage);
            self.usage.get_or_insert_with(Tokens::default).add(tokens);
            events.turn_usage(tokens, None);
        }
        if !message.text.trim().is_empty() {
            self.last_text = Some(message.text.clone());
        }
        self.last = Some(message);
    }

    fn resume_hint(&mut self, line: ResumeHint<'_>) {
        self.completed = true;
        if let Some(id) = line.session_id.filter(|id| !id.is_empty()) {
            self.session_id = Some(id.into_owned());
        }
    }

    fn retry(&mut self, line: RetryLine<'_>, events: &mut Events) {
        // Retries are rare, and --progress prints them whether or not events are written.
        let cause = line.error_message.as_deref().unwrap_or("no error reported");
        let message = match (line.next_attempt, line.max_attempts) {
            (Some(next), Some(max)) => format!("{cause} (attempt {next} of {max} next)"),
            _ => cause.to_string(),
        };
        events.retry(&message);
        self.retrying = Some(Retry {
            next_attempt: line.next_attempt,
            max_attempts: line.max_attempts,
            error: line.error_message.map(Cow::into_owned).unwrap_or_default(),
        });
    }

    fn error_event(&mut self, event: ErrorEvent<'_>, events: &mut Events) {
        let code = event.code.as_deref().unwrap_or("error");
        let message = event.message.as_deref().unwrap_or("no message reported");
        let retryable = match event.retryable {
            Some(true) => " (kimi marks it retryable)",
            _ => "",
        };
        let said = format!("{code}: {message}{retryable}");
        events.error(&said);
        self.error_event.get_or_insert(said);
    }

    /// A line that is not JSON: the CLI's own text (the legacy CLI's errors), unless it still
    /// identifies itself as one of the rows this reader must read.
    fn plain_line(&mut self, line: &[u8]) -> Result<(), Drift> {
        if let Some(row) = identified_row(line) {
            return Err(Drift::Malformed {
                what: format!("line that reads as {row}"),
                at_stake: "final message",
            });
        }
        self.plain.push(&String::from_utf8_lossy(line));
        Ok(())
    }

    /// The verdict, most specific first (an unreadable row, which outranks all of these, is
    /// applied by the parse driver; the process outcome is folded in after). Kimi Code's
    /// stderr error counts only for a run that never completed: on a completed one, an
    /// `error:` line on stderr is a tool's output that Kimi Code relayed.
    /// With `--session-store`, a Kimi Code run whose final message the store does not record
    /// as completed failed as `truncated`; one the store cannot vouch for fails closed.
    fn unfinished(&self) -> Option<RunFailure> {
        let finish = self.store_finish.as_ref()?;
        if !self.kimi_code {
            return None;
        }
        match finish {
            Ok(finish) if finish.is_complete() => None,
            Ok(finish) => Some(RunFailure::new(
                ErrorClass::Truncated,
                format!(
                    "Kimi Code's session store records the final answer as unfinished \
                     (finishReason {}, raw {}): the provider cut it off{}, though kimi exited 0",
                    finish.reason.as_deref().unwrap_or("null"),
                    finish.raw.as_deref().unwrap_or("null"),
                    if finish.raw.as_deref() == Some("length") {
                        " at its length limit"
                    } else {
                        " or the stream dropped"
                    }
                ),
            )),
            Err(why) => Some(RunFailure::new(
                ErrorClass::Truncated,
                format!("cannot verify that the answer is complete: {why}"),
            )),
        }
    }

    fn judge(&self, stderr_error: Option<&str>) -> Option<RunFailure> {
        let own_words = self
            .error_event
            .clone()
            .or_else(|| (!self.plain.is_empty()).then(|| self.plain.message()))
            .or_else(|| stderr_error.filter(|_| !self.completed).map(str::to_string));
        if let Some(text) = own_words {
            return Some(match &self.retrying {
                Some(retry) => RunFailure::new(
                    ErrorClass::RetryExhausted,
                    match retry.attempt() {
                        Some(attempt) => format!("{text} (kimi gave up retrying after {attempt})"),
                        None => format!("{text} (kimi gave up retrying)"),
                    },
                ),
                None => RunFailure::new(ErrorClass::ModelError, text),
            });
        }
        if let Some(retry) = &self.retrying {
            let cause = if retry.error.trim().is_empty() {
                String::new()
            } else {
                format!(" after: {}", retry.error)
            };
            let pending = retry
                .attempt()
                .map(|attempt| format!(" ({attempt} pending)"))
                .unwrap_or_default();
            return Some(RunFailure::new(
                ErrorClass::RetryOpen,
                format!(
                    "kimi stream ended while Kimi Code was retrying the provider{pending}{cause}"
                ),
            ));
        }
        if self.kimi_code && !self.completed {
            return Some(RunFailure::new(
                ErrorClass::NoAgentEnd,
                "kimi stream ended without a session.resume_hint: Kimi Code writes it only once the prompt has completed, so this run did not (it failed, was killed or was cut off)",
            ));
        }
        let Some(last) = &self.last else {
            return Some(RunFailure::new(
                ErrorClass::EmptyAnswer,
                "kimi stream carried no assistant message",
            ));
        };
        if !last.tools.is_empty() {
            return Some(RunFailure::new(
                ErrorClass::Truncated,
                format!(
                    "TRUNCATED: kimi's final assistant message called tools ({}) and the stream ended before an answer came",
                    last.tools.join(", ")
                ),
            ));
        }
        if last.text.trim().is_empty() {
            return Some(RunFailure::new(
                ErrorClass::EmptyAnswer,
                "kimi's final assistant message carried no text",
            ));
        }
        None
    }
}

impl Retry {
    /// `attempt 10 of 10`, as far as Kimi Code said.
    fn attempt(&self) -> Option<String> {
        match (self.next_attempt, self.max_attempts) {
            (Some(next), Some(max)) => Some(format!("attempt {next} of {max}")),
            (Some(next), None) => Some(format!("attempt {next}")),
            _ => None,
        }
    }
}

/// Reports a `role:"tool"` line: the call it answers, and how it ended as far as the CLIs say.
/// Neither prints an error flag: the legacy CLI opens a failed result with `<system>ERROR:`,
/// Kimi Code's shell ends a nonzero exit with its exit-code line, and its other tools' failures
/// read like any output (completed).
fn tool_result(line: ToolLine<'_>, events: &mut Events) {
    let id = line
        .tool_call_id
        .as_ref()
        .map(Loose::text)
        .unwrap_or_default();
    let content = line.content.unwrap_or_default();
    // The legacy CLI prints parts: its `<system>` verdict first, then the tool's own text.
    let outcome = outcome(content.output(), content.in_parts);
    events.tool_result(&id, "unknown", TOOL_KINDS, outcome);
}

/// How a result's text says the call ended. Most results say nothing: their text opens with
/// none of the CLIs' verdicts and holds no exit-code line, and is never decoded.
fn outcome(output: ToolOutput<'_>, legacy: bool) -> ToolOutcome<'_> {
    let opening = [LEGACY_ERROR, LEGACY_EXIT_0, REJECTED, REPEAT_BREAKER];
    if !opening.iter().any(|word| output.opens_with(word)) && !output.mentions(EXIT_CODE) {
        return ToolOutcome {
            output,
            ..ToolOutcome::default()
        };
    }
    let text = output.text();
    let head = text.trim_start();
    let error = head.strip_prefix(LEGACY_ERROR).filter(|_| legacy);
    let refused_by_cli = error.unwrap_or(head).starts_with(REJECTED);
    let (failed, exit_code) = match error {
        Some(error) => (true, exit_code(error.lines().next().unwrap_or(""))),
        None if legacy => (false, head.starts_with(LEGACY_EXIT_0).then_some(0)),
        None => {
            let code = kimi_code_exit(&text);
            (code.is_some() || head.starts_with(REPEAT_BREAKER), code)
        }
    };
    ToolOutcome {
        failed,
        exit_code,
        output,
        refused_by_cli,
    }
}

/// The exit code a shell tool's `Command failed with exit code: N.` line names.
fn exit_code(line: &str) -> Option<i64> {
    let rest = line.trim().strip_prefix(EXIT_CODE)?;
    let digits = rest.split(['.', '<']).next()?;
    digits.trim().parse().ok()
}

/// Kimi Code's `Bash` ends the output of a nonzero exit with its exit-code line; the CLI may
/// append a `<system-reminder>` block after it, so the last line before one is read.
fn kimi_code_exit(output: &str) -> Option<i64> {
    let body = output
        .find("<system-reminder>")
        .map_or(output, |at| &output[..at]);
    exit_code(body.lines().rev().find(|line| !line.trim().is_empty())?)
}

/// Which row a broken line still identifies itself as, if any: only a line that opens like a
/// JSON object counts, so the CLI's own text quoting a provider's JSON is never mistaken.
fn identified_row(raw: &[u8]) -> Option<&'static str> {
    if !opens_like_json(raw) {
        return None;
    }
    if raw_field_is(raw, "role", "assistant") {
        Some(ASSISTANT)
    } else if raw_field_is(raw, "type", "session.resume_hint") {
        Some(RESUME_HINT_LINE)
    } else if raw_field_is(raw, "type", "turn.step.retrying") {
        Some(RETRYING_LINE)
    } else if raw_field_is(raw, "type", "error") {
        Some(ERROR_EVENT)
    } else {
        None
    }
}

/// A JSON line whose head did not decode (a `role` or `type` that is not a string). It is
/// skipped, unless it still identifies itself as a row this reader must read.
fn unidentified(line: &[u8]) -> Result<(), Drift> {
    match identified_row(line) {
        Some(row) => Err(Drift::Undecodable {
            row: Row::Named(row),
            error: "its role or type is not a string".into(),
        }),
        None => Ok(()),
    }
}

fn opens_like_json(raw: &[u8]) -> bool {
    raw.trim_ascii_start().starts_with(b"{")
}

fn is_json(line: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(line).is_ok()
}

// Wire shapes: only the fields the rules read. Unknown fields are ignored; a field that is read
// and has the wrong type fails the decode, which fails the run (fail closed).

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct AssistantLine<'a> {
    #[serde(borrow)]
    content: Option<Content<'a>>,
    #[serde(borrow)]
    tool_calls: Option<Vec<ToolCall<'a>>>,
    usage: Option<UsageFields>,
}

/// Kimi Code and a one-part legacy message print a string; the legacy CLI prints parts
/// otherwise (`text`, `think`, media).
#[derive(Deserialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Parts(#[serde(borrow)] Vec<Part<'a>>),
}

/// A content part: its text is the answer's (read strictly), its `think` only the events'
/// (reshaped reasoning costs only its size).
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    think: Option<Loose<'a>>,
}

/// A field that is read for the events only: a reshaped one must not fail a run the verdict
/// rules pass.
#[derive(Deserialize)]
#[serde(untagged)]
enum Loose<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Other(Value),
}

impl Loose<'_> {
    /// The field as text: a string as it is, anything else as its JSON.
    fn text(&self) -> Cow<'_, str> {
        match self {
            Loose::Text(text) => Cow::Borrowed(text),
            Loose::Other(value) => Cow::Owned(value.to_string()),
        }
    }

    /// A tool call's `arguments`: a JSON string (OpenAI's spelling) is parsed, and kept as a
    /// string when it does not parse; anything else is kept as it is.
    fn value(self) -> Value {
        match self {
            Loose::Text(text) => {
                serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.into_owned()))
            }
            Loose::Other(value) => value,
        }
    }
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(borrow)]
    id: Option<Loose<'a>>,
    #[serde(borrow)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize, Default)]
struct Function<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Loose<'a>>,
}

/// `{"role":"tool","tool_call_id","content"}`: a string (Kimi Code) or parts (the legacy CLI).
#[derive(Deserialize)]
struct ToolLine<'a> {
    /// [`Head`]'s fields, so that a line this reads is one [`Head`] reads too.
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow)]
    _kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_call_id: Option<Loose<'a>>,
    #[serde(borrow)]
    content: Option<ResultContent<'a>>,
}

/// Usage on an assistant line. Neither CLI prints any yet (kimi-cli keeps its per-step
/// `TokenUsage` for its status bar, Kimi Code for its session store), so each plausible
/// spelling is read: kimi's own (`input_other` + `input_cache_read` + `input_cache_creation`,
/// `output`), OpenAI's and Moonshot's (`prompt_tokens` counting cached ones, cached in
/// `prompt_tokens_details.cached_tokens` or `cached_tokens`, `completion_tokens`), and
/// Anthropic's (`input_tokens` without the `cache_read_input_tokens` and
/// `cache_creation_input_tokens`, `output_tokens`). A figure left out is 0.
#[derive(Deserialize, Default)]
struct UsageFields {
    input_other: Option<u64>,
    input_cache_read: Option<u64>,
    input_cache_creation: Option<u64>,
    output: Option<u64>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    completion_tokens_details: Option<CompletionDetails>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

impl From<UsageFields> for Tokens {
    /// One step's figures, `input` counting every prompt token (cached ones included).
    fn from(u: UsageFields) -> Tokens {
        let reasoning = u
            .completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0);
        if let Some(other) = u.input_other {
            let read = u.input_cache_read.unwrap_or(0);
            let write = u.input_cache_creation.unwrap_or(0);
            return Tokens {
                input: other.saturating_add(read).saturating_add(write),
                output: u.output.unwrap_or(0),
                cache_read: read,
                cache_write: write,
                reasoning,
            };
        }
        if let Some(prompt) = u.prompt_tokens {
            let read = u
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(u.cached_tokens)
                .unwrap_or(0);
            return Tokens {
                input: prompt,
                output: u.completion_tokens.unwrap_or(0),
                cache_read: read.min(prompt),
                cache_write: 0,
                reasoning,
            };
        }
        let read = u.cache_read_input_tokens.unwrap_or(0);
        let write = u.cache_creation_input_tokens.unwrap_or(0);
        Tokens {
            input: u
                .input_tokens
                .unwrap_or(0)
                .saturating_add(read)
                .saturating_add(write),
            output: u.output_tokens.or(u.output).unwrap_or(0),
            cache_read: read,
            cache_write: write,
            reasoning,
        }
    }
}

#[derive(Deserialize)]
struct VersionLine<'a> {
    #[serde(borrow)]
    version: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ResumeHint<'a> {
    #[serde(borrow)]
    session_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RetryLine<'a> {
    next_attempt: Option<u64>,
    max_attempts: Option<u64>,
    #[serde(borrow)]
    error_message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ErrorEvent<'a> {
    #[serde(borrow)]
    code: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    retryable: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_line_names_the_version_and_a_reshaped_one_costs_only_the_version() {
        let version = |line: &[u8]| {
            let mut kimi = Kimi::default();
            kimi.line(line, &mut Events::tally("kimi")).unwrap();
            kimi.finish().facts.cli_version
        };
        let line = br#"{"role":"meta","type":"system.version","version":"2.1.0"}"#;
        assert_eq!(version(line).as_deref(), Some("2.1.0"));
        let reshaped = br#"{"role":"meta","type":"system.version","version":[2,1]}"#;
        assert_eq!(version(reshaped), None);
    }

    #[test]
    fn stderr_lines_give_the_session_and_the_error_until_stderr_is_lost() {
        let mut kimi = Kimi::default();
        kimi.stderr_line(b"\x1b[31merror: failed to run prompt\x1b[39m");
        kimi.stderr_line(b"  provider.api_error: 401");
        kimi.stderr_line(b"See log: /tmp/kimi.log");
        kimi.stderr_line(b"To resume this session: kimi -r session_1");
        assert_eq!(kimi.session_id(), Some("session_1"));
        let error = kimi.stderr.error.as_ref().map(BoundedText::message);
        assert_eq!(
            error.as_deref(),
            Some("error: failed to run prompt\n  provider.api_error: 401")
        );
        kimi.stderr_lost("cannot read --stderr-file err.txt: gone".into());
        assert_eq!(kimi.session_id(), None);
        assert!(kimi.stderr.error.is_none());
    }

    #[test]
    fn only_object_lines_identify_rows() {
        assert_eq!(
            identified_row(br#"{"role":"assistant","content":"x"#),
            Some("an assistant message")
        );
        assert_eq!(
            identified_row(br#"Error code: 529 - {"type":"error","error":{}}"#),
            None
        );
        assert_eq!(identified_row(br#"{"role":"tool","content":"x"#), None);
    }

    /// The events one stream writes, as JSON values, and the verdict's usage and tools.
    fn events_of(stream: &str) -> (Vec<serde_json::Value>, Verdict) {
        use crate::event::testing::Sink;
        let sink = Sink::default();
        let mut events = Events::tally("kimi").writing_to(Box::new(sink.clone()));
        let mut kimi = Kimi::default();
        for line in stream.lines() {
            kimi.line(line.as_bytes(), &mut events).unwrap();
        }
        let mut verdict = kimi.finish();
        verdict.facts.tools = events.summary().clone();
        let written = sink.0.borrow();
        let lines = written
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        (lines, verdict)
    }

    fn results(events: &[serde_json::Value]) -> Vec<(String, String, Option<i64>)> {
        events
            .iter()
            .filter(|e| e["type"] == "tool_result")
            .map(|e| {
                (
                    e["id"].as_str().unwrap().to_string(),
                    e["status"].as_str().unwrap().to_string(),
                    e["exit_code"].as_i64(),
                )
            })
            .collect()
    }

    #[test]
    fn legacy_results_say_failed_denied_and_exit_codes_in_their_system_part() {
        let stream = [
            r#"{"role":"assistant","content":[],"tool_calls":[{"type":"function","id":"a","function":{"name":"Shell","arguments":"{\"command\": \"false\"}"}},{"type":"function","id":"b","function":{"name":"WriteFile","arguments":"not json"}},{"type":"function","id":"c","function":{"name":"Shell","arguments":"{}"}},{"type":"function","id":"d","function":{"name":"Shell","arguments":"{}"}}]}"#,
            r#"{"role":"tool","content":[{"type":"text","text":"<system>ERROR: Command failed with exit code: 2.</system>"},{"type":"text","text":"boom\n"}],"tool_call_id":"a"}"#,
            r#"{"role":"tool","content":[{"type":"text","text":"<system>ERROR: The tool call is rejected by the user. Please follow the new instructions from the user.</system>"}],"tool_call_id":"b"}"#,
            r#"{"role":"tool","content":[{"type":"text","text":"<system>ERROR: Command failed with exit code: 1.</system>"},{"type":"text","text":"touch: cannot touch '/etc/x': Permission denied\n"}],"tool_call_id":"c"}"#,
            r#"{"role":"tool","content":[{"type":"text","text":"<system>Command executed successfully.</system>"},{"type":"text","text":"ok\n"}],"tool_call_id":"d"}"#,
            r#"{"role":"assistant","content":"done"}"#,
        ]
        .join("\n");
        let (events, verdict) = events_of(&stream);
        assert_eq!(
            results(&events),
            [
                ("a".into(), "failed".into(), Some(2)),
                ("b".into(), "denied".into(), None),
                ("c".into(), "denied".into(), Some(1)),
                ("d".into(), "completed".into(), Some(0)),
            ]
        );
        let calls: Vec<_> = events.iter().filter(|e| e["type"] == "tool_call").collect();
        assert_eq!(calls[0]["input"], serde_json::json!({"command": "false"}));
        assert_eq!(calls[0]["kind"], "execute");
        assert_eq!(calls[1]["input"], "not json");
        assert_eq!(calls[1]["kind"], "edit");
        let tools = &verdict.facts.tools;
        assert_eq!(
            (tools.calls, tools.completed, tools.failed, tools.denied),
            (4, 1, 1, 2)
        );
        assert_eq!(tools.denials[0].name, "WriteFile");
    }

    #[test]
    fn kimi_code_results_read_the_exit_line_and_the_repeat_breaker() {
        let stream = [
            r#"{"role":"meta","type":"system.version","version":"2.1.0"}"#,
            r#"{"role":"assistant","tool_calls":[{"type":"function","id":"a","function":{"name":"Bash","arguments":"{\"command\":\"false\"}"}},{"type":"function","id":"b","function":{"name":"Bash","arguments":"{}"}},{"type":"function","id":"c","function":{"name":"Read","arguments":"{}"}}]}"#,
            r#"{"role":"tool","tool_call_id":"a","content":"oops\nCommand failed with exit code: 3.\n\n\n<system-reminder>\nYou are repeating yourself.\n</system-reminder>"}"#,
            r#"{"role":"tool","tool_call_id":"b","content":"This turn was ended by the repeat breaker after the same tool call was issued 12 times in a row."}"#,
            r#"{"role":"tool","tool_call_id":"c","content":"EACCES: permission denied, open '/root/x'"}"#,
            r#"{"role":"assistant","content":"done"}"#,
        ]
        .join("\n");
        let (events, verdict) = events_of(&stream);
        assert_eq!(events[0]["type"], "start");
        assert_eq!(events[0]["cli_version"], "2.1.0");
        assert_eq!(
            results(&events),
            [
                ("a".into(), "failed".into(), Some(3)),
                ("b".into(), "failed".into(), None),
                ("c".into(), "denied".into(), None),
            ]
        );
        let tools = &verdict.facts.tools;
        assert_eq!(tools.by_kind.get(ToolKind::Execute), 2);
        assert_eq!(tools.by_kind.get(ToolKind::Read), 1);
    }

    #[test]
    fn a_call_whose_result_never_came_is_counted_without_one() {
        let stream = r#"{"role":"assistant","content":"Still working.","tool_calls":[{"type":"function","id":"a","function":{"name":"Shell","arguments":"{}"}}]}"#;
        let (events, verdict) = events_of(stream);
        assert!(results(&events).is_empty());
        let tools = &verdict.facts.tools;
        assert_eq!(
            (tools.calls, tools.completed + tools.failed + tools.denied),
            (1, 0)
        );
        assert_eq!(verdict.failure.unwrap().class, ErrorClass::Truncated);
    }

    #[test]
    fn a_reshaped_tool_row_or_call_field_never_fails_the_run() {
        let stream = [
            r#"{"role":"assistant","tool_calls":[{"type":"function","id":7,"function":{"name":"Shell","arguments":{"command":"ls"}}}]}"#,
            r#"{"role":"tool","tool_call_id":7,"content":{"weird":true}}"#,
            r#"{"role":"assistant","content":[{"type":"think","think":5},{"type":"text","text":"done"}]}"#,
        ]
        .join("\n");
        let (events, verdict) = events_of(&stream);
        assert!(verdict.failure.is_none());
        assert_eq!(verdict.answer, "done");
        let call = events.iter().find(|e| e["type"] == "tool_call").unwrap();
        assert_eq!(call["id"], "7");
        assert_eq!(call["input"], serde_json::json!({"command": "ls"}));
        // The result row's content is no text, but the row still ends the call.
        assert_eq!(results(&events), [("7".into(), "completed".into(), None)]);
    }

    #[test]
    fn usage_is_per_step_in_every_spelling_with_cache_figures() {
        let stream = [
            r#"{"role":"assistant","content":[{"type":"think","think":"hmm"}],"tool_calls":[{"type":"function","id":"a","function":{"name":"Shell","arguments":"{}"}}],"usage":{"input_other":100,"input_cache_read":900,"input_cache_creation":50,"output":20}}"#,
            r#"{"role":"tool","content":"ok","tool_call_id":"a"}"#,
            r#"{"role":"assistant","content":"still","usage":{"prompt_tokens":1200,"completion_tokens":30,"prompt_tokens_details":{"cached_tokens":1000},"completion_tokens_details":{"reasoning_tokens":10}}}"#,
            r#"{"role":"assistant","content":"done","usage":{"input_tokens":5,"cache_read_input_tokens":7,"cache_creation_input_tokens":3,"output_tokens":2}}"#,
        ]
        .join("\n");
        let (events, verdict) = events_of(&stream);
        let usage = &verdict.facts.usage;
        assert_eq!(
            (
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.reasoning_tokens
            ),
            (1050 + 1200 + 15, 52, 900 + 1000 + 7, 53, 10)
        );
        assert_eq!(usage.source, UsageSource::Messages);
        let turns: Vec<_> = events.iter().filter(|e| e["type"] == "usage").collect();
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0]["turn"]["input_tokens"], 1050);
        assert_eq!(turns[0]["turn"]["cache_write_tokens"], 50);
        assert_eq!(turns[2]["cumulative"]["input_tokens"], 2265);
        let reasoning = events.iter().find(|e| e["type"] == "reasoning").unwrap();
        assert_eq!(reasoning["chars"], 3);
    }

    #[test]
    fn retries_and_error_events_are_reported() {
        let stream = [
            r#"{"role":"meta","type":"system.version","version":"2.1.0"}"#,
            r#"{"role":"meta","type":"turn.step.retrying","failed_attempt":1,"next_attempt":2,"max_attempts":10,"error_message":"500 fake"}"#,
            r#"{"type":"error","code":"provider.api_error","message":"401"}"#,
        ]
        .join("\n");
        let (events, _) = events_of(&stream);
        let kinds: Vec<_> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["start", "retry", "error"]);
        assert_eq!(events[1]["message"], "500 fake (attempt 2 of 10 next)");
        assert_eq!(events[2]["message"], "provider.api_error: 401");
    }
}
