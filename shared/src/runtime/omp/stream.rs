//! omp's `-p --mode=json` NDJSON stream, read into a verdict.
//!
//! omp is a fork of pi and writes the same event vocabulary, so the verdict rules (the numbered
//! list under DESCRIPTION in man/moot-parse-omp.1) live in [`crate::runtime::pi_family`]; this
//! module says only what is omp's own: a terminal `agent_end` is one whose `isTerminal` is not
//! false, and under an OTEL telemetry config every `agent_end` carries a run-level usage rollup
//! (`telemetry.usage.inputTokens/outputTokens`).
//! omp exits 0 when a turn fails in json mode, retries provider failures on the same stream, and
//! closes a `--max-time` trip with a clean-looking terminal `agent_end`: the stream decides.

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::dialect::Tokens;
use crate::event::ToolKind;
use crate::runtime::pi_family::{self, AgentEnd, Flavor, PiFamily};

/// The omp dialect.
pub type Omp = PiFamily<OmpFlavor>;

/// omp's built-in tools, by the names its tool calls carry (plugins and MCP tools, named
/// `mcp__<server>_<tool>`, fall back to the shared words).
pub const TOOL_KINDS: &[(&str, ToolKind)] = &[
    ("read", ToolKind::Read),
    ("ls", ToolKind::Read),
    ("lsp", ToolKind::Read),
    ("bash", ToolKind::Execute),
    ("eval", ToolKind::Execute),
    ("python", ToolKind::Execute),
    ("ssh", ToolKind::Execute),
    ("debug", ToolKind::Execute),
    ("edit", ToolKind::Edit),
    ("write", ToolKind::Edit),
    ("ast_edit", ToolKind::Edit),
    ("notebook", ToolKind::Edit),
    ("grep", ToolKind::Search),
    ("search", ToolKind::Search),
    ("glob", ToolKind::Search),
    ("find", ToolKind::Search),
    ("ast_grep", ToolKind::Search),
    ("security_scan", ToolKind::Search),
    ("web_search", ToolKind::Fetch),
    ("fetch", ToolKind::Fetch),
    ("browser", ToolKind::Fetch),
    ("github", ToolKind::Fetch),
    ("think", ToolKind::Think),
    ("todo", ToolKind::Think),
    ("context_notes", ToolKind::Think),
    ("task", ToolKind::Other),
    ("ask", ToolKind::Other),
    ("hub", ToolKind::Other),
    ("checkpoint", ToolKind::Other),
    ("rewind", ToolKind::Other),
    ("new_context", ToolKind::Other),
    ("yield", ToolKind::Other),
    ("goal", ToolKind::Other),
    ("memory_edit", ToolKind::Other),
    ("manage_skill", ToolKind::Other),
];

/// What omp does differently from the rest of the pi family.
#[derive(Debug, Default)]
pub struct OmpFlavor;

/// The runtime family of an omp provider (`omp:<provider>` for a provider without a native
/// adapter).
pub fn family_of(provider: &str) -> String {
    pi_family::family_of(OmpFlavor::RUNTIME, provider)
}

impl Flavor for OmpFlavor {
    const RUNTIME: &'static str = "omp";
    const MODE_FLAG: &'static str = "--mode=json";
    const TOOL_KINDS: &'static [(&'static str, ToolKind)] = TOOL_KINDS;
    const NOT_TERMINAL: &'static str = "omp stream ended on a non-terminal agent_end (isTerminal false): it stopped between scheduled continuations (retry, model fallback or auto-compaction)";

    type AgentEnd = OmpAgentEnd;

    fn agent_end(&mut self, end: OmpAgentEnd) -> AgentEnd {
        AgentEnd {
            continues: end.is_terminal == Some(false),
            // The rollup's `inputTokens` is taken as given: its fields are OpenTelemetry's,
            // whose input counts the cached tokens. Were it omp's own `input` (cache left out),
            // it would fall below the message sum on the input axis and the sum would stand.
            rollup: end.telemetry.and_then(|t| t.usage).map(|usage| Tokens {
                input: usage.input_tokens,
                output: usage.output_tokens,
                cache_read: usage.cached_input_tokens,
                cache_write: usage.cache_write_tokens,
                reasoning: usage.reasoning_output_tokens,
            }),
        }
    }
}

// Wire shapes: only the fields the rules read.

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OmpAgentEnd {
    /// Declared so that a row naming its type twice fails to decode instead of being guessed.
    #[serde(rename = "type")]
    _kind: Option<IgnoredAny>,
    is_terminal: Option<bool>,
    telemetry: Option<Telemetry>,
    #[serde(rename = "messages")]
    _messages: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Telemetry {
    usage: Option<TelemetryUsage>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TelemetryUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default)]
    cache_write_tokens: u64,
    #[serde(default)]
    reasoning_output_tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families() {
        assert_eq!(family_of("openai"), "codex");
        assert_eq!(family_of("openai-codex"), "codex");
        assert_eq!(family_of("anthropic"), "claude");
        assert_eq!(family_of("kimi-code"), "kimi");
        assert_eq!(family_of("devin"), "omp:devin");
    }
}
