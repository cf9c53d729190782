//! `--cleanup DIR`: a directory a tool removes, with everything in it, once its part of a run is
//! over. moot-run removes moot-render's stage directory when the command ends; a parser removes
//! the caller's scratch directory once it has read the status file, so a pipeline needs no
//! process of its own (an `rm`) to tidy up.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// A `--cleanup` directory must be a real directory, and never `/`: it is removed recursively.
/// One that does not exist is fine: moot-render creates its stage directory only when a prompt
/// is large enough to stage, so a caller names it either way.
pub fn check(dirs: &[PathBuf]) -> anyhow::Result<()> {
    for dir in dirs {
        let meta = match fs::symlink_metadata(dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            other => other.with_context(|| format!("--cleanup ({})", dir.display()))?,
        };
        if !meta.is_dir() {
            anyhow::bail!(
                "--cleanup ({}): not a directory (a file or symlink is never removed)",
                dir.display()
            );
        }
        if fs::canonicalize(dir).is_ok_and(|real| real == Path::new("/")) {
            anyhow::bail!("--cleanup ({}): refusing to remove /", dir.display());
        }
    }
    Ok(())
}

/// Removes a checked `--cleanup` directory; one already gone (the command removed it) is fine.
pub fn remove(dir: &Path) -> anyhow::Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove --cleanup directory ({})", dir.display()))
        }
        _ => Ok(()),
    }
}
