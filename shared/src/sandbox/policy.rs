//! The Landlock policy and the ruleset built from it: what a grant means at [`TARGET_ABI`], the
//! defaults every seat gets, and the one fallible builder chain that restricts the process
//! ([`restrict_self`]), with what a kernel that cannot enforce it lacks.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    RestrictionStatus, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus,
    Scope, ABI,
};
use nix::sys::prctl;

use crate::profile::{self, Profile};

use super::{Refusal, SandboxArgs};

/// The newest Landlock ABI this build uses and was tested on (Linux 6.15). Every right of it is
/// asked for; newer ones (ABI 8's all-threads flag, ABI 9's pathname UNIX sockets, ABI 10's UDP)
/// are not, until they are tested.
pub const TARGET_ABI: ABI = ABI::V7;

/// The ABIs up to [`TARGET_ABI`], oldest first: where each right appeared.
pub(super) const KNOWN_ABIS: [ABI; 7] = [
    ABI::V1,
    ABI::V2,
    ABI::V3,
    ABI::V4,
    ABI::V5,
    ABI::V6,
    ABI::V7,
];

/// Which file of the command's exec chain (the program, its `#!` interpreters) the sandbox
/// does not let it execute, and the grant that would: a denial is never a bare "Permission
/// denied".
pub(super) fn denied_exec(
    policy: &Policy,
    program: &Path,
    chain: &[(PathBuf, profile::Link)],
    profile: Option<&str>,
) -> Option<anyhow::Error> {
    let (file, link) = chain.iter().find(|(file, _)| !policy.executes(file))?;
    let dir = file.parent().unwrap_or(Path::new("/"));
    let hint = match profile {
        Some(runtime) => format!(
            "--profile {runtime} did not find it (moot-sandbox --profile {runtime} \
             --print-profile -- ... shows what it found); grant it with --rx {}",
            dir.display()
        ),
        None => format!(
            "grant it with --rx {}, or let --profile RUNTIME derive what the CLI needs",
            dir.display()
        ),
    };
    Some(anyhow!(
        "cannot run ({}): the sandbox denies executing {} ({link}): {hint}",
        program.display(),
        file.display()
    ))
}

pub(super) fn remedy(missing: &Rights) -> &'static str {
    if missing.fs.is_empty() && missing.net.is_empty() {
        "pass --no-scope to run without scoping, or --best-effort"
    } else {
        "update the kernel, or pass --best-effort to run without them"
    }
}

/// The kernel applied the ruleset; make sure it is the ruleset that was asked for.
pub(super) fn verify(status: &RestrictionStatus, best_effort: bool) -> Result<(), Refusal> {
    let shortfall = match status.ruleset {
        RulesetStatus::FullyEnforced => None,
        RulesetStatus::PartiallyEnforced if best_effort => None,
        RulesetStatus::PartiallyEnforced => Some("the ruleset is only partly enforced"),
        RulesetStatus::NotEnforced => Some("the ruleset is not enforced"),
    };
    let no_new_privs = status.no_new_privs && prctl::get_no_new_privs().unwrap_or(false);
    let shortfall = shortfall.or((!no_new_privs).then_some("no_new_privs is not set"));
    match shortfall {
        Some(why) => Err(Refusal::cannot_enforce(anyhow!(
            "cannot enforce: {why}: refusing to run the command unconfined"
        ))),
        None => Ok(()),
    }
}

/// What a path grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// List directories only.
    List,
    /// Read files, list directories.
    Read,
    /// Read, and execute files.
    ReadExec,
    /// Every filesystem right of the target ABI but making device files.
    ReadWrite,
    /// Every filesystem right of the target ABI (`--rw` with `--allow-devices`).
    ReadWriteDevices,
    /// Read and write a device file (`/dev/null`), without ioctl: no TIOCSTI through `/dev/tty`.
    Device,
}

impl Grant {
    fn access(self) -> BitFlags<AccessFs> {
        match self {
            Grant::List => BitFlags::from(AccessFs::ReadDir),
            Grant::Read => AccessFs::from_read(TARGET_ABI) & !AccessFs::Execute,
            Grant::ReadExec => AccessFs::from_read(TARGET_ABI),
            Grant::ReadWrite => {
                AccessFs::from_all(TARGET_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock)
            }
            Grant::ReadWriteDevices => AccessFs::from_all(TARGET_ABI),
            Grant::Device => AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate,
        }
    }
}

/// One path and what it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRule {
    pub path: PathBuf,
    pub grant: Grant,
    /// An optional path may be absent; a required one must exist.
    pub optional: bool,
    /// Where the rule came from (`--rw`, `default`), for error messages.
    pub origin: &'static str,
}

/// TCP ports allowed once TCP is restricted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ports {
    pub connect: Vec<u16>,
    pub bind: Vec<u16>,
}

/// Everything the sandbox allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub paths: Vec<PathRule>,
    /// `None`: TCP is not restricted.
    pub net: Option<Ports>,
    /// Signals and abstract UNIX sockets scoped to the sandbox.
    pub scoped: bool,
}

/// System paths a CLI needs to start: read and execute.
pub(super) const DEFAULT_EXEC: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Configuration and process information: read only.
pub(super) const DEFAULT_READ: &[&str] = &["/etc", "/proc"];

/// Device files every program may open.
pub(super) const DEFAULT_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

impl Policy {
    pub(super) fn from_args(args: &SandboxArgs, program: &Path) -> Result<Self, Refusal> {
        let mut paths = if args.no_defaults {
            Vec::new()
        } else {
            default_rules(program)
        };
        let rw = if args.allow_devices {
            Grant::ReadWriteDevices
        } else {
            Grant::ReadWrite
        };
        let asked = [
            ("--ls", &args.ls, Grant::List, false),
            ("--ls-try", &args.ls_try, Grant::List, true),
            ("--ro", &args.ro, Grant::Read, false),
            ("--rx", &args.rx, Grant::ReadExec, false),
            ("--rw", &args.rw, rw, false),
            ("--ro-try", &args.ro_try, Grant::Read, true),
            ("--rx-try", &args.rx_try, Grant::ReadExec, true),
            ("--rw-try", &args.rw_try, rw, true),
        ];
        for (origin, list, grant, optional) in asked {
            for path in list {
                if !path.is_absolute() {
                    return Err(Refusal::usage(anyhow!(
                        "{origin} ({}): not an absolute path: write it from / (\"$PWD/{0}\")",
                        path.display()
                    )));
                }
                paths.push(PathRule {
                    path: path.clone(),
                    grant,
                    optional,
                    origin,
                });
            }
        }
        let restricts_tcp = args.no_net || !args.connect.is_empty() || !args.bind.is_empty();
        Ok(Policy {
            paths,
            net: restricts_tcp.then(|| Ports {
                connect: args.connect.clone(),
                bind: args.bind.clone(),
            }),
            scoped: !args.no_scope,
        })
    }

    /// Every right the ruleset handles: all filesystem rights always (what is not granted is
    /// denied), TCP when restricted, scopes unless turned off.
    pub fn requested(&self) -> Rights {
        let all = Rights::of_abi(TARGET_ABI);
        Rights {
            fs: all.fs,
            net: if self.net.is_some() {
                all.net
            } else {
                BitFlags::EMPTY
            },
            scopes: if self.scoped {
                all.scopes
            } else {
                BitFlags::EMPTY
            },
        }
    }

    /// Adds a derived profile: its paths, and its ports as the TCP ports the command may connect
    /// to (which restricts TCP to them and to any --connect and --bind).
    pub(super) fn add_profile(&mut self, profile: &Profile) {
        for grant in &profile.grants {
            self.paths.push(PathRule {
                path: grant.path.clone(),
                grant: match grant.access {
                    crate::model::Access::List => Grant::List,
                    crate::model::Access::Read => Grant::Read,
                    crate::model::Access::ReadExec => Grant::ReadExec,
                    crate::model::Access::ReadWrite => Grant::ReadWrite,
                },
                optional: false,
                origin: "--profile",
            });
        }
        if !profile.connect.is_empty() {
            let ports = self.net.get_or_insert_with(Ports::default);
            ports
                .connect
                .extend(profile.connect.iter().map(|(port, _)| *port));
        }
    }

    /// Whether a rule lets the command execute `file` (a real path).
    fn executes(&self, file: &Path) -> bool {
        self.paths.iter().any(|rule| {
            let real = fs::canonicalize(&rule.path).unwrap_or_else(|_| rule.path.clone());
            file.starts_with(&real) && rule.grant.access().contains(AccessFs::Execute)
        })
    }

    fn port_rules(&self) -> impl Iterator<Item = NetPort> + '_ {
        self.net.iter().flat_map(|ports| {
            let connect = ports
                .connect
                .iter()
                .map(|&port| NetPort::new(port, AccessNet::ConnectTcp));
            let bind = ports
                .bind
                .iter()
                .map(|&port| NetPort::new(port, AccessNet::BindTcp));
            connect.chain(bind)
        })
    }
}

/// The defaults that let a real CLI start: system paths, `/etc` and `/proc` readable, the usual
/// device files, and the directory of the command's executable (as named, and with symlinks
/// resolved), which must exist.
pub(super) fn default_rules(program: &Path) -> Vec<PathRule> {
    let rule = |path: &Path, grant, optional| PathRule {
        path: path.to_path_buf(),
        grant,
        optional,
        origin: "default",
    };
    let mut rules: Vec<PathRule> = DEFAULT_EXEC
        .iter()
        .map(|p| rule(Path::new(p), Grant::ReadExec, true))
        .chain(
            DEFAULT_READ
                .iter()
                .map(|p| rule(Path::new(p), Grant::Read, true)),
        )
        .chain(
            DEFAULT_DEVICES
                .iter()
                .map(|p| rule(Path::new(p), Grant::Device, true)),
        )
        .collect();
    let named = std::path::absolute(program).ok();
    let resolved = fs::canonicalize(program).ok();
    for executable in [named, resolved].into_iter().flatten() {
        if let Some(dir) = executable.parent() {
            rules.push(rule(dir, Grant::ReadExec, false));
        }
    }
    rules
}

/// Opens every path (O_PATH) before the sandbox exists. A missing required path is an error, a
/// missing optional one grants nothing; a file gets only the rights a file can have.
pub(super) fn open_rules(paths: &[PathRule]) -> Result<Vec<PathBeneath<PathFd>>, Refusal> {
    let mut rules = Vec::with_capacity(paths.len());
    for rule in paths {
        let shown = || format!("{} ({})", rule.origin, rule.path.display());
        let meta = match fs::metadata(&rule.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && rule.optional => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Refusal::usage(anyhow!(
                    "{}: no such file or directory: create it, or use {}-try for a path that may \
                     be absent",
                    shown(),
                    rule.origin
                )))
            }
            Err(e) => return Err(Refusal::usage(anyhow!("{}: {e}", shown()))),
        };
        let fd =
            PathFd::new(&rule.path).map_err(|e| Refusal::usage(anyhow!("{}: {e}", shown())))?;
        let access = if meta.is_dir() {
            rule.grant.access()
        } else {
            rule.grant.access() & AccessFs::from_file(TARGET_ABI)
        };
        rules.push(PathBeneath::new(fd, access));
    }
    Ok(rules)
}

/// Sets no_new_privs and restricts the calling thread (and every process it execs or forks from
/// then on) to `policy`, whose paths are already open as `rules`. Under
/// [`CompatLevel::HardRequirement`] a right the kernel lacks is an error; under `BestEffort` it
/// is dropped and the status says so.
pub fn restrict_self(
    policy: &Policy,
    rules: Vec<PathBeneath<PathFd>>,
    level: CompatLevel,
) -> Result<RestrictionStatus, RulesetError> {
    let requested = policy.requested();
    let mut ruleset = Ruleset::default()
        .set_compatibility(level)
        .handle_access(requested.fs)?;
    if !requested.net.is_empty() {
        ruleset = ruleset.handle_access(requested.net)?;
    }
    if !requested.scopes.is_empty() {
        ruleset = ruleset.scope(requested.scopes)?;
    }
    ruleset
        .create()?
        .add_rules(rules.into_iter().map(Ok::<_, RulesetError>))?
        .add_rules(policy.port_rules().map(Ok::<_, RulesetError>))?
        .restrict_self()
}

/// A set of Landlock rights: what a policy asks for, or what a kernel can enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rights {
    pub fs: BitFlags<AccessFs>,
    pub net: BitFlags<AccessNet>,
    pub scopes: BitFlags<Scope>,
}

impl Rights {
    pub const NONE: Rights = Rights {
        fs: BitFlags::EMPTY,
        net: BitFlags::EMPTY,
        scopes: BitFlags::EMPTY,
    };

    /// Every right of `abi`, as the crate defines it.
    pub fn of_abi(abi: ABI) -> Self {
        Rights {
            fs: AccessFs::from_all(abi),
            net: AccessNet::from_all(abi),
            scopes: Scope::from_all(abi),
        }
    }

    pub fn minus(self, other: Rights) -> Rights {
        Rights {
            fs: self.fs & !other.fs,
            net: self.net & !other.net,
            scopes: self.scopes & !other.scopes,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.fs.is_empty() && self.net.is_empty() && self.scopes.is_empty()
    }

    /// Each right as `fs.read_file`, `net.connect_tcp`, `scope.signal`, in the kernel's order.
    pub fn names(&self) -> Vec<String> {
        let fs = self.fs.iter().map(|a| format!("fs.{}", fs_name(a)));
        let net = self.net.iter().map(|a| format!("net.{}", net_name(a)));
        let scopes = self
            .scopes
            .iter()
            .map(|s| format!("scope.{}", scope_name(s)));
        fs.chain(net).chain(scopes).collect()
    }

    /// Each name with the ABI that introduced it: `fs.ioctl_dev (ABI 5)`.
    pub fn described(&self) -> Vec<String> {
        self.names()
            .into_iter()
            .map(|name| {
                match KNOWN_ABIS
                    .iter()
                    .find(|abi| Rights::of_abi(**abi).names().contains(&name))
                {
                    Some(abi) => format!("{name} (ABI {abi})"),
                    None => name,
                }
            })
            .collect()
    }

    /// [`Rights::described`] on one line.
    pub fn describe(&self) -> String {
        self.described().join(", ")
    }
}

pub(super) fn fs_name(access: AccessFs) -> &'static str {
    match access {
        AccessFs::Execute => "execute",
        AccessFs::WriteFile => "write_file",
        AccessFs::ReadFile => "read_file",
        AccessFs::ReadDir => "read_dir",
        AccessFs::RemoveDir => "remove_dir",
        AccessFs::RemoveFile => "remove_file",
        AccessFs::MakeChar => "make_char",
        AccessFs::MakeDir => "make_dir",
        AccessFs::MakeReg => "make_reg",
        AccessFs::MakeSock => "make_sock",
        AccessFs::MakeFifo => "make_fifo",
        AccessFs::MakeBlock => "make_block",
        AccessFs::MakeSym => "make_sym",
        AccessFs::Refer => "refer",
        AccessFs::Truncate => "truncate",
        AccessFs::IoctlDev => "ioctl_dev",
        AccessFs::ResolveUnix => "resolve_unix",
        _ => "unknown",
    }
}

pub(super) fn net_name(access: AccessNet) -> &'static str {
    match access {
        AccessNet::BindTcp => "bind_tcp",
        AccessNet::ConnectTcp => "connect_tcp",
        AccessNet::BindUdp => "bind_udp",
        AccessNet::ConnectSendUdp => "connect_send_udp",
        _ => "unknown",
    }
}

pub(super) fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::AbstractUnixSocket => "abstract_unix_socket",
        Scope::Signal => "signal",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_map_to_the_target_abis_rights() {
        assert_eq!(Grant::Read.access(), AccessFs::ReadFile | AccessFs::ReadDir);
        assert_eq!(
            Grant::ReadExec.access(),
            AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute
        );
        let rw = Grant::ReadWrite.access();
        for right in [
            AccessFs::WriteFile,
            AccessFs::RemoveFile,
            AccessFs::MakeReg,
            AccessFs::Refer,
            AccessFs::Truncate,
            AccessFs::IoctlDev,
        ] {
            assert!(rw.contains(right), "rw lacks {}", fs_name(right));
        }
        assert!(!rw.contains(AccessFs::ResolveUnix), "ABI 9 is not targeted");
        for device in [AccessFs::MakeChar, AccessFs::MakeBlock] {
            assert!(!rw.contains(device), "--rw makes devices only when asked");
            assert!(Grant::ReadWriteDevices.access().contains(device));
        }
        assert!(!Grant::Device.access().contains(AccessFs::IoctlDev));
    }

    #[test]
    fn an_old_kernel_lacks_exactly_the_newer_rights() {
        let policy = Policy {
            paths: vec![],
            net: Some(Ports::default()),
            scoped: true,
        };
        let missing = policy.requested().minus(Rights::of_abi(ABI::V4));
        assert_eq!(
            missing.describe(),
            "fs.ioctl_dev (ABI 5), scope.abstract_unix_socket (ABI 6), scope.signal (ABI 6)"
        );
        assert_eq!(
            remedy(&policy.requested().minus(Rights::of_abi(ABI::V5))),
            "pass --no-scope to run without scoping, or --best-effort"
        );
        let on_v3 = policy.requested().minus(Rights::of_abi(ABI::V3));
        assert!(on_v3.names().contains(&"net.connect_tcp".to_string()));
        assert!(policy
            .requested()
            .minus(Rights::of_abi(TARGET_ABI))
            .is_empty());
    }

    #[test]
    fn unrestricted_network_and_unscoped_policies_ask_for_less() {
        let policy = Policy {
            paths: vec![],
            net: None,
            scoped: false,
        };
        let requested = policy.requested();
        assert!(requested.net.is_empty() && requested.scopes.is_empty());
        assert_eq!(requested.fs, AccessFs::from_all(TARGET_ABI));
        assert_eq!(
            policy.requested().minus(Rights::of_abi(ABI::V5)),
            Rights::NONE,
            "an ABI 5 kernel enforces a policy that needs no scoping nor TCP"
        );
    }

    #[test]
    fn defaults_grant_the_executables_directory() {
        let rules = default_rules(Path::new("/usr/bin/env"));
        assert!(rules.contains(&PathRule {
            path: PathBuf::from("/usr/bin"),
            grant: Grant::ReadExec,
            optional: false,
            origin: "default",
        }));
        assert!(rules
            .iter()
            .any(|r| r.path == Path::new("/dev/null") && r.grant == Grant::Device));
        assert!(!rules.iter().any(|r| r.path.starts_with("/tmp")));
    }
}
