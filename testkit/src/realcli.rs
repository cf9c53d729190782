//! The real CLIs as scripts/realcli/install.sh lays them out, read from each runtime's install
//! file (`shared/src/runtime/<rt>/<cli>.install`), so no test keeps its own list of where a CLI
//! lives.

use std::path::PathBuf;

/// Where scripts/realcli/install.sh puts the real CLIs: `$REALCLI_DIR`, or `moot-realcli` in
/// the temporary directory.
pub fn realcli_dir() -> PathBuf {
    std::env::var_os("REALCLI_DIR")
        .map_or_else(|| std::env::temp_dir().join("moot-realcli"), PathBuf::from)
}

/// The pinned CLI of `runtime` (a registry name): its executable and the directories it needs
/// on PATH (its interpreter's), or `None` when it is not installed. Panics for a runtime moot-doctor
/// does not certify, or whose install file lacks DIR or PROGRAM.
pub fn installed(runtime: &str) -> Option<(PathBuf, Vec<PathBuf>)> {
    let certify = moot::registry::find(runtime)
        .ok()
        .and_then(|meta| meta.doctor)
        .unwrap_or_else(|| panic!("{runtime}: no runtime moot-doctor certifies"));
    let field = |key: &str| {
        certify
            .install_field(key)
            .unwrap_or_else(|| panic!("{runtime}'s install file has no {key}"))
    };
    let dir = realcli_dir().join(field("DIR"));
    let program = dir.join(field("PROGRAM"));
    let path = certify
        .install_field("PATH_DIRS")
        .unwrap_or_default()
        .split_whitespace()
        .map(|relative| dir.join(relative))
        .collect();
    program.is_file().then_some((program, path))
}
