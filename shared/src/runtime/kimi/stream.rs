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

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::store::Finish;
use super::text::{BoundedText, PlainText, Stderr};
use crate::dialect::{decode, Drift, Row, TextPart, TokenFields, Tokens};
use crate::dialect::{Dialect, RunFailure, Verdict};
use crate::envelope::{ErrorClass, Facts, Usage, UsageSource};
use crate::event::Events;
use crate::sniff::raw_field_is;

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

    fn line(&mut self, line: &[u8], _events: &mut Events) -> Result<(), Drift> {
        let head = match serde_json::from_slice::<Head<'_>>(line) {
            Ok(head) => head,
            Err(_) if is_json(line) => return unidentified(line),
            Err(_) => return self.plain_line(line),
        };
        match (head.role.as_deref(), head.kind.as_deref()) {
            (Some("assistant"), _) => self.assistant(decode(line, || Row::Named(ASSISTANT))?),
            (Some("meta"), kind) => {
                self.kimi_code = true;
                match kind {
                    Some("session.resume_hint") => {
                        self.resume_hint(decode(line, || Row::Named(RESUME_HINT_LINE))?)
                    }
                    Some("turn.step.retrying") => {
                        self.retry(decode(line, || Row::Named(RETRYING_LINE))?)
                    }
                    // Informational: a reshaped version line costs the record its version,
                    // never the verdict.
                    Some("system.version") => {
                        self.cli_version = serde_json::from_slice::<VersionLine<'_>>(line)
                            .ok()
                            .and_then(|row| row.version)
                            .map(Cow::into_owned);
                    }
                    _ => {}
                }
            }
            (None, Some("error")) => self.error_event(decode(line, || Row::Named(ERROR_EVENT))?),
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
    fn assistant(&mut self, line: AssistantLine<'_>) {
        self.note_usage(line.usage);
        self.retrying = None;
        let mut message = Message::default();
        let mut thought = false;
        match line.content {
            Some(Content::Text(text)) => message.text.push_str(&text),
            Some(Content::Parts(parts)) => {
                for part in parts {
                    thought |= part.kind.as_deref() == Some("think");
                    if part.kind.as_deref() == Some("text") {
                        message
                            .text
                            .push_str(part.text.as_deref().unwrap_or_default());
                    }
                }
            }
            None => {}
        }
        self.spoke |= !message.text.is_empty() || line.tool_calls.is_some() || thought;
        message.tools = line
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|call| {
                call.function
                    .and_then(|f| f.name)
                    .map_or_else(|| "unnamed".to_string(), Cow::into_owned)
            })
            .collect();
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

    fn retry(&mut self, line: RetryLine<'_>) {
        self.retrying = Some(Retry {
            next_attempt: line.next_attempt,
            max_attempts: line.max_attempts,
            error: line.error_message.map(Cow::into_owned).unwrap_or_default(),
        });
    }

    fn error_event(&mut self, event: ErrorEvent<'_>) {
        if self.error_event.is_some() {
            return;
        }
        let code = event.code.as_deref().unwrap_or("error");
        let message = event.message.as_deref().unwrap_or("no message reported");
        let retryable = match event.retryable {
            Some(true) => " (kimi marks it retryable)",
            _ => "",
        };
        self.error_event = Some(format!("{code}: {message}{retryable}"));
    }

    /// No kimi release prints usage yet; should an assistant line carry one, whether it counts
    /// that message or the run so far is undocumented, and the largest figure seen is a floor
    /// of what was billed under either reading.
    fn note_usage(&mut self, usage: Option<TokenFields>) {
        if let Some(usage) = usage {
            self.usage
                .get_or_insert_with(Tokens::default)
                .at_least(usage.into());
        }
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
    usage: Option<TokenFields>,
}

/// Kimi Code and a one-part legacy message print a string; the legacy CLI prints parts
/// otherwise (`text`, `think`, media).
#[derive(Deserialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Parts(#[serde(borrow)] Vec<TextPart<'a>>),
}

#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(borrow)]
    function: Option<Function<'a>>,
}

#[derive(Deserialize)]
struct Function<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
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
}
