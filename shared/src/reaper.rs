//! Nothing a job started outlives it: moot-run is a child subreaper, so every process the
//! command leaves behind (`setsid`, a double fork, a daemon) is re-parented to moot-run when its
//! parent dies, and [`kill_every_descendant`] kills them level by level until none is left.
//!
//! Killing only moot-run's own children, never a pid read from another process's parent link,
//! means no pid is ever signalled after it could have been reused: a child stays a zombie, its
//! pid reserved, until moot-run reaps it.
//!
//! What escapes: a process started on the job's behalf by something outside it (a service
//! manager reached over a pathname UNIX socket, which Landlock does not restrict before ABI 9;
//! SECURITY.md), and every descendant when moot-run itself is killed with SIGKILL (only the
//! command gets its parent-death signal).

use std::fs;
use std::io;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::{getpid, Pid};

/// How often the sweep looks again while killed processes are still dying.
const SWEEP_POLL: Duration = Duration::from_millis(2);

/// Makes this process the reaper of every orphan below it (PR_SET_CHILD_SUBREAPER).
pub fn become_subreaper() -> io::Result<()> {
    prctl::set_child_subreaper(true).map_err(io::Error::from)
}

/// Reaps every exited child except `leader`, and says whether `leader` has exited (it is left
/// unreaped: its pid names the process group, which must not be reused while it is signalled).
pub fn reap_orphans(leader: Pid) -> io::Result<bool> {
    let peek = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    loop {
        match waitid(Id::All, peek) {
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return Ok(false),
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
            Ok(status) => match status.pid() {
                Some(pid) if pid == leader => return Ok(true),
                Some(pid) => reap(pid),
                None => return Ok(false),
            },
        }
    }
}

/// Kills every descendant (the command must be reaped already) and reaps them: the children
/// first, then the children that are re-parented to this process, until the kernel says there
/// is no child left (ECHILD). With no child there is no descendant: a descendant's ancestor
/// just below this process is a child, or was one until it died and handed its children over.
/// `/proc` only says whom to kill; it is read entry by entry, and a child re-parented while it
/// is read may be missed by one round, never by the end. Returns how many were killed, or,
/// past `within` (a process stuck in the kernel), how many children are left.
pub fn kill_every_descendant(within: Duration) -> Result<usize, usize> {
    let give_up = Instant::now() + within;
    let mut killed = 0;
    loop {
        if !reap_all_exited() {
            return Ok(killed);
        }
        // Every state: a child whose main thread has exited shows as a zombie while its other
        // threads (and their children) live on; SIGKILL ends the whole thread group.
        let children = children();
        if Instant::now() >= give_up {
            return Err(children.len().max(1));
        }
        for child in &children {
            if kill(*child, Signal::SIGKILL).is_ok() {
                killed += 1;
            }
        }
        std::thread::sleep(SWEEP_POLL);
    }
}

fn reap(pid: Pid) {
    // ECHILD: already reaped; anything else leaves a zombie the sweep reaps later.
    let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
}

/// Reaps every child that has exited; says whether any child is left.
fn reap_all_exited() -> bool {
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return true,
            Err(Errno::ECHILD) => return false,
            Err(Errno::EINTR) | Ok(_) => {}
            // Not expected with these arguments; the next round asks again.
            Err(_) => return true,
        }
    }
}

/// This process's children, in any state, from `/proc/<pid>/stat`.
fn children() -> Vec<Pid> {
    let me = getpid().as_raw();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            fs::read(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent_of(&stat))
                .is_some_and(|parent| parent == me)
        })
        .map(Pid::from_raw)
        .collect()
}

/// The parent pid of a `/proc/<pid>/stat` line. The command name in parentheses may hold
/// spaces and parentheses itself, so the fields are read after the last `)`:
/// `pid (comm) S ppid …`.
fn parent_of(stat: &[u8]) -> Option<i32> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    rest.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_after_the_last_parenthesis() {
        assert_eq!(parent_of(b"42 (a) b (c)) S 7 42 42 0 -1\n"), Some(7));
        assert_eq!(parent_of(b"1 (init) Z 0 1"), Some(0));
        assert_eq!(parent_of(b"garbage"), None);
        assert_eq!(parent_of(b"1 (x)"), None);
    }
}
