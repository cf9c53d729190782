//! The record every runtime declares in `runtime/<rt>/meta.rs`: its name and executable, the
//! job actions it advertises, its capability matrix, effort rule, prompt rules, sandbox needs
//! and argv builder. Every list of runtimes in the workspace is derived from these records
//! (src/registry.rs), never kept by hand.

use serde::Serialize;

use super::doctor::Certify;
use super::job::{Action, Builder};
use super::needs::Needs;

/// Everything moot knows about one runtime.
#[derive(Debug)]
pub struct Meta {
    /// The name given to `moot-render` (and the environment prefix `MOOT_<NAME>_`).
    pub name: &'static str,
    /// The executable the argv starts with, looked up on PATH by `--list`.
    pub executable: &'static str,
    pub description: &'static str,
    /// The job actions it advertises; any other `--action` is refused.
    pub capabilities: &'static [Action],
    pub matrix: Matrix,
    /// The session references it accepts, in words.
    pub sessions: &'static str,
    /// It takes a model selector per run.
    pub takes_model: bool,
    pub effort: EffortRule,
    /// It has a plan-then-execute mode (`--plan`).
    pub plan_mode: bool,
    /// It has a delivery for a kernel-confined read-only seat (`--readonly-seat`).
    pub readonly_seat: bool,
    /// It reads a system prompt from a file (`--system-prompt-file`).
    pub system_prompt: bool,
    /// It loads extension files (`--extension`).
    pub extensions: bool,
    /// The names of its built-in tools, in its own spelling: what `--tools` may limit it to.
    /// Empty: it has no tool limit.
    pub tools: &'static [&'static str],
    /// It takes a managed session's bundle: a settings file with the gate hook (`--settings`) and
    /// an MCP configuration (`--mcp-config`), both required for a managed session (`--managed`).
    pub managed_bundle: bool,
    pub prompt: PromptRules,
    /// The prompt `--health` delivers.
    pub health_prompt: &'static str,
    /// Where its token usage is read from, in words.
    pub usage_source: &'static str,
    /// The dialect of its output: read by `moot-parse-<dialect>`, captured in
    /// `testdata/<dialect>/`, fuzzed as `parse_<dialect>`. `None`: its output is the answer itself
    /// (shell, mock), and no parser reads it.
    pub parser: Option<&'static str>,
    /// The variables it reads, kept by `moot-run --env-preset` (src/env_preset.rs).
    pub env: EnvAllowlist,
    /// What its real CLI needs in a sandbox besides its install tree (src/profile.rs).
    pub needs: Needs,
    /// Paths, relative to each directory from the working directory up to the worktree's root,
    /// from which the CLI runs code at start-up that no flag or variable of its switches off:
    /// moot-render refuses a delivery while one exists, so the repository under review never
    /// runs code in the seat before the model acts (the switches that do exist are in the
    /// rendered argv, or in the profile's variables).
    pub repo_code: &'static [&'static str],
    /// Builds the argv of one delivery.
    pub build: Builder,
    /// How moot-doctor certifies its installed CLI (net/src/doctor/); `None` when it has no CLI to
    /// certify (shell, mock).
    pub doctor: Option<&'static Certify>,
}

/// The variables a runtime's CLI reads, on top of the common ones every preset keeps.
#[derive(Debug, Clone, Copy)]
pub struct EnvAllowlist {
    /// Names (`VAR`) and prefixes (`PREFIX*`) to keep.
    pub names: &'static [&'static str],
    /// Names that only work together: kept or dropped as one group.
    pub indivisible: &'static [&'static [&'static str]],
    /// The provider API key variables the CLI reads, kept so that a filtered environment (the
    /// adapters', `moot-run --env-preset`) still runs it; any other key is named by the caller.
    pub keys: &'static [&'static str],
}

/// The key variables of the providers a routing CLI (pi, opencode) reads from its environment
/// under the same names: the widely used ones. A provider not listed here is kept by name
/// (`moot-run --keep`, the adapters' `MOOT_KEEP_ENV`).
pub const ROUTED_PROVIDER_KEYS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "CEREBRAS_API_KEY",
    "XAI_API_KEY",
    "OPENROUTER_API_KEY",
    "MISTRAL_API_KEY",
    "DEEPSEEK_API_KEY",
    "MOONSHOT_API_KEY",
    "KIMI_API_KEY",
    "ZAI_API_KEY",
    "FIREWORKS_API_KEY",
    "AI_GATEWAY_API_KEY",
    "OPENCODE_API_KEY",
];

impl EnvAllowlist {
    /// A CLI that reads nothing beyond the common variables.
    pub const NONE: EnvAllowlist = EnvAllowlist {
        names: &[],
        indivisible: &[],
        keys: &[],
    };

    /// Names kept one by one.
    pub const fn names(names: &'static [&'static str]) -> Self {
        EnvAllowlist {
            names,
            indivisible: &[],
            keys: &[],
        }
    }

    /// The same, with the provider key variables the CLI reads.
    pub const fn with_keys(self, keys: &'static [&'static str]) -> Self {
        EnvAllowlist { keys, ..self }
    }
}

/// The capability matrix (`moot-render --list`, man/moot-render.1), declared honestly: a capability is declared only where
/// the runtime's headless CLI really has it, so a caller never offers a control that does
/// nothing.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Matrix {
    /// It prints events while it runs, not only at the end.
    pub streaming: bool,
    /// Tool calls and their results appear in its output.
    pub tool_events: bool,
    /// It can ask for, and be given, a tool approval headless (stdin is /dev/null).
    pub approval: bool,
    /// File changes appear in its output as structured diffs or change items.
    pub diff_reporting: bool,
    /// A later run can resume this run's session.
    pub multi_turn: bool,
    /// The model can be chosen per run.
    pub model_switching: bool,
    /// It can load MCP servers.
    pub mcp: bool,
    /// It can end itself cleanly on a deadline, leaving a complete stream (others are stopped
    /// by moot-run's group kill and leave a cut stream).
    pub cancellation: bool,
    /// It reports token usage in its output.
    pub usage: bool,
}

/// How a runtime takes a reasoning-effort value.
#[derive(Debug, Clone, Copy)]
pub enum EffortRule {
    /// No effort setting: a resolved effort is dropped, with a warning.
    Unsupported,
    /// A closed list of levels (compared in lower case).
    Levels {
        levels: &'static [&'static str],
        unknown: OnUnknown,
    },
    /// One word, passed through (the runtime validates it).
    Word,
}

/// What happens to an effort outside a runtime's levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnUnknown {
    /// Dropped with a warning: the runtime keeps its own default.
    Drop,
    /// Refused: exit 2.
    Refuse,
}

/// How a runtime receives a prompt that cannot go on argv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oversize {
    /// The CLI reads the file itself and inlines it into the same turn (`@<path>`); the prompt
    /// token becomes a short pointer. Above `ceiling` bytes the CLI would drop the file, so the
    /// prompt is refused.
    Attach { ceiling: Option<usize> },
    /// The CLI only takes the prompt as an argument: the directory is granted to the agent and
    /// the prompt token tells it to read the file as its whole task.
    Instruct,
    /// The CLI has no channel moot can use (its stdin is /dev/null under moot-run): refused.
    Refuse,
}

impl Oversize {
    /// The name shown by `moot-render --list`.
    pub fn name(self) -> &'static str {
        match self {
            Oversize::Attach { .. } => "attach",
            Oversize::Instruct => "instruct",
            Oversize::Refuse => "refuse",
        }
    }

    pub fn ceiling(self) -> Option<usize> {
        match self {
            Oversize::Attach { ceiling } => ceiling,
            Oversize::Instruct | Oversize::Refuse => None,
        }
    }
}

/// What a runtime declares about the prompts it can take.
#[derive(Debug, Clone, Copy)]
pub struct PromptRules {
    pub oversize: Oversize,
    /// Leading characters the CLI misreads in its prompt argument whatever precedes it (pi reads
    /// `-x` as a flag and `@x` as a file, and has no `--`): such prompts take the oversize route.
    pub unsafe_leading: &'static [char],
    /// Whole prompts the CLI gives another meaning (codex reads stdin for `-`): refused.
    pub reserved: &'static [&'static str],
}

impl PromptRules {
    /// A CLI that takes any prompt below the threshold verbatim after `--`.
    pub const fn verbatim(oversize: Oversize) -> Self {
        PromptRules {
            oversize,
            unsafe_leading: &[],
            reserved: &[],
        }
    }
}
