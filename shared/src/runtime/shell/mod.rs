//! Shell: a configured command run by `sh -c`, for smoke tests, demos and contract checks.

pub mod argv;
pub mod meta;

/// A shell command keeps only the common allowlist under `moot-run --env-preset shell`; whatever
/// else it needs is named with `--keep`.
pub const ENV_ALLOWLIST: &[&str] = &[];
