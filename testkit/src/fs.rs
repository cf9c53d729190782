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

/// Copies of `programs` in a fresh directory of /tmp that any user may enter and run, for a test
/// that runs them as another user: the clone may sit in a home or a `mktemp -d` that other users
/// cannot enter, and a test must not depend on where it was cloned. Each copy keeps its file
/// name; the directory and the copies go when it is dropped.
pub fn copies_anyone_can_run(programs: &[&Path]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("moot-copies")
        .tempdir_in("/tmp")
        .expect("a directory in /tmp");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod 755");
    for program in programs {
        let copy = dir
            .path()
            .join(program.file_name().expect("a program's name"));
        fs::copy(program, &copy).expect("copy the program");
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).expect("chmod 755");
    }
    dir
}
