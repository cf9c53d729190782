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
/// first, then the children that re-parents to this process, until there are none. Returns how
/// many were killed, or, past `within` (a process stuck in the kernel), how many are left.
pub fn kill_every_descendant(within: Duration) -> Result<usize, usize> {
    let give_up = Instant::now() + within;
    let mut killed = 0;
    loop {
        reap_all_exited();
        let children = live_children();
        if children.is_empty() {
            return Ok(killed);
        }
        if Instant::now() >= give_up {
            return Err(children.len());
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

fn reap_all_exited() {
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// This process's children that have not exited, from `/proc/<pid>/stat` (a process killed
/// between two reads is seen dead or not at all; either way the next round settles it).
fn live_children() -> Vec<Pid> {
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
                .and_then(|stat| parent_and_state(&stat))
                .is_some_and(|(parent, state)| parent == me && state != b'Z')
        })
        .map(Pid::from_raw)
        .collect()
}

/// The parent pid and state letter of a `/proc/<pid>/stat` line. The command name in
/// parentheses may hold spaces and parentheses itself, so the fields are read after the last
/// `)`: `pid (comm) S ppid …`.
fn parent_and_state(stat: &[u8]) -> Option<(i32, u8)> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let parent = fields.next()?.parse().ok()?;
    Some((parent, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_after_the_last_parenthesis() {
        assert_eq!(
            parent_and_state(b"42 (a) b (c)) S 7 42 42 0 -1\n"),
            Some((7, b'S'))
        );
        assert_eq!(parent_and_state(b"1 (init) Z 0 1"), Some((0, b'Z')));
        assert_eq!(parent_and_state(b"garbage"), None);
        assert_eq!(parent_and_state(b"1 (x)"), None);
    }
}
