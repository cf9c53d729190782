//! The environment a job runs in, as far as confinement goes: whether Landlock answers and, when
//! it does not, whether a seccomp filter (a container's profile) is what refuses it; the
//! process's seccomp mode and `no_new_privs`; the container, if one can be told from `/proc` and
//! the files container engines leave; whether user namespaces can be made. moot-doctor reports
//! it (`--environment`), and moot-sandbox's refusal names the seccomp profile instead of the
//! kernel when that is the cause.

use std::fs;
use std::path::Path;

use nix::errno::Errno;
use nix::libc;
use serde::Serialize;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask the kernel for its ABI, create nothing.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// The kernel's answer to Landlock's version query: its ABI, or the errno.
pub fn landlock_version() -> Result<i32, Errno> {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call reads and writes no
    // memory; it returns the ABI or -1 with errno.
    let answer = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if answer < 0 {
        Err(Errno::last())
    } else {
        Ok(i32::try_from(answer).unwrap_or(i32::MAX))
    }
}

/// The errno a seccomp filter answers Landlock's version query with, when one does: EPERM
/// (which the kernel itself never answers there: Docker's default for a call its profile does
/// not list), or ENOSYS while a filter is active (Podman's default, and gVisor's), unless the
/// kernel's list of security modules, when it can be read, says it has no Landlock at all.
pub fn landlock_filtered() -> Option<Errno> {
    match landlock_version() {
        Err(Errno::EPERM) => Some(Errno::EPERM),
        Err(Errno::ENOSYS) if status_field("Seccomp").as_deref() == Some("2") => {
            let kernel_has_none = fs::read_to_string("/sys/kernel/security/lsm")
                .is_ok_and(|lsm| !lsm.split(',').any(|m| m.trim() == "landlock"));
            (!kernel_has_none).then_some(Errno::ENOSYS)
        }
        _ => None,
    }
}

/// A field of `/proc/self/status` (`Seccomp`, `NoNewPrivs`, ...), trimmed.
fn status_field(name: &str) -> Option<String> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key == name).then(|| value.trim().to_string())
    })
}

/// What moot-doctor reports of the environment.
#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    /// `available`, `refused_by_seccomp`, `not_enabled` (built in, off at boot) or
    /// `not_implemented` (not in this kernel).
    pub landlock: &'static str,
    /// The kernel's Landlock ABI, when it answers.
    pub landlock_abi: Option<i32>,
    /// The errno of the version query, when it failed (`ENOSYS`, `EPERM`, `EOPNOTSUPP`).
    pub landlock_errno: Option<String>,
    /// Whether moot-sandbox can confine a command here: Landlock answers, and a probe that
    /// confines a throwaway thread saw a write outside its grant denied.
    pub enforces: bool,
    /// This process's seccomp mode: `disabled`, `strict` or `filter`.
    pub seccomp: String,
    /// How many seccomp filters this process runs under (the kernel's count, when it gives one).
    pub seccomp_filters: Option<u32>,
    /// Whether this process already runs with `no_new_privs` (a container runtime sets it for a
    /// job with `allowPrivilegeEscalation: false` or `--security-opt no-new-privileges`).
    pub no_new_privs: bool,
    /// The container engine, when one can be told (`kubernetes`, `podman`, `docker`, the value
    /// of PID 1's `container=` variable, ...).
    pub container: Option<String>,
    /// What told it: the file or variable read.
    pub container_evidence: Option<String>,
    /// Whether a user namespace can be made here (`available`), or why not. moot needs none;
    /// sandboxes that rely on them (bubblewrap, codex's own) fail where they cannot be made.
    pub user_namespaces: String,
}

impl Environment {
    /// Looks at this process and its host. `enforces` is the probe's verdict (check.rs), given
    /// by the caller.
    pub fn detect(enforces: bool) -> Self {
        let (landlock, landlock_abi, landlock_errno) = match landlock_version() {
            Ok(abi) => ("available", Some(abi), None),
            Err(errno) => {
                let state = if landlock_filtered().is_some() {
                    "refused_by_seccomp"
                } else if errno == Errno::EOPNOTSUPP {
                    "not_enabled"
                } else {
                    "not_implemented"
                };
                (state, None, Some(format!("{errno:?}")))
            }
        };
        let (container, container_evidence) = match container() {
            Some((kind, evidence)) => (Some(kind), Some(evidence)),
            None => (None, None),
        };
        Environment {
            landlock,
            landlock_abi,
            landlock_errno,
            enforces,
            seccomp: match status_field("Seccomp").as_deref() {
                Some("0") => "disabled".to_string(),
                Some("1") => "strict".to_string(),
                Some("2") => "filter".to_string(),
                Some(other) => other.to_string(),
                None => "unknown".to_string(),
            },
            seccomp_filters: status_field("Seccomp_filters").and_then(|n| n.parse().ok()),
            no_new_privs: status_field("NoNewPrivs").as_deref() == Some("1"),
            container,
            container_evidence,
            user_namespaces: user_namespaces(),
        }
    }

    /// One `(what, found)` pair per line of moot-doctor's table.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        let landlock = match (self.landlock_abi, &self.landlock_errno) {
            (Some(abi), _) if self.enforces => format!("ABI {abi}, enforced (probe passed)"),
            (Some(abi), _) => format!("ABI {abi}, NOT enforced (the probe failed)"),
            (None, errno) => format!(
                "{}: {}",
                self.landlock.replace('_', " "),
                errno.as_deref().unwrap_or("-")
            ),
        };
        let seccomp = match self.seccomp_filters {
            Some(n) if self.seccomp == "filter" => format!("filter ({n} filters)"),
            _ => self.seccomp.clone(),
        };
        let container = match (&self.container, &self.container_evidence) {
            (Some(kind), Some(evidence)) => format!("{kind} ({evidence})"),
            (Some(kind), None) => kind.clone(),
            (None, _) => "none detected".to_string(),
        };
        vec![
            ("Landlock", landlock),
            ("seccomp", seccomp),
            (
                "no_new_privs",
                if self.no_new_privs { "on" } else { "off" }.into(),
            ),
            ("container", container),
            ("user namespaces", self.user_namespaces.clone()),
        ]
    }
}

/// The container engine and what told it, most specific first: Kubernetes sets its service
/// variables in every pod; Podman leaves `/run/.containerenv` (its `engine=` line names it),
/// Docker `/.dockerenv`; systemd-nspawn, LXC and Podman set `container=` in PID 1's
/// environment; a cgroup path names the others.
fn container() -> Option<(String, String)> {
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        return Some(("kubernetes".into(), "KUBERNETES_SERVICE_HOST".into()));
    }
    if let Ok(text) = fs::read_to_string("/run/.containerenv") {
        let engine = text
            .lines()
            .find_map(|line| line.strip_prefix("engine=\""))
            .and_then(|rest| rest.split(['-', '"']).next())
            .filter(|name| !name.is_empty())
            .unwrap_or("podman");
        return Some((engine.to_string(), "/run/.containerenv".into()));
    }
    if Path::new("/.dockerenv").exists() {
        return Some(("docker".into(), "/.dockerenv".into()));
    }
    if let Ok(environ) = fs::read("/proc/1/environ") {
        let found = environ
            .split(|b| *b == 0)
            .find_map(|var| var.strip_prefix(b"container="))
            .filter(|value| !value.is_empty());
        if let Some(value) = found {
            return Some((
                String::from_utf8_lossy(value).into_owned(),
                "container= in /proc/1/environ".into(),
            ));
        }
    }
    let cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
    [
        ("kubepods", "kubernetes"),
        ("libpod", "podman"),
        ("docker", "docker"),
        ("containerd", "containerd"),
        ("lxc", "lxc"),
    ]
    .into_iter()
    .find(|(mark, _)| cgroup.contains(mark))
    .map(|(_, kind)| (kind.to_string(), "/proc/self/cgroup".into()))
}

/// Whether this process may make a user namespace: tried in a child (a multithreaded process
/// cannot `unshare(CLONE_NEWUSER)` itself), which exits with the errno.
fn user_namespaces() -> String {
    if let Ok(max) = fs::read_to_string("/proc/sys/user/max_user_namespaces") {
        if max.trim() == "0" {
            return "unavailable: user.max_user_namespaces is 0".into();
        }
    }
    // SAFETY: the child only calls unshare(2) and _exit(2), both async-signal-safe.
    match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => {
            let code = match nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWUSER) {
                Ok(()) => 0,
                Err(errno) => errno as i32,
            };
            // SAFETY: ends the child without running the parent's destructors or handlers.
            unsafe { libc::_exit(code.clamp(0, 255)) }
        }
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            match nix::sys::wait::waitpid(child, None) {
                Ok(nix::sys::wait::WaitStatus::Exited(_, 0)) => "available".into(),
                Ok(nix::sys::wait::WaitStatus::Exited(_, code)) => {
                    format!(
                        "unavailable: unshare(CLONE_NEWUSER) {:?}",
                        Errno::from_raw(code)
                    )
                }
                other => format!("unknown: the probe ended as {other:?}"),
            }
        }
        Err(errno) => format!("unknown: fork {errno:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_described() {
        let env = Environment::detect(true);
        // The test machine has Landlock (CI asserts it elsewhere); whatever it has, the
        // version query and the state agree.
        assert_eq!(env.landlock == "available", env.landlock_abi.is_some());
        assert_eq!(env.landlock_abi.is_none(), env.landlock_errno.is_some());
        assert!(["disabled", "strict", "filter"].contains(&env.seccomp.as_str()));
        assert_eq!(env.rows().len(), 5);
    }
}
