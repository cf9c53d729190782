//! Removing a directory tree that a hostile process wrote in.
//!
//! `std::fs::remove_dir_all` recurses and keeps a descriptor open per level, so a tree deeper
//! than the open-file limit (or the stack) stops it half way, and a directory the writer made
//! read-only stops it too. [`remove_tree`] instead works two levels below the root at most: it
//! empties each directory found at the root, hoisting that directory's own subdirectories up to
//! the root under a spare name, until the root is empty. Nothing recurses, at most two
//! descriptors are open, no path grows with the tree's depth, every directory is made writable
//! by its owner before it is emptied, and a symbolic link is removed, never followed.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The prefix of a hoisted directory's spare name at the root.
const HOISTED: &str = ".moot-hoisted-";

/// Removes `root` and everything below it; a missing `root` is already removed.
pub fn remove_tree(root: &Path) -> io::Result<()> {
    match fs::symlink_metadata(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
        Ok(meta) if !meta.is_dir() => return fs::remove_file(root),
        Ok(_) => {}
    }
    let mut spare = Spare::default();
    loop {
        open_up(root)?;
        let mut entries = fs::read_dir(root)?.peekable();
        if entries.peek().is_none() {
            break;
        }
        for entry in entries {
            let entry = entry?;
            let path = entry.path();
            if entry.file_type()?.is_dir() {
                empty_hoisting(root, &path, &mut spare)?;
                fs::remove_dir(&path)?;
            } else {
                fs::remove_file(&path)?;
            }
        }
    }
    fs::remove_dir(root)
}

/// Empties `dir`: its files and links go, its subdirectories move up to `root`.
fn empty_hoisting(root: &Path, dir: &Path, spare: &mut Spare) -> io::Result<()> {
    open_up(dir)?;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            spare.hoist(&entry.path(), root)?;
        } else {
            fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// Gives a directory's owner the rights to list and empty it, if it lacks them.
fn open_up(dir: &Path) -> io::Result<()> {
    let mode = fs::symlink_metadata(dir)?.permissions().mode();
    if mode & 0o700 != 0o700 {
        fs::set_permissions(dir, fs::Permissions::from_mode(mode | 0o700))?;
    }
    Ok(())
}

/// Spare names at the root for hoisted directories.
#[derive(Default)]
struct Spare {
    next: u64,
}

impl Spare {
    /// Moves `dir` to a free spare name at `root`. A name the writer took already is skipped:
    /// rename(2) fails on a file or a non-empty directory, and replacing an empty one loses
    /// nothing that was not to be removed.
    fn hoist(&mut self, dir: &Path, root: &Path) -> io::Result<()> {
        loop {
            let to: PathBuf = root.join(format!("{HOISTED}{}", self.next));
            self.next += 1;
            match fs::rename(dir, &to) {
                Ok(()) => return Ok(()),
                Err(e) if taken(&e) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether rename(2) failed because its target name is in use (by a file, or a directory that
/// is not empty or is an ancestor of the one moved).
fn taken(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(nix::libc::ENOTEMPTY | nix::libc::EEXIST | nix::libc::ENOTDIR | nix::libc::EISDIR)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::fcntl::{openat, OFlag};
    use nix::sys::stat::{mkdirat, Mode};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::symlink;

    /// Run by [`a_tree_deeper_than_the_open_file_limit_goes_whole`] under a limit of 64 open
    /// files, where a recursive removal keeping a descriptor per level fails.
    #[test]
    #[ignore = "run by a_tree_deeper_than_the_open_file_limit_goes_whole, in a child"]
    fn deep_tree_under_a_low_file_limit() {
        let root = tempfile::tempdir().unwrap();
        let top = root.path().join("seat");
        fs::create_dir(&top).unwrap();
        // 3000 levels of "deep/": a path of 15 KB, past PATH_MAX, built one level at a time.
        let mut here = OwnedFd::from(fs::File::open(&top).unwrap());
        for _ in 0..3000 {
            mkdirat(Some(here.as_raw_fd()), "deep", Mode::S_IRWXU).unwrap();
            let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
            let fd = openat(Some(here.as_raw_fd()), "deep", flags, Mode::empty()).unwrap();
            // SAFETY: openat(2) just returned this descriptor; nothing else owns it.
            here = unsafe { OwnedFd::from_raw_fd(fd) };
        }
        remove_tree(&top).unwrap();
        assert!(!top.exists());
    }

    #[test]
    fn a_tree_deeper_than_the_open_file_limit_goes_whole() {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child.args([
            "--exact",
            "tree::tests::deep_tree_under_a_low_file_limit",
            "--ignored",
        ]);
        moot_testkit::fs::limit_open_files(&mut child, 64);
        let out = child.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("1 passed"),
            "the inner test did not run: {text}"
        );
    }

    #[test]
    fn a_read_only_directory_is_opened_up_for_its_owner() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("ro");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o500)).unwrap();
        open_up(&dir).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn read_only_directories_links_and_taken_spare_names_do_not_stop_it() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("keep"), "precious").unwrap();
        let top = root.path().join("seat");
        fs::create_dir_all(top.join("a/b/c")).unwrap();
        fs::write(top.join("a/b/c/loot"), "bearer").unwrap();
        fs::write(
            top.join(format!("{HOISTED}0")),
            "a file on the first spare name",
        )
        .unwrap();
        fs::create_dir_all(top.join(format!("{HOISTED}1/x"))).unwrap();
        symlink(&outside, top.join("a/link")).unwrap();
        symlink(outside.join("keep"), top.join("a/b/file-link")).unwrap();
        for dir in ["a/b/c", "a/b", "a"] {
            fs::set_permissions(top.join(dir), fs::Permissions::from_mode(0o500)).unwrap();
        }
        fs::set_permissions(&top, fs::Permissions::from_mode(0o000)).unwrap();
        remove_tree(&top).unwrap();
        assert!(!top.exists());
        assert_eq!(
            fs::read_to_string(outside.join("keep")).unwrap(),
            "precious"
        );
    }

    #[test]
    fn a_missing_root_or_a_file_is_fine() {
        let root = tempfile::tempdir().unwrap();
        remove_tree(&root.path().join("absent")).unwrap();
        let file = root.path().join("file");
        fs::write(&file, "x").unwrap();
        remove_tree(&file).unwrap();
        assert!(!file.exists());
    }
}
