//! The descriptors the command inherits: the files moot-sandbox hands it (sealed memfds), and
//! every other inherited one closed at exec.

use std::fs;
use std::os::fd::RawFd;

use anyhow::{anyhow, Context};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::libc;

/// Writes each file a profile hands its CLI into a sealed memfd the command inherits (no write,
/// grow or shrink is possible once sealed, by anyone), and returns the variables that name them:
/// `$VAR` with `/proc/self/fd/N` appended. Landlock lets a process reopen its own memfd through
/// `/proc/self/fd`.
pub(super) fn hand_files<'a>(
    files: impl Iterator<Item = &'a (&'static str, &'static str, &'static str)>,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for (name, text, _) in files {
        let fd = sealed_memfd(name, text.as_bytes())?;
        let path = format!("/proc/self/fd/{fd}");
        let value = match vars.iter().position(|(n, _)| n == name) {
            Some(at) => format!("{}:{path}", vars.remove(at).1),
            None => match std::env::var(name) {
                Ok(given) if !given.is_empty() => format!("{given}:{path}"),
                _ => path,
            },
        };
        vars.push((name.to_string(), value));
    }
    Ok(vars)
}

/// A memfd holding `bytes`, sealed, left open across exec; its descriptor number.
pub(super) fn sealed_memfd(name: &str, bytes: &[u8]) -> anyhow::Result<i32> {
    let label = std::ffi::CString::new(format!("moot-{name}"))?;
    // SAFETY: memfd_create takes a NUL-terminated name and flags; it returns a new descriptor
    // or -1.
    let fd = unsafe { libc::memfd_create(label.as_ptr(), libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("memfd_create");
    }
    // SAFETY: fd was just created and is owned here; it is deliberately never closed (the
    // command inherits it), so it is turned back into a raw descriptor below.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    std::io::Write::write_all(&mut file, bytes).context("writing it")?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on a descriptor this function owns, with an integer argument.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } < 0 {
        return Err(std::io::Error::last_os_error()).context("sealing it");
    }
    Ok(std::os::fd::IntoRawFd::into_raw_fd(file))
}

/// Marks every descriptor above standard error close-on-exec, so the command inherits only its
/// stdio. Landlock checks opens, not reads and writes: a descriptor the caller opened (a log, a
/// socket, a harness file) would keep its access inside the sandbox. Done before the ruleset
/// exists, while /proc/self/fd is still readable for a kernel older than close_range(2)'s
/// CLOEXEC flag (Linux 5.11).
pub(super) fn close_inherited_descriptors() -> anyhow::Result<()> {
    // SAFETY: a plain system call on this process's own descriptor table.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked == 0 {
        return Ok(());
    }
    mark_listed_descriptors_cloexec()
}

/// [`close_inherited_descriptors`] for a kernel without close_range's CLOEXEC flag.
pub(super) fn mark_listed_descriptors_cloexec() -> anyhow::Result<()> {
    for entry in fs::read_dir("/proc/self/fd").context("listing /proc/self/fd")? {
        let name = entry.context("listing /proc/self/fd")?.file_name();
        let Some(fd) = name.to_str().and_then(|n| n.parse::<RawFd>().ok()) else {
            continue;
        };
        if fd <= 2 {
            continue;
        }
        match fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)) {
            // EBADF: the listing's own descriptor, closed by now.
            Ok(_) | Err(Errno::EBADF) => {}
            Err(e) => return Err(anyhow!("descriptor {fd}: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_marks_every_descriptor_but_stdio_close_on_exec() {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let flags = |fd| FdFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFD).unwrap());
        let file = fs::File::open("/dev/null").unwrap();
        // SAFETY: dup(2) of an open descriptor; the copy is owned by `inherited` alone.
        let inherited = unsafe { OwnedFd::from_raw_fd(libc::dup(file.as_raw_fd())) };
        assert!(!flags(inherited.as_raw_fd()).contains(FdFlag::FD_CLOEXEC));
        let stdio: Vec<FdFlag> = (0..3).map(flags).collect();
        mark_listed_descriptors_cloexec().unwrap();
        assert!(flags(inherited.as_raw_fd()).contains(FdFlag::FD_CLOEXEC));
        assert_eq!((0..3).map(flags).collect::<Vec<_>>(), stdio);
    }

    /// A file handed to the CLI reads back through /proc/self/fd, and nobody can change it.
    #[test]
    fn a_handed_file_is_sealed() {
        let fd = sealed_memfd("TEST", b"mcp:\n  enableProjectConfig: false\n").unwrap();
        let path = format!("/proc/self/fd/{fd}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "mcp:\n  enableProjectConfig: false\n"
        );
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, b"mcp: {}\n"));
        assert!(
            written.is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)),
            "a sealed file was written"
        );
        // SAFETY: the test owns fd and closes it once.
        drop(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    }
}
