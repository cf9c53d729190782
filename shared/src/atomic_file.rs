//! Small files another process reads as a whole (moot-run's status file, a parser's session
//! file): written to a private (0600) temporary file in the same directory and renamed over the
//! target, so a reader sees either nothing or all of it.

use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` atomically; the file is 0600.
///
/// A character device (`/dev/null`, a terminal, or a link to one such as `/dev/stdout`) is
/// written in place: renaming over it would replace the device or the link with a regular file,
/// for every program on the machine when moot runs as root. A FIFO or a socket is refused
/// rather than replaced (a FIFO could also hold the writer until a reader comes).
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::metadata(path).map(|meta| meta.file_type()) {
        Ok(kind) if kind.is_char_device() => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)?
                .write_all(bytes);
        }
        Ok(kind) if kind.is_fifo() || kind.is_socket() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "is a FIFO or a socket, not a file to write",
            ));
        }
        _ => {}
    }
    let dir = crate::private_file::parent_dir(path);
    let mut file = tempfile::Builder::new().prefix(".moot-").tempfile_in(dir)?;
    file.write_all(bytes)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use moot_testkit::fs::mode;

    #[test]
    fn writes_a_private_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status.json");
        super::write(&path, b"{}\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_device_is_written_in_place_and_a_fifo_is_refused() {
        use std::os::unix::fs::FileTypeExt;
        super::write(std::path::Path::new("/dev/null"), b"{}\n").unwrap();
        let null = std::fs::symlink_metadata("/dev/null").unwrap();
        assert!(null.file_type().is_char_device(), "/dev/null was replaced");
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("stdout");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        super::write(&link, b"{}\n").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        assert!(super::write(&fifo, b"x").is_err());
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
    }
}
