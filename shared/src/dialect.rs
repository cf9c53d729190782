//! The parser contract, and what every runtime's stream dialect shares: the [`Dialect`] trait and
//! the [`Verdict`] it returns, the typed drift a line can show, the decode that reports it, the
//! one-field row head, and token counts. Runtime modules are written against this module and
//! never against the parse driver (src/parse.rs).
//!
//! A dialect says what went wrong with a row as a [`Drift`]; the parse driver
//! ([`crate::parse`]) words it once, with the runtime's name and the line number, so no dialect
//! pastes its own name into its messages.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::envelope::{ErrorClass, Facts, Usage, UsageSource};
pub use crate::event::Tokens;
use crate::event::{Events, ToolOutput};
use crate::json_text::JsonStr;

/// What a runtime's stream says, line by line.
pub trait Dialect {
    /// The runtime name printed as `run.runtime`.
    const RUNTIME: &'static str;

    /// Reads one complete, non-blank line. `Err` names a row the dialect had to read and could
    /// not (envelope drift); the run then fails as `malformed_stream`, but reading goes on so
    /// that usage and the session id are still collected.
    ///
    /// What the row says beyond the verdict (tool calls and results, text, usage, retries) is
    /// reported to `events` as it is read (see [`crate::event`]); tool calls and results always,
    /// the rest only when [`Events::writing`] (so the fast path stays fast).
    fn line(&mut self, line: &[u8], events: &mut Events) -> Result<(), Drift>;

    /// Judges the bytes after the last newline of a stream that ended without one: a row whose
    /// writer was cut off, even when the bytes happen to parse (the CLIs end every row with a
    /// newline, and a stream cut just before it must not pass for a whole one). `Err` when they
    /// identify a row the dialect reads, `Ok` when they identify nothing.
    fn cut_line(&self, tail: &[u8]) -> Result<(), Drift>;

    /// Whether the stream has carried a model event yet: thinking, text or a tool call from the
    /// model (never an init or status row, a tool result or a workspace write). The parse driver
    /// asks after every line, to publish the turn's first model activity while the CLI runs
    /// (`--activity-dir`).
    fn model_spoke(&self) -> bool;

    /// The verdict the stream proves, once it has ended.
    fn finish(self) -> Verdict;
}

/// What a dialect concluded.
#[derive(Debug, Default, Clone)]
pub struct Verdict {
    pub facts: Facts,
    /// Why the run failed; `None` when `answer` is the run's finished answer.
    pub failure: Option<RunFailure>,
    /// The final answer text (on a failed run, kept for diagnosis only).
    pub answer: String,
    /// The last non-blank assistant text, kept for diagnosis of a failed run.
    pub last_text: Option<String>,
}

/// Why a run failed: what becomes the envelope's `run.error` (with the last text added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFailure {
    pub class: ErrorClass,
    pub message: String,
}

impl RunFailure {
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        RunFailure {
            class,
            message: message.into(),
        }
    }
}

/// A row the dialect had to read and could not (envelope drift). Reading goes on, but the run
/// fails as `malformed_stream` with the first one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    /// A row the dialect reads did not decode; `error` is serde's reason.
    Undecodable { row: Row, error: String },
    /// A line that is no readable row still names one the dialect reads: `what` is how it reads
    /// (`result row`), `at_stake` what may be lost with it (`verdict`).
    Malformed {
        what: String,
        at_stake: &'static str,
    },
    /// A row decoded but lacks what the rules need: `row` says which and what it lacks (`an
    /// assistant row with no message`), `why` what that costs.
    Incomplete { row: String, why: &'static str },
    /// The stream ended in the middle of a row the dialect reads.
    Cut(Row),
    /// The stream ended in the middle of a line of the CLI's own text (not JSON), given here.
    CutText(String),
    /// An element of a JSON array of rows (claude's `--output-format json --verbose`) drifted.
    InArray { index: usize, drift: Box<Drift> },
}

/// How a message names a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// By its type: `noun` is `a row` or `an event`, `kind` the type (`a row of type result`).
    OfType { noun: &'static str, kind: String },
    /// By what it is (`an assistant message`, `the --output-format json array`).
    Named(&'static str),
}

impl Row {
    /// `a row of type <kind>`.
    pub fn typed(kind: &str) -> Row {
        Row::OfType {
            noun: "a row",
            kind: kind.to_string(),
        }
    }

    /// `an event of type <kind>`.
    pub fn event(kind: &str) -> Row {
        Row::OfType {
            noun: "an event",
            kind: kind.to_string(),
        }
    }
}

impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Row::OfType { noun, kind } => write!(f, "{noun} of type {kind}"),
            Row::Named(name) => f.write_str(name),
        }
    }
}

impl Drift {
    /// A decode of `row` that failed with `error`.
    pub fn undecodable(row: Row, error: &serde_json::Error) -> Drift {
        Drift::Undecodable {
            row,
            error: error.to_string(),
        }
    }

    /// The message, worded for `runtime`'s stream.
    pub fn describe(&self, runtime: &str) -> String {
        match self {
            // A row named by its type reads "... of type X that this parser ...", one named by
            // what it is "... an assistant message this parser ..." (kimi's wording).
            Drift::Undecodable { row, error } => {
                let that = match row {
                    Row::OfType { .. } => " that",
                    Row::Named(_) => "",
                };
                format!("{runtime} stream carried {row}{that} this parser could not decode (envelope drift): {error}")
            }
            Drift::Malformed { what, at_stake } => format!(
                "{runtime} stream carried a MALFORMED {what} (envelope drift): the {at_stake} may be lost"
            ),
            Drift::Incomplete { row, why } => {
                format!("{runtime} stream carried {row} (envelope drift): {why}")
            }
            Drift::Cut(row) => {
                format!("the stream ended in the middle of {row} (the CLI died mid-write)")
            }
            Drift::CutText(text) => format!(
                "the stream ended in the middle of a line of {runtime}'s own text (the CLI died mid-write): {text}"
            ),
            Drift::InArray { index, drift } => {
                format!("array element {index}: {}", drift.describe(runtime))
            }
        }
    }
}

/// Judges a line that is no readable row at all, given the verdict row its raw bytes still name
/// (if any): it is skipped, unless it names one, which may have been the failure or the answer.
pub fn unreadable_row(names: Option<&str>) -> Result<(), Drift> {
    match names {
        Some(kind) => Err(Drift::Malformed {
            what: format!("{kind} row"),
            at_stake: "verdict",
        }),
        None => Ok(()),
    }
}

/// Judges a cut last line by the row type its raw bytes name: one of `kinds` (the rows the
/// dialect reads) was cut mid-write; anything else identifies nothing.
pub fn cut_row_among(tail: &[u8], kinds: &[&str]) -> Result<(), Drift> {
    match crate::sniff::raw_type_among(tail, kinds) {
        Some(kind) => Err(Drift::Cut(Row::typed(kind))),
        None => Ok(()),
    }
}

/// Decodes a row the dialect reads; one that does not decode is [`Drift::Undecodable`].
pub fn decode<'a, T: Deserialize<'a>>(
    line: &'a [u8],
    row: impl FnOnce() -> Row,
) -> Result<T, Drift> {
    serde_json::from_slice(line).map_err(|e| Drift::undecodable(row(), &e))
}

/// A row's type alone: decoded first, so that only the rows a dialect reads are decoded whole.
#[derive(Deserialize)]
pub struct Head<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
}

/// A piece of typed text: a message's content part (`{"type":"text","text":...}`), or a codex
/// item.
#[derive(Deserialize)]
pub struct TextPart<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub text: Option<Cow<'a, str>>,
}

/// A tool result's content part: [`TextPart`] with its text kept as the stream spelled it,
/// decoded only when something reads it ([`JsonStr`]).
#[derive(Deserialize)]
pub struct OutputPart<'a> {
    #[serde(rename = "type", borrow)]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub text: Option<JsonStr<'a>>,
}

impl<'a> OutputPart<'a> {
    /// The texts of the `text` parts among `parts`.
    pub fn texts(parts: &[OutputPart<'a>]) -> Vec<JsonStr<'a>> {
        parts
            .iter()
            .filter(|part| part.kind.as_deref() == Some("text"))
            .filter_map(|part| part.text)
            .collect()
    }
}

/// A tool result's content as the stream spelled it: a string, or the `text` parts of an array
/// of content parts (images and other media left out); null or an object holds no text.
#[derive(Debug, Default)]
pub struct ResultContent<'a> {
    pub texts: Vec<JsonStr<'a>>,
    /// The content was an array of parts.
    pub in_parts: bool,
}

impl ResultContent<'_> {
    pub fn output(&self) -> ToolOutput<'_> {
        ToolOutput::Json(&self.texts)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ResultContent<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let raw = <&'a RawValue>::deserialize(deserializer)?;
        if let Some(text) = JsonStr::checked(raw) {
            return Ok(ResultContent {
                texts: vec![text],
                in_parts: false,
            });
        }
        let raw = raw.get();
        let content = match raw.as_bytes().first() {
            Some(b'[') => {
                serde_json::from_str::<Vec<OutputPart<'a>>>(raw).map(|parts| ResultContent {
                    texts: OutputPart::texts(&parts),
                    in_parts: true,
                })
            }
            Some(b'n' | b'{') => Ok(ResultContent::default()),
            _ => Err(serde_json::Error::custom(
                "expected a string or an array of content parts",
            )),
        };
        content.map_err(D::Error::custom)
    }
}

/// Usage as OpenAI-style rows spell it (codex's turns, kimi's messages); a figure left out is 0.
#[derive(Deserialize)]
pub struct TokenFields {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

impl From<TokenFields> for Tokens {
    fn from(fields: TokenFields) -> Tokens {
        Tokens::io(fields.input_tokens, fields.output_tokens)
    }
}

/// Usage summed over the assistant messages that carried one: a floor of what was billed.
#[derive(Debug, Default, Clone, Copy)]
pub struct MessageSum {
    pub tokens: Tokens,
    /// At least one message carried usage.
    pub seen: bool,
}

impl MessageSum {
    pub fn add(&mut self, tokens: Tokens) {
        self.seen = true;
        self.tokens.add(tokens);
    }

    /// The sum as the envelope's usage: `messages`, or `none` when no message carried any.
    pub fn usage(self) -> Usage {
        self.tokens.usage(if self.seen {
            UsageSource::Messages
        } else {
            UsageSource::None
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each wording as the parsers' goldens print it.
    #[test]
    fn drift_is_worded_with_the_runtime() {
        let error = serde_json::from_slice::<u64>(b"\"x\"").unwrap_err();
        let cases = [
            (
                Drift::undecodable(Row::typed("result"), &error),
                format!("claude stream carried a row of type result that this parser could not decode (envelope drift): {error}"),
            ),
            (
                Drift::undecodable(Row::Named("an error event"), &error),
                format!("claude stream carried an error event this parser could not decode (envelope drift): {error}"),
            ),
            (
                Drift::Malformed {
                    what: "assistant message_end".into(),
                    at_stake: "final turn",
                },
                "claude stream carried a MALFORMED assistant message_end (envelope drift): the final turn may be lost".into(),
            ),
            (
                Drift::Incomplete {
                    row: "a result with no subtype".into(),
                    why: "the parser cannot tell success from failure",
                },
                "claude stream carried a result with no subtype (envelope drift): the parser cannot tell success from failure".into(),
            ),
            (
                Drift::Cut(Row::event("agent_end")),
                "the stream ended in the middle of an event of type agent_end (the CLI died mid-write)".into(),
            ),
            (
                Drift::CutText("Error code".into()),
                "the stream ended in the middle of a line of claude's own text (the CLI died mid-write): Error code".into(),
            ),
            (
                Drift::InArray {
                    index: 2,
                    drift: Box::new(Drift::Cut(Row::Named("the array"))),
                },
                "array element 2: the stream ended in the middle of the array (the CLI died mid-write)".into(),
            ),
        ];
        for (drift, wording) in cases {
            assert_eq!(drift.describe("claude"), wording);
        }
    }

    #[test]
    fn sums_saturate_and_remember_whether_anything_was_counted() {
        let mut sum = MessageSum::default();
        assert_eq!(sum.usage().source, UsageSource::None);
        sum.add(Tokens::io(u64::MAX, 1));
        sum.add(Tokens::io(1, 2));
        assert_eq!(sum.tokens, Tokens::io(u64::MAX, 3));
        assert_eq!(sum.usage().source, UsageSource::Messages);
    }
}
