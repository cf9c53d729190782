//! Small files another process reads as a whole (moot-run's status file, a parser's session
//! file): written to a private (0600) temporary file in the same directory and renamed over the
//! target, so a reader sees either nothing or all of it.

use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` atomically; the file is 0600.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
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
}
