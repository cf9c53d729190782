//! What moot declares about omp: capabilities, capability matrix, levels, sessions, prompts.

use crate::model::{
    Access, Action, EffortRule, EnvAllowlist, Matrix, Meta, Needs, OnUnknown, Oversize, Place,
    PromptRules,
};

use super::argv;

/// `--thinking` levels omp accepts. A typo must not silently downgrade a seat, and a level a
/// future omp rejects at parse time would exit 2 with no output, so anything else is dropped.
pub const THINKING_LEVELS: &[&str] = &[
    "off", "minimal", "low", "medium", "high", "xhigh", "max", "auto",
];

/// omp's own ceiling on an `@file` attachment (its MAX_CLI_TEXT_BYTES): above it omp substitutes
/// a "(skipped: too large)" placeholder and answers a task it never received.
pub const ATTACHMENT_CEILING: usize = 5 * 1024 * 1024;

pub static META: Meta = Meta {
    name: "omp",
    executable: "omp",
    description: "oh-my-pi, a multi-provider routing harness: print mode, NDJSON events, a fresh \
                  in-memory session every run",
    // No produce: that path runs under Landlock, and omp's Bun binary there is unprobed.
    capabilities: &[Action::Review, Action::Implement, Action::Ask],
    matrix: Matrix {
        streaming: true,
        tool_events: true,
        approval: false,
        diff_reporting: true,
        // Never resumed: omp's --resume re-roots the run in the resumed session's cwd.
        multi_turn: false,
        model_switching: true,
        mcp: true,
        // --max-time ends the run itself with a complete envelope.
        cancellation: true,
        usage: true,
    },
    sessions: "a session UUID, fresh:<suffix> or empty; never last (omp never resumes)",
    takes_model: true,
    effort: EffortRule::Levels {
        levels: THINKING_LEVELS,
        unknown: OnUnknown::Drop,
    },
    plan_mode: true,
    readonly_seat: true,
    system_prompt: true,
    extensions: false,
    tools: &[],
    managed_bundle: false,
    prompt: PromptRules::verbatim(Oversize::Attach {
        ceiling: Some(ATTACHMENT_CEILING),
    }),
    health_prompt: "Gitmoot omp live check. Return OK only.",
    usage_source: "assistant message_end usage.input/output summed; the agent_end telemetry \
                   rollup replaces the sum only when every agent_end has one and it is at least \
                   the sum",
    parser: Some("omp"),
    // No provider key: omp's credentials come from its auth broker (moot-broker) or its own
    // agent directory, and a key in the seat is one the agent can read.
    env: EnvAllowlist {
        names: super::ENV_ALLOWLIST,
        indivisible: super::ENV_INDIVISIBLE,
        keys: &[],
    },
    needs: Needs {
        places: &[
            Place::home(".omp", Access::ReadWrite, "state, sessions and config"),
            Place::moved_by(
                "PI_CODING_AGENT_DIR",
                "",
                ".omp/agent",
                Access::ReadWrite,
                "agent directory",
            ),
        ],
        url_vars: &[],
        url_files: &[Place::moved_file(
            "PI_CODING_AGENT_DIR",
            "models.yml",
            ".omp/agent/models.yml",
            "provider config",
        )],
        carried: &[Place::moved_file(
            "PI_CODING_AGENT_DIR",
            "config.yml",
            ".omp/agent/config.yml",
            "settings",
        )],
        // omp keeps its credentials in agent.db (SQLite: its write-ahead log too, while omp has
        // not folded it in).
        logins: &[
            Place::moved_file(
                "PI_CODING_AGENT_DIR",
                "agent.db",
                ".omp/agent/agent.db",
                "credentials",
            ),
            Place::moved_file(
                "PI_CODING_AGENT_DIR",
                "agent.db-wal",
                ".omp/agent/agent.db-wal",
                "credentials not yet in agent.db",
            ),
        ],
        env: &[],
        files: &[(
            "PI_CONFIG_FILES",
            super::CONFIG_OVERLAY,
            "a config overlay: omp starts no MCP server the repository under review declares \
             (.mcp.json, .vscode, .cursor, .gemini, .windsurf, .codex, .omp/mcp.json, ...)",
        )],
        temp: Some(Place::home(
            ".omp/tmp",
            Access::ReadWrite,
            "temporary files",
        )),
    },
    repo_code: &[".omp/tools", ".claude/tools", ".codex/tools"],
    build: argv::build,
    doctor: Some(&super::doctor::CERTIFY),
};
