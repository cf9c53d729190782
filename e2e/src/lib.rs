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
