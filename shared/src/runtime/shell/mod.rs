//! shell: a configured shell command, for smoke tests, demos and adapter contract checks.

/// A shell command keeps only the common allowlist under `moot-run --env-preset shell`; whatever
/// else it needs is named with `--keep`.
pub const ENV_ALLOWLIST: &[&str] = &[];
