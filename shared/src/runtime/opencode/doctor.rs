//! How moot-doctor certifies opencode (net/src/doctor/): its version, and its private HOME.

use std::fs;
use std::io;
use std::path::Path;

use crate::model::doctor::repo_plants;
use crate::model::doctor::write_config;
use crate::model::{Certify, FakeHome};

pub static CERTIFY: Certify = Certify {
    version_args: &["--version"],
    install: include_str!("opencode.install"),
    fake_home,
    differs: &[
        // A dropped stream makes opencode start its next step at once, forever: the deadline
        // ends the run (FakeHome::drop_deadline), and moot fails it on the process outcome.
        ("drop", "fail:process"),
    ],
    plants: repo_plants!("opencode":
        ".opencode/plugin/evil.js",
        ".opencode/plugins/e2.js",
        ".opencode/tool/eviltool.js",
        "opencode.json",
    ),
    trust: None,
};

/// A `fake` openai-compatible provider at `origin`, with no update, sharing, model fetch, LSP
/// download or default plugin, in the XDG directories a desktop has (opencode's sandbox
/// profile makes its own directories only where their parent exists).
fn fake_home(home: &Path, origin: &str, key: &str) -> io::Result<FakeHome> {
    for dir in [".local/share", ".local/state", ".cache"] {
        fs::create_dir_all(home.join(dir))?;
    }
    write_config(
        home,
        ".config/opencode/opencode.json",
        &format!(
            "{{\"autoupdate\":false,\"share\":\"disabled\",\"model\":\"fake/fake-model\",\
             \"provider\":{{\"fake\":{{\"npm\":\"@ai-sdk/openai-compatible\",\
             \"name\":\"Fake provider\",\"options\":{{\"baseURL\":\"{origin}/v1\",\
             \"apiKey\":\"{key}\"}},\"models\":{{\"fake-model\":{{\
             \"name\":\"Fake Model\",\"limit\":{{\"context\":128000,\"output\":4096}}}}}}}}}}}}\n"
        ),
    )?;
    let mut fake = FakeHome::with_env(&[
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".into()),
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".into()),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".into()),
        ("OPENCODE_DISABLE_DEFAULT_PLUGINS", "1".into()),
        ("OPENCODE_DISABLE_SHARE", "1".into()),
        ("MOOT_OPENCODE_DEFAULT_MODEL", "fake/fake-model".into()),
    ]);
    // A dropped stream makes opencode start its next step at once, forever: only a deadline
    // ends that run.
    fake.drop_deadline = Some(30);
    Ok(fake)
}
