//! Files for tests: written with a given mode (a script to run, a file whose permissions must
//! survive), and their permission bits read back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Writes `contents` to `path`, then sets its permission bits to `mode`.
pub fn write_with_mode(path: impl AsRef<Path>, contents: impl AsRef<[u8]>, mode: u32) {
    let path = path.as_ref();
    fs::write(path, contents).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// The permission bits of `path` (symlinks followed).
pub fn mode(path: impl AsRef<Path>) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}
