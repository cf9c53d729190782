//! Claude Code (`claude -p`): Anthropic's coding-agent CLI.

pub mod argv;
pub mod doctor;
pub mod meta;
pub mod stream;

/// The environment Claude Code keeps under `moot-run --env-preset claude`: its token or API key
/// (Claude Code has no other headless credential channel), its config directory, and the
/// opt-outs a user set on purpose (telemetry, error reports, the updater, other non-essential
/// traffic, the retry count): dropping them would make a curated run chattier than a plain one.
pub const ENV_ALLOWLIST: &[&str] = &[
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CONFIG_DIR",
    "DISABLE_TELEMETRY",
    "DISABLE_ERROR_REPORTING",
    "DISABLE_AUTOUPDATER",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "CLAUDE_CODE_MAX_RETRIES",
];
