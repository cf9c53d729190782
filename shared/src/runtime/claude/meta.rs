//! What moot declares about Claude Code.

use crate::model::{
    Access, Action, EffortRule, EnvAllowlist, Matrix, Meta, Needs, OnUnknown, Oversize, Place,
    PromptRules,
};

use super::argv;

/// `--effort` levels. The adapter contract requires a valid one whenever one is given, so
/// anything else is refused rather than dropped.
pub const EFFORT_LEVELS: &[&str] = &["low", "medium", "high", "xhigh", "max"];

pub static META: Meta = Meta {
    name: "claude",
    executable: "claude",
    description: "Anthropic Claude Code CLI: print mode with a json result or a stream-json \
                  event stream, a new --session-id per start, permission modes per policy",
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
        // Edit results carry a structuredPatch.
        diff_reporting: true,
        multi_turn: true,
        model_switching: true,
        mcp: true,
        cancellation: false,
        usage: true,
    },
    sessions: "a session UUID, last, fresh:<suffix> or empty (a new session id is minted)",
    takes_model: true,
    effort: EffortRule::Levels {
        levels: EFFORT_LEVELS,
        unknown: OnUnknown::Refuse,
    },
    plan_mode: false,
    readonly_seat: false,
    system_prompt: true,
    extensions: false,
    tools: super::argv::TOOLS,
    managed_bundle: true,
    // claude reads a large prompt from stdin, but under moot-run stdin is /dev/null.
    // No attachment flag in print mode: a large prompt is staged, its directory granted with
    // --add-dir, and claude is told to read it.
    prompt: PromptRules::verbatim(Oversize::Instruct),
    health_prompt: "Gitmoot health check. Reply OK only.",
    usage_source: "the result event's usage input_tokens/output_tokens",
    parser: Some("claude"),
    env: EnvAllowlist::names(super::ENV_ALLOWLIST),
    needs: Needs {
        places: &[
            Place::moved_by(
                "CLAUDE_CONFIG_DIR",
                "",
                ".claude",
                Access::ReadWrite,
                "config and sessions",
            ),
            Place::home_file(".claude.json", Access::ReadWrite, "settings file"),
            // Only where the operator moved it: by default claude keeps its claude-<uid>
            // directory in $TMPDIR, which the profile points at the private temporary
            // directory below. (The shared /tmp/claude-<uid> is never granted: another user can
            // create it first, or plant a link there, and the operator's own unconfined
            // sessions live in it.)
            Place {
                var: Some("CLAUDE_CODE_TMPDIR"),
                below_var: "",
                below_home: None,
                access: Access::ReadWrite,
                dir: true,
                why: "temporary directory",
            },
        ],
        url_vars: &["ANTHROPIC_BASE_URL"],
        url_files: &[],
        // claude reads `.claude.json` beside its settings when CLAUDE_CONFIG_DIR moves them.
        carried: &[
            Place::moved_file(
                "CLAUDE_CONFIG_DIR",
                "settings.json",
                ".claude/settings.json",
                "settings",
            ),
            Place::moved_file(
                "CLAUDE_CONFIG_DIR",
                ".claude.json",
                ".claude.json",
                "account and onboarding state",
            ),
        ],
        logins: &[Place::moved_file(
            "CLAUDE_CONFIG_DIR",
            ".credentials.json",
            ".claude/.credentials.json",
            "credentials (claude login)",
        )],
        env: &[(
            "IS_SANDBOX",
            "1",
            "claude skips its permission prompts as root (--seat) only when told it is sandboxed",
        )],
        files: &[],
        temp: Some(Place::moved_by(
            "CLAUDE_CONFIG_DIR",
            "tmp",
            ".claude/tmp",
            Access::ReadWrite,
            "temporary files",
        )),
    },
    repo_code: &[],
    build: argv::build,
    doctor: Some(&super::doctor::CERTIFY),
};
