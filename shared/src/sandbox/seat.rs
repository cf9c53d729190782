//! What the seat is given and kept from: the credential proxy's token in place of the provider's
//! key (in its argv, environment and granted files), its own user, and a process limit.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use nix::fcntl::AtFlags;
use nix::unistd::{geteuid, AccessFlags};

use crate::model::PROXY_VARS;
use crate::privilege::{self, CapSets, Identity};
use crate::profile::Profile;
use crate::seat_proxy::{self, SeatProxy};

use super::{Refusal, SandboxArgs};

/// The job's credential proxy, when moot-broker --forward runs this seat (see
/// src/seat_proxy.rs); half its variables are refused.
pub(super) fn seat_proxy(args: &SandboxArgs) -> Result<Option<SeatProxy>, Refusal> {
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let proxy = SeatProxy::from_vars(|name| {
        vars.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
    })
    .map_err(Refusal::usage)?;
    Ok(proxy.map(|mut proxy| {
        proxy.carry_logins = args.seat_holds_login;
        proxy
    }))
}

/// Behind a proxy, a file the profile grants as it is (a config a variable names outside the
/// private state, such as opencode's `OPENCODE_CONFIG`) is not rewritten: one that holds the
/// provider's key is refused, since the seat would read the key there.
pub(super) fn refuse_granted_key(profile: &Profile, proxy: &SeatProxy) -> Result<(), Refusal> {
    let state = profile.state.as_ref().map(|s| s.dir.as_path());
    for grant in &profile.grants {
        if state.is_some_and(|dir| grant.path.starts_with(dir)) {
            continue;
        }
        // A directory, FIFO or device is not read (nor is the file, when it is one).
        let read = crate::private_state::read_operator_file(&grant.path);
        if read.is_ok_and(|bytes| proxy.holds_key(&bytes)) {
            return Err(Refusal::usage(anyhow!(
                "{} ({}) holds the provider's key, and the profile grants it as it is, so the \
                 seat would read the key the credential proxy keeps out: keep the key out of \
                 that file (the proxy holds it)",
                grant.path.display(),
                grant.why
            )));
        }
    }
    Ok(())
}

/// The command's words behind a proxy: the provider's URL pointed at the proxy. A word that
/// holds the provider's key is refused: every user of the machine reads a command line in
/// /proc, the seat included.
pub(super) fn seat_argv(
    argv: &[OsString],
    proxy: Option<&SeatProxy>,
) -> Result<Vec<OsString>, Refusal> {
    let Some(proxy) = proxy else {
        return Ok(argv.to_vec());
    };
    argv.iter()
        .enumerate()
        .map(|(at, word)| {
            if proxy.holds_key(word.as_bytes()) {
                return Err(Refusal::usage(anyhow!(
                    "the command's word {at} holds the provider's key, which the credential \
                     proxy keeps out of the seat: name the key in moot-broker's --key-file or \
                     --key-env only"
                )));
            }
            Ok(proxy.rewrite_var(word).unwrap_or_else(|| word.clone()))
        })
        .collect()
}

/// The CLI's environment behind a proxy, as changes: the proxy's own variables and the HTTP
/// proxy variables removed (the seat's one way out is the credential proxy on loopback), every
/// value that holds the key or names the provider rewritten (a CLI's `*_API_KEY` gets the
/// token, its `*_BASE_URL` the proxy), and every other key variable removed (another
/// provider's key, an OAuth token: kept only with `--seat-holds-login`).
pub(super) fn proxy_env<'a>(
    proxy: &'a SeatProxy,
    unset: &'a [&str],
) -> impl Iterator<Item = (OsString, Option<OsString>)> + 'a {
    let removed = seat_proxy::VARS
        .iter()
        .chain(PROXY_VARS)
        .map(|name| (OsString::from(name), None));
    let rewritten = std::env::vars_os().filter_map(move |(name, value)| {
        let kept = !seat_proxy::VARS
            .iter()
            .chain(PROXY_VARS)
            .chain(unset)
            .any(|n| name == *n);
        if !kept {
            return None;
        }
        let rewritten = proxy.rewrite_var(&value);
        let seen = rewritten.as_deref().unwrap_or(&value);
        // Another provider's key, or a login's token, is a secret the proxy does not hold.
        if seat_proxy::is_key_var(&name)
            && !proxy.holds_token(seen.as_bytes())
            && !proxy.carry_logins
        {
            return Some((name, None));
        }
        rewritten.map(|v| (name, Some(v)))
    });
    removed.chain(rewritten)
}

/// The default `--max-procs` of a `--user` seat: a fork bomb stops there, and a CLI with its
/// tools, language servers and their threads stays far below it.
pub(super) const DEFAULT_USER_MAX_PROCS: u64 = 4096;

/// Sets RLIMIT_NPROC for the command (before the user switch, which keeps it).
pub(super) fn limit_processes(asked: Option<u64>, other_user: bool) -> Result<(), Refusal> {
    let Some(limit) = asked.or(other_user.then_some(DEFAULT_USER_MAX_PROCS)) else {
        return Ok(());
    };
    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NPROC, limit, limit).map_err(
        |e| Refusal::cannot_enforce(anyhow!("--max-procs {limit}: cannot set RLIMIT_NPROC: {e}")),
    )
}

/// Root's capabilities reach past Landlock (chmod and chown of any file, mknod, reading other
/// processes' memory and environment, raw sockets): every set is emptied unless `--keep-caps`,
/// and `--user` leaves root for good. The command does not run if any capability would remain.
pub(super) fn give_up_privileges(
    identity: Option<&Identity>,
    keep_caps: bool,
) -> Result<(), Refusal> {
    let cannot = |e: anyhow::Error| Refusal::cannot_enforce(e);
    if !keep_caps {
        privilege::drop_bounding_and_ambient().map_err(cannot)?;
    }
    if let Some(identity) = identity {
        privilege::switch_user(identity)
            .context("--user: moot-sandbox must start as root to switch users")
            .map_err(cannot)?;
    }
    if keep_caps {
        return Ok(());
    }
    privilege::clear_process_capabilities().map_err(cannot)?;
    let sets = CapSets::read()
        .context("cannot read the capability sets back")
        .map_err(cannot)?;
    if !sets.none_after_exec(geteuid().as_raw()) {
        return Err(cannot(anyhow!(
            "capabilities remain after dropping them ({sets:?}): run the command as another \
             user with --user, or pass --keep-caps to run it with them"
        )));
    }
    Ok(())
}

/// What the seat's user must reach, and what it must be able to do there.
struct Reach<'a> {
    path: &'a Path,
    flag: &'static str,
    access: AccessFlags,
    /// Reached by its absolute path, so through every directory above it; the working
    /// directory is not (the process is already in it: relative paths start there).
    by_path: bool,
}

/// With `--user`, every path the command line grants and the files the kernel executes to
/// start the command must be reachable by that user, and the working directory enterable:
/// Landlock only narrows what Unix permissions allow, and a worktree under a directory only root may enter (a 0700
/// home, a `mktemp -d`) fails later as the CLI's own EACCES. Refused here instead, naming the
/// directory that stops the user and what would let it in. The kernel decides (ACLs included):
/// the checks run with the seat's user and group as the filesystem identity, and no
/// supplementary group, as the seat will run.
pub(super) fn refuse_unreachable(
    args: &SandboxArgs,
    identity: &Identity,
    exec_chain: &[(PathBuf, crate::profile::Link)],
) -> Result<(), Refusal> {
    let read = AccessFlags::R_OK;
    let mut wanted = vec![Reach {
        path: Path::new("."),
        flag: "the working directory",
        access: AccessFlags::X_OK,
        by_path: false,
    }];
    let grants = [
        (&args.rw, "--rw", AccessFlags::R_OK | AccessFlags::W_OK),
        (
            &args.rw_try,
            "--rw-try",
            AccessFlags::R_OK | AccessFlags::W_OK,
        ),
        (&args.ro, "--ro", read),
        (&args.ro_try, "--ro-try", read),
        (&args.rx, "--rx", read),
        (&args.rx_try, "--rx-try", read),
    ];
    for (paths, flag, access) in grants {
        for path in paths.iter().filter(|p| p.exists()) {
            wanted.push(Reach {
                path,
                flag,
                access,
                by_path: true,
            });
        }
    }
    for (file, _) in exec_chain {
        wanted.push(Reach {
            path: file,
            flag: "the command's executable",
            access: AccessFlags::X_OK,
            by_path: true,
        });
    }
    let _as_seat = FsIdentity::become_(identity).map_err(Refusal::cannot_enforce)?;
    for reach in &wanted {
        if let Some(why) = unreachable(reach) {
            let shown = match reach.by_path {
                true => reach.path.to_path_buf(),
                false => std::env::current_dir().unwrap_or_else(|_| reach.path.to_path_buf()),
            };
            return Err(Refusal::usage(anyhow!(
                "--user ({}:{}): cannot reach {} ({}): {why}",
                identity.uid,
                identity.gid,
                shown.display(),
                reach.flag
            )));
        }
    }
    Ok(())
}

/// Why the current filesystem identity cannot reach `reach`: the first directory above it that
/// it may not enter, or the path itself lacking the access.
fn unreachable(reach: &Reach) -> Option<String> {
    let above: Vec<&Path> = match reach.by_path {
        true => reach.path.ancestors().skip(1).collect(),
        false => Vec::new(),
    };
    for dir in above.into_iter().rev() {
        if !allows(dir, AccessFlags::X_OK) {
            return Some(format!(
                "the seat's user may not enter {} ({}); make it enterable (chmod o+x {}) or \
                 move what the seat needs out from under it",
                dir.display(),
                owner_and_mode(dir),
                crate::shell_quote::sh_quote(&dir.to_string_lossy())
            ));
        }
    }
    let mut access = reach.access;
    if reach.path.is_dir() {
        access |= AccessFlags::X_OK;
    }
    (!allows(reach.path, access)).then(|| {
        format!(
            "the seat's user lacks {} on it ({}); give it to the user, or run without --user",
            describe(access),
            owner_and_mode(reach.path)
        )
    })
}

fn allows(path: &Path, access: AccessFlags) -> bool {
    nix::unistd::faccessat(None, path, access, AtFlags::AT_EACCESS).is_ok()
}

fn describe(access: AccessFlags) -> String {
    [
        (AccessFlags::R_OK, "read"),
        (AccessFlags::W_OK, "write"),
        (AccessFlags::X_OK, "search/execute"),
    ]
    .iter()
    .filter(|(flag, _)| access.contains(*flag))
    .map(|(_, name)| *name)
    .collect::<Vec<_>>()
    .join(", ")
}

fn owner_and_mode(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(meta) => format!(
            "owner {}, group {}, mode {:04o}",
            meta.uid(),
            meta.gid(),
            meta.mode() & 0o7777
        ),
        Err(e) => e.to_string(),
    }
}

/// The filesystem identity of the seat's user, for the reachability checks: no supplementary
/// groups (the seat gets none), its group and user as fsgid and fsuid. Root's are put back when
/// it drops; the groups stay empty, as `--user` leaves them.
struct FsIdentity;

impl FsIdentity {
    fn become_(identity: &Identity) -> anyhow::Result<FsIdentity> {
        nix::unistd::setgroups(&[]).context("cannot clear the supplementary groups")?;
        nix::unistd::setfsgid(identity.gid);
        nix::unistd::setfsuid(identity.uid);
        Ok(FsIdentity)
    }
}

impl Drop for FsIdentity {
    fn drop(&mut self) {
        nix::unistd::setfsuid(nix::unistd::geteuid());
        nix::unistd::setfsgid(nix::unistd::getegid());
    }
}

/// Behind a proxy, one warning line for each way the seat would not reach its provider through
/// it: the provider's key is in none of the CLI's copied configuration and no variable (so the
/// CLI sends another key, which the proxy refuses), or the provider's URL is named nowhere the
/// CLI reads it (so the CLI calls its provider directly, which the sandbox denies). A near miss
/// (`localhost` for `127.0.0.1`, a rotated key) otherwise shows only as the CLI's own error.
/// Only for a CLI with some configuration copied in (one without takes both from variables
/// or built-in defaults). Warnings, not refusals: a CLI may read its key or URL from where no
/// profile looks.
pub(super) fn warn_unproxied(tool: &str, runtime: &str, profile: &Profile, proxy: &SeatProxy) {
    // The operator's configuration as copied: only a CLI that has some can be found to miss.
    let present: Vec<(String, Vec<Vec<u8>>)> = profile
        .state
        .iter()
        .flat_map(|state| &state.carried)
        .filter(|carried| !carried.kept_out)
        .map(|carried| (carried.from.display().to_string(), carried.contents()))
        .filter(|(_, contents)| !contents.is_empty())
        .collect();
    if present.is_empty() {
        return;
    }
    let configs = present.iter().flat_map(|(_, contents)| contents);
    // The proxy's own variables name its token and upstream, and the CLI never gets them.
    let env: Vec<Vec<u8>> = std::env::vars_os()
        .filter(|(name, _)| !seat_proxy::VARS.iter().any(|var| name == var))
        .map(|(_, value)| value.as_bytes().to_vec())
        .collect();
    let sources = || configs.clone().chain(&env);
    let keyed = sources().any(|bytes| proxy.holds_key(bytes) || proxy.holds_token(bytes));
    let routed = sources().any(|bytes| proxy.names_upstream(bytes))
        || profile
            .env
            .iter()
            .any(|(_, value, _)| value.contains(&proxy.url));
    let looked = present
        .iter()
        .map(|(file, _)| file.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if !keyed {
        crate::eprintln_whole!(
            "{tool}: warning: --profile {runtime}: the provider's key (moot-broker's --key-file or \
             --key-env) is in none of {runtime}'s configuration ({looked}) and in no variable, so \
             {runtime} will send another key, which the proxy refuses; give moot-broker the key \
             the configuration holds"
        );
    }
    if !routed {
        crate::eprintln_whole!(
            "{tool}: warning: --profile {runtime}: the provider URL moot-broker forwards to ({}) \
             is named in none of {runtime}'s configuration ({looked}) and in no variable, so \
             {runtime} will call its provider directly, which the sandbox denies; give \
             moot-broker --forward the URL exactly as the configuration spells it",
            proxy.upstream()
        );
    }
}
