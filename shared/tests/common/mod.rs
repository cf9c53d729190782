//! What the cross-tool tests share: where the workspace is, and where cargo put its binaries.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

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

/// target/<profile>/, where cargo put the workspace's binaries (`cargo test --workspace`
/// builds them all before any test runs); every tool must be there.
pub fn tool_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    for tool in tools() {
        assert!(
            dir.join(&tool).exists(),
            "{tool} is not built in {}: run `cargo build --workspace` (or `make test`) first",
            dir.display()
        );
    }
    dir
}

/// The built binary of `tool`.
pub fn tool(tool: &str) -> PathBuf {
    tool_dir().join(tool)
}
