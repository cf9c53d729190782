//! What moot declares about the mock runtime. Test-only: never use it where a real model
//! response is required.

use crate::model::{Action, EffortRule, EnvAllowlist, Matrix, Meta, Needs, Oversize, PromptRules};

use super::argv;

pub static META: Meta = Meta {
    name: "mock",
    executable: "printf",
    description: "test-only echo: prints the prompt verbatim as the response",
    capabilities: &[
        Action::Review,
        Action::Implement,
        Action::Ask,
        Action::Produce,
    ],
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
    sessions: "fresh:<suffix> or empty",
    takes_model: false,
    effort: EffortRule::Unsupported,
    plan_mode: false,
    readonly_seat: false,
    system_prompt: false,
    extensions: false,
    tools: &[],
    managed_bundle: false,
    prompt: PromptRules::verbatim(Oversize::Refuse),
    health_prompt: "OK",
    usage_source: "none",
    parser: None,
    env: EnvAllowlist::names(super::ENV_ALLOWLIST),
    needs: Needs::NONE,
    repo_code: &[],
    build: argv::build,
    doctor: None,
};
