//! The seat's guard: a process of its own that removes the seat when moot-broker dies without
//! removing it (SIGKILL, the OOM killer), since the seat holds the job bearer and omp's cache of
//! the provider's credential.
//!
//! moot-broker forks it while it still has one thread, and tells it over a pipe which directory
//! it made (by device and inode, so a later job's seat at the same path is never touched) and
//! that it removed it itself. A pipe closed before that means moot-broker died, and the guard
//! removes the seat. It runs in a session of its own, so a signal to the job's process group
//! does not end it with the job.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::libc;
use nix::sys::signal::SigSet;
use nix::unistd::{dup2, fork, pipe2, setsid, ForkResult};

/// How long the guard keeps trying: the command may still be writing in the seat while
/// moot-run's grace runs out after moot-broker's death.
const SWEEP_TRIES: u32 = 150;
const SWEEP_PAUSE: Duration = Duration::from_millis(200);

/// The broker's end of the pipe to the guard.
#[derive(Debug)]
pub struct Guard {
    pipe: File,
}

/// A directory's identity: its device and inode.
type DirId = (u64, u64);

impl Guard {
    /// Forks the guard of the seat `dir`.
    ///
    /// # Safety
    /// The process must have one thread: the child runs ordinary Rust code (it allocates), which
    /// is sound after `fork` only when no other thread could have held a lock.
    pub unsafe fn start(dir: &Path) -> io::Result<Guard> {
        // Close-on-exec: the command must not inherit the write end, or the agent could hold the
        // guard off (or tell it the seat is gone) through /proc/self/fd.
        let (read, write) = pipe2(OFlag::O_CLOEXEC)?;
        // SAFETY: the caller guarantees one thread, so the child's copy of memory is consistent.
        match unsafe { fork() }? {
            ForkResult::Parent { .. } => Ok(Guard {
                pipe: File::from(write),
            }),
            ForkResult::Child => {
                drop(write);
                keep_watch(read, dir.to_path_buf())
            }
        }
    }

    /// Tells the guard the seat exists; from now on moot-broker's death removes it.
    pub fn made(&mut self, dir: &Path) -> io::Result<()> {
        let meta = std::fs::symlink_metadata(dir)?;
        writeln!(self.pipe, "made {} {}", meta.dev(), meta.ino())
    }

    /// Tells the guard moot-broker removed the seat itself; the guard then ends touching nothing.
    pub fn removed(mut self) {
        let _ = writeln!(self.pipe, "removed");
    }
}

/// The guard's life: leave the job's session and stdio, wait for the pipe to close, and remove
/// the seat unless moot-broker said it did.
fn keep_watch(pipe: OwnedFd, dir: PathBuf) -> ! {
    let _ = setsid();
    // moot-broker reads its signals from a signalfd with them blocked; the guard takes them as
    // any process does, so a TERM aimed at it ends it.
    let _ = SigSet::empty().thread_set_mask();
    // Shown by ps and top, so the process left after moot-broker explains itself.
    let _ = nix::sys::prctl::set_name(c"moot-seat-guard");
    let pipe = detach(pipe);
    let mut said = String::new();
    let _ = pipe.take(4096).read_to_string(&mut said);
    if let Some(id) = unremoved(&said) {
        sweep(&dir, id);
    }
    // SAFETY: ends the forked child without running the parent's exit handlers or flushing its
    // buffered stdio a second time.
    unsafe { libc::_exit(0) }
}

/// Points stdin and stdout at /dev/null (a pipeline's reader must not wait for the guard),
/// keeps stderr for its one complaint, and closes every other inherited descriptor but the pipe.
fn detach(pipe: OwnedFd) -> File {
    if let Ok(null) = File::options().read(true).write(true).open("/dev/null") {
        let _ = dup2(null.as_raw_fd(), 0);
        let _ = dup2(null.as_raw_fd(), 1);
    }
    let fd = pipe.into_raw_fd();
    // SAFETY: plain system calls. On a kernel without close_range the few descriptors inherited
    // at the fork (the signalfd, copies of the broker's stdio) stay open, harmlessly.
    unsafe {
        if fd > 3 {
            libc::syscall(libc::SYS_close_range, 3u32, fd as u32 - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, fd as u32 + 1, u32::MAX, 0u32);
    }
    // SAFETY: `fd` is the pipe's read end, open, and owned by nothing else in this process.
    unsafe { File::from_raw_fd(fd) }
}

/// The seat's identity if moot-broker made it and did not say it removed it.
fn unremoved(said: &str) -> Option<DirId> {
    let mut made = None;
    for line in said.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["made", dev, ino] => made = dev.parse().ok().zip(ino.parse().ok()),
            ["removed"] => return None,
            _ => {}
        }
    }
    made
}

/// Removes `dir` while it is still the directory `id` (shared/src/tree.rs), trying again while the
/// dying command writes in it.
pub fn sweep(dir: &Path, id: DirId) -> bool {
    let mut last = None;
    for _ in 0..SWEEP_TRIES {
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if (meta.dev(), meta.ino()) == id => {}
            _ => return true,
        }
        match moot::tree::remove_tree(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
            Err(e) => last = Some(e),
        }
        std::thread::sleep(SWEEP_PAUSE);
    }
    if let Some(e) = last {
        moot::eprintln_whole!(
            "moot-broker: the seat's guard cannot remove the seat ({}): {e}",
            dir.display()
        );
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_made_and_unremoved_seat_is_swept() {
        assert_eq!(unremoved("made 1 2\n"), Some((1, 2)));
        assert_eq!(unremoved("made 1 2\nremoved\n"), None);
        assert_eq!(unremoved(""), None, "died before making it");
        assert_eq!(unremoved("made 1 2\nremov"), Some((1, 2)), "a cut word");
        assert_eq!(unremoved("made x 2\n"), None);
    }

    #[test]
    fn a_sweep_spares_another_directory_at_the_same_path() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("seat");
        std::fs::create_dir(&dir).unwrap();
        let meta = std::fs::metadata(&dir).unwrap();
        let stale = (meta.dev(), meta.ino().wrapping_add(1));
        assert!(sweep(&dir, stale));
        assert!(dir.exists(), "a later job's seat was removed");
        std::fs::write(dir.join("cache"), "credential").unwrap();
        assert!(sweep(&dir, (meta.dev(), meta.ino())));
        assert!(!dir.exists());
    }
}
