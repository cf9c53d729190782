//! Kimi Code (`kimi -p … --output-format stream-json`) and the legacy kimi-cli.

/// Kimi keeps nothing beyond the common allowlist under `moot-run --env-preset kimi`: it
/// authenticates once with `kimi login` and reads that session from its home directory.
pub const ENV_ALLOWLIST: &[&str] = &[];
