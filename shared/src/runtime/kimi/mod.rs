//! Kimi: Kimi Code (`kimi`, stream-json print mode) and the legacy kimi-cli (`kimi --print`).

pub mod argv;
pub mod beside;
pub mod doctor;
pub mod meta;
pub mod store;
pub mod stream;

/// Kimi keeps nothing beyond the common allowlist under `moot-run --env-preset kimi`: it
/// authenticates once with `kimi login` and reads that session from its home directory.
pub const ENV_ALLOWLIST: &[&str] = &[];
