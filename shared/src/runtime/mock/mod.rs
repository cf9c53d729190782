//! mock: the test-only runtime that echoes its configured response.

/// The mock runtime keeps only the common allowlist under `moot-run --env-preset mock`.
pub const ENV_ALLOWLIST: &[&str] = &[];
