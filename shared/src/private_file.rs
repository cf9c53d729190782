//! Files the harness writes or reads by name in a place an agent may have reached first: the
//! transcript and stderr file moot-run writes, the status file a parser reads. An agent can
//! plant a symlink (to make moot overwrite and chmod a file of the operator's), a hard link, a
//! FIFO (to hang moot) or a device (`/dev/zero`, to exhaust memory) under the expected name, so
//! these are opened without following a final symlink and without blocking, and then refused
//! unless they are plain regular files.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use nix::fcntl::{fcntl, FcntlArg, OFlag};

/// Why a name was refused.
fn refused(why: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why.into())
}

/// What an open of a planted name failed with, said plainly.
fn explain(error: io::Error) -> io::Error {
    match error.raw_os_error() {
        Some(code) if code == nix::libc::ELOOP => {
            refused("is a symbolic link: refusing to follow it (remove it, or name another file)")
        }
        Some(code) if code == nix::libc::ENXIO => {
            refused("is a FIFO or socket with no reader: not a regular file")
        }
        _ => error,
    }
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let kind = meta.file_type();
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn require_regular(file: &File) -> io::Result<std::fs::Metadata> {
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(refused(format!(
            "is {}, not a regular file",
            kind_of(&meta)
        )));
    }
    Ok(meta)
}

/// Creates or truncates `path` for writing, private (0600): a transcript or stderr file carries
/// prompts, answers and sometimes credentials. A symlink, a non-regular file or a file with
/// other hard links is refused before a byte of it changes.
pub fn create_private(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(explain)?;
    let meta = require_regular(&file)?;
    if meta.nlink() > 1 {
        return Err(refused(format!(
            "has {} hard links: writing it would change another file; remove it first",
            meta.nlink()
        )));
    }
    file.set_len(0)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    blocking(&file)?;
    Ok(file)
}

/// Reads a small file the harness wrote (a status file): a regular file, not through a final
/// symlink, at most `limit` bytes. A FIFO never blocks the reader, a device never floods it.
pub fn read_small(path: &Path, limit: usize) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Err(refused(format!(
            "is larger than {limit} bytes: not a file moot wrote"
        )));
    }
    Ok(bytes)
}

/// Opens a regular file for reading, not through a final symlink; a FIFO or device under the
/// name is refused without blocking (kimi's stderr file, read whole once the run is over).
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(explain)?;
    require_regular(&file)?;
    Ok(file)
}

/// What a name pointed at when a run started, to tell at its end that it still does. An agent
/// that can rename the directory holding the harness's files (one inside a writable grant)
/// could otherwise make moot-run write its status into a directory of the agent's choosing, or
/// leave a forged transcript under the name a replay reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        }
    }

    /// The file or directory `path` names now, symlinks followed.
    pub fn at(path: &Path) -> io::Result<Self> {
        std::fs::metadata(path).map(|meta| FileId::of(&meta))
    }

    /// The file `path` names now, a final symlink not followed.
    pub fn of_name(path: &Path) -> io::Result<Self> {
        std::fs::symlink_metadata(path).map(|meta| FileId::of(&meta))
    }
}

/// The directory a file named by `path` is in (`.` for a bare name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Clears O_NONBLOCK again: it was only there so that opening a planted FIFO cannot hang.
fn blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot_testkit::fs::{mode, write_with_mode};
    use std::fs;

    #[test]
    fn a_planted_symlink_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.conf");
        write_with_mode(&victim, "keep", 0o644);
        let link = dir.path().join("run.ndjson");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let error = create_private(&link).unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(read_small(&link, 10).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(mode(&victim), 0o644);
    }

    #[test]
    fn hard_links_fifos_and_devices_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "keep").unwrap();
        let hard = dir.path().join("hard");
        fs::hard_link(&victim, &hard).unwrap();
        assert!(create_private(&hard)
            .unwrap_err()
            .to_string()
            .contains("hard links"));
        assert_eq!(fs::read_to_string(&victim).unwrap(), "keep");

        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(read_small(&fifo, 10)
            .unwrap_err()
            .to_string()
            .contains("FIFO"));
        assert!(create_private(&fifo).is_err());
        let zero = read_small(Path::new("/dev/zero"), 10).unwrap_err();
        assert!(zero.to_string().contains("a device"), "{zero}");
    }

    #[test]
    fn reads_are_bounded_and_writes_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status");
        fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_small(&path, 10).unwrap(), b"0123456789");
        assert!(read_small(&path, 9)
            .unwrap_err()
            .to_string()
            .contains("larger"));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        let mut file = create_private(&path).unwrap();
        std::io::Write::write_all(&mut file, b"x").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"x");
        assert_eq!(mode(&path), 0o600);
    }
}
