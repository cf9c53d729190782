//! What the cross-tool tests share: where the workspace is, and the workspace's binaries.
//!
//! These tests run several tools together, as a pipeline does, so they live in a package of
//! their own: `cargo test -p moot` then needs no binary, and `cargo test -p moot-e2e` builds
//! the binaries it needs. Cargo cannot depend on another package's binaries (artifact
//! dependencies are unstable), so [`tool_dir`] asks the cargo that runs the tests (`$CARGO`) to
//! build them, once per test binary, with `cargo test --no-run --workspace`: the very build
//! `cargo test --workspace` has just done, so there it is fresh and costs a fraction of a
//! second (a `cargo build --bins` would unify dependency features without the dev-dependencies
//! and relink every tool a second time). Cargo releases its lock on the target directory before
//! it runs any test, so this nested build does not wait on the outer one. The build always runs
//! (rather than only when a binary is absent), so a test never runs a stale binary after a
//! tool's source changed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every tool of the workspace: one per folder under bins/ (no list to keep in sync).
pub fn tools() -> Vec<String> {
    let mut tools: Vec<String> = std::fs::read_dir(root().join("bins"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    tools.sort();
    tools
}

/// target/<profile>/, where cargo puts the workspace's binaries, with every tool built there
/// (see the module comment).
pub fn tool_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_tools).clone()
}

/// The built binary of `tool`.
pub fn tool(tool: &str) -> PathBuf {
    tool_dir().join(tool)
}

/// Builds every tool into the directory this test binary's own profile uses:
/// `<target-dir>/<profile dir>/deps/<test>` is where cargo put the test (see the module comment).
fn build_tools() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let profile = match dir.file_name().unwrap().to_str().unwrap() {
        "debug" => None,
        "release" => Some("release"),
        other => Some(other),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(&cargo);
    without_test_env(&mut build);
    build
        .current_dir(root())
        .args(["test", "--no-run", "--quiet", "--workspace"])
        .arg("--target-dir")
        .arg(dir.parent().unwrap());
    if let Some(profile) = profile {
        build.args(["--profile", profile]);
    }
    let status = build
        .status()
        .unwrap_or_else(|e| panic!("cannot run {cargo:?} to build the tools: {e}"));
    assert!(status.success(), "building the tools failed: {status}");
    for tool in tools() {
        assert!(
            dir.join(&tool).exists(),
            "{tool} is not built in {}",
            dir.display()
        );
    }
    dir
}

/// Removes what cargo sets for a running test (CARGO_MANIFEST_DIR, CARGO_PKG_*, OUT_DIR, ...)
/// from the nested build's environment, so it is the outer build's. A build script that reads
/// one of them (ring's reads CARGO_MANIFEST_DIR) records its value in its fingerprint, so each
/// test package's value would rebuild ring and everything above it, twice: once here and once
/// in the next plain `cargo test` (a minute or more per test binary on two cores).
fn without_test_env(build: &mut Command) {
    const SET_FOR_TESTS: &[&str] = &[
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if SET_FOR_TESTS.contains(&name)
            || name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_")
        {
            build.env_remove(name);
        }
    }
}
