//! How moot-doctor certifies omp (net/src/doctor/): its version, and its private HOME.

use std::io;
use std::path::Path;

use crate::model::doctor::repo_plants;
use crate::model::doctor::write_config;
use crate::model::{Certify, FakeHome};

pub static CERTIFY: Certify = Certify {
    version_args: &["--version"],
    install: include_str!("omp.install"),
    fake_home,
    // omp's --resume re-roots the run in the resumed session's cwd: moot never resumes it.
    differs: &[
        // omp retries an empty answer as a provider failure, and gives up after its one retry.
        ("empty", "fail:retry_exhausted"),
        // omp ends a stream that stopped without its terminator with an error row of its own.
        ("drop", "fail:model_error"),
    ],
    plants: repo_plants!("omp":
        ".claude/hooks/pre/bash.ts",
        ".claude/settings.json",
        ".claude/tools/ct.ts",
        ".codex/config.toml",
        ".cursor/mcp.json",
        ".mcp.json",
        ".omp/extensions/evil.ts",
        ".omp/hooks/pre/bash.ts",
        ".omp/tools/eviltool.ts",
        ".omp/mcp.json",
        ".vscode/mcp.json",
        ".gemini/settings.json",
        ".windsurf/mcp_config.json",
        ".codex/tools/ct.ts",
    ),
    trust: None,
};

/// A `fake` provider speaking chat completions at `origin`, and one quick retry (omp retries a
/// provider error ten times, with backoff up to minutes, by default).
fn fake_home(home: &Path, origin: &str, key: &str) -> io::Result<FakeHome> {
    write_config(
        home,
        ".omp/agent/models.yml",
        &format!(
            "providers:\n  fake:\n    baseUrl: {origin}/v1\n    api: openai-completions\n    \
             apiKey: {key}\n    models:\n      - id: fake-model\n        \
             name: Fake Model\n        contextWindow: 128000\n        maxTokens: 4096\n"
        ),
    )?;
    write_config(
        home,
        ".omp/agent/config.yml",
        "retry:\n  maxRetries: 1\n  baseDelayMs: 200\n",
    )?;
    Ok(FakeHome::with_env(&[(
        "MOOT_OMP_DEFAULT_MODEL",
        "fake/fake-model".into(),
    )]))
}
