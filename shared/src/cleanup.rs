//! `--cleanup DIR`: a directory a tool removes, with everything in it, once its part of a run is
//! over. moot-run removes moot-render's stage directory when the command ends; a parser removes
//! the caller's scratch directory once it has read the status file, so a pipeline needs no
//! process of its own (an `rm`) to tidy up.
//!
//! A typo here must never cost the operator a file (`--cleanup ..` once emptied a project), so
//! a directory is removed only when it is unmistakably moot's scratch:
//! - named by an absolute path with no `.` or `..` component, and not `/`, `$HOME`, the current
//!   directory or one of its ancestors;
//! - a real directory (not a symlink), owned by this user, mode 0700;
//! - holding the marker file [`MARKER`], which moot-render writes into every stage directory it
//!   creates (a caller marks a scratch directory of its own with `: >"$dir/.moot-scratch"`);
//! - with no mount point in it (bind mounts included) and, unless moot runs as root, no
//!   directory in it that this user could not empty.
//!
//! All of that is checked before anything is touched. Removal then renames the directory aside
//! (atomic: the name is gone whole or not at all) and removes the renamed tree, so a failure
//! never leaves some of the operator's entries deleted under their old name.

use std::ffi::{CString, OsString};
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, Context};
use nix::libc;
use nix::unistd::{geteuid, User};

/// The file that marks a directory as moot's scratch, removable by `--cleanup`.
pub const MARKER: &str = ".moot-scratch";

/// A `--cleanup` directory that passed every check, with the identity it had then.
#[derive(Debug)]
pub struct Removable {
    path: PathBuf,
    /// `None`: absent when checked (moot-render creates its stage directory only when a prompt
    /// is large enough to stage, so a caller names it either way); checked again at removal.
    identity: Option<(u64, u64)>,
}

/// Checks every `--cleanup` directory; the first that may not be removed is an error naming it
/// and what to fix, and then none is removed.
pub fn check(dirs: &[PathBuf]) -> anyhow::Result<Vec<Removable>> {
    dirs.iter()
        .map(|dir| check_one(dir).with_context(|| format!("--cleanup ({})", dir.display())))
        .collect()
}

fn check_one(dir: &Path) -> anyhow::Result<Removable> {
    check_spelling(dir)?;
    let meta = match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Removable {
                path: dir.to_path_buf(),
                identity: None,
            })
        }
        other => other.context("cannot inspect it")?,
    };
    check_directory(&meta)?;
    check_not_precious(dir)?;
    check_marker(dir)?;
    Ok(Removable {
        path: dir.to_path_buf(),
        identity: Some((meta.dev(), meta.ino())),
    })
}

/// Absolute, with no `.` or `..` anywhere: what is removed is exactly what was written.
fn check_spelling(dir: &Path) -> anyhow::Result<()> {
    if !dir.is_absolute() {
        anyhow::bail!("not an absolute path: name the directory from /");
    }
    let dotted = dir
        .as_os_str()
        .as_bytes()
        .split(|&b| b == b'/')
        .any(|part| part == b"." || part == b"..");
    if dotted {
        anyhow::bail!("contains '.' or '..': name the directory itself");
    }
    if dir.components().all(|c| c == Component::RootDir) {
        anyhow::bail!("refusing to remove /");
    }
    Ok(())
}

fn check_directory(meta: &fs::Metadata) -> anyhow::Result<()> {
    if meta.file_type().is_symlink() {
        anyhow::bail!("is a symbolic link: a link, and what it points to, is never removed");
    }
    if !meta.is_dir() {
        anyhow::bail!("not a directory (a file is never removed)");
    }
    let euid = geteuid().as_raw();
    if meta.uid() != euid {
        anyhow::bail!(
            "owned by uid {}, not by you (uid {euid}): only your own scratch is removed",
            meta.uid()
        );
    }
    // 0750 (and 0711 before it): a stage moot-render gave the seat's user (--stage-user), who
    // may list and enter it through its group, never write it.
    if !matches!(meta.mode() & 0o7777, 0o700 | 0o711 | 0o750) {
        anyhow::bail!(
            "has mode {:04o}, not 0700: moot's scratch directories are private, this one is not \
             moot's",
            meta.mode() & 0o7777
        );
    }
    Ok(())
}

/// Not `/`, a home directory ($HOME, or the user database's when $HOME is unset or elsewhere),
/// the current directory, nor a parent of any of them, however they are reached.
fn check_not_precious(dir: &Path) -> anyhow::Result<()> {
    let real = fs::canonicalize(dir).context("cannot resolve it")?;
    if real == Path::new("/") {
        anyhow::bail!("refusing to remove /");
    }
    let homes = [
        std::env::var_os("HOME").map(PathBuf::from),
        User::from_uid(geteuid())
            .ok()
            .flatten()
            .map(|user| user.dir),
    ];
    for home in homes.into_iter().flatten() {
        if fs::canonicalize(home).is_ok_and(|home| home.starts_with(&real)) {
            anyhow::bail!("it is $HOME or one of its parents: refusing to remove it");
        }
    }
    let cwd = std::env::current_dir().and_then(fs::canonicalize);
    if cwd.is_ok_and(|cwd| cwd.starts_with(&real)) {
        anyhow::bail!("it is the current directory or one of its parents: refusing to remove it");
    }
    Ok(())
}

fn check_marker(dir: &Path) -> anyhow::Result<()> {
    let marked = fs::symlink_metadata(dir.join(MARKER))
        .is_ok_and(|m| m.is_file() && m.uid() == geteuid().as_raw());
    if !marked {
        anyhow::bail!(
            "has no {MARKER} marker: moot removes only the stage directories moot-render creates \
             (give --stage-dir a path that does not exist yet) and scratch directories marked \
             with `: >DIR/{MARKER}`"
        );
    }
    Ok(())
}

/// Removes a checked directory; one that is (still, or already) absent is fine. The tree is
/// walked first: a mount point, or an entry of another user's when moot is not root, refuses
/// the removal before anything is deleted.
pub fn remove(dir: &Removable) -> anyhow::Result<()> {
    remove_checked(dir)
        .with_context(|| format!("cannot remove --cleanup directory ({})", dir.path.display()))
}

fn remove_checked(dir: &Removable) -> anyhow::Result<()> {
    let meta = match fs::symlink_metadata(&dir.path) {
        // Never there: moot-render staged nothing.
        Err(e) if e.kind() == io::ErrorKind::NotFound && dir.identity.is_none() => return Ok(()),
        // There when checked, gone now: moved away by someone else, and maybe the prompt with it.
        Err(e) if e.kind() == io::ErrorKind::NotFound => anyhow::bail!(
            "it was there when checked and has disappeared: something moved it, and what it held \
             may be left elsewhere"
        ),
        other => other?,
    };
    let now = (meta.dev(), meta.ino());
    match dir.identity {
        Some(then) if then == now => {}
        // Created since the check (moot-render's stage): check it now.
        None => {
            check_one(&dir.path)?;
        }
        Some(_) => anyhow::bail!("it was replaced after it was checked: left alone"),
    }
    check_tree(&dir.path)?;
    let aside = aside_name(&dir.path)?;
    fs::rename(&dir.path, &aside).context("cannot rename it aside before removing it")?;
    let moved = fs::symlink_metadata(&aside)?;
    if (moved.dev(), moved.ino()) != now {
        // Swapped between the walk and the rename: put back whatever was moved.
        let _ = fs::rename(&aside, &dir.path);
        anyhow::bail!("it was replaced while being removed: left alone");
    }
    crate::tree::remove_tree(&aside)
        .with_context(|| format!("its contents are left, renamed, in {}", aside.display()))
}

/// A hidden sibling name no one else uses.
fn aside_name(dir: &Path) -> anyhow::Result<PathBuf> {
    let parent = dir.parent().ok_or_else(|| anyhow!("has no parent"))?;
    let mut name = OsString::from(".moot-removing-");
    name.push(dir.file_name().unwrap_or_default());
    name.push(format!("-{}", std::process::id()));
    Ok(parent.join(name))
}

/// Every entry below `root`, without following links: on `root`'s mount (a bind mount of the
/// same filesystem included, so nothing is removed through one), and, unless moot is root, every
/// directory owned by this user with its owner's rwx bits, so that removal cannot stop half-way
/// on permissions.
fn check_tree(root: &Path) -> anyhow::Result<()> {
    let euid = geteuid().as_raw();
    let mount = mount_of(root)?;
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry?.path();
            if mount_of(&path)? != mount {
                anyhow::bail!(
                    "{} is a mount point: nothing is removed across it",
                    path.display()
                );
            }
            let meta = fs::symlink_metadata(&path)?;
            if !meta.is_dir() {
                continue;
            }
            if euid != 0 && (meta.uid() != euid || meta.mode() & 0o700 != 0o700) {
                anyhow::bail!(
                    "{} (uid {}, mode {:04o}) is not a directory you can empty: nothing is removed",
                    path.display(),
                    meta.uid(),
                    meta.mode() & 0o7777
                );
            }
            pending.push(path);
        }
    }
    Ok(())
}

/// The mount `path` (not followed) is on: its mount id, which tells a bind mount of the same
/// filesystem apart where the device number cannot; or, on a kernel without mount ids (before
/// 5.8), its device number.
fn mount_of(path: &Path) -> anyhow::Result<(u64, u64)> {
    let name = CString::new(path.as_os_str().as_bytes())?;
    let mut stat = std::mem::MaybeUninit::<libc::statx>::zeroed();
    // SAFETY: statx(2) writes one struct statx into `stat`, which is zero-initialised and ours.
    let result = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            name.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
            libc::STATX_MNT_ID,
            stat.as_mut_ptr(),
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error())
            .with_context(|| format!("cannot inspect {}", path.display()));
    }
    // SAFETY: the call succeeded, so the kernel filled the struct in.
    let stat = unsafe { stat.assume_init() };
    if stat.stx_mask & libc::STATX_MNT_ID != 0 {
        Ok((0, stat.stx_mnt_id))
    } else {
        Ok((
            u64::from(stat.stx_dev_major) << 32 | u64::from(stat.stx_dev_minor),
            0,
        ))
    }
}

/// The `--cleanup` values of a command line clap refused, so a usage error still removes the
/// staged prompt: `--cleanup DIR` and `--cleanup=DIR` before any `--`.
pub fn dirs_in_raw_args(args: impl IntoIterator<Item = OsString>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut args = args.into_iter().skip(1);
    while let Some(arg) = args.next() {
        let bytes = arg.as_bytes();
        if bytes == b"--" {
            break;
        }
        if bytes == b"--cleanup" {
            if let Some(dir) = args.next() {
                dirs.push(PathBuf::from(dir));
            }
        } else if let Some(dir) = bytes.strip_prefix(b"--cleanup=") {
            dirs.push(PathBuf::from(std::ffi::OsStr::from_bytes(dir)));
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(parent: &Path, name: &str) -> PathBuf {
        let dir = parent.join(name);
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(dir.join(MARKER), b"").unwrap();
        fs::write(dir.join("prompt.md"), b"x").unwrap();
        dir
    }

    fn refusal(dir: &Path) -> String {
        format!("{:#}", check(&[dir.to_path_buf()]).unwrap_err())
    }

    #[test]
    fn a_marked_private_directory_is_removed_whole() {
        let base = tempfile::tempdir().unwrap();
        let dir = scratch(base.path(), "stage");
        fs::create_dir(dir.join("sub")).unwrap();
        fs::write(dir.join("sub/f"), b"x").unwrap();
        let checked = check(std::slice::from_ref(&dir)).unwrap();
        remove(&checked[0]).unwrap();
        assert!(!dir.exists());
        assert_eq!(
            fs::read_dir(base.path()).unwrap().count(),
            0,
            "nothing left aside"
        );
    }

    #[test]
    fn spellings_that_reach_other_directories_are_refused() {
        for bad in ["relative", "/", "//", "/tmp/..", "/tmp/./x", "/tmp/x/.."] {
            assert!(check(&[PathBuf::from(bad)]).is_err(), "{bad} was accepted");
        }
    }

    #[test]
    fn unmarked_shared_or_foreign_directories_are_refused() {
        let base = tempfile::tempdir().unwrap();
        let dir = scratch(base.path(), "stage");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(refusal(&dir).contains("not 0700"), "{}", refusal(&dir));
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        fs::remove_file(dir.join(MARKER)).unwrap();
        assert!(refusal(&dir).contains("no .moot-scratch marker"));
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(refusal(&link).contains("symbolic link"));
        assert!(dir.join("prompt.md").exists(), "a refusal touches nothing");
    }

    #[test]
    fn a_usage_error_still_finds_the_cleanup_directories() {
        let args = [
            "moot-run",
            "--bogus",
            "--cleanup",
            "/a",
            "--cleanup=/b",
            "--",
            "--cleanup",
            "/c",
        ];
        assert_eq!(
            dirs_in_raw_args(args.iter().map(OsString::from)),
            [PathBuf::from("/a"), PathBuf::from("/b")]
        );
    }
}
