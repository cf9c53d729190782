//! pi (`pi -p --mode json`), omp's ancestor.

pub mod argv;
pub mod doctor;
pub mod meta;
pub mod stream;

/// The environment pi keeps under `moot-run --env-preset pi` (names pi 0.73 reads): its agent
/// directory, and the switches that turn off its startup network operations and version check.
/// Like omp, no provider key: pass one with `--keep` if pi needs it.
pub const ENV_ALLOWLIST: &[&str] = &["PI_CODING_AGENT_DIR", "PI_OFFLINE", "PI_SKIP_VERSION_CHECK"];
