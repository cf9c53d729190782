//! Codex (`codex exec`): OpenAI's coding-agent CLI.

pub mod argv;
pub mod doctor;
pub mod meta;
pub mod stream;

/// The environment Codex keeps under `moot-run --env-preset codex`: where its config and session
/// index live. Its credentials are in that directory, never in a listed variable.
pub const ENV_ALLOWLIST: &[&str] = &["CODEX_HOME"];
