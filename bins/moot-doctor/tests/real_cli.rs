//! moot-doctor on every pinned real CLI that scripts/realcli/install.sh installs, against its
//! fake model: slow (minutes), so not part of `cargo test` (`test = false` in Cargo.toml) but
//! of `make test-realcli`, which CI runs. A missing CLI fails under MOOT_NO_SKIP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use moot_testkit::skip;
use serde_json::Value;
use support::{doctor, stderr};

/// PATH with `dirs` first and the system's directories after.
fn path_with(dirs: &[PathBuf]) -> std::ffi::OsString {
    let mut all = dirs.to_vec();
    all.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
    std::env::join_paths(all).unwrap()
}

/// One entry per file under `root`: its path, size, mtime (ns), mode and, for a symlink, target.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut seen = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(path) = todo.pop() {
        let meta = fs::symlink_metadata(&path).unwrap();
        let link = fs::read_link(&path).ok();
        seen.insert(
            path.strip_prefix(root).unwrap().to_path_buf(),
            format!(
                "{} {}.{} {:o} {:?}",
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.mode(),
                link
            ),
        );
        if meta.is_dir() {
            for entry in fs::read_dir(&path).unwrap() {
                todo.push(entry.unwrap().path());
            }
        }
    }
    seen
}

#[test]
fn the_users_home_is_left_exactly_as_it_was() {
    let Some((program, path)) = moot_testkit::realcli::installed("codex") else {
        return skip(
            "the_users_home_is_left_exactly_as_it_was",
            "codex is not installed (scripts/realcli/install.sh)",
        );
    };
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // A user's own codex config pointing elsewhere, a secret, and a private directory.
    fs::create_dir_all(home.path().join(".codex")).unwrap();
    fs::write(
        home.path().join(".codex/config.toml"),
        "model_provider = \"mine\"\n[model_providers.mine]\nname = \"mine\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    fs::write(
        home.path().join(".bashrc"),
        "export OPENAI_API_KEY=sk-users-own\n",
    )
    .unwrap();
    fs::create_dir(home.path().join("private")).unwrap();
    fs::set_permissions(
        home.path().join("private"),
        fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let before = snapshot(home.path());
    let out = doctor()
        .env_clear()
        .env("HOME", home.path())
        .env("TMPDIR", tmp.path())
        .env("PATH", path_with(&path))
        .env("CODEX_HOME", home.path().join(".codex"))
        .env("OPENAI_API_KEY", "sk-users-own")
        .arg("--program")
        .arg(&program)
        .args(["codex", "--scenario", "plain", "--scenario", "resume"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    assert_eq!(
        snapshot(home.path()),
        before,
        "the doctor changed the user's HOME"
    );
    let left: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the doctor left files behind: {left:?}");
}

#[test]
fn every_pinned_cli_passes_every_scenario() {
    let runtimes: Vec<&str> = moot::registry::all()
        .iter()
        .filter(|meta| meta.parser.is_some() && meta.doctor.is_some())
        .map(|meta| meta.name)
        .collect();
    let mut failures = Vec::new();
    for runtime in runtimes {
        let Some((program, path)) = moot_testkit::realcli::installed(runtime) else {
            skip(
                "every_pinned_cli_passes_every_scenario",
                &format!(
                    "{runtime} is not installed in {} (scripts/realcli/install.sh)",
                    moot_testkit::realcli::realcli_dir().display()
                ),
            );
            continue;
        };
        let started = Instant::now();
        let out = doctor()
            .env("PATH", path_with(&path))
            .arg("--program")
            .arg(&program)
            .args([runtime, "--strict"])
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&out.stdout);
        eprintln!("{table}{runtime}: {:.1} s", started.elapsed().as_secs_f64());
        if out.status.code() != Some(0) {
            failures.push(format!(
                "{runtime}: exit {:?}: {}",
                out.status.code(),
                stderr(&out)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn by_default_the_installed_clis_are_found_and_a_shared_name_goes_to_its_own_runtime() {
    // Kimi Code and kimi-cli are both `kimi`: with only Kimi Code installed, kimi is certified
    // and kimi-cli is left out, not failed.
    let Some((_, path)) = moot_testkit::realcli::installed("kimi") else {
        return skip(
            "by_default_the_installed_clis_are_found_and_a_shared_name_goes_to_its_own_runtime",
            "Kimi Code is not installed (scripts/realcli/install.sh)",
        );
    };
    let out = doctor()
        .env("PATH", path_with(&path))
        .args(["--json", "--scenario", "plain"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows: Vec<(&str, bool)> = report["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rt| (rt["runtime"].as_str().unwrap(), rt["skipped"].is_null()))
        .collect();
    assert_eq!(rows, [("kimi", true), ("kimi-cli", false)]);
    assert_eq!(report["runtimes"][0]["scenarios"][0]["result"], "pass");
}
