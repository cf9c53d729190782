//! Kimi: Kimi Code (`kimi`, stream-json print mode) and the legacy kimi-cli (`kimi --print`).

pub mod argv;
pub mod beside;
pub mod doctor;
pub mod meta;
pub mod store;
pub mod stream;
mod text;

/// Kimi keeps no credential under `moot-run --env-preset kimi`: it authenticates once with
/// `kimi login` and reads that session from its home directory. It keeps the opt-outs a user
/// set on purpose (telemetry, Kimi Code's updater).
pub const ENV_ALLOWLIST: &[&str] = &["KIMI_DISABLE_TELEMETRY", "KIMI_CODE_NO_AUTO_UPDATE"];
