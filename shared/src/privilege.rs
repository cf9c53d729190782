//! What a process gives up before it runs an agent, beyond Landlock: capabilities, its user,
//! and the right of processes of the same user to read it through `/proc`.
//!
//! Landlock confines paths and ports for root as for anyone, but root with capabilities can
//! still chmod, chown and utime files it was never granted (as their owner or with
//! CAP_FOWNER), make device nodes (CAP_MKNOD), read other processes' `/proc/<pid>/environ`
//! (CAP_SYS_PTRACE) and open raw sockets (CAP_NET_RAW). moot-sandbox therefore drops every
//! capability from every set before it execs the command, and can switch to another user.

use std::io;

use anyhow::{anyhow, Context};
use nix::errno::Errno;
use nix::libc;
use nix::sys::prctl;
use nix::unistd::{setgroups, setresgid, setresuid, Gid, Group, Uid, User};

/// Marks this process undumpable, so a process of the same user without CAP_SYS_PTRACE cannot
/// read its `/proc/<pid>/environ`, `mem` or `cmdline`-adjacent state: moot's tools hold the
/// caller's whole environment, secrets that `--env-preset` keeps from the agent included.
/// Landlock already refuses such a read (PTRACE_MODE_READ) from a sandboxed agent to any
/// process outside its own domain; this covers the processes of the same user that no seat
/// confines. exec resets the flag, so the agent CLI a tool starts is dumpable as usual, and a
/// tool is dumpable from its exec until this call: what it must never show (the provider's key)
/// is kept out of its environment (`keyless_env` in net/src/broker/mod.rs). Best effort: the
/// call cannot fail on Linux.
pub fn hide_from_same_user() {
    let _ = prctl::set_dumpable(false);
}

/// The capability sets of this thread, from `/proc/thread-self/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapSets {
    pub inheritable: u64,
    pub permitted: u64,
    pub effective: u64,
    pub bounding: u64,
    pub ambient: u64,
}

impl CapSets {
    pub fn read() -> io::Result<Self> {
        let status = std::fs::read_to_string("/proc/thread-self/status")?;
        let field = |name: &str| -> io::Result<u64> {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
                .ok_or_else(|| io::Error::other(format!("no {name} in /proc/thread-self/status")))
        };
        Ok(CapSets {
            inheritable: field("CapInh:")?,
            permitted: field("CapPrm:")?,
            effective: field("CapEff:")?,
            bounding: field("CapBnd:")?,
            ambient: field("CapAmb:")?,
        })
    }

    /// Whether an exec from here can hold no capability: none in the four process sets, and
    /// for root an empty bounding set too (root's exec would otherwise refill permitted).
    pub fn none_after_exec(&self, euid: u32) -> bool {
        let process_sets = self.inheritable | self.permitted | self.effective | self.ambient;
        process_sets == 0 && (euid != 0 || self.bounding == 0)
    }
}

/// Who the command runs as (`--user NAME|UID[:GROUP|GID]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub uid: Uid,
    pub gid: Gid,
}

impl Identity {
    /// Reads `USER[:GROUP]`: names are looked up in the user and group databases; numbers are
    /// taken as they are. Without a group, the user's primary group (or, for a bare number
    /// that names no user, the same number). A number needs no database: a container image
    /// without /etc/passwd runs `--user 65534:65534`.
    pub fn parse(spec: &str) -> anyhow::Result<Self> {
        let (user, group) = match spec.split_once(':') {
            Some((user, group)) => (user, Some(group)),
            None => (spec, None),
        };
        if user.is_empty() || group.is_some_and(str::is_empty) {
            anyhow::bail!("--user ({spec}): give USER or USER:GROUP");
        }
        let (uid, primary_group) = match user.parse::<u32>() {
            Ok(number) => {
                let uid = Uid::from_raw(number);
                // No database to read (ENOENT from a missing /etc/passwd) names no user.
                (
                    uid,
                    User::from_uid(uid).ok().flatten().map(|found| found.gid),
                )
            }
            Err(_) => {
                let found = User::from_name(user)
                    .with_context(|| format!("--user ({spec}): cannot read the user database"))?
                    .ok_or_else(|| anyhow!("--user ({spec}): no user named {user}"))?;
                (found.uid, Some(found.gid))
            }
        };
        let gid = match group {
            Some(group) => match group.parse::<u32>() {
                Ok(gid) => Gid::from_raw(gid),
                Err(_) => {
                    Group::from_name(group)
                        .with_context(|| {
                            format!("--user ({spec}): cannot read the group database")
                        })?
                        .ok_or_else(|| anyhow!("--user ({spec}): no group named {group}"))?
                        .gid
                }
            },
            None => primary_group.unwrap_or(Gid::from_raw(uid.as_raw())),
        };
        if uid.is_root() || gid.as_raw() == 0 {
            anyhow::bail!("--user ({spec}): that is root's; name an unprivileged user and group");
        }
        Ok(Identity { uid, gid })
    }
}

/// Becomes `identity`: no supplementary groups, then the group, then the user (real, effective
/// and saved, so there is no way back). Leaving uid 0 clears every capability but the bounding
/// set, which [`drop_capabilities`] empties first.
pub fn switch_user(identity: &Identity) -> anyhow::Result<()> {
    setgroups(&[]).context("cannot drop supplementary groups (setgroups)")?;
    setresgid(identity.gid, identity.gid, identity.gid).context("cannot set the group")?;
    setresuid(identity.uid, identity.uid, identity.uid).context("cannot set the user")?;
    Ok(())
}

/// Empties the bounding and ambient sets. The bounding set needs CAP_SETPCAP to shrink; a
/// process without it (already unprivileged) is left as it is, since no_new_privs and empty
/// process sets already keep an exec from gaining anything.
pub fn drop_bounding_and_ambient() -> anyhow::Result<()> {
    // SAFETY: prctl with integer arguments only.
    let cleared = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    // EINVAL: a kernel without ambient capabilities (before 4.3), which has none to clear.
    if cleared != 0 && Errno::last() != Errno::EINVAL {
        return Err(Errno::last()).context("cannot clear the ambient capabilities");
    }
    for cap in 0..=last_capability() {
        // SAFETY: as above.
        let dropped = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        match (dropped, Errno::last()) {
            (0, _) => {}
            (_, Errno::EPERM) => return Ok(()),
            (_, Errno::EINVAL) => break,
            (_, errno) => {
                return Err(errno).with_context(|| format!("cannot drop capability {cap}"))
            }
        }
    }
    Ok(())
}

/// Empties the effective, permitted and inheritable sets (always allowed: it only gives up).
pub fn clear_process_capabilities() -> anyhow::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const VERSION_3: u32 = 0x2008_0522;
    let header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset(2) reads one header and two data structs (version 3), both live here.
    let result = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    if result != 0 {
        return Err(Errno::last()).context("cannot clear the capabilities (capset)");
    }
    Ok(())
}

/// The highest capability number this kernel knows.
fn last_capability() -> libc::c_ulong {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(63)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_specs_resolve_names_and_numbers() {
        assert_eq!(
            Identity::parse("65534:65534").unwrap(),
            Identity {
                uid: Uid::from_raw(65534),
                gid: Gid::from_raw(65534)
            }
        );
        let nobody = Identity::parse("nobody").unwrap();
        assert_eq!(nobody.uid, Uid::from_raw(65534));
        assert_eq!(Identity::parse("4242").unwrap().gid, Gid::from_raw(4242));
        for bad in [
            "",
            ":",
            "nobody:",
            "root",
            "0",
            "nobody:0",
            "nobody:root",
            "no-such-user-xyz",
            "nobody:no-such-group",
        ] {
            assert!(Identity::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn capability_sets_are_read_from_proc() {
        let sets = CapSets::read().unwrap();
        assert!(sets.bounding != 0, "a test runner has a bounding set");
    }
}
