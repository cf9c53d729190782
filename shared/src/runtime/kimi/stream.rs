//! Kimi's `--output-format stream-json` output, read into a verdict. One reader serves both
//! CLIs, because they print the same role/content lines:
//!
//! - Kimi Code (`kimi -p … --output-format stream-json`) prints one assistant line per step
//!   (`content` a string, `tool_calls` OpenAI-style), `{"role":"tool",…}` results, `role:"meta"`
//!   lines (`session.resume_hint` with the `session_id`, `turn.step.retrying`,
//!   `system.version`) and `{"type":"error","code","message","retryable"}` events.
//! - The legacy kimi-cli (`kimi --print --output-format stream-json`, PyPI, 1.51.0 captured)
//!   prints the same lines (`content` a string or parts: `text`, and `think`, which never
//!   reaches the answer), but its errors are plain text on stdout, folded at 80 columns
//!   (`Error code: 500 - {…}`), with exit status 75 (retryable: 429, 5xx, timeouts, an empty
//!   response) or 1, and its session id is on stderr only (`To resume this session: kimi -r
//!   <id>`, read with [`Kimi::with_stderr_file`]).
//!
//! Neither prints a terminal event, a stop reason or (so far) usage: a kill, a length cut or a
//! dropped provider stream can leave a stream that looks finished. So the process outcome
//! (`--exit-code`/`--status-file`) is part of every real verdict, and the stream adds what it
//! proves: the CLI's own error text or event, a final message that only called tools, no answer.
//! A failure is reported in the CLI's own words, never classified from them (no "authentication
//! required" label: kimi relays its tools' output on the same streams, gitmoot #1857).
//!
//! There is no glance fast path: kimi prints whole messages, not deltas, and an unparseable line
//! is the CLI's own text, which only a full JSON read can tell apart from a row.

use std::borrow::Cow;
use std::fs::File;
use std::path::PathBuf;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::envelope::{ErrorClass, Usage, UsageSource};
use crate::ndjson::{raw_field_is, Item, LineReader};
use crate::parse::{Dialect, Facts, Failure, Verdict};

/// Rich, which prints the legacy CLI's errors, folds them at this width when stdout is not a
/// terminal; a plain line exactly this wide continues on the next one.
const FOLD_WIDTH: usize = 80;

/// At most this much of the CLI's own text is kept for the failure message (bounded memory).
const MAX_PLAIN_TEXT: usize = 16 * 1024;

/// Lines of the stderr file longer than this are skipped (the resume hint is short).
const MAX_STDERR_LINE: usize = 64 * 1024;

/// The prefix of the resume hint, on stdout (Kimi Code) and stderr (both CLIs).
const RESUME_HINT: &str = "To resume this session: kimi -r ";

/// The kimi dialect's state while the stream is read.
#[derive(Debug, Default)]
pub struct Kimi {
    stderr_file: Option<PathBuf>,
    session_id: Option<String>,
    /// The final assistant message so far.
    last: Option<Message>,
    last_text: Option<String>,
    /// The first `{"type":"error"}` event.
    error_event: Option<String>,
    /// The CLI's own plain text on stdout, unfolded.
    plain: PlainText,
    usage: Option<Tokens>,
}

/// What the verdict needs of one assistant line.
#[derive(Debug, Default)]
struct Message {
    text: String,
    tools: Vec<String>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Tokens {
    input: u64,
    output: u64,
}

/// The CLI's plain-text lines, joined back where Rich folded them.
#[derive(Debug, Default)]
struct PlainText {
    text: String,
    last_width: usize,
    clipped: bool,
}

impl Kimi {
    /// Reads the session id from the CLI's stderr too, once stdin has ended (the legacy CLI
    /// prints it nowhere else).
    pub fn with_stderr_file(stderr_file: Option<PathBuf>) -> Self {
        Kimi {
            stderr_file,
            ..Kimi::default()
        }
    }
}

impl Dialect for Kimi {
    const RUNTIME: &'static str = "kimi";

    fn line(&mut self, line: &[u8]) -> Result<(), String> {
        let head = match serde_json::from_slice::<Head<'_>>(line) {
            Ok(head) => head,
            Err(_) if is_json(line) => return unidentified(line),
            Err(_) => return self.plain_line(line),
        };
        match (head.role.as_deref(), head.kind.as_deref()) {
            (Some("assistant"), _) => self.assistant(decode(line, "an assistant message")?),
            (Some("meta"), Some("session.resume_hint")) => {
                self.resume_hint(decode(line, "a session.resume_hint line")?)
            }
            (None, Some("error")) => self.error_event(decode(line, "an error event")?),
            _ => {}
        }
        Ok(())
    }

    fn cut_line(&self, tail: &[u8]) -> Result<(), String> {
        if let Some(row) = identified_row(tail) {
            return Err(format!(
                "the stream ended in the middle of {row} (the CLI died mid-write)"
            ));
        }
        Err(format!(
            "the stream ended in the middle of a line of kimi's own text (the CLI died mid-write): {}",
            String::from_utf8_lossy(tail)
        ))
    }

    fn finish(mut self) -> Verdict {
        let stderr_problem = self.read_stderr_file().err();
        let outcome = self.judge().or(stderr_problem);
        let last = self.last.unwrap_or_default();
        Verdict {
            facts: Facts {
                session_id: self.session_id,
                provider: None,
                family: Some("kimi".into()),
                model: None,
                stop_reason: None,
                usage: match self.usage {
                    Some(tokens) => Usage {
                        input_tokens: tokens.input,
                        output_tokens: tokens.output,
                        cost_usd: None,
                        source: UsageSource::Messages,
                    },
                    None => Usage::default(),
                },
                last_text: self.last_text,
            },
            outcome,
            answer: last.text,
        }
    }
}

impl Kimi {
    fn assistant(&mut self, line: AssistantLine<'_>) {
        self.note_usage(line.usage);
        let mut message = Message::default();
        match line.content {
            Some(Content::Text(text)) => message.text.push_str(&text),
            Some(Content::Parts(parts)) => {
                for part in parts {
                    if part.kind.as_deref() == Some("text") {
                        message
                            .text
                            .push_str(part.text.as_deref().unwrap_or_default());
                    }
                }
            }
            None => {}
        }
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
        if let Some(id) = line.session_id.filter(|id| !id.is_empty()) {
            self.session_id = Some(id.into_owned());
        }
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
    fn note_usage(&mut self, usage: Option<LineUsage>) {
        if let Some(usage) = usage {
            let seen = self.usage.get_or_insert_with(Tokens::default);
            seen.input = seen.input.max(usage.input_tokens);
            seen.output = seen.output.max(usage.output_tokens);
        }
    }

    /// A line that is not JSON: the CLI's own text (the legacy CLI's errors), unless it still
    /// identifies itself as one of the rows this reader must read.
    fn plain_line(&mut self, line: &[u8]) -> Result<(), String> {
        if let Some(row) = identified_row(line) {
            return Err(format!(
                "kimi stream carried a MALFORMED line that reads as {row} (envelope drift): the final message may be lost"
            ));
        }
        self.plain.push(&String::from_utf8_lossy(line));
        Ok(())
    }

    /// The verdict, most specific first (an unreadable row, which outranks all of these, is
    /// applied by the parse driver; the process outcome is folded in after).
    fn judge(&self) -> Option<Failure> {
        if let Some(error) = &self.error_event {
            return Some(Failure::new(ErrorClass::ModelError, error.clone()));
        }
        if !self.plain.text.is_empty() {
            return Some(Failure::new(ErrorClass::ModelError, self.plain.message()));
        }
        let Some(last) = &self.last else {
            return Some(Failure::new(
                ErrorClass::EmptyAnswer,
                "kimi stream carried no assistant message",
            ));
        };
        if !last.tools.is_empty() {
            return Some(Failure::new(
                ErrorClass::Truncated,
                format!(
                    "TRUNCATED: kimi's final assistant message called tools ({}) and the stream ended before an answer came",
                    last.tools.join(", ")
                ),
            ));
        }
        if last.text.trim().is_empty() {
            return Some(Failure::new(
                ErrorClass::EmptyAnswer,
                "kimi's final assistant message carried no text",
            ));
        }
        None
    }

    /// Takes the session id from the last resume hint on stderr, when the stream named none.
    fn read_stderr_file(&mut self) -> Result<(), Failure> {
        let Some(path) = &self.stderr_file else {
            return Ok(());
        };
        let cannot_read = |e: std::io::Error| {
            Failure::new(
                ErrorClass::Process,
                format!(
                    "cannot read --stderr-file {}: {e}; the session id kimi prints there is lost",
                    path.display()
                ),
            )
        };
        let file = File::open(path).map_err(cannot_read)?;
        let mut reader = LineReader::new(file, MAX_STDERR_LINE);
        let mut found = None;
        while let Some(item) = reader.next_item().map_err(cannot_read)? {
            if let Item::Line(line) | Item::Tail(line) = item {
                if let Some(id) = resume_hint_id(line) {
                    found = Some(id);
                }
            }
        }
        if self.session_id.is_none() {
            self.session_id = found;
        }
        Ok(())
    }
}

impl PlainText {
    fn push(&mut self, line: &str) {
        if self.clipped {
            return;
        }
        if !self.text.is_empty() && self.last_width != FOLD_WIDTH {
            self.text.push('\n');
        }
        self.last_width = line.chars().count();
        let room = MAX_PLAIN_TEXT.saturating_sub(self.text.len());
        if line.len() <= room {
            self.text.push_str(line);
            return;
        }
        let cut = (0..=room)
            .rev()
            .find(|at| line.is_char_boundary(*at))
            .unwrap_or(0);
        self.text.push_str(&line[..cut]);
        self.clipped = true;
    }

    fn message(&self) -> String {
        if self.clipped {
            format!("{} […]", self.text)
        } else {
            self.text.clone()
        }
    }
}

/// The session id of a `To resume this session: kimi -r <id>` line.
fn resume_hint_id(line: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(line).ok()?;
    let (_, rest) = text.split_once(RESUME_HINT)?;
    let id = rest.split_whitespace().next()?;
    Some(id.to_string())
}

/// Which row a broken line still identifies itself as, if any: only a line that opens like a
/// JSON object counts, so the CLI's own text quoting a provider's JSON is never mistaken.
fn identified_row(raw: &[u8]) -> Option<&'static str> {
    if !raw.trim_ascii_start().starts_with(b"{") {
        return None;
    }
    if raw_field_is(raw, "role", "assistant") {
        Some("an assistant message")
    } else if raw_field_is(raw, "type", "session.resume_hint") {
        Some("a session.resume_hint line")
    } else if raw_field_is(raw, "type", "error") {
        Some("an error event")
    } else {
        None
    }
}

/// A JSON line whose head did not decode (a `role` or `type` that is not a string). It is
/// skipped, unless it still identifies itself as a row this reader must read.
fn unidentified(line: &[u8]) -> Result<(), String> {
    match identified_row(line) {
        Some(row) => Err(format!(
            "kimi stream carried {row} this parser could not decode (envelope drift): its role or type is not a string"
        )),
        None => Ok(()),
    }
}

fn is_json(line: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(line).is_ok()
}

fn decode<'a, T: Deserialize<'a>>(line: &'a [u8], kind: &str) -> Result<T, String> {
    serde_json::from_slice(line).map_err(|e| {
        format!("kimi stream carried {kind} this parser could not decode (envelope drift): {e}")
    })
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
    usage: Option<LineUsage>,
}

/// Kimi Code and a one-part legacy message print a string; the legacy CLI prints parts
/// otherwise (`text`, `think`, media).
#[derive(Deserialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Parts(#[serde(borrow)] Vec<Part<'a>>),
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
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
struct ResumeHint<'a> {
    #[serde(borrow)]
    session_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ErrorEvent<'a> {
    #[serde(borrow)]
    code: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    retryable: Option<bool>,
}

#[derive(Deserialize)]
struct LineUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_hint_ids() {
        assert_eq!(
            resume_hint_id(b"To resume this session: kimi -r 0b29b32c-c9af-4ef7"),
            Some("0b29b32c-c9af-4ef7".into())
        );
        assert_eq!(
            resume_hint_id(b"  To resume this session: kimi -r session_x  "),
            Some("session_x".into())
        );
        assert_eq!(resume_hint_id(b"To resume this session: kimi -r "), None);
        assert_eq!(resume_hint_id(b"kimi -r abc"), None);
    }

    #[test]
    fn plain_text_is_unfolded_at_the_fold_width() {
        let mut plain = PlainText::default();
        let first = "a".repeat(FOLD_WIDTH);
        plain.push(&first);
        plain.push("bc");
        plain.push("next line");
        assert_eq!(plain.message(), format!("{first}bc\nnext line"));
    }

    #[test]
    fn plain_text_is_bounded() {
        let mut plain = PlainText::default();
        let long = "é".repeat(MAX_PLAIN_TEXT);
        plain.push(&long);
        plain.push("more");
        assert!(plain.text.len() <= MAX_PLAIN_TEXT);
        assert!(plain.message().ends_with(" […]"));
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
