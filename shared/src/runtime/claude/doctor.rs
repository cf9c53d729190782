//! How moot-doctor certifies Claude Code (net/src/doctor/): its version, and its private HOME.

use std::io;
use std::path::Path;

use crate::model::doctor::repo_plants;
use crate::model::{Certify, FakeHome};

pub static CERTIFY: Certify = Certify {
    version_args: &["--version"],
    install: include_str!("claude.install"),
    fake_home,
    differs: &[
        // Claude Code retries a dropped stream without streaming and gets the whole answer.
        ("drop", "ok"),
    ],
    plants: repo_plants!("claude":
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".mcp.json",
    ),
    trust: None,
};

/// Claude Code takes its provider from the environment alone: the origin, a dummy key, no
/// telemetry or updater traffic, and one quick retry. Its temporary directory is moved into the
/// private HOME (by default it is `$TMPDIR/claude-<uid>`), so it goes with the HOME.
fn fake_home(home: &Path, origin: &str, key: &str) -> io::Result<FakeHome> {
    let temp = home.join("claude-tmp");
    std::fs::create_dir_all(&temp)?;
    Ok(FakeHome::with_env(&[
        ("CLAUDE_CODE_TMPDIR", temp.to_string_lossy().into_owned()),
        ("ANTHROPIC_BASE_URL", origin.to_string()),
        ("ANTHROPIC_API_KEY", key.into()),
        ("DISABLE_TELEMETRY", "1".into()),
        ("DISABLE_ERROR_REPORTING", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("CLAUDE_CODE_MAX_RETRIES", "1".into()),
        ("MOOT_CLAUDE_DEFAULT_EFFORT", "low".into()),
    ]))
}
