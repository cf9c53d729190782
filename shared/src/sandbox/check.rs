//! `moot-sandbox --check`: which rights this kernel enforces, found by a probe that confines a
//! throwaway thread and never its caller, and what Landlock does not cover at all.

use std::fmt;
use std::fs;
use std::path::Path;
use std::process::ExitCode;

use anyhow::anyhow;
use landlock::{
    CompatLevel, LandlockStatus, PathBeneath, PathFd, RestrictSelf, RulesetStatus, ABI,
};
use nix::errno::Errno;
use nix::sys::prctl;
use serde::{Deserialize, Serialize};

use super::environment;
use super::policy::{open_rules, restrict_self, Grant, PathRule, Policy, Rights, TARGET_ABI};
use super::{write_stdout, Refusal, EXIT_CANNOT_ENFORCE};

/// What the running kernel offers. Used only to explain and to refuse early: the ruleset itself
/// is built from [`TARGET_ABI`] and the crate's compatibility handling.
#[derive(Debug, Clone, Copy)]
pub(super) enum Support {
    Available {
        abi: ABI,
        raw: i32,
    },
    /// A seccomp filter answers Landlock's calls with this errno: a container's profile.
    Filtered(Errno),
    NotEnabled,
    NotImplemented,
}

impl Support {
    pub(super) fn detect() -> Self {
        // With no flag to apply and no_new_privs off, this only asks the kernel for its ABI.
        match RestrictSelf::default().no_new_privs(false).apply() {
            Ok(status) => match status.landlock {
                LandlockStatus::Available {
                    effective_abi,
                    kernel_abi,
                } => Support::Available {
                    abi: effective_abi,
                    raw: kernel_abi.unwrap_or(abi_number(effective_abi)),
                },
                LandlockStatus::NotEnabled => Support::NotEnabled,
                LandlockStatus::NotImplemented => Self::unimplemented(),
            },
            Err(_) => Self::unimplemented(),
        }
    }

    /// No Landlock answered: a seccomp filter in the way, or none in the kernel.
    fn unimplemented() -> Self {
        environment::landlock_filtered().map_or(Support::NotImplemented, Support::Filtered)
    }

    pub(super) fn is_available(&self) -> bool {
        matches!(self, Support::Available { .. })
    }

    /// The rights moot-sandbox can have enforced here: those of the kernel's ABI, up to the target.
    pub(super) fn enforceable(&self) -> Rights {
        match *self {
            Support::Available { abi, .. } => Rights::of_abi(abi.min(TARGET_ABI)),
            Support::Filtered(_) | Support::NotEnabled | Support::NotImplemented => Rights::NONE,
        }
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Support::Available { raw, .. } => write!(f, "kernel Landlock ABI {raw}"),
            Support::Filtered(errno) => write!(
                f,
                "a seccomp filter answers Landlock's system calls with {errno:?}: the \
                 container's seccomp profile must allow landlock_create_ruleset, \
                 landlock_add_rule and landlock_restrict_self, as the default profiles of \
                 Docker, Podman and containerd do"
            ),
            Support::NotEnabled => write!(
                f,
                "Landlock is built into this kernel but not enabled: add landlock to the lsm= \
                 boot parameter"
            ),
            Support::NotImplemented => write!(
                f,
                "this kernel has no Landlock: it needs CONFIG_SECURITY_LANDLOCK=y"
            ),
        }
    }
}

pub(super) fn abi_number(abi: ABI) -> i32 {
    abi as i32
}

/// `--check`'s report.
#[derive(Debug, Serialize, Deserialize)]
pub struct CheckReport {
    /// `available`, `refused_by_seccomp` (a container's seccomp profile answers its calls),
    /// `not_enabled` (built in, off at boot) or `not_implemented` (not built in).
    pub landlock: String,
    /// The kernel's Landlock ABI, when it has Landlock.
    pub kernel_abi: Option<i32>,
    /// The newest ABI this build uses.
    pub target_abi: i32,
    /// The rights of the target ABI this kernel enforces.
    pub enforceable: Vec<String>,
    /// The rights of the target ABI it does not, with the ABI each needs.
    pub not_enforceable: Vec<String>,
    /// What the sandbox does not restrict on any kernel, and why ([`NOT_COVERED`]).
    pub not_covered: Vec<Uncovered>,
    pub probe: Probe,
}

/// Something the sandbox leaves open, said plainly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Uncovered {
    pub what: String,
    pub why: String,
}

/// What moot-sandbox does not restrict, whatever the kernel: `--check` reports it and the man
/// page's "Not covered" section lists every name.
pub const NOT_COVERED: &[(&str, &str)] = &[
    (
        "chmod",
        "Landlock does not mediate file modes: the command can chmod any file it owns that it \
         can name, granted or not (root without capabilities owns root's files); run it as \
         another user with --user",
    ),
    (
        "chown",
        "not mediated; needs CAP_CHOWN (dropped unless --keep-caps) except to change the group \
         of one's own files",
    ),
    (
        "utime",
        "not mediated: the command can change the times of files it owns; use --user",
    ),
    (
        "xattr",
        "extended attributes of files the command owns are not mediated; use --user",
    ),
    (
        "unix_socket_pathname",
        "connecting to a pathname UNIX socket (docker, systemd) is restricted only from \
         Landlock ABI 9, which this build does not target",
    ),
    (
        "udp",
        "UDP and other non-TCP protocols are restricted only from Landlock ABI 10, which this \
         build does not target",
    ),
    (
        "stat_access",
        "stat(2) and access(2) are not mediated: a denied file may appear to exist and be \
         readable",
    ),
    (
        "proc_same_sandbox",
        "processes inside the same sandbox can read each other's /proc/<pid>/environ (Landlock \
         separates sandboxes, not the processes in one); moot-run makes itself undumpable for \
         that reason. Outside the sandbox nothing is readable once capabilities are dropped; \
         with --keep-caps, root reads every process",
    ),
    (
        "inherited_descriptors",
        "standard input, output and error keep the access they were opened with; every other \
         inherited descriptor is closed at exec",
    ),
];

pub(super) fn not_covered() -> Vec<Uncovered> {
    NOT_COVERED
        .iter()
        .map(|(what, why)| Uncovered {
            what: what.to_string(),
            why: why.to_string(),
        })
        .collect()
}

/// The self-probe: a thread restricts itself to one writable directory, then writes inside it
/// and beside it.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Probe {
    /// The allowed write succeeded, the denied one failed with EACCES, no_new_privs was set.
    pub passed: bool,
    /// `fully_enforced`, `partially_enforced` or `not_enforced`.
    pub ruleset: Option<String>,
    pub no_new_privs: bool,
    pub allowed_write: Attempt,
    pub denied_write: Attempt,
    /// Why the probe could not run, if it could not.
    pub error: Option<String>,
}

/// One write of the probe.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Attempt {
    pub succeeded: bool,
    /// The error's name (`EACCES`) when it failed.
    pub errno: Option<String>,
}

impl Attempt {
    fn of(result: std::io::Result<()>) -> Self {
        match result {
            Ok(()) => Attempt {
                succeeded: true,
                errno: None,
            },
            Err(e) => Attempt {
                succeeded: false,
                errno: Some(format!(
                    "{:?}",
                    Errno::from_raw(e.raw_os_error().unwrap_or(0))
                )),
            },
        }
    }
}

pub(super) fn check() -> Result<ExitCode, Refusal> {
    let support = Support::detect();
    let target = Rights::of_abi(TARGET_ABI);
    let enforceable = support.enforceable();
    let missing = target.minus(enforceable);
    let probe = if support.is_available() {
        probe()
    } else {
        Probe {
            error: Some(support.to_string()),
            ..Probe::default()
        }
    };
    let report = CheckReport {
        landlock: match support {
            Support::Available { .. } => "available",
            Support::Filtered(_) => "refused_by_seccomp",
            Support::NotEnabled => "not_enabled",
            Support::NotImplemented => "not_implemented",
        }
        .to_string(),
        kernel_abi: match support {
            Support::Available { raw, .. } => Some(raw),
            _ => None,
        },
        target_abi: abi_number(TARGET_ABI),
        enforceable: enforceable.names(),
        not_enforceable: missing.described(),
        not_covered: not_covered(),
        probe,
    };
    let mut line = serde_json::to_vec(&report)
        .map_err(|e| Refusal::cannot_enforce(anyhow!("cannot print the report: {e}")))?;
    line.push(b'\n');
    write_stdout(&line, "the --check report")?;
    let fully = report.probe.passed && missing.is_empty();
    Ok(ExitCode::from(if fully { 0 } else { EXIT_CANNOT_ENFORCE }))
}

pub(super) fn probe() -> Probe {
    run_probe().unwrap_or_else(|error| Probe {
        error: Some(format!("{error:#}")),
        ..Probe::default()
    })
}

pub(super) fn run_probe() -> anyhow::Result<Probe> {
    let dir = tempfile::tempdir()?;
    let inside = dir.path().join("inside");
    let outside = dir.path().join("outside");
    fs::create_dir(&inside)?;
    fs::create_dir(&outside)?;
    let policy = Policy {
        paths: vec![PathRule {
            path: inside.clone(),
            grant: Grant::ReadWrite,
            optional: false,
            origin: "probe",
        }],
        net: None,
        scoped: false,
    };
    let rules = open_rules(&policy.paths).map_err(|refusal| refusal.error)?;
    // Landlock and no_new_privs apply to the calling thread only (no TSYNC is asked), so the
    // probe restricts a thread of its own that ends with it: the process that runs the probe
    // is never confined, whatever other threads it has, and nothing is forked.
    let mut probe = std::thread::scope(|scope| {
        scope
            .spawn(|| probe_in_thread(&policy, rules, &inside, &outside))
            .join()
    })
    .map_err(|_| anyhow!("the probe thread panicked"))?;
    // Trust the filesystem, not only the thread's word.
    probe.allowed_write.succeeded &= fs::read(inside.join("probe")).is_ok_and(|b| b == b"moot");
    probe.denied_write.succeeded |= outside.join("probe").exists();
    probe.passed = probe.error.is_none()
        && probe.ruleset.as_deref() == Some("fully_enforced")
        && probe.no_new_privs
        && probe.allowed_write.succeeded
        && !probe.denied_write.succeeded
        && probe.denied_write.errno.as_deref() == Some("EACCES");
    Ok(probe)
}

pub(super) fn probe_in_thread(
    policy: &Policy,
    rules: Vec<PathBeneath<PathFd>>,
    inside: &Path,
    outside: &Path,
) -> Probe {
    let status = match restrict_self(policy, rules, CompatLevel::BestEffort) {
        Ok(status) => status,
        Err(e) => {
            return Probe {
                error: Some(format!("cannot restrict the probe: {e}")),
                ..Probe::default()
            }
        }
    };
    Probe {
        passed: false,
        ruleset: Some(
            match status.ruleset {
                RulesetStatus::FullyEnforced => "fully_enforced",
                RulesetStatus::PartiallyEnforced => "partially_enforced",
                RulesetStatus::NotEnforced => "not_enforced",
            }
            .to_string(),
        ),
        no_new_privs: status.no_new_privs && prctl::get_no_new_privs().unwrap_or(false),
        allowed_write: Attempt::of(fs::write(inside.join("probe"), b"moot")),
        denied_write: Attempt::of(fs::write(outside.join("probe"), b"moot")),
        error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe confines a thread of its own: the caller (this test's thread) is left with no
    /// Landlock domain and no no_new_privs, and can still write where the probe could not.
    #[test]
    fn the_probe_never_confines_its_caller() {
        let probe = probe();
        if probe.error.is_some() {
            moot_testkit::skip(
                "the_probe_never_confines_its_caller",
                &format!("the probe could not run: {probe:?}"),
            );
            return;
        }
        assert!(probe.passed, "{probe:?}");
        assert!(
            !prctl::get_no_new_privs().unwrap(),
            "no_new_privs leaked to the caller"
        );
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("after"), b"x").unwrap();
        assert!(Support::detect().is_available());
    }
}
