//! What moot declares about the Codex CLI.

use crate::model::{
    Access, Action, EffortRule, EnvAllowlist, Matrix, Meta, Needs, Oversize, Place, PromptRules,
};

use super::argv;

pub static META: Meta = Meta {
    name: "codex",
    executable: "codex",
    description: "OpenAI Codex CLI: exec --json JSONL events, its own sandbox per policy, resume \
                  by id, thread name or --last",
    capabilities: &[
        Action::Review,
        Action::Implement,
        Action::Ask,
        Action::Produce,
    ],
    matrix: Matrix {
        streaming: true,
        tool_events: true,
        approval: false,
        // file_change items name each changed path and its kind.
        diff_reporting: true,
        multi_turn: true,
        model_switching: true,
        mcp: true,
        cancellation: false,
        usage: true,
    },
    sessions: "a session UUID, a thread name, last, fresh:<suffix> or empty",
    takes_model: true,
    effort: EffortRule::Word,
    plan_mode: false,
    readonly_seat: false,
    system_prompt: false,
    extensions: false,
    tools: &[],
    managed_bundle: false,
    prompt: PromptRules {
        // codex reads a large prompt from stdin, but under moot-run stdin is /dev/null; it is
        // told to read the staged file instead (its sandboxes read everywhere, and in a seat
        // moot-sandbox grants the stage read-only).
        oversize: Oversize::Instruct,
        unsafe_leading: &[],
        // `-` as the prompt makes codex read its instructions from stdin.
        reserved: &["-"],
    },
    health_prompt: "Gitmoot health check. Reply OK only.",
    usage_source: "turn.completed usage input_tokens/output_tokens (session totals on a resumed \
                   thread)",
    parser: Some("codex"),
    env: EnvAllowlist::names(super::ENV_ALLOWLIST).with_keys(&["OPENAI_API_KEY", "CODEX_API_KEY"]),
    needs: Needs {
        places: &[Place::moved_by(
            "CODEX_HOME",
            "",
            ".codex",
            Access::ReadWrite,
            "home: config, sessions, logs",
        )],
        url_vars: &["OPENAI_BASE_URL"],
        url_files: &[Place::moved_file(
            "CODEX_HOME",
            "config.toml",
            ".codex/config.toml",
            "provider config",
        )],
        carried: &[],
        logins: &[Place::moved_file(
            "CODEX_HOME",
            "auth.json",
            ".codex/auth.json",
            "credentials (codex login)",
        )],
        env: &[],
        files: &[],
        temp: Some(Place::moved_by(
            "CODEX_HOME",
            "tmp",
            ".codex/tmp",
            Access::ReadWrite,
            "temporary files",
        )),
    },
    repo_code: &[],
    build: argv::build,
    doctor: Some(&super::doctor::CERTIFY),
};
