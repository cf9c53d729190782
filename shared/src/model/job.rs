//! The job model every runtime's argv builder is written against: the job, resolved and
//! checked by the rules all runtimes share ([`Job`]), what a builder may know of the machine
//! ([`Host`]), how the prompt reaches the CLI ([`Delivery`]), and what a builder returns
//! ([`Built`]) or refuses ([`Refusal`]).
//!
//! Runtime modules depend on this module and never on a driver (src/render/), so the graph
//! stays acyclic; `shared/tests/architecture.rs` checks it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::Serialize;

use crate::session;
use crate::worktree::{self, Worktree};

/// The autonomy policy of the seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Read tools only.
    ReadOnly,
    /// Edits inside the workspace.
    WorkspaceWrite,
    /// Everything.
    DangerFullAccess,
    /// Nothing requested: the runtime's own default (declared widened).
    #[default]
    Auto,
}

impl Policy {
    /// Whether the policy lets the seat write (implement and plan need it).
    pub fn grants_write(self) -> bool {
        matches!(self, Policy::WorkspaceWrite | Policy::DangerFullAccess)
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::ReadOnly => "read-only",
            Policy::WorkspaceWrite => "workspace-write",
            Policy::DangerFullAccess => "danger-full-access",
            Policy::Auto => "auto",
        }
    }
}

/// The job's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    #[default]
    Ask,
    Review,
    Implement,
    Produce,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Ask => "ask",
            Action::Review => "review",
            Action::Implement => "implement",
            Action::Produce => "produce",
        }
    }
}

/// Whether the runtime enforces the policy as asked, or runs with more than was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Declared {
    Applied,
    Widened,
}

/// A model selector and where it came from (a flag or a runtime default in the environment),
/// so a refusal names the input the user has to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub value: String,
    pub source: String,
}

impl Selector {
    pub fn flag(value: &str) -> Self {
        Selector {
            value: value.into(),
            source: "--model".into(),
        }
    }
}

/// A plan-mode request (omp's plan-then-execute).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The model the execution phase runs on, when asked for explicitly.
    pub into: Option<String>,
}

/// One job, resolved and checked by the rules every runtime shares (the action is fully
/// handled by those rules: no CLI takes it as a flag).
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// The effective policy (a read-only seat is read-only).
    pub policy: Policy,
    pub readonly_seat: bool,
    /// The run is confined by moot-sandbox, which enforces the policy (`--seat`, and every
    /// read-only seat): the CLI's own sandbox and approval prompts are turned off, since a
    /// nested sandbox cannot start under Landlock and a prompt nobody answers blocks the tools.
    pub seat: bool,
    /// The effective model: the flag, else the runtime default from the environment.
    pub model: Option<Selector>,
    /// The effective effort, already checked against the runtime's rule.
    pub effort: Option<String>,
    /// The session reference, trimmed ("" when none).
    pub session: String,
    /// Absolute writable grants, in order.
    pub writable: Vec<String>,
    /// Absolute readable grants, in order.
    pub readable: Vec<String>,
    /// Time left for the run, in milliseconds.
    pub deadline_ms: Option<u64>,
    pub plan: Option<Plan>,
    /// Absolute path of a readable regular file.
    pub system_prompt: Option<String>,
    /// Absolute paths of readable regular files.
    pub extensions: Vec<String>,
    /// The built-in tool limit, checked against the runtime's tool names; `None`: no limit.
    pub tools: Option<Vec<String>>,
    /// A managed session's turn: the bundle below is required and nothing else is loaded.
    pub managed: bool,
    /// The bundle's settings file (the gate hook), an absolute readable regular file.
    pub settings: Option<String>,
    /// The bundle's MCP configuration, an absolute readable regular file.
    pub mcp_config: Option<String>,
    /// Ask for the incremental event stream where the runtime has a choice.
    pub stream: bool,
    /// The runtime's health check, not a job.
    pub health: bool,
}

/// What a builder may know about the machine, probed once so builders stay pure functions.
#[derive(Debug, Clone)]
pub struct Host {
    /// The job's working directory, where the runtime will run: moot-render's own, or its
    /// `--cwd` (moot-run's `--cwd` then starts the CLI there).
    pub cwd: PathBuf,
    /// moot-render's own working directory, which relative paths on its command line name.
    pub here: PathBuf,
    pub euid: u32,
    /// The git worktree containing `cwd`.
    pub worktree: Option<Worktree>,
    /// A random version-4 UUID, for runtimes that name a new session up front.
    pub fresh_uuid: String,
    /// The temporary directory fresh staging directories go under.
    pub tmpdir: String,
    /// Random suffix of a fresh staging directory.
    pub stage_suffix: String,
    /// The `MOOT_*` environment: runtime defaults.
    pub env: BTreeMap<String, String>,
}

impl Host {
    /// Probes the job's working directory (`cwd`, else this process's), user, temporary
    /// directory and environment. A `cwd` that is not a directory is refused.
    pub fn probe(cwd: Option<&Path>) -> Result<Self, Refusal> {
        let here = std::env::current_dir()
            .map_err(|e| Refusal::new("host", format!("cannot read the working directory: {e}")))?;
        let cwd = match cwd {
            None => here.clone(),
            Some(dir) => {
                let absolute = here.join(dir);
                if !absolute.is_dir() {
                    return Err(
                        Refusal::new("--cwd", "not a directory").value(dir.to_string_lossy())
                    );
                }
                absolute
            }
        };
        let random: [u8; 22] = session::random_bytes()
            .map_err(|e| Refusal::new("host", format!("cannot read /dev/urandom: {e}")))?;
        let (uuid_bytes, suffix_bytes) = random.split_at(16);
        let mut uuid = [0u8; 16];
        uuid.copy_from_slice(uuid_bytes);
        let tmpdir = std::env::var_os("TMPDIR")
            .filter(|v| !v.is_empty())
            .map_or_else(|| "/tmp".to_string(), |v| v.to_string_lossy().into_owned());
        Ok(Host {
            worktree: worktree::find(&cwd),
            cwd,
            here,
            euid: nix::unistd::geteuid().as_raw(),
            fresh_uuid: session::uuid_v4(uuid),
            tmpdir,
            stage_suffix: suffix_bytes.iter().map(|b| format!("{b:02x}")).collect(),
            // vars_os: another variable that is not UTF-8 must not stop (or panic) the tool.
            env: std::env::vars_os()
                .filter_map(|(name, value)| {
                    Some((name.into_string().ok()?, value.into_string().ok()?))
                })
                .filter(|(name, _)| name.starts_with("MOOT_"))
                .collect(),
        })
    }

    /// A non-blank environment value.
    pub fn var(&self, name: &str) -> Option<String> {
        nonblank(self.env.get(name).map(String::as_str))
    }
}

/// A staged prompt, as a builder sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staged {
    pub dir: String,
    pub file: String,
}

/// How the prompt reaches the runtime: the token that goes where the prompt goes, and the
/// staged file when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub token: String,
    pub staged: Option<Staged>,
}

impl Delivery {
    /// The prompt itself, verbatim.
    pub fn inline(prompt: impl Into<String>) -> Self {
        Delivery {
            token: prompt.into(),
            staged: None,
        }
    }

    /// A staged prompt the CLI attaches itself: the token points at the attached file.
    pub fn attached(staged: Staged) -> Self {
        Delivery {
            token: ATTACH_POINTER.to_string(),
            staged: Some(staged),
        }
    }

    /// A staged prompt the agent is granted: the token tells it to read the file.
    pub fn instructed(staged: Staged) -> Self {
        Delivery {
            token: read_instruction(&staged.file),
            staged: Some(staged),
        }
    }
}

/// The prompt token that goes beside an attached `prompt.md`.
pub const ATTACH_POINTER: &str = "The attached file prompt.md is the complete task: its full \
contents are already included in this message. Carry it out exactly and answer as it instructs. \
Do not ask for the file's contents and do not treat its name as the task.";

/// The prompt token that tells an agent to read a staged prompt it was granted.
pub fn read_instruction(file: &str) -> String {
    format!(
        "Your complete task is in the file {}: the whole task, its context and the required output \
         format. Read the entire file with your file-read tool first, then do exactly what it says \
         and answer as it instructs. Do not ask for its contents and do not treat the path as the \
         task.",
        file
    )
}

/// What a runtime's builder returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    pub argv: Vec<String>,
    pub declared: Declared,
    /// Plan-mode evidence: `plan-into:<model>` or `plan-into:<runtime-default>`.
    pub plan_mode: Option<String>,
    /// A session id the argv names for a new session: store it only if the run succeeds.
    pub session_id: Option<String>,
    pub warnings: Vec<String>,
}

impl Built {
    pub fn new(argv: Vec<String>, declared: Declared) -> Self {
        Built {
            argv,
            declared,
            plan_mode: None,
            session_id: None,
            warnings: Vec::new(),
        }
    }
}

/// A runtime's argv builder. It refuses what its runtime cannot take; it never touches the
/// file system beyond reading (the staged file is written after it succeeds).
pub type Builder = fn(&Job, &Host, &Delivery) -> Result<Built, Refusal>;

/// Bad input: `<input> (<value>): <why and what to do>`, printed on one line, exit 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    input: String,
    value: Option<String>,
    why: String,
}

impl Refusal {
    pub fn new(input: impl Into<String>, why: impl Into<String>) -> Self {
        Refusal {
            input: input.into(),
            value: None,
            why: why.into(),
        }
    }

    /// The offending value, shown with control characters escaped so the line stays one line.
    /// Never pass prompt text here.
    pub fn value(mut self, value: impl AsRef<str>) -> Self {
        self.value = Some(escape_controls(value.as_ref()));
        self
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(f, "{} ({value}): {}", self.input, self.why),
            None => write!(f, "{}: {}", self.input, self.why),
        }
    }
}

pub fn escape_controls(value: &str) -> String {
    value
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Why `value` is not one model selector: it would read as a flag, or split into several
/// arguments, or carry characters no selector has.
pub fn selector_problem(value: &str) -> Option<&'static str> {
    if value.starts_with('-') {
        Some("a model selector cannot start with '-', where it would read as a flag")
    } else if value.chars().any(char::is_control) {
        Some("a model selector cannot contain control characters")
    } else if value.chars().any(char::is_whitespace) {
        Some("a model selector cannot contain whitespace")
    } else {
        None
    }
}

/// A non-blank value, trimmed.
pub fn nonblank(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
}

/// An argv under construction: the one way every builder writes flags and their values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Argv(Vec<String>);

impl Argv {
    pub fn new(words: &[&str]) -> Self {
        Argv(words.iter().map(|w| w.to_string()).collect())
    }

    /// Appends words.
    pub fn push(&mut self, words: &[&str]) -> &mut Self {
        self.0.extend(words.iter().map(|w| w.to_string()));
        self
    }

    /// Appends `flag value` when there is a value.
    pub fn opt(&mut self, flag: &str, value: Option<&str>) -> &mut Self {
        if let Some(value) = value {
            self.push(&[flag, value]);
        }
        self
    }

    /// Appends `flag value` for each value.
    pub fn each<'v>(
        &mut self,
        flag: &str,
        values: impl IntoIterator<Item = &'v String>,
    ) -> &mut Self {
        for value in values {
            self.push(&[flag, value]);
        }
        self
    }

    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A host with fixed random values, outside any worktree.
    pub(crate) fn host() -> Host {
        Host {
            cwd: PathBuf::from("/"),
            here: PathBuf::from("/"),
            euid: 1000,
            worktree: None,
            fresh_uuid: "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc".into(),
            tmpdir: "/tmp".into(),
            stage_suffix: "0011223344556677".into(),
            env: BTreeMap::new(),
        }
    }

    /// A staged delivery as the omp and pi builders receive it.
    pub(crate) fn attached() -> Delivery {
        Delivery::attached(Staged {
            dir: "/tmp/moot-stage-x".into(),
            file: "/tmp/moot-stage-x/prompt.md".into(),
        })
    }

    /// Builds with `build` and returns the argv, panicking on a refusal.
    pub(crate) fn argv(build: Builder, job: &Job, delivery: &Delivery) -> Vec<String> {
        build(job, &host(), delivery).unwrap().argv
    }

    /// Builds with `build` and returns the refusal line.
    pub(crate) fn refusal(build: Builder, job: &Job) -> String {
        build(job, &host(), &Delivery::inline("x"))
            .unwrap_err()
            .to_string()
    }

    /// The default job with a session reference.
    pub(crate) fn session(reference: &str) -> Job {
        Job {
            session: reference.into(),
            ..Job::default()
        }
    }

    pub(crate) fn model(value: &str) -> Option<Selector> {
        Some(Selector::flag(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_are_short_safe_tokens() {
        for token in [
            ATTACH_POINTER.to_string(),
            read_instruction("/tmp/moot-stage-x/prompt.md"),
        ] {
            assert!(token.contains("prompt.md"));
            assert!(token.contains("complete task"));
            assert!(token.len() < 1024);
            assert!(!token.starts_with(['-', '@']));
        }
    }
}
