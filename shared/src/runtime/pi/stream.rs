//! pi's `-p --mode json` NDJSON stream, read into a verdict.
//!
//! pi is omp's ancestor and writes the same event family, so every rule of
//! [`crate::runtime::pi_family`] applies unchanged. What is pi's own:
//!
//! - `agent_end.willRetry: true` marks a scheduled continuation (omp says `isTerminal: false`);
//!   pi writes no telemetry rollup, so usage is always the per-message sum.
//! - Newer pi closes every run with `agent_settled` once no retry, compaction retry or queued
//!   continuation remains. Its absence proves nothing on its own (pi 0.73 never writes it), but
//!   once a stream has shown one, a later run that ends without its own is unfinished.
//! - pi exits 0 even when the provider failed for good, so the exit status proves nothing.
//! - pi 0.73 takes a provider stream that closes before its final chunk for a finished answer:
//!   `stopReason "stop"`, the text cut mid-sentence, and the usage still all zero, because the
//!   usage arrives with the final chunk. A final answer whose usage is present but zero is
//!   therefore failed as TRUNCATED, unless the caller says its provider never reports usage.

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::dialect::RunFailure;
use crate::dialect::{Drift, Tokens};
use crate::envelope::ErrorClass;
use crate::event::ToolKind;
use crate::runtime::pi_family::{self, AgentEnd, Assistant, Flavor, PiFamily, TypeOnly};

/// The pi dialect.
pub type Pi = PiFamily<PiFlavor>;

/// pi's built-in tools, by the names its tool calls carry (extensions' tools fall back to the
/// shared words).
pub const TOOL_KINDS: &[(&str, ToolKind)] = &[
    ("read", ToolKind::Read),
    ("ls", ToolKind::Read),
    ("bash", ToolKind::Execute),
    ("edit", ToolKind::Edit),
    ("write", ToolKind::Edit),
    ("grep", ToolKind::Search),
    ("find", ToolKind::Search),
    ("await", ToolKind::Other),
    ("cancel_job", ToolKind::Other),
];

/// What pi does differently from the rest of the pi family.
#[derive(Debug, Default)]
pub struct PiFlavor {
    /// Accept a final answer that reports zero usage (a provider that never reports usage).
    accept_unmetered: bool,
    /// The stream has shown that this pi settles its runs.
    settles: bool,
    /// No agent_end came after the last agent_settled.
    settled: bool,
}

impl PiFlavor {
    pub fn new(accept_unmetered: bool) -> Self {
        PiFlavor {
            accept_unmetered,
            ..PiFlavor::default()
        }
    }
}

impl Flavor for PiFlavor {
    const RUNTIME: &'static str = "pi";
    const MODE_FLAG: &'static str = "--mode json";
    const OWN_EVENTS: &'static [&'static str] = &["agent_settled"];
    const TOOL_KINDS: &'static [(&'static str, ToolKind)] = TOOL_KINDS;
    const NOT_TERMINAL: &'static str = "pi stream ended on an agent_end with willRetry true: pi had scheduled another run (a retry, a compaction retry or a queued continuation) that never came";

    type AgentEnd = PiAgentEnd;

    fn agent_end(&mut self, end: PiAgentEnd) -> AgentEnd {
        self.settled = false;
        AgentEnd {
            continues: end.will_retry == Some(true),
            rollup: None,
        }
    }

    fn own_event(&mut self, kind: &str, line: &[u8]) -> Result<(), Drift> {
        if pi_family::decode_event::<TypeOnly>(line, kind)?.is_some() {
            self.settles = true;
            self.settled = true;
        }
        Ok(())
    }

    fn unfinished(&self) -> Option<RunFailure> {
        (self.settles && !self.settled).then(|| {
            RunFailure::new(
                ErrorClass::NotTerminal,
                "pi stream ended on an agent_end without its agent_settled, although this pi settled an earlier run: it stopped while pi still had work scheduled",
            )
        })
    }

    fn suspect_answer(&self, last: &Assistant) -> Option<RunFailure> {
        let unmetered = last.usage == Some(Tokens::default());
        (!self.accept_unmetered && unmetered && last.stop_reason.as_deref() == Some("stop")).then(|| {
            RunFailure::new(
                ErrorClass::Truncated,
                "TRUNCATED: pi's final assistant message stopped on \"stop\" but reports zero token usage, the mark of a provider stream that closed before its final chunk (pi takes that for a finished answer); pass --accept-unmetered if this provider never reports usage",
            )
        })
    }
}

// Wire shapes: only the fields the rules read.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PiAgentEnd {
    /// Declared so that a row naming its type twice fails to decode instead of being guessed.
    #[serde(rename = "type")]
    _kind: Option<IgnoredAny>,
    will_retry: Option<bool>,
    #[serde(rename = "messages")]
    _messages: Option<IgnoredAny>,
}
