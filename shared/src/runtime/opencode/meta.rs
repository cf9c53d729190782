//! What moot declares about opencode.

use crate::model::{
    Access, Action, EffortRule, EnvAllowlist, Matrix, Meta, Needs, Oversize, Place, PromptRules,
};

use super::argv;

/// opencode's state, config and cache directories, each under its XDG variable when set.
const fn xdg(
    var: &'static str,
    below_home: &'static str,
    access: Access,
    why: &'static str,
) -> Place {
    Place::moved_by(var, "opencode", below_home, access, why)
}

/// The config file `OPENCODE_CONFIG` names: read for its settings and its provider URLs.
const CONFIG_FILE: Place = Place {
    var: Some("OPENCODE_CONFIG"),
    below_var: "",
    below_home: None,
    access: Access::Read,
    dir: false,
    why: "extra config file, provider config",
};

pub static META: Meta = Meta {
    name: "opencode",
    executable: "opencode",
    description: "opencode run --format json: step events, any provider of its config, the plan \
                  agent for read-only, --auto in a seat; headless it rejects what it would ask",
    capabilities: &[
        Action::Review,
        Action::Implement,
        Action::Ask,
        Action::Produce,
    ],
    matrix: Matrix {
        streaming: true,
        tool_events: true,
        // Headless, `opencode run` answers its own permission requests: it rejects them, or
        // approves them all with --auto. Nobody can be asked.
        approval: false,
        // tool_use rows carry the edit tools' input, not a diff or change item.
        diff_reporting: false,
        multi_turn: true,
        model_switching: true,
        mcp: true,
        // It has no deadline of its own; moot-run stops it.
        cancellation: false,
        usage: true,
    },
    sessions: "an opencode session id (ses_...), last, fresh:<suffix> or empty",
    takes_model: true,
    // --variant: the provider's reasoning effort (high, max, minimal...), checked by opencode.
    effort: EffortRule::Word,
    plan_mode: false,
    readonly_seat: false,
    system_prompt: false,
    extensions: false,
    // `opencode run` takes no tool list: its tools follow the agent's permissions.
    tools: &[],
    managed_bundle: false,
    // `opencode run` reads stdin, but under moot-run it is /dev/null; its `--file` attachment
    // is read through its Read tool, which stops at 50 KB. The agent is told to read the staged
    // file instead, page by page (in a seat, or with --auto: elsewhere reading outside the
    // project is a permission it rejects headless).
    prompt: PromptRules::verbatim(Oversize::Instruct),
    health_prompt: "Gitmoot health check. Reply OK only.",
    usage_source: "step_finish tokens (input plus cache reads and writes; output plus reasoning) \
                   and cost, summed over the run's steps",
    parser: Some("opencode"),
    env: EnvAllowlist::names(super::ENV_ALLOWLIST).with_keys(crate::model::ROUTED_PROVIDER_KEYS),
    needs: Needs {
        places: &[
            xdg(
                "XDG_CONFIG_HOME",
                ".config/opencode",
                Access::ReadWrite,
                "config (it writes its .gitignore and plugin manifest there)",
            ),
            xdg(
                "XDG_DATA_HOME",
                ".local/share/opencode",
                Access::ReadWrite,
                "data: sessions database, credentials, logs, snapshots",
            ),
            xdg(
                "XDG_STATE_HOME",
                ".local/state/opencode",
                Access::ReadWrite,
                "state: locks",
            ),
            xdg(
                "XDG_CACHE_HOME",
                ".cache/opencode",
                Access::ReadWrite,
                "cache: downloaded tools it runs (ripgrep), model catalogue",
            ),
            Place {
                var: Some("OPENCODE_CONFIG_DIR"),
                below_var: "",
                below_home: None,
                access: Access::ReadWrite,
                dir: true,
                why: "extra config directory",
            },
            CONFIG_FILE,
        ],
        url_vars: &[],
        url_files: &[
            Place::moved_file(
                "XDG_CONFIG_HOME",
                "opencode/opencode.json",
                ".config/opencode/opencode.json",
                "provider config",
            ),
            Place::moved_file(
                "XDG_CONFIG_HOME",
                "opencode/opencode.jsonc",
                ".config/opencode/opencode.jsonc",
                "provider config",
            ),
            CONFIG_FILE,
        ],
        // The repository under review configures nothing (checked against 1.18.33: man/moot.7,
        // THE REPOSITORY UNDER REVIEW); its `.opencode/plugin(s)` have no switch (`repo_code`).
        carried: &[Place::moved_file(
            "XDG_CONFIG_HOME",
            "opencode/config.json",
            ".config/opencode/config.json",
            "config (its older name)",
        )],
        logins: &[Place::moved_file(
            "XDG_DATA_HOME",
            "opencode/auth.json",
            ".local/share/opencode/auth.json",
            "credentials (opencode auth login)",
        )],
        env: &[
            (
                "OPENCODE_DISABLE_PROJECT_CONFIG",
                "1",
                "opencode reads no opencode.json, .opencode/ agents, commands or tools from the \
                 repository",
            ),
            (
                "OPENCODE_DISABLE_EXTERNAL_SKILLS",
                "1",
                "opencode reads no .claude/skills or .agents/skills from the repository",
            ),
        ],
        files: &[],
        temp: Some(Place::moved_by(
            "XDG_DATA_HOME",
            "opencode/tmp",
            ".local/share/opencode/tmp",
            Access::ReadWrite,
            "temporary files",
        )),
    },
    repo_code: &[".opencode/plugin", ".opencode/plugins"],
    build: argv::build,
    doctor: Some(&super::doctor::CERTIFY),
};
