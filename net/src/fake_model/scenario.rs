//! The scenarios a fake model plays and the fixed texts it answers with.
//!
//! A scenario is named by one line, `NAME [COMMAND]` (`plain`, `toolcmd touch x`): the first line
//! of a scenario file, a `/s/NAME/` URL prefix, or [`super::FakeModel::set_scenario`]. The texts
//! are the ones the captures in testdata/ were recorded with, so a verdict read from a capture and
//! from a live run is the same.

use std::fmt;

/// The final answer of a run: a sentence, then the gitmoot_result line moot's parsers look for.
pub const FINAL_TEXT: &str = "I looked at the task and everything is in order.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"done\",\"findings\":[],\"changes_made\":[],\"tests_run\":[],\"needs\":[],\"delegations\":[]}}";
/// [`FINAL_TEXT`] with the legacy `{"status":"ok"}` result (`Options::legacy_result`).
pub const LEGACY_FINAL_TEXT: &str = "I looked at the task and everything is in order.\n\n{\"gitmoot_result\":{\"status\":\"ok\",\"summary\":\"done\"}}";
/// The answer once a tool result is back.
pub const AFTER_TOOL_TEXT: &str = "I ran `ls` and saw the workspace files.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"listed files\",\"findings\":[],\"changes_made\":[],\"tests_run\":[\"ls\"],\"needs\":[],\"delegations\":[]}}";
/// [`AFTER_TOOL_TEXT`] with the legacy result.
pub const LEGACY_AFTER_TOOL_TEXT: &str = "I ran `ls` and saw the workspace files.\n\n{\"gitmoot_result\":{\"status\":\"ok\",\"summary\":\"listed files\"}}";
/// The partial answer of the `length` scenario, cut mid-word as a real length stop is.
pub const LENGTH_TEXT: &str =
    "This answer is going to be cut off because it runs past the maximum number of output tok";
/// The reasoning of the `thinking` scenario.
pub const REASONING_TEXT: &str = "The user wants me to inspect the workspace. It only holds a README, a Rust file and some notes, so nothing needs changing; I will report success.";
/// The model id answered when a request names none, and listed first by `GET /v1/models`.
pub const MODEL_ID: &str = "fake-model";
/// The command `toolcmd` runs when its line names none.
const DEFAULT_COMMAND: &str = "true";

/// What the fake model does with a model call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// One text answer ending with the gitmoot_result line.
    Plain,
    /// One shell (or read) tool call (`ls`) when tools are offered, then the final answer.
    Tool,
    /// Like `Tool`, with a command that writes (`touch created_by_agent.txt`).
    ToolWrite,
    /// Like `Tool`, with the command the line names (`toolcmd touch /elsewhere/x`).
    ToolCmd(String),
    /// Reads both ends of a staged `.../prompt.md` the request names, then the plain answer.
    ReadFile,
    /// Calls a tool (`sleep 1; ls`) forever, for deadline and kill tests.
    ToolLoop,
    /// HTTP 500 on every model call.
    Error,
    /// HTTP 400 (invalid request) on every model call: an error no client retries.
    Fatal,
    /// HTTP 529 (Anthropic) or 503 (OpenAI) on every model call.
    Overloaded,
    /// HTTP 429 with retry-after for the first calls, then the `retry_then` scenario.
    Retry,
    /// Like `Retry` with HTTP 500.
    Retry500,
    /// A partial answer cut by the output limit.
    Length,
    /// An empty answer with a normal stop.
    Empty,
    /// Reasoning first, then the plain answer.
    Thinking,
    /// The plain answer in ~40 deltas a quarter second apart (~10 s).
    Slow,
    /// A few text deltas, then the stream stops without its terminator and the connection
    /// closes.
    Drop,
}

impl Scenario {
    /// Every scenario name, for error messages and `--help`.
    pub const NAMES: &'static [&'static str] = &[
        "plain",
        "tool",
        "toolwrite",
        "toolcmd",
        "readfile",
        "toolloop",
        "error",
        "fatal",
        "overloaded",
        "retry",
        "retry500",
        "length",
        "empty",
        "thinking",
        "slow",
        "drop",
    ];

    /// Reads a scenario line: its first word names the scenario, the rest is `toolcmd`'s command.
    /// An empty line is `plain`; an unknown name is an error that names it.
    pub fn parse(line: &str) -> Result<Scenario, String> {
        let line = line.trim();
        let (name, rest) = match line.split_once(char::is_whitespace) {
            Some((name, rest)) => (name, rest.trim()),
            None => (line, ""),
        };
        Ok(match name {
            "" | "plain" => Scenario::Plain,
            "tool" => Scenario::Tool,
            "toolwrite" => Scenario::ToolWrite,
            "toolcmd" if rest.is_empty() => Scenario::ToolCmd(DEFAULT_COMMAND.to_string()),
            "toolcmd" => Scenario::ToolCmd(rest.to_string()),
            "readfile" => Scenario::ReadFile,
            "toolloop" => Scenario::ToolLoop,
            "error" => Scenario::Error,
            "fatal" => Scenario::Fatal,
            "overloaded" => Scenario::Overloaded,
            "retry" => Scenario::Retry,
            "retry500" => Scenario::Retry500,
            "length" => Scenario::Length,
            "empty" => Scenario::Empty,
            "thinking" => Scenario::Thinking,
            "slow" => Scenario::Slow,
            "drop" => Scenario::Drop,
            unknown => {
                return Err(format!(
                    "unknown scenario {unknown:?} (known: {})",
                    Scenario::NAMES.join(", ")
                ))
            }
        })
    }

    /// The scenario's name, the key of its retry counter.
    pub fn name(&self) -> &'static str {
        match self {
            Scenario::Plain => "plain",
            Scenario::Tool => "tool",
            Scenario::ToolWrite => "toolwrite",
            Scenario::ToolCmd(_) => "toolcmd",
            Scenario::ReadFile => "readfile",
            Scenario::ToolLoop => "toolloop",
            Scenario::Error => "error",
            Scenario::Fatal => "fatal",
            Scenario::Overloaded => "overloaded",
            Scenario::Retry => "retry",
            Scenario::Retry500 => "retry500",
            Scenario::Length => "length",
            Scenario::Empty => "empty",
            Scenario::Thinking => "thinking",
            Scenario::Slow => "slow",
            Scenario::Drop => "drop",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scenario::ToolCmd(command) => write!(f, "toolcmd {command}"),
            other => f.write_str(other.name()),
        }
    }
}

/// The texts a server answers with: the current result format or the legacy one.
#[derive(Clone, Copy, Debug)]
pub struct Texts {
    /// Whether the gitmoot_result lines use the legacy `{"status":"ok"}` shape.
    pub legacy: bool,
}

impl Texts {
    /// The final answer without a tool.
    pub fn final_text(self) -> &'static str {
        if self.legacy {
            LEGACY_FINAL_TEXT
        } else {
            FINAL_TEXT
        }
    }

    /// The final answer after the `ls` tool call.
    pub fn after_tool(self) -> String {
        if self.legacy {
            LEGACY_AFTER_TOOL_TEXT.to_string()
        } else {
            AFTER_TOOL_TEXT.to_string()
        }
    }

    /// The final answer after `toolwrite`'s `touch`.
    pub fn after_write(self) -> String {
        self.after_tool()
            .replace("`ls`", "`touch`")
            .replace("listed files", "tried to write")
    }
}

/// Splits `text` into about `n` pieces on word boundaries, or on characters when `n` exceeds the
/// number of words; deterministic, so a test can predict every delta.
pub fn chunk_text(text: &str, n: usize) -> Vec<String> {
    if text.is_empty() {
        return Vec::new();
    }
    let words: Vec<&str> = text.split(' ').collect();
    let n = n.max(1);
    if n > words.len() {
        let chars: Vec<char> = text.chars().collect();
        let size = chars.len().div_ceil(n).max(1);
        return chars.chunks(size).map(|c| c.iter().collect()).collect();
    }
    let per = (words.len() / n).max(1);
    words
        .chunks(per)
        .enumerate()
        .map(|(i, group)| {
            let mut piece = group.join(" ");
            if (i + 1) * per < words.len() {
                piece.push(' ');
            }
            piece
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_back_to_itself() {
        for name in Scenario::NAMES {
            assert_eq!(Scenario::parse(name).unwrap().name(), *name);
        }
    }

    #[test]
    fn toolcmd_keeps_the_rest_of_its_line_and_defaults_to_true() {
        assert_eq!(
            Scenario::parse("toolcmd  touch /elsewhere/x \n").unwrap(),
            Scenario::ToolCmd("touch /elsewhere/x".into())
        );
        assert_eq!(
            Scenario::parse("toolcmd").unwrap(),
            Scenario::ToolCmd("true".into())
        );
        assert_eq!(Scenario::parse("").unwrap(), Scenario::Plain);
    }

    #[test]
    fn an_unknown_scenario_is_named() {
        let error = Scenario::parse("plian x").unwrap_err();
        assert!(error.contains("\"plian\""), "{error}");
    }

    #[test]
    fn chunks_rejoin_to_the_text() {
        for n in [1, 4, 6, 40, 500] {
            let pieces = chunk_text(FINAL_TEXT, n);
            assert_eq!(pieces.concat(), FINAL_TEXT, "n={n}");
        }
        assert_eq!(chunk_text("a b c d", 2), vec!["a b ", "c d"]);
        assert_eq!(chunk_text("abcd", 2), vec!["ab", "cd"]);
        let slow = chunk_text(FINAL_TEXT, 40).len();
        assert!((30..=40).contains(&slow), "{slow}");
        assert!(chunk_text("", 4).is_empty());
    }
}
