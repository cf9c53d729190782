//! Where a command name leads: the file execvp(3) would run, found before spawning so that a
//! missing or non-executable program is reported as the PATH problem it is. Used by moot-run,
//! moot-sandbox (which must name the binary in its profile) and moot-render's `--list`.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::unistd::{access, AccessFlags};

/// What execvp(3) searches when PATH is unset.
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// Why a command name does not resolve to an executable file.
#[derive(Debug, PartialEq, Eq)]
pub enum Unresolved {
    /// The name is empty.
    Empty,
    /// Nothing by that name (exit 127); `searched` is the PATH that was searched, if any was.
    NotFound {
        name: OsString,
        searched: Option<OsString>,
    },
    /// Found, but not an executable regular file (exit 126).
    NotExecutable(PathBuf),
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unresolved::Empty => write!(f, "command not found (\"\"): the command name is empty"),
            Unresolved::NotFound {
                name,
                searched: Some(path),
            } => write!(
                f,
                "command not found ({}): searched PATH={}",
                name.to_string_lossy(),
                path.to_string_lossy()
            ),
            Unresolved::NotFound {
                name,
                searched: None,
            } => write!(
                f,
                "command not found ({}): no such file",
                name.to_string_lossy()
            ),
            Unresolved::NotExecutable(path) => write!(
                f,
                "command not executable ({}): not an executable regular file",
                path.display()
            ),
        }
    }
}

impl std::error::Error for Unresolved {}

/// Finds the file `name` names the way execvp(3) would (a name with a slash is a path, anything
/// else is searched in `path`, an empty entry meaning the current directory), but before
/// spawning, so a missing binary is reported as the PATH problem it is.
pub fn resolve_program(name: &OsStr, path: Option<&OsStr>) -> Result<PathBuf, Unresolved> {
    if name.is_empty() {
        return Err(Unresolved::Empty);
    }
    if name.as_bytes().contains(&b'/') {
        let candidate = PathBuf::from(name);
        return match Candidate::of(&candidate) {
            Candidate::Executable => Ok(candidate),
            Candidate::NotExecutable => Err(Unresolved::NotExecutable(candidate)),
            Candidate::Absent => Err(Unresolved::NotFound {
                name: name.to_owned(),
                searched: None,
            }),
        };
    }
    let path = path.unwrap_or(OsStr::new(DEFAULT_PATH));
    let mut not_executable = None;
    for dir in path.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let candidate = dir.join(name);
        match Candidate::of(&candidate) {
            Candidate::Executable => return Ok(candidate),
            Candidate::NotExecutable => {
                not_executable.get_or_insert(candidate);
            }
            Candidate::Absent => {}
        }
    }
    Err(match not_executable {
        Some(candidate) => Unresolved::NotExecutable(candidate),
        None => Unresolved::NotFound {
            name: name.to_owned(),
            searched: Some(path.to_owned()),
        },
    })
}

/// Where this process's `PATH` finds the program `name`, as [`resolve_program`] resolves it
/// for a run: `None` when it does not. What `moot-render --list` reports as installed, so a
/// CLI it lists is one moot-run and moot-sandbox would find.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    resolve_program(OsStr::new(name), std::env::var_os("PATH").as_deref()).ok()
}

enum Candidate {
    Executable,
    NotExecutable,
    Absent,
}

impl Candidate {
    fn of(path: &Path) -> Self {
        match fs::metadata(path) {
            Err(_) => Candidate::Absent,
            Ok(meta) if meta.is_file() && access(path, AccessFlags::X_OK).is_ok() => {
                Candidate::Executable
            }
            Ok(_) => Candidate::NotExecutable,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn programs_resolve_like_execvp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        let other = dir.path().join("other");
        fs::create_dir(&bin).expect("mkdir");
        fs::create_dir(&other).expect("mkdir");
        for (path, mode) in [
            (bin.join("plain"), 0o644),
            (other.join("plain"), 0o755),
            (bin.join("tool"), 0o755),
        ] {
            fs::write(&path, "#!/bin/sh\n").expect("write");
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).expect("chmod");
        }
        fs::create_dir(other.join("adir")).expect("mkdir");
        let path = OsString::from(format!("{}:{}", bin.display(), other.display()));
        let resolve = |name: &str| resolve_program(OsStr::new(name), Some(&path));

        assert_eq!(resolve("tool"), Ok(bin.join("tool")));
        // A non-executable match does not stop the search, as with execvp.
        assert_eq!(resolve("plain"), Ok(other.join("plain")));
        assert_eq!(
            resolve("adir"),
            Err(Unresolved::NotExecutable(other.join("adir")))
        );
        assert_eq!(
            resolve("missing"),
            Err(Unresolved::NotFound {
                name: "missing".into(),
                searched: Some(path.clone())
            })
        );
        let direct = bin.join("plain");
        assert_eq!(
            resolve(direct.to_str().expect("utf-8")),
            Err(Unresolved::NotExecutable(direct))
        );
        assert_eq!(resolve(""), Err(Unresolved::Empty));
        assert_eq!(
            resolve_program(OsStr::new("sh"), None).map(|p| p.is_absolute()),
            Ok(true),
            "an unset PATH searches {DEFAULT_PATH}"
        );
    }

    #[test]
    fn programs_on_this_path_are_found() {
        assert!(find_on_path("sh").is_some_and(|p| p.ends_with("sh")));
        assert_eq!(find_on_path("moot-no-such-program"), None);
        assert_eq!(find_on_path(""), None);
    }

    #[test]
    fn unresolved_messages_name_the_binary_and_the_path() {
        let missing = Unresolved::NotFound {
            name: "omp".into(),
            searched: Some("/a:/b".into()),
        };
        assert_eq!(
            missing.to_string(),
            "command not found (omp): searched PATH=/a:/b"
        );
    }
}
