//! How moot-doctor certifies Kimi Code and the legacy kimi-cli (net/src/doctor/): their versions,
//! and their private HOMEs. Both name their session (and Kimi Code its fatal error) only on
//! stderr, so the doctor keeps it for the parser.

use std::io;
use std::path::Path;

use crate::model::doctor::repo_plants;
use crate::model::doctor::write_config;
use crate::model::{Certify, FakeHome};

/// Kimi Code: the `@moonshot-ai/kimi-code` npm package.
/// Kimi Code's and kimi-cli's: the project MCP files (kimi-cli reads none).
const KIMI_PLANTS: &[(&str, &str)] = repo_plants!("kimi": ".kimi-code/mcp.json", ".mcp.json");

pub static KIMI: Certify = Certify {
    version_args: &["--version"],
    install: include_str!("kimi-code.install"),
    fake_home: kimi_code_home,
    differs: &[
        // Kimi Code retries an empty answer as a provider failure, and gives up.
        ("empty", "fail:retry_exhausted"),
    ],
    plants: KIMI_PLANTS,
    trust: None,
};

/// The legacy kimi-cli: the `kimi-cli` PyPI package.
pub static KIMI_CLI: Certify = Certify {
    version_args: &["--version"],
    install: include_str!("kimi-cli.install"),
    fake_home: kimi_cli_home,
    differs: &[
        // kimi-cli records nowhere that its answer was cut: the missing gitmoot_result is the
        // only proof, so moot fails a length cut as no_result.
        ("length", "fail:no_result"),
        // A stream that stopped mid-answer reads to kimi-cli as a finished one: only the missing
        // gitmoot_result shows the cut.
        ("drop", "fail:no_result"),
        // It reports an empty answer as its own error.
        ("empty", "fail:model_error"),
    ],
    plants: KIMI_PLANTS,
    trust: None,
};

/// The config both read: a `kimi`-typed provider at `origin` and its one model, `top` keys
/// before the tables and `tables` after them.
fn config(origin: &str, key: &str, top: &str, tables: &str) -> String {
    format!(
        "default_model = \"fake\"\n{top}[providers.fake]\ntype = \"kimi\"\n\
         base_url = \"{origin}/v1\"\napi_key = \"{key}\"\n[models.fake]\n\
         provider = \"fake\"\nmodel = \"fake-model\"\nmax_context_size = 128000\n{tables}"
    )
}

/// Kimi Code keeps its config and session store under KIMI_CODE_HOME; how an answer ended is
/// only in that store, which the parser reads.
fn kimi_code_home(home: &Path, origin: &str, key: &str) -> io::Result<FakeHome> {
    // Two attempts per step: Kimi Code retries a provider failure (an empty answer included)
    // ten times with backoff by default, minutes in all.
    write_config(
        home,
        ".kimi-code/config.toml",
        &config(
            origin,
            key,
            "",
            "[loop_control]\nmax_attempts_per_step = 2\n",
        ),
    )?;
    let dir = home.join(".kimi-code");
    let mut fake = FakeHome::with_env(&[
        ("KIMI_CODE_HOME", dir.display().to_string()),
        ("KIMI_DISABLE_TELEMETRY", "1".into()),
        ("KIMI_CODE_NO_AUTO_UPDATE", "1".into()),
    ]);
    fake.stderr_file = true;
    fake.session_store = Some(".kimi-code/sessions");
    Ok(fake)
}

/// kimi-cli reads `~/.kimi/config.toml`. Its answers must carry a gitmoot_result (the only
/// proof it finished), which the parser's envelope already requires, and its text mode only
/// with `--require-result`, as its adapter asks.
fn kimi_cli_home(home: &Path, origin: &str, key: &str) -> io::Result<FakeHome> {
    write_config(
        home,
        ".kimi/config.toml",
        &config(origin, key, "telemetry = false\n", ""),
    )?;
    let mut fake = FakeHome::with_env(&[("KIMI_DISABLE_TELEMETRY", "1".into())]);
    fake.stderr_file = true;
    fake.text_flags.push("--require-result".into());
    Ok(fake)
}
