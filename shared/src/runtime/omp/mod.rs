//! omp (oh-my-pi): a multi-provider routing harness, the primary target.

pub mod argv;
pub mod doctor;
pub mod meta;
pub mod stream;

/// The environment omp keeps under `moot-run --env-preset omp` (man/moot-run.1): routing
/// plumbing only. No raw provider key is listed: under a preset a provider
/// key reaches omp only through its own profile auth storage or an explicit `--keep`.
pub const ENV_ALLOWLIST: &[&str] = &[
    "OMP_PROFILE",
    "PI_PROFILE",
    "PI_CODING_AGENT_DIR",
    "PI_SMOL_MODEL",
    "PI_SLOW_MODEL",
    "PI_PLAN_MODEL",
    "OMP_AUTH_BROKER_URL",
    "OMP_AUTH_BROKER_TOKEN",
];

/// Names omp needs together: it throws when the broker URL is set and no token is available, so
/// keeping only the URL would turn an inherited broker into a hard failure.
pub const ENV_INDIVISIBLE: &[&[&str]] = &[&["OMP_AUTH_BROKER_URL", "OMP_AUTH_BROKER_TOKEN"]];

/// The config overlay moot-sandbox --profile hands omp (`PI_CONFIG_FILES`): omp 18.2.3 reads
/// project MCP servers from a dozen tools' files (`src/discovery/` of its package) and has no
/// flag for it; its own setting turns them all off. (Custom tools, which no setting turns off
/// without also dropping the operator's own, are refused by moot-render: `repo_code`.)
pub const CONFIG_OVERLAY: &str = "# moot: the repository under review starts no MCP server\n\
mcp:\n  enableProjectConfig: false\n";
