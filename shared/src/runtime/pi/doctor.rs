//! How moot-doctor certifies pi (net/src/doctor/): its version, and its private HOME.

use std::io;
use std::path::Path;

use crate::model::doctor::repo_plants;
use crate::model::doctor::write_config;
use crate::model::{Certify, FakeHome};

pub static CERTIFY: Certify = Certify {
    version_args: &["--version"],
    install: include_str!("pi.install"),
    fake_home,
    differs: &[],
    plants: repo_plants!("pi":
        ".pi/extensions/evil.ts",
        ".pi/settings.json",
    ),
    trust: None,
};

/// A `fake` provider speaking chat completions at `origin`, without the developer role or a
/// reasoning effort (a plain chat-completions server has neither), and pi kept offline.
fn fake_home(home: &Path, origin: &str, key: &str) -> io::Result<FakeHome> {
    write_config(
        home,
        ".pi/agent/models.json",
        &format!(
            "{{\"providers\":{{\"fake\":{{\"baseUrl\":\"{origin}/v1\",\"api\":\"openai-completions\",\
             \"apiKey\":\"{key}\",\"compat\":{{\"supportsDeveloperRole\":false,\
             \"supportsReasoningEffort\":false}},\"models\":[{{\"id\":\"fake-model\",\
             \"name\":\"Fake Model\",\"contextWindow\":128000,\"maxTokens\":4096}}]}}}}}}\n"
        ),
    )?;
    Ok(FakeHome::with_env(&[
        ("PI_OFFLINE", "1".into()),
        ("MOOT_PI_DEFAULT_MODEL", "fake/fake-model".into()),
    ]))
}
