//! What the seat is given and kept from: the credential proxy's token in place of the provider's
//! key (in its argv, environment and granted files), its own user, and a process limit.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use anyhow::{anyhow, Context};
use nix::unistd::geteuid;

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
