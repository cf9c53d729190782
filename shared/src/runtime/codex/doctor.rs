//! How moot-doctor certifies Codex (net/src/doctor/): its version, and its private HOME.

use std::io;
use std::path::Path;

use crate::model::doctor::repo_plants;
use crate::model::doctor::write_config;
use crate::model::{Certify, FakeHome};

pub static CERTIFY: Certify = Certify {
    version_args: &["--version"],
    install: include_str!("codex.install"),
    fake_home,
    differs: &[
        // codex retries a stream that stopped without response.completed, then gives up.
        ("drop", "fail:retry_exhausted"),
    ],
    plants: repo_plants!("codex":
        ".codex/config.toml",
        ".codex/hooks.json",
    ),
    trust: Some(trust),
};

/// The variable codex reads the fake provider's key from: the env preset drops it unless kept.
const KEY_VAR: &str = "FAKE_PROVIDER_API_KEY";

/// A `fake` provider speaking the Responses API at `origin`, with one quick retry of a request
/// and of a stream.
fn fake_home(home: &Path, origin: &str, key: &str) -> io::Result<FakeHome> {
    write_config(
        home,
        ".codex/config.toml",
        &format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"fake\"\n[model_providers.fake]\n\
             name = \"Fake provider\"\nbase_url = \"{origin}/v1\"\nwire_api = \"responses\"\n\
             env_key = \"{KEY_VAR}\"\nrequest_max_retries = 1\nstream_max_retries = 1\n"
        ),
    )?;
    let mut fake = FakeHome::with_env(&[
        ("CODEX_HOME", home.join(".codex").display().to_string()),
        (KEY_VAR, key.into()),
    ]);
    fake.keep.push(KEY_VAR.into());
    Ok(fake)
}

/// codex reads a repository's `.codex/` only from a project trusted in its config.toml.
fn trust(home: &Path, project: &Path) -> io::Result<()> {
    let config = home.join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&config)?;
    text.push_str(&format!(
        "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        project.display()
    ));
    write_config(home, ".codex/config.toml", &text)
}
