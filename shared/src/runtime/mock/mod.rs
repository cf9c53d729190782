//! mock: the test-only echo.

pub mod argv;
pub mod meta;

/// The mock runtime keeps only the common allowlist under `moot-run --env-preset mock`.
pub const ENV_ALLOWLIST: &[&str] = &[];
