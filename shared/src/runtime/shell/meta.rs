//! What moot declares about the shell runtime.

use crate::model::{Action, EffortRule, EnvAllowlist, Matrix, Meta, Needs, Oversize, PromptRules};

use super::argv;

pub static META: Meta = Meta {
    name: "shell",
    executable: "sh",
    description: "a configured command run with sh -c: the prompt is $1 (no model)",
    capabilities: &[Action::Review, Action::Implement, Action::Ask],
    matrix: Matrix {
        streaming: false,
        tool_events: false,
        approval: false,
        diff_reporting: false,
        multi_turn: false,
        model_switching: false,
        mcp: false,
        cancellation: false,
        usage: false,
    },
    sessions: "the command to run (required)",
    takes_model: false,
    effort: EffortRule::Unsupported,
    plan_mode: false,
    readonly_seat: false,
    system_prompt: false,
    extensions: false,
    tools: &[],
    managed_bundle: false,
    prompt: PromptRules::verbatim(Oversize::Refuse),
    health_prompt: "Gitmoot health check. Reply OK only.",
    usage_source: "none",
    parser: None,
    env: EnvAllowlist::names(super::ENV_ALLOWLIST),
    needs: Needs::NONE,
    repo_code: &[],
    build: argv::build,
    doctor: None,
};
