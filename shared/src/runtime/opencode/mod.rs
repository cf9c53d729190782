//! opencode (`opencode run --format json`): a multi-provider coding agent from the opencode
//! project, run headless.

pub mod argv;
pub mod doctor;
pub mod meta;
pub mod stream;

/// The environment opencode keeps under `moot-run --env-preset opencode`: where its
/// configuration comes from (a file, a directory, inline JSON, and the permission rules alone),
/// and the switches that turn off its network side errands. No provider key is listed: opencode
/// keeps its credentials in its data directory (`opencode auth login`); pass a key with `--keep`
/// when a provider reads one from the environment.
pub const ENV_ALLOWLIST: &[&str] = &[
    "OPENCODE_CONFIG",
    "OPENCODE_CONFIG_DIR",
    "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_PERMISSION",
    "OPENCODE_DISABLE_*",
];
