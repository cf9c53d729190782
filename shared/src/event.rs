//! The typed events every parser lifts out of its CLI's stream, in the same single pass as the
//! verdict: what the agent did (tool calls and their results, denials included), what it said,
//! what it cost, and how the run ended. One model for all dialects; `schema/moot-events.schema.json`
//! is its JSON Schema and moot(7) (EVENTS) its description.
//!
//! A dialect reports what its rows say through [`Events`]. The tally of tool calls (the
//! envelope's `run.tools`) is always kept, whether or not anything is written; the events
//! themselves are serialised only when `--events` asked for them, and `--progress` prints one
//! short line per tool call and turn on stderr. Nothing here grows with the stream's length:
//! a call waiting for its result is held until the result comes, the denials kept for the
//! envelope are capped at [`MAX_DENIALS`].

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::LazyLock;

use memchr::memmem::Finder;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::json_text::JsonStr;

/// The kind of a tool call: ACP's `ToolKind` set, so editors and moot agree on the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    Other,
}

impl ToolKind {
    /// Every kind, in the order `run.tools.by_kind` lists them.
    pub const ALL: [ToolKind; 9] = [
        ToolKind::Read,
        ToolKind::Edit,
        ToolKind::Delete,
        ToolKind::Move,
        ToolKind::Search,
        ToolKind::Execute,
        ToolKind::Think,
        ToolKind::Fetch,
        ToolKind::Other,
    ];

    /// The kind of the CLI's tool `name`: the runtime's own table first (its exact names), then
    /// the words the CLIs share (`bash`, `read_file`, `WebFetch`, ...), then `other`.
    pub fn of(name: &str, table: &[(&str, ToolKind)]) -> ToolKind {
        if let Some((_, kind)) = table.iter().find(|(known, _)| *known == name) {
            return *kind;
        }
        let lower = name.to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|word| lower.contains(word));
        if has(&["bash", "shell", "exec", "command", "terminal", "run"]) {
            ToolKind::Execute
        } else if has(&["fetch", "web", "http", "url", "browse"]) {
            ToolKind::Fetch
        } else if has(&["grep", "glob", "search", "find"]) {
            ToolKind::Search
        } else if has(&["delete", "remove"]) {
            ToolKind::Delete
        } else if has(&["move", "rename"]) {
            ToolKind::Move
        } else if has(&["write", "edit", "patch", "replace", "create", "notebook"]) {
            ToolKind::Edit
        } else if has(&["read", "view", "cat", "list", "ls"]) {
            ToolKind::Read
        } else if has(&["think", "todo", "plan", "task"]) {
            ToolKind::Think
        } else {
            ToolKind::Other
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Delete => "delete",
            ToolKind::Move => "move",
            ToolKind::Search => "search",
            ToolKind::Execute => "execute",
            ToolKind::Think => "think",
            ToolKind::Fetch => "fetch",
            ToolKind::Other => "other",
        }
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Completed,
    Failed,
    /// The tool's output shows the kernel (or the CLI's own permission layer) refused it.
    Denied,
}

/// What a tool's result says, as a dialect read it.
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolOutcome<'a> {
    /// The CLI marked the result as an error (`is_error`, a failed status, a nonzero exit).
    pub failed: bool,
    /// The command's exit code, where the CLI gives one.
    pub exit_code: Option<i64>,
    /// The output the tool returned to the model, as the CLI reported it.
    pub output: ToolOutput<'a>,
    /// The CLI said itself that it refused the call (its permission layer or its sandbox).
    pub refused_by_cli: bool,
}

/// The output a tool returned to the model.
#[derive(Debug, Clone, Copy)]
pub enum ToolOutput<'a> {
    /// Text the dialect decoded.
    Text(&'a str),
    /// Strings as the stream spelled them, decoded only when something reads the text: their
    /// texts joined by newlines (one string, or a CLI's text parts).
    Json(&'a [JsonStr<'a>]),
}

impl Default for ToolOutput<'_> {
    fn default() -> Self {
        ToolOutput::Text("")
    }
}

impl<'a> ToolOutput<'a> {
    /// The whole text.
    pub fn text(self) -> Cow<'a, str> {
        match self {
            ToolOutput::Text(text) => Cow::Borrowed(text),
            ToolOutput::Json([]) => Cow::Borrowed(""),
            ToolOutput::Json([one]) => one.text(),
            ToolOutput::Json(parts) => Cow::Owned(
                parts
                    .iter()
                    .map(|part| part.text())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        }
    }

    /// Whether the text contains `needle` (see [`JsonStr::mentions`] for which needles).
    pub fn mentions(self, needle: &str) -> bool {
        match self {
            ToolOutput::Text(text) => text.contains(needle),
            ToolOutput::Json(parts) => parts.iter().any(|part| part.mentions(needle)),
        }
    }

    /// Whether the text, leading whitespace left out, starts with `prefix` (a needle as for
    /// [`JsonStr::mentions`]).
    pub fn opens_with(self, prefix: &str) -> bool {
        let head = match self {
            ToolOutput::Text(text) => return text.trim_start().starts_with(prefix),
            ToolOutput::Json(parts) => parts.first().and_then(|first| first.opens_with(prefix)),
        };
        head.unwrap_or_else(|| self.text().trim_start().starts_with(prefix))
    }

    /// The text's length in characters.
    pub fn chars(self) -> usize {
        match self {
            ToolOutput::Text(text) => text.chars().count(),
            ToolOutput::Json(parts) => {
                parts.iter().map(|part| part.chars()).sum::<usize>() + parts.len().saturating_sub(1)
            }
        }
    }

    /// The first line naming a refusal ([`denial_line`]). JSON text is searched as it is (the
    /// words are plain ASCII, which no JSON writer escapes) and decoded only on a match.
    fn denial(self) -> Option<String> {
        match self {
            ToolOutput::Text(text) => denial_line(text).map(str::to_string),
            ToolOutput::Json(parts)
                if parts
                    .iter()
                    .any(|part| refusal_at(part.raw().as_bytes()).is_some()) =>
            {
                denial_line(&self.text()).map(str::to_string)
            }
            ToolOutput::Json(_) => None,
        }
    }
}

/// A denial kept for the envelope: which call, and the line of its output that shows it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Denial {
    pub id: String,
    pub name: String,
    /// The first line of the output naming the refusal, at most [`DENIAL_LINE_CHARS`] chars.
    pub said: String,
}

/// At most this many denials are kept in `run.tools.denials` (all are counted).
pub const MAX_DENIALS: usize = 8;
/// A kept denial's line is cut to this many characters.
pub const DENIAL_LINE_CHARS: usize = 200;

/// The envelope's `run.tools`: what the agent's tool calls came to.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct ToolSummary {
    pub calls: u64,
    pub completed: u64,
    pub failed: u64,
    pub denied: u64,
    /// Calls per kind; kinds with no call are left out.
    pub by_kind: KindCounts,
    /// The first [`MAX_DENIALS`] denials.
    pub denials: Vec<Denial>,
}

/// Calls per [`ToolKind`], serialised as an object in [`ToolKind::ALL`]'s order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KindCounts([u64; 9]);

impl KindCounts {
    pub fn add(&mut self, kind: ToolKind) {
        let slot = &mut self.0[kind as usize];
        *slot = slot.saturating_add(1);
    }

    pub fn get(&self, kind: ToolKind) -> u64 {
        self.0[kind as usize]
    }
}

impl Serialize for KindCounts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for kind in ToolKind::ALL {
            if self.get(kind) > 0 {
                map.serialize_entry(kind.name(), &self.get(kind))?;
            }
        }
        map.end()
    }
}

/// One event, as written to `--events` (one JSON object per line, `type` first).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event<'a> {
    /// The run began: what the stream says about it (fields it does not name are null).
    Start {
        runtime: &'a str,
        cli_version: Option<&'a str>,
        model: Option<&'a str>,
        provider: Option<&'a str>,
        session_id: Option<&'a str>,
    },
    /// A whole assistant message's text.
    Text { text: &'a str },
    /// The model reasoned; only its size is given.
    Reasoning { chars: u64 },
    /// The model called a tool.
    ToolCall {
        id: &'a str,
        name: &'a str,
        kind: ToolKind,
        input: Input<'a>,
    },
    /// A tool call ended.
    ToolResult {
        id: &'a str,
        name: &'a str,
        kind: ToolKind,
        status: ToolStatus,
        exit_code: Option<i64>,
        output_chars: u64,
    },
    /// Tokens spent: `turn` is one model turn's own figures where the CLI gives them per turn,
    /// null where it reports only a running total; `cumulative` is the run's total so far.
    Usage {
        turn: Option<Counts>,
        cumulative: Counts,
        cost_usd: Option<f64>,
    },
    /// The CLI retries a failed provider call.
    Retry { message: &'a str },
    /// The stream reported an error (the verdict decides whether it failed the run).
    Error { message: &'a str },
    /// The run's verdict, as the envelope gives it.
    End {
        ok: bool,
        error_class: Option<&'a str>,
        stop_reason: Option<&'a str>,
        usage: &'a Usage,
        tools: &'a ToolSummary,
    },
}

/// A tool call's input as an event writes it: a decoded value, or fields as the stream spelled
/// them (written as they are, never decoded).
#[derive(Debug, Clone, Copy)]
pub enum Input<'a> {
    Value(&'a Value),
    Fields(&'a [(Cow<'a, str>, &'a RawValue)]),
}

impl<'a> From<&'a Value> for Input<'a> {
    fn from(value: &'a Value) -> Self {
        Input::Value(value)
    }
}

impl Serialize for Input<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Input::Value(value) => value.serialize(serializer),
            Input::Fields(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (name, value) in *fields {
                    map.serialize_entry(name, value)?;
                }
                map.end()
            }
        }
    }
}

/// Token figures as an event spells them.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
}

impl From<Tokens> for Counts {
    fn from(tokens: Tokens) -> Counts {
        Counts {
            input_tokens: tokens.input,
            output_tokens: tokens.output,
            cache_read_tokens: tokens.cache_read,
            cache_write_tokens: tokens.cache_write,
            reasoning_tokens: tokens.reasoning,
        }
    }
}

/// Token counts. `input` is every prompt token, cached ones included (the OpenTelemetry GenAI
/// convention): a dialect whose CLI counts cache reads and writes apart (Anthropic's spelling,
/// pi's) adds them in. `cache_read` and `cache_write` are the parts of `input` the provider
/// served from or wrote to its prompt cache; `reasoning` the part of `output` spent reasoning.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub reasoning: u64,
}

impl Tokens {
    /// Prompt and answer tokens only.
    pub fn io(input: u64, output: u64) -> Tokens {
        Tokens {
            input,
            output,
            ..Tokens::default()
        }
    }

    /// Adds `more`, saturating (a hostile stream cannot wrap the count).
    pub fn add(&mut self, more: Tokens) {
        self.input = self.input.saturating_add(more.input);
        self.output = self.output.saturating_add(more.output);
        self.cache_read = self.cache_read.saturating_add(more.cache_read);
        self.cache_write = self.cache_write.saturating_add(more.cache_write);
        self.reasoning = self.reasoning.saturating_add(more.reasoning);
    }

    /// Keeps the larger figure on each axis.
    pub fn at_least(&mut self, seen: Tokens) {
        self.input = self.input.max(seen.input);
        self.output = self.output.max(seen.output);
        self.cache_read = self.cache_read.max(seen.cache_read);
        self.cache_write = self.cache_write.max(seen.cache_write);
        self.reasoning = self.reasoning.max(seen.reasoning);
    }

    /// The envelope's usage, with no cost.
    pub fn usage(self, source: UsageSource) -> Usage {
        Usage {
            input_tokens: self.input,
            output_tokens: self.output,
            cache_read_tokens: self.cache_read,
            cache_write_tokens: self.cache_write,
            reasoning_tokens: self.reasoning,
            cost_usd: None,
            source,
            reported: source.reported(),
        }
    }
}

/// Token usage. Always reported, on failures too, as a floor of what was billed.
/// `input_tokens` counts cached prompt tokens too; `cache_read_tokens` and `cache_write_tokens`
/// say how many of them the provider's cache served or stored, `reasoning_tokens` how many of
/// `output_tokens` went to reasoning (0 where the CLI does not say: see moot(7), EVENTS).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
    pub cost_usd: Option<f64>,
    pub source: UsageSource,
    /// How the CLI reported the figures: per turn (summed here) or as a run total.
    pub reported: Option<Reported>,
}

/// Whether the CLI reports usage per model turn or as a running total.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reported {
    PerTurn,
    Cumulative,
}

/// Where the usage figures came from.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum UsageSource {
    /// The stream carried no usage at all.
    #[default]
    None,
    /// Summed over the assistant messages.
    Messages,
    /// A run-level rollup the runtime reported (omp's OTEL telemetry).
    Telemetry,
    /// The runtime's final result or turn event.
    Result,
}

impl UsageSource {
    /// How figures from this source were reported: message sums are per turn, a rollup or a
    /// result is the run's total.
    pub fn reported(self) -> Option<Reported> {
        match self {
            UsageSource::None => None,
            UsageSource::Messages => Some(Reported::PerTurn),
            UsageSource::Telemetry | UsageSource::Result => Some(Reported::Cumulative),
        }
    }
}

/// A call waiting for its result.
#[derive(Debug)]
struct OpenCall {
    name: String,
    kind: ToolKind,
}

/// Where a dialect reports what its rows say; see the module doc.
pub struct Events {
    runtime: &'static str,
    /// `--events`: NDJSON, one flushed line per event.
    out: Option<Box<dyn Write>>,
    /// `--progress`: the tool's name, for the stderr lines.
    progress: Option<String>,
    /// The first error writing `out`; reported once the stream has ended.
    write_error: Option<io::Error>,
    started: bool,
    open: HashMap<String, OpenCall>,
    tools: ToolSummary,
    cumulative: Tokens,
    turns: u64,
}

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Events")
            .field("runtime", &self.runtime)
            .field("writing", &self.out.is_some())
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}

impl Events {
    /// Tallies only: nothing is written.
    pub fn tally(runtime: &'static str) -> Events {
        Events {
            runtime,
            out: None,
            progress: None,
            write_error: None,
            started: false,
            open: HashMap::new(),
            tools: ToolSummary::default(),
            cumulative: Tokens::default(),
            turns: 0,
        }
    }

    /// Writes every event to `out` as NDJSON.
    pub fn writing_to(mut self, out: Box<dyn Write>) -> Events {
        self.out = Some(out);
        self
    }

    /// Prints a line per tool call and turn on stderr, each starting with `tool:`.
    pub fn with_progress(mut self, tool: &str) -> Events {
        self.progress = Some(tool.to_string());
        self
    }

    /// Flushes what was written so far. The parse driver calls it before it may wait for more
    /// of the stream, so a reader of the events sees every event the stream has given so far,
    /// while a stream read in one go is written in large blocks.
    pub fn flush(&mut self) {
        if let (Some(out), None) = (self.out.as_mut(), self.write_error.as_ref()) {
            if let Err(error) = out.flush() {
                self.write_error = Some(error);
            }
        }
    }

    /// Flushes and closes the output (a pipe's reader then sees its end).
    pub fn close_output(&mut self) {
        if let Some(mut out) = self.out.take() {
            if let Err(error) = out.flush() {
                self.write_error.get_or_insert(error);
            }
        }
    }

    /// Whether events are being written: a dialect decodes rows it needs only for events
    /// (text, reasoning) when this is true, and keeps its fast path otherwise.
    pub fn writing(&self) -> bool {
        self.out.is_some()
    }

    /// The tally so far.
    pub fn summary(&self) -> &ToolSummary {
        &self.tools
    }

    /// The first error writing the events, if any.
    pub fn take_write_error(&mut self) -> Option<io::Error> {
        self.write_error.take()
    }

    fn emit(&mut self, event: &Event<'_>) {
        let Some(out) = self.out.as_mut() else {
            return;
        };
        if self.write_error.is_some() {
            return;
        }
        let written = serde_json::to_writer(&mut *out, event)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"));
        if let Err(error) = written {
            self.write_error = Some(error);
        }
    }

    fn say(&self, line: std::fmt::Arguments<'_>) {
        if let Some(tool) = &self.progress {
            crate::eprintln_whole!("{tool}: {line}");
        }
    }

    /// The run's start, once: the first call wins (a dialect calls it at the row that names
    /// the session or model). Any other event first emits a bare start.
    pub fn start(
        &mut self,
        cli_version: Option<&str>,
        model: Option<&str>,
        provider: Option<&str>,
        session_id: Option<&str>,
    ) {
        if self.started {
            return;
        }
        self.started = true;
        let runtime = self.runtime;
        self.emit(&Event::Start {
            runtime,
            cli_version,
            model,
            provider,
            session_id,
        });
    }

    fn ensure_started(&mut self) {
        if !self.started {
            self.start(None, None, None, None);
        }
    }

    /// A whole assistant message's text (blank text is no event).
    pub fn text(&mut self, text: &str) {
        if !self.writing() || text.trim().is_empty() {
            return;
        }
        self.ensure_started();
        self.emit(&Event::Text { text });
    }

    /// The model reasoned, `chars` characters long (empty reasoning is no event).
    pub fn reasoning(&mut self, chars: usize) {
        if !self.writing() || chars == 0 {
            return;
        }
        self.ensure_started();
        self.emit(&Event::Reasoning {
            chars: chars as u64,
        });
    }

    /// The model called `name` with `input`; `table` is the runtime's tool kinds.
    pub fn tool_call<'i>(
        &mut self,
        id: &str,
        name: &str,
        table: &[(&str, ToolKind)],
        input: impl Into<Input<'i>>,
    ) {
        let input = input.into();
        let kind = ToolKind::of(name, table);
        self.tools.calls = self.tools.calls.saturating_add(1);
        self.tools.by_kind.add(kind);
        self.ensure_started();
        self.emit(&Event::ToolCall {
            id,
            name,
            kind,
            input,
        });
        self.say(format_args!("tool {name} ({}) called", kind.name()));
        self.open.insert(
            id.to_string(),
            OpenCall {
                name: name.to_string(),
                kind,
            },
        );
    }

    /// The call `id` ended. A result for a call never seen is still counted, under the name
    /// the dialect gives (`fallback_name`) and its kind.
    pub fn tool_result(
        &mut self,
        id: &str,
        fallback_name: &str,
        table: &[(&str, ToolKind)],
        outcome: ToolOutcome<'_>,
    ) {
        let (name, kind) = match self.open.remove(id) {
            Some(call) => (call.name, call.kind),
            None => (
                fallback_name.to_string(),
                ToolKind::of(fallback_name, table),
            ),
        };
        let refusal = if outcome.refused_by_cli {
            Some(first_line(&outcome.output.text()).to_string())
        } else {
            outcome.output.denial()
        };
        let status = match (&refusal, outcome.failed, outcome.exit_code) {
            (Some(_), _, _) => ToolStatus::Denied,
            (None, true, _) => ToolStatus::Failed,
            (None, false, Some(code)) if code != 0 => ToolStatus::Failed,
            (None, false, _) => ToolStatus::Completed,
        };
        let tally = &mut self.tools;
        match status {
            ToolStatus::Completed => tally.completed = tally.completed.saturating_add(1),
            ToolStatus::Failed => tally.failed = tally.failed.saturating_add(1),
            ToolStatus::Denied => tally.denied = tally.denied.saturating_add(1),
        }
        if let Some(said) = refusal.filter(|_| tally.denials.len() < MAX_DENIALS) {
            tally.denials.push(Denial {
                id: id.to_string(),
                name: name.clone(),
                said: said.chars().take(DENIAL_LINE_CHARS).collect(),
            });
        }
        self.ensure_started();
        self.emit(&Event::ToolResult {
            id,
            name: &name,
            kind,
            status,
            exit_code: outcome.exit_code,
            output_chars: if self.writing() {
                outcome.output.chars() as u64
            } else {
                0
            },
        });
        let exit = outcome
            .exit_code
            .map(|code| format!(", exit {code}"))
            .unwrap_or_default();
        self.say(format_args!(
            "tool {name} {}{exit}",
            match status {
                ToolStatus::Completed => "completed",
                ToolStatus::Failed => "failed",
                ToolStatus::Denied => "DENIED",
            }
        ));
    }

    /// One model turn's own usage: added to the running total.
    pub fn turn_usage(&mut self, turn: Tokens, cost_usd: Option<f64>) {
        self.cumulative.add(turn);
        self.usage(Some(turn), cost_usd);
    }

    /// The CLI's running total so far (it reports no per-turn figures).
    pub fn cumulative_usage(&mut self, total: Tokens, cost_usd: Option<f64>) {
        self.cumulative = total;
        self.usage(None, cost_usd);
    }

    fn usage(&mut self, turn: Option<Tokens>, cost_usd: Option<f64>) {
        self.turns = self.turns.saturating_add(1);
        let cumulative = self.cumulative;
        self.ensure_started();
        self.emit(&Event::Usage {
            turn: turn.map(Counts::from),
            cumulative: cumulative.into(),
            cost_usd,
        });
        self.say(format_args!(
            "turn {}: {} tokens in, {} out (run: {} in, {} out)",
            self.turns,
            turn.map_or(cumulative.input, |t| t.input),
            turn.map_or(cumulative.output, |t| t.output),
            cumulative.input,
            cumulative.output,
        ));
    }

    /// The CLI retries: `message` is why.
    pub fn retry(&mut self, message: &str) {
        self.ensure_started();
        self.emit(&Event::Retry { message });
        self.say(format_args!(
            "retrying: {}",
            crate::report::one_line(message)
        ));
    }

    /// The stream reported an error.
    pub fn error(&mut self, message: &str) {
        self.ensure_started();
        self.emit(&Event::Error { message });
    }

    /// The last event: the run's verdict, as the envelope gives it.
    pub fn end(&mut self, end: End<'_>) {
        self.ensure_started();
        self.emit(&Event::End {
            ok: end.ok,
            error_class: end.error_class,
            stop_reason: end.stop_reason,
            usage: end.usage,
            tools: end.tools,
        });
    }
}

/// What the end event says: the envelope's verdict.
#[derive(Debug, Clone, Copy)]
pub struct End<'a> {
    pub ok: bool,
    pub error_class: Option<&'static str>,
    pub stop_reason: Option<&'a str>,
    pub usage: &'a Usage,
    pub tools: &'a ToolSummary,
}

/// What a shell, a runtime or the kernel prints when it refused an operation: `EACCES` and
/// `EPERM` as libc words them and as node and Python name them. Landlock answers a denied file
/// or connect with one of these.
const DENIAL_WORDS: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "eacces",
    "eperm",
];

/// What every one of [`DENIAL_WORDS`] contains: what the search looks for first.
const DENIAL_ANCHORS: &[&str] = &["perm", "eacces"];

/// The first line of `output` that names a refusal, if any.
pub fn denial_line(output: &str) -> Option<&str> {
    let at = refusal_at(output.as_bytes())?;
    // The words are ASCII, so `at` and the line breaks around it are char boundaries.
    let start = output[..at].rfind('\n').map_or(0, |newline| newline + 1);
    let end = output[at..]
        .find('\n')
        .map_or(output.len(), |newline| at + newline);
    let line = &output[start..end];
    Some(line.strip_suffix('\r').unwrap_or(line))
}

/// Where the first of [`DENIAL_WORDS`] starts in `bytes`, in any case. Every tool result is
/// searched, whether or not events are written, so the search is two SIMD substring searches
/// (for [`DENIAL_ANCHORS`]) over a lowercased copy of one block at a time, the copy's buffer
/// kept for the next call; each anchor found is then checked against the words around it.
/// Blocks overlap by an anchor's length, so an anchor across a block's end is found in the next.
fn refusal_at(bytes: &[u8]) -> Option<usize> {
    static ANCHORS: LazyLock<Vec<Finder<'static>>> = LazyLock::new(|| {
        DENIAL_ANCHORS
            .iter()
            .map(|anchor| Finder::new(anchor.as_bytes()))
            .collect()
    });
    thread_local!(static LOWER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) });
    const BLOCK: usize = 16 * 1024;
    let overlap = DENIAL_ANCHORS
        .iter()
        .map(|anchor| anchor.len())
        .max()
        .unwrap_or(1)
        - 1;
    LOWER.with_borrow_mut(|lower| {
        let mut start = 0;
        loop {
            let end = (start + BLOCK).min(bytes.len());
            lower.clear();
            lower.extend(bytes[start..end].iter().map(u8::to_ascii_lowercase));
            let mut from = 0;
            while let Some(found) = ANCHORS.iter().filter_map(|a| a.find(&lower[from..])).min() {
                let at = start + from + found;
                if let Some(word) = word_around(bytes, at) {
                    return Some(word);
                }
                from += found + 1;
            }
            if end == bytes.len() {
                return None;
            }
            start = end - overlap;
        }
    })
}

/// Where one of [`DENIAL_WORDS`] holding an anchor at byte `at` starts, in any case.
fn word_around(bytes: &[u8], at: usize) -> Option<usize> {
    DENIAL_WORDS
        .iter()
        .flat_map(|word| {
            DENIAL_ANCHORS
                .iter()
                .filter_map(move |anchor| word.find(anchor).map(|offset| (word, offset)))
        })
        .filter_map(|(word, offset)| {
            let start = at.checked_sub(offset)?;
            let text = bytes.get(start..start + word.len())?;
            text.eq_ignore_ascii_case(word.as_bytes()).then_some(start)
        })
        .min()
}

fn first_line(text: &str) -> &str {
    text.lines()
        .find(|line| !line.trim().is_empty())
        .unwrap_or("")
}

/// What the dialects' tests share: an events output they can read back.
#[cfg(test)]
pub(crate) mod testing {
    /// A writer whose bytes stay readable through its clones (`sink.0.borrow()`).
    #[derive(Clone, Default)]
    pub(crate) struct Sink(pub std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::testing::Sink as Shared;

    #[test]
    fn kinds_follow_the_runtime_table_then_the_shared_words() {
        let table = [("Task", ToolKind::Other)];
        assert_eq!(ToolKind::of("Task", &table), ToolKind::Other);
        assert_eq!(ToolKind::of("bash", &[]), ToolKind::Execute);
        assert_eq!(ToolKind::of("shell_command", &[]), ToolKind::Execute);
        assert_eq!(ToolKind::of("Read", &[]), ToolKind::Read);
        assert_eq!(ToolKind::of("write_file", &[]), ToolKind::Edit);
        assert_eq!(ToolKind::of("Grep", &[]), ToolKind::Search);
        assert_eq!(ToolKind::of("WebFetch", &[]), ToolKind::Fetch);
        assert_eq!(ToolKind::of("zzz", &[]), ToolKind::Other);
    }

    #[test]
    fn a_denied_call_is_counted_kept_and_written() {
        let sink = Shared::default();
        let mut events = Events::tally("omp").writing_to(Box::new(sink.clone()));
        events.tool_call(
            "c1",
            "bash",
            &[],
            &serde_json::json!({"command": "touch /x"}),
        );
        events.tool_result(
            "c1",
            "bash",
            &[],
            ToolOutcome {
                failed: true,
                exit_code: Some(1),
                output: ToolOutput::Text("touch: cannot touch '/x': Permission denied\n"),
                refused_by_cli: false,
            },
        );
        events.tool_call("c2", "read", &[], &Value::Null);
        events.tool_result("c2", "read", &[], ToolOutcome::default());
        let tally = events.summary();
        assert_eq!(
            (tally.calls, tally.completed, tally.failed, tally.denied),
            (2, 1, 0, 1)
        );
        assert_eq!(
            tally.denials[0].said,
            "touch: cannot touch '/x': Permission denied"
        );
        assert_eq!(
            serde_json::to_string(&tally.by_kind).unwrap(),
            r#"{"read":1,"execute":1}"#
        );
        let written = String::from_utf8(sink.0.borrow().clone()).unwrap();
        let types: Vec<String> = written
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["type"].to_string())
            .collect();
        assert_eq!(
            types,
            [
                r#""start""#,
                r#""tool_call""#,
                r#""tool_result""#,
                r#""tool_call""#,
                r#""tool_result""#
            ]
        );
        assert!(written.contains(r#""status":"denied""#));
    }

    #[test]
    fn a_nonzero_exit_fails_a_call_and_usage_accumulates() {
        let mut events = Events::tally("codex");
        events.tool_call("c", "shell", &[], &Value::Null);
        events.tool_result(
            "c",
            "shell",
            &[],
            ToolOutcome {
                exit_code: Some(2),
                ..ToolOutcome::default()
            },
        );
        assert_eq!(events.summary().failed, 1);
        let turn = Tokens {
            input: 10,
            output: 2,
            ..Tokens::default()
        };
        events.turn_usage(turn, None);
        events.turn_usage(turn, None);
        assert_eq!(events.cumulative.input, 20);
    }

    #[test]
    fn the_denial_line_is_the_first_line_naming_a_refusal_in_any_case() {
        assert_eq!(denial_line("ok\nall fine\n"), None);
        assert_eq!(denial_line(""), None);
        let output = "héllo wörld\r\nbash: /etc/x: Permission denied\r\nEPERM later\n";
        assert_eq!(denial_line(output), Some("bash: /etc/x: Permission denied"));
        // A later word on an earlier line wins over an earlier word on a later line.
        let output = "first\nError: EACCES: open '/x'\ncp: Operation not permitted";
        assert_eq!(denial_line(output), Some("Error: EACCES: open '/x'"));
        assert_eq!(
            denial_line("OPERATION NOT PERMITTED"),
            Some("OPERATION NOT PERMITTED")
        );
        assert_eq!(denial_line("permissions.txt\nperm ok"), None);
    }

    #[test]
    fn json_output_is_searched_and_counted_as_its_text() {
        let parts: Vec<JsonStr<'_>> = [
            r#""ok \"x\"""#,
            r#""sh: 1: cannot create /x: Permission denied\r\nmore""#,
        ]
        .iter()
        .map(|json| serde_json::from_str(json).unwrap())
        .collect();
        let output = ToolOutput::Json(&parts);
        let text = "ok \"x\"\nsh: 1: cannot create /x: Permission denied\r\nmore";
        assert_eq!(output.text(), text);
        assert_eq!(output.chars(), text.chars().count());
        assert_eq!(
            output.denial().as_deref(),
            Some("sh: 1: cannot create /x: Permission denied")
        );
        assert_eq!(ToolOutput::Json(&parts[..1]).denial(), None);
        assert_eq!(ToolOutput::Json(&[]).chars(), 0);
    }

    #[test]
    fn a_word_across_a_search_block_is_found() {
        for at in [0, 16 * 1024 - 10, 16 * 1024 - 1, 16 * 1024, 40_000] {
            let mut text = "x".repeat(at);
            text.push_str("Operation not permitted");
            text.push_str(&"y".repeat(100));
            assert_eq!(refusal_at(text.as_bytes()), Some(at), "{at}");
        }
    }

    #[test]
    fn denials_kept_are_capped_but_all_are_counted() {
        let mut events = Events::tally("pi");
        for i in 0..(MAX_DENIALS + 3) {
            let id = format!("c{i}");
            events.tool_call(&id, "bash", &[], &Value::Null);
            events.tool_result(
                &id,
                "bash",
                &[],
                ToolOutcome {
                    output: ToolOutput::Text("EACCES: permission denied, open '/x'"),
                    ..ToolOutcome::default()
                },
            );
        }
        assert_eq!(events.summary().denied as usize, MAX_DENIALS + 3);
        assert_eq!(events.summary().denials.len(), MAX_DENIALS);
        assert!(events.open.is_empty());
    }
}
