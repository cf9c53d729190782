//! What a model call asks for and what the fake model answers: the part common to every wire API.
//!
//! A request body is read as a `serde_json::Value` rather than a typed struct on purpose: each CLI
//! sends fields the others do not, and the planner needs only a few of them (the tools offered,
//! whether a tool result is back, the stream flag), whatever else comes along.

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::scenario::{chunk_text, Scenario, Texts, REASONING_TEXT};

/// The wire API a request path belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI chat completions, `POST /v1/chat/completions` (omp, pi, Kimi Code, kimi-cli).
    Chat,
    /// OpenAI Responses, `POST /v1/responses` (codex).
    Responses,
    /// Anthropic Messages, `POST /v1/messages` (claude).
    Anthropic,
    /// Anthropic token counting, `POST /v1/messages/count_tokens`.
    CountTokens,
    /// The model list, `GET /v1/models` and `GET /v1/models/ID`.
    Models,
    /// `GET /`, `/health`, `/healthz`, `HEAD` anything.
    Health,
    /// `GET /__reset`: the retry counters are cleared.
    Reset,
    /// Anything else: 404.
    #[default]
    Unknown,
}

/// How many deltas a text is streamed in, and the pause after each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Pace {
    /// The number of pieces (see [`chunk_text`]).
    pub pieces: usize,
    /// Milliseconds between pieces.
    pub delay_ms: u64,
}

impl Pace {
    /// Four deltas, no pause: what every scenario but `slow` streams.
    pub const NORMAL: Pace = Pace {
        pieces: 4,
        delay_ms: 0,
    };
    /// About 40 deltas a quarter second apart: a run a test can kill mid-stream.
    pub const SLOW: Pace = Pace {
        pieces: 40,
        delay_ms: 250,
    };
}

/// Why a text answer ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// A normal end of turn.
    Stop,
    /// The output limit cut it.
    Length,
}

/// The shape of a tool call on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// A function call with JSON arguments (every API).
    Function,
    /// The Responses API's built-in `local_shell` call (an argv, no JSON arguments).
    LocalShell,
    /// A Responses API custom (free-form) tool, whose input is one string (`args` is that
    /// string), as codex's `apply_patch`.
    Custom,
}

/// One tool call the model makes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolCall {
    /// The tool's name, as the request offered it.
    pub name: String,
    /// Its arguments, filled from the tool's schema.
    pub args: Value,
    /// How it is encoded.
    pub kind: ToolKind,
    /// How many tool results the request already carried (part of the call id).
    pub idx: usize,
}

/// What the fake model answers to one model call.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Plan {
    /// An HTTP error status with the API's error body.
    HttpError {
        /// The status code.
        status: u16,
    },
    /// A text answer, optionally after reasoning.
    Text {
        /// The answer (left out of the log, as it is one of the fixed texts).
        #[serde(skip)]
        text: String,
        /// Why it ended.
        finish: Finish,
        /// Reasoning streamed before the text.
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        /// How it is streamed.
        pace: Pace,
    },
    /// A tool call, optionally after a short text.
    Tool {
        /// The call.
        call: ToolCall,
        /// Text before the call (`toolloop`'s "Still working").
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// A few deltas of `text`, then the stream stops without its terminator.
    Drop {
        /// The answer whose start is sent.
        #[serde(skip)]
        text: String,
    },
}

impl Plan {
    /// A plain text answer with a normal stop.
    pub fn text(text: impl Into<String>) -> Plan {
        Plan::Text {
            text: text.into(),
            finish: Finish::Stop,
            reasoning: None,
            pace: Pace::NORMAL,
        }
    }

    /// The pieces a dropped stream sends before the cut: the first half of the answer.
    pub fn drop_pieces(text: &str) -> Vec<String> {
        chunk_text(text, 6).into_iter().take(3).collect()
    }
}

/// The parts of a request the planner reads.
#[derive(Clone, Debug)]
pub struct Call<'a> {
    /// The wire API.
    pub api: Api,
    /// The parsed body.
    pub body: &'a Value,
    /// The body as received, searched for a staged prompt path (`readfile`).
    pub raw: &'a str,
}

impl Call<'_> {
    /// The tool definitions the request offers.
    pub fn tools(&self) -> &[Value] {
        self.body
            .get("tools")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The names of the tools offered, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.tools()
            .iter()
            .filter_map(|tool| tool_name_and_schema(tool).0)
            .map(str::to_string)
            .collect()
    }

    /// How many tool results the conversation carries.
    pub fn tool_results(&self) -> usize {
        match self.api {
            Api::Chat => messages(self.body)
                .filter(|m| m.get("role").and_then(Value::as_str) == Some("tool"))
                .count(),
            Api::Anthropic => messages(self.body)
                .filter_map(|m| m.get("content").and_then(Value::as_array))
                .flatten()
                .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
                .count(),
            Api::Responses => self
                .body
                .get("input")
                .and_then(Value::as_array)
                .map_or(0, |items| {
                    items
                        .iter()
                        .filter(|item| {
                            item.get("type")
                                .and_then(Value::as_str)
                                .is_some_and(|t| t.ends_with("_output"))
                        })
                        .count()
                }),
            _ => 0,
        }
    }

    /// Whether the request asks for a streamed answer.
    pub fn stream(&self) -> bool {
        self.body.get("stream").and_then(Value::as_bool) == Some(true)
    }

    /// The model the request names.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }
}

fn messages(body: &Value) -> impl Iterator<Item = &Value> {
    body.get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Everything [`plan`] needs besides the request.
#[derive(Clone, Debug)]
pub struct Planner {
    /// The answer texts.
    pub texts: Texts,
    /// How many calls `retry`/`retry500` fail.
    pub retry_fails: u32,
    /// What they do afterwards.
    pub retry_then: Scenario,
    /// The directory a read tool is pointed at (README.md in it).
    pub cwd: String,
}

impl Planner {
    /// Decides the answer to `call` under `scenario`; `attempt` is this call's number (from 1)
    /// among the calls of the same scenario, which `retry` counts.
    pub fn plan(&self, scenario: &Scenario, call: &Call, attempt: u32) -> Plan {
        match scenario {
            Scenario::Error => Plan::HttpError { status: 500 },
            Scenario::Fatal => Plan::HttpError { status: 400 },
            Scenario::Overloaded => Plan::HttpError {
                status: if call.api == Api::Anthropic { 529 } else { 503 },
            },
            Scenario::Retry | Scenario::Retry500 if attempt <= self.retry_fails => {
                Plan::HttpError {
                    status: if *scenario == Scenario::Retry {
                        429
                    } else {
                        500
                    },
                }
            }
            Scenario::Retry | Scenario::Retry500 => match &self.retry_then {
                // A retry that recovers into another retry would never recover.
                Scenario::Retry | Scenario::Retry500 => self.plan(&Scenario::Plain, call, attempt),
                then => self.plan(then, call, attempt),
            },
            Scenario::Tool => self.tool_once(call, None, self.texts.after_tool()),
            Scenario::ToolWrite => self.tool_once(
                call,
                Some("touch created_by_agent.txt"),
                self.texts.after_write(),
            ),
            Scenario::ToolCmd(command) => {
                self.tool_once(call, Some(command), self.texts.after_tool())
            }
            Scenario::ReadFile => self.read_file(call),
            Scenario::ToolLoop => self.tool_loop(call),
            Scenario::Length => Plan::Text {
                text: super::scenario::LENGTH_TEXT.to_string(),
                finish: Finish::Length,
                reasoning: None,
                pace: Pace::NORMAL,
            },
            Scenario::Empty => Plan::text(""),
            Scenario::Thinking => Plan::Text {
                text: self.texts.final_text().to_string(),
                finish: Finish::Stop,
                reasoning: Some(REASONING_TEXT.to_string()),
                pace: Pace::NORMAL,
            },
            Scenario::Slow => Plan::Text {
                text: self.texts.final_text().to_string(),
                finish: Finish::Stop,
                reasoning: None,
                pace: Pace::SLOW,
            },
            Scenario::Drop => Plan::Drop {
                text: self.texts.final_text().to_string(),
            },
            Scenario::Plain => Plan::text(self.texts.final_text()),
        }
    }

    /// One tool call, then `after` once its result is back. A request that offers no tool (a
    /// title or quota probe) gets the plain answer.
    fn tool_once(&self, call: &Call, command: Option<&str>, after: String) -> Plan {
        if call.tool_results() > 0 {
            return Plan::text(after);
        }
        match self.pick_tool(call.tools(), command.unwrap_or("ls"), 0) {
            Some(tool) => Plan::Tool {
                call: tool,
                text: None,
            },
            None => Plan::text(self.texts.final_text()),
        }
    }

    /// Reads both ends of the staged prompt file the request names (a CLI may clip a long tool
    /// output in the middle), then answers plainly.
    fn read_file(&self, call: &Call) -> Plan {
        if call.tool_results() == 0 {
            if let Some(path) = staged_prompt_path(call.raw) {
                let command = format!("head -c 40 {path}; tail -c 40 {path}");
                if let Some(tool) = self.pick_tool(call.tools(), &command, 0) {
                    return Plan::Tool {
                        call: tool,
                        text: None,
                    };
                }
            }
        }
        Plan::text(self.texts.final_text())
    }

    fn tool_loop(&self, call: &Call) -> Plan {
        let idx = call.tool_results();
        match self.pick_tool(call.tools(), "sleep 1; ls", idx) {
            Some(tool) => Plan::Tool {
                call: tool,
                text: Some(format!("Still working, checking again (step {}).", idx + 1)),
            },
            None => Plan::text(self.texts.final_text()),
        }
    }

    /// A call of the first shell-like tool offered (running `command`), else of a read-like tool
    /// (reading README.md), else of the first tool by name with no arguments.
    pub fn pick_tool(&self, tools: &[Value], command: &str, idx: usize) -> Option<ToolCall> {
        let named: Vec<(&str, &Value)> = tools
            .iter()
            .filter_map(|tool| match tool_name_and_schema(tool) {
                (Some(name), schema) => Some((name, schema)),
                (None, _) => None,
            })
            .collect();
        let find = |candidates: &[&str]| {
            candidates
                .iter()
                .find_map(|want| named.iter().find(|(name, _)| name == want).copied())
        };
        let call = |name: &str, args: Value, kind: ToolKind| ToolCall {
            name: name.to_string(),
            args,
            kind,
            idx,
        };
        if let Some((name, schema)) = find(shell_names()) {
            if name == "local_shell" {
                return Some(call(
                    name,
                    json!({"command": argv(command)}),
                    ToolKind::LocalShell,
                ));
            }
            return Some(call(name, shell_args(schema, command), ToolKind::Function));
        }
        if let Some((name, schema)) = find(read_names()) {
            return Some(call(name, self.read_args(schema), ToolKind::Function));
        }
        let first = tools
            .iter()
            .filter(|tool| tool_name_and_schema(tool).0.is_some())
            .min_by_key(|tool| tool_name_and_schema(tool).0)?;
        let name = tool_name_and_schema(first).0?;
        if first.get("type").and_then(Value::as_str) == Some("custom") {
            return Some(call(name, json!(""), ToolKind::Custom));
        }
        Some(call(name, json!({}), ToolKind::Function))
    }

    fn read_args(&self, schema: &Value) -> Value {
        let props = properties(schema);
        let key = ["path", "file_path", "filePath", "absolute_path"]
            .into_iter()
            .find(|key| props.contains_key(*key))
            .unwrap_or("path");
        let value = if key == "path" {
            "README.md".to_string()
        } else {
            format!("{}/README.md", self.cwd.trim_end_matches('/'))
        };
        json!({ key: value })
    }
}

/// The tools the registered CLIs run a command with (`SHELL_TOOLS` of each install file), in
/// registry order and each CLI's own order of preference.
fn shell_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| tool_names("SHELL_TOOLS"))
}

/// The tools they read a file with (`READ_TOOLS`), used when no shell is offered.
fn read_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| tool_names("READ_TOOLS"))
}

fn tool_names(key: &str) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    let listed = moot::registry::all()
        .iter()
        .filter_map(|meta| meta.doctor?.install_field(key))
        .flat_map(str::split_whitespace);
    for name in listed {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// A tool definition's name and parameter schema, in any of the three wire formats.
pub fn tool_name_and_schema(tool: &Value) -> (Option<&str>, &Value) {
    fn name(v: &Value) -> Option<&str> {
        v.get("name").and_then(Value::as_str)
    }
    static EMPTY: Value = Value::Null;
    let kind = tool.get("type").and_then(Value::as_str);
    if let (Some("function"), Some(function)) = (kind, tool.get("function")) {
        // chat completions: {"type":"function","function":{"name","parameters"}}
        return (name(function), function.get("parameters").unwrap_or(&EMPTY));
    }
    if let Some(schema) = tool.get("input_schema") {
        return (name(tool), schema); // anthropic
    }
    if kind == Some("local_shell") {
        return (Some("local_shell"), &EMPTY);
    }
    (name(tool), tool.get("parameters").unwrap_or(&EMPTY)) // responses, custom, other
}

fn properties(schema: &Value) -> Map<String, Value> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn argv(command: &str) -> Value {
    json!(["bash", "-lc", command])
}

/// Arguments for a shell tool: the command in the property the schema names, a description when
/// it has one, and harmless values for any other required property.
fn shell_args(schema: &Value, command: &str) -> Value {
    let props = properties(schema);
    let prop_type = |key: &str| {
        props
            .get(key)
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut args = Map::new();
    if props.contains_key("cmd") && !props.contains_key("command") {
        args.insert("cmd".into(), command.into());
    } else if prop_type("command").as_deref() == Some("array") {
        args.insert("command".into(), argv(command));
    } else {
        args.insert("command".into(), command.into());
    }
    if props.contains_key("description") || required.contains(&"description") {
        args.insert(
            "description".into(),
            "List files in the working directory".into(),
        );
    }
    for key in required {
        if args.contains_key(key) {
            continue;
        }
        let filler = match prop_type(key).as_deref() {
            Some("string") => json!("."),
            Some("integer" | "number") => json!(10000),
            Some("boolean") => json!(false),
            _ => continue,
        };
        args.insert(key.into(), filler);
    }
    Value::Object(args)
}

/// The first `/…/prompt.md` path in a request body: an absolute path of at least two parts,
/// ending at a quote, a backslash (a JSON escape) or white space.
pub fn staged_prompt_path(raw: &str) -> Option<&str> {
    const NAME: &str = "/prompt.md";
    let stops = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '\\');
    let mut from = 0;
    while let Some(found) = raw[from..].find(NAME) {
        let end = from + found;
        let run_start = raw[..end]
            .char_indices()
            .rev()
            .find(|(_, c)| stops(*c))
            .map_or(0, |(at, c)| at + c.len_utf8());
        // The path starts at the run's first slash and needs one character before `/prompt.md`.
        if let Some(slash) = raw[run_start..end].find('/') {
            let start = run_start + slash;
            if start < end {
                return Some(&raw[start..end + NAME.len()]);
            }
        }
        from = end + NAME.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planner() -> Planner {
        Planner {
            texts: Texts { legacy: false },
            retry_fails: 1,
            retry_then: Scenario::Plain,
            cwd: "/work".into(),
        }
    }

    #[test]
    fn a_staged_prompt_path_is_found_inside_json() {
        let raw = r#"{"messages":[{"content":"Read /tmp/moot.x1/prompt.md and do it.\nThen"}]}"#;
        assert_eq!(staged_prompt_path(raw), Some("/tmp/moot.x1/prompt.md"));
        assert_eq!(staged_prompt_path(r#"{"a":"/prompt.md"}"#), None);
        assert_eq!(
            staged_prompt_path(r#"{"a":"see\n/a/prompt.md"}"#),
            Some("/a/prompt.md")
        );
        assert_eq!(staged_prompt_path("no path here"), None);
    }

    #[test]
    fn a_shell_schema_gets_its_command_in_the_property_it_names() {
        let schema = json!({"properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"},
            "timeout": {"type": "integer"}}, "required": ["cmd", "workdir", "timeout"]});
        assert_eq!(
            shell_args(&schema, "ls"),
            json!({"cmd": "ls", "workdir": ".", "timeout": 10000})
        );
        let schema = json!({"properties": {"command": {"type": "array"}}});
        assert_eq!(
            shell_args(&schema, "ls"),
            json!({"command": ["bash", "-lc", "ls"]})
        );
        let schema = json!({"properties": {"command": {"type": "string"}, "description": {}}});
        assert_eq!(
            shell_args(&schema, "ls"),
            json!({"command": "ls", "description": "List files in the working directory"})
        );
    }

    #[test]
    fn a_shell_is_preferred_to_a_reader_and_a_reader_to_anything_else() {
        let p = planner();
        let chat = |name: &str| {
            json!({"type": "function", "function": {"name": name,
            "parameters": {"properties": {"file_path": {}}}}})
        };
        let picked = p
            .pick_tool(&[chat("zzz"), chat("Read"), chat("bash")], "ls", 0)
            .unwrap();
        assert_eq!(picked.name, "bash");
        let picked = p.pick_tool(&[chat("zzz"), chat("Read")], "ls", 0).unwrap();
        assert_eq!(picked.args, json!({"file_path": "/work/README.md"}));
        let picked = p.pick_tool(&[chat("zzz"), chat("aaa")], "ls", 0).unwrap();
        assert_eq!((picked.name.as_str(), picked.args), ("aaa", json!({})));
        let custom = json!({"type": "custom", "name": "apply_patch", "format": {}});
        let picked = p.pick_tool(&[chat("zzz"), custom], "ls", 0).unwrap();
        assert_eq!(
            (picked.name.as_str(), picked.kind),
            ("apply_patch", ToolKind::Custom)
        );
        assert!(p.pick_tool(&[], "ls", 0).is_none());
        let local = p
            .pick_tool(&[json!({"type": "local_shell"})], "ls", 0)
            .unwrap();
        assert_eq!(local.kind, ToolKind::LocalShell);
    }

    #[test]
    fn retry_fails_then_recovers_into_its_then_scenario() {
        let mut p = planner();
        p.retry_fails = 2;
        p.retry_then = Scenario::Length;
        let body = json!({});
        let call = Call {
            api: Api::Chat,
            body: &body,
            raw: "{}",
        };
        assert_eq!(
            p.plan(&Scenario::Retry, &call, 2),
            Plan::HttpError { status: 429 }
        );
        assert_eq!(
            p.plan(&Scenario::Retry500, &call, 1),
            Plan::HttpError { status: 500 }
        );
        assert!(matches!(
            p.plan(&Scenario::Retry, &call, 3),
            Plan::Text {
                finish: Finish::Length,
                ..
            }
        ));
    }
}
