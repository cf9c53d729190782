//! Files for tests: written with a given mode (a script to run, a file whose permissions must
//! survive), their permission bits read back, and a child's open-file limit (a test that must
//! exhaust descriptors).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

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

/// Limits `command`'s open files to `limit` (soft and hard), set in the child before exec.
pub fn limit_open_files(command: &mut Command, limit: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit(2) in the forked child before exec; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let limit = nix::libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            match nix::libc::setrlimit(nix::libc::RLIMIT_NOFILE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
}
