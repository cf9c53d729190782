//! What moot declares about Kimi Code and the legacy kimi-cli.

use crate::model::{
    Access, Action, EffortRule, EnvAllowlist, Matrix, Meta, Needs, Oversize, Place, PromptRules,
};

use super::argv;

pub static KIMI: Meta = Meta {
    name: "kimi",
    executable: "kimi",
    description: "Kimi Code CLI: prompt mode with stream-json output; resumes session_<uuid> \
                  sessions with -S",
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
        diff_reporting: false,
        multi_turn: true,
        model_switching: true,
        mcp: true,
        cancellation: false,
        // kimi-code 0.19.2 printed no usage at all; no release is known to print it reliably.
        usage: false,
    },
    sessions: "session_<uuid> (resumed with -S), fresh:<suffix> or empty",
    takes_model: true,
    effort: EffortRule::Unsupported,
    plan_mode: false,
    readonly_seat: false,
    system_prompt: false,
    extensions: false,
    tools: &[],
    managed_bundle: false,
    // Kimi takes its prompt only as the `-p` argument: a large one is staged, the directory is
    // granted with --add-dir, and the agent is told to read the file.
    prompt: PromptRules::verbatim(Oversize::Instruct),
    health_prompt: "Gitmoot Kimi live check. Return OK only.",
    usage_source: "the usage object of the last stream-json event that carries one (often none)",
    parser: Some("kimi"),
    env: EnvAllowlist::names(super::ENV_ALLOWLIST).with_keys(&["KIMI_API_KEY"]),
    needs: Needs {
        places: &[Place::moved_by(
            "KIMI_CODE_HOME",
            "",
            ".kimi-code",
            Access::ReadWrite,
            "home: config and sessions",
        )],
        url_vars: &["KIMI_BASE_URL"],
        url_files: &[Place::moved_file(
            "KIMI_CODE_HOME",
            "config.toml",
            ".kimi-code/config.toml",
            "provider config",
        )],
        carried: &[],
        logins: &[Place::moved_by(
            "KIMI_CODE_HOME",
            "credentials",
            ".kimi-code/credentials",
            Access::Read,
            "credentials (kimi login)",
        )],
        env: &[],
        files: &[],
        temp: Some(Place::moved_by(
            "KIMI_CODE_HOME",
            "tmp",
            ".kimi-code/tmp",
            Access::ReadWrite,
            "temporary files",
        )),
    },
    repo_code: &[],
    build: argv::build,
    doctor: Some(&super::doctor::KIMI),
};

/// The legacy kimi-cli: Kimi Code's record, but for its name, actions, sessions, home and argv.
pub static KIMI_CLI: Meta = Meta {
    name: "kimi-cli",
    executable: "kimi",
    description: "the legacy kimi-cli (PyPI kimi-cli 1.x): --print mode with stream-json output; \
                  errors are plain text on stdout",
    capabilities: &[Action::Review, Action::Implement, Action::Ask],
    sessions: "a session UUID (resumed with -S), fresh:<suffix> or empty",
    needs: Needs {
        places: &[Place::moved_by(
            "KIMI_SHARE_DIR",
            "",
            ".kimi",
            Access::ReadWrite,
            "config, sessions and logs",
        )],
        url_vars: &["KIMI_BASE_URL"],
        url_files: &[Place::moved_file(
            "KIMI_SHARE_DIR",
            "config.toml",
            ".kimi/config.toml",
            "provider config",
        )],
        carried: &[],
        logins: &[Place::moved_by(
            "KIMI_SHARE_DIR",
            "credentials",
            ".kimi/credentials",
            Access::Read,
            "credentials (kimi login)",
        )],
        env: &[],
        files: &[],
        temp: Some(Place::moved_by(
            "KIMI_SHARE_DIR",
            "tmp",
            ".kimi/tmp",
            Access::ReadWrite,
            "temporary files",
        )),
    },
    repo_code: &[],
    build: argv::build_legacy,
    doctor: Some(&super::doctor::KIMI_CLI),
    ..KIMI
};
