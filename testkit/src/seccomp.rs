//! A stand-in for a container's seccomp profile: a process started under it gets `errno` from
//! Landlock's three system calls and everything else as usual, as under a Docker profile
//! without them (EPERM, its default) or a Podman or gVisor one (ENOSYS).

use std::os::unix::process::CommandExt;
use std::process::Command;

use moot::seccomp::Filter;
use nix::libc;

/// Landlock's system calls, as a container profile names them.
pub const LANDLOCK_CALLS: [libc::c_long; 3] = [
    libc::SYS_landlock_create_ruleset,
    libc::SYS_landlock_add_rule,
    libc::SYS_landlock_restrict_self,
];

/// Starts `command` under a filter that answers Landlock's calls with `errno`.
pub fn refusing_landlock(command: &mut Command, errno: i32) -> &mut Command {
    let filter = Filter::denying(&LANDLOCK_CALLS, errno);
    // SAFETY: install() only makes system calls (prctl), as pre_exec requires.
    unsafe { command.pre_exec(move || filter.install()) }
}
