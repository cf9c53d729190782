//! Claude Code (`claude -p`): Anthropic's coding-agent CLI.

pub mod argv;
pub mod doctor;
pub mod meta;
pub mod stream;

/// The environment Claude Code keeps under `moot-run --env-preset claude`: its token or API key
/// (Claude Code has no other headless credential channel) and its config directory.
pub const ENV_ALLOWLIST: &[&str] = &[
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CONFIG_DIR",
];
