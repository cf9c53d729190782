//! What moot declares about pi.

use crate::model::{
    Access, Action, EffortRule, EnvAllowlist, Matrix, Meta, Needs, OnUnknown, Oversize, Place,
    PromptRules,
};

use super::argv;

/// pi's `--thinking` levels (man/moot-render.1). pi itself ignores an unknown level with a warning, so
/// anything else is dropped here too, and said.
pub const THINKING_LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh", "max"];

pub static META: Meta = Meta {
    name: "pi",
    executable: "pi",
    description: "pi coding agent: print mode with json events, skills off, explicit extensions \
                  only",
    capabilities: &[Action::Review, Action::Implement, Action::Ask],
    matrix: Matrix {
        streaming: true,
        tool_events: true,
        approval: false,
        // Edit results carry details.diff.
        diff_reporting: true,
        multi_turn: true,
        model_switching: true,
        mcp: false,
        cancellation: false,
        usage: true,
    },
    sessions: "a session UUID, last, fresh:<suffix> or empty",
    takes_model: true,
    effort: EffortRule::Levels {
        levels: THINKING_LEVELS,
        unknown: OnUnknown::Drop,
    },
    plan_mode: false,
    readonly_seat: false,
    system_prompt: true,
    extensions: true,
    tools: super::argv::TOOLS,
    managed_bundle: false,
    prompt: PromptRules {
        // pi inlines `@file` arguments into the first message, with no size cap of its own.
        oversize: Oversize::Attach { ceiling: None },
        // pi has no `--`: an argument starting with '-' is a flag and one starting with '@' a
        // file, wherever it stands; such prompts are staged and attached instead.
        unsafe_leading: &['-', '@'],
        reserved: &[],
    },
    health_prompt: "Gitmoot health check. Reply OK only.",
    usage_source: "assistant message_end usage input/output, summed",
    parser: Some("pi"),
    env: EnvAllowlist::names(super::ENV_ALLOWLIST).with_keys(crate::model::ROUTED_PROVIDER_KEYS),
    needs: Needs {
        places: &[Place::moved_by(
            "PI_CODING_AGENT_DIR",
            "",
            ".pi",
            Access::ReadWrite,
            "state, sessions and config",
        )],
        url_vars: &[],
        url_files: &[Place::moved_file(
            "PI_CODING_AGENT_DIR",
            "models.json",
            ".pi/agent/models.json",
            "provider config",
        )],
        carried: &[Place::moved_file(
            "PI_CODING_AGENT_DIR",
            "settings.json",
            ".pi/agent/settings.json",
            "settings",
        )],
        logins: &[Place::moved_file(
            "PI_CODING_AGENT_DIR",
            "auth.json",
            ".pi/agent/auth.json",
            "credentials",
        )],
        env: &[],
        files: &[],
        temp: Some(Place::moved_by(
            "PI_CODING_AGENT_DIR",
            "tmp",
            ".pi/tmp",
            Access::ReadWrite,
            "temporary files",
        )),
    },
    repo_code: &[],
    build: argv::build,
    doctor: Some(&super::doctor::CERTIFY),
};
