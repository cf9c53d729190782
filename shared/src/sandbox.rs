//! moot-sandbox's engine: confine one command with Landlock, then exec it.
//!
//! The policy is an allowlist (Landlock cannot deny below a grant): paths readable, executable or
//! writable, TCP ports to connect to or bind, and signals and abstract UNIX sockets scoped to the
//! sandbox. The ruleset is one fallible builder chain ([`restrict_self`]); the rights are the ones
//! the crate assigns to [`TARGET_ABI`], the newest ABI this build was tested on, so a crate update
//! cannot change what a flag means. moot-sandbox fails closed: a kernel that cannot enforce every
//! right asked is refused unless `--best-effort` (which then says what is not enforced), and a
//! kernel that enforces nothing at all is refused even then.
//!
//! Not covered, by Landlock ABI 7: UDP (ABI 10), pathname UNIX sockets (ABI 9: a sandboxed
//! process can still connect to, say, a docker socket it can name), stat(2) and access(2) (not
//! mediated), and standard input, output and error, which keep the access they were opened with
//! (every other inherited descriptor is closed at exec: [`close_inherited_descriptors`]).

use std::convert::Infallible;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::Write;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{anyhow, Context};
use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus, NetPort,
    PathBeneath, PathFd, RestrictSelf, RestrictionStatus, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetError, RulesetStatus, Scope, ABI,
};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::libc;
use nix::sys::prctl;
use nix::unistd::geteuid;
use serde::{Deserialize, Serialize};

use crate::model::PROXY_VARS;
use crate::outcome::{EXIT_CANNOT_INVOKE, EXIT_NOT_FOUND};
use crate::privilege::{self, CapSets, Identity};
use crate::profile::{self, Profile};
use crate::program::{resolve_program, Unresolved};
use crate::registry;
use crate::report;
use crate::seat_proxy::{self, SeatProxy};

/// The newest Landlock ABI this build uses and was tested on (Linux 6.15). Every right of it is
/// asked for; newer ones (ABI 8's all-threads flag, ABI 9's pathname UNIX sockets, ABI 10's UDP)
/// are not, until they are tested.
pub const TARGET_ABI: ABI = ABI::V7;

/// The ABIs up to [`TARGET_ABI`], oldest first: where each right appeared.
const KNOWN_ABIS: [ABI; 7] = [
    ABI::V1,
    ABI::V2,
    ABI::V3,
    ABI::V4,
    ABI::V5,
    ABI::V6,
    ABI::V7,
];

/// `--check` could not write its report (stdout closed or full).
pub const EXIT_OUTPUT_FAILED: u8 = 1;
/// Bad flags or paths.
pub const EXIT_USAGE: u8 = 2;
/// The kernel cannot enforce the policy; the command was not run.
pub const EXIT_CANNOT_ENFORCE: u8 = 3;

/// moot-sandbox's flags (the binary flattens them into its command line).
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// Allow listing the directories under PATH, and nothing more: no file there is read
    /// (absolute; repeatable).
    #[arg(long, value_name = "PATH")]
    pub ls: Vec<PathBuf>,

    /// Like --ls, but PATH may be absent.
    #[arg(long, value_name = "PATH")]
    pub ls_try: Vec<PathBuf>,

    /// Allow reading files and listing directories under PATH (absolute; repeatable).
    #[arg(long, value_name = "PATH")]
    pub ro: Vec<PathBuf>,

    /// Like --ro, and also executing files under PATH.
    #[arg(long, value_name = "PATH")]
    pub rx: Vec<PathBuf>,

    /// Allow every filesystem right under PATH: read, write, execute, create, remove, rename
    /// (refer), truncate, device ioctl.
    #[arg(long, value_name = "PATH")]
    pub rw: Vec<PathBuf>,

    /// Like --ro, but PATH may be absent (nothing is granted then).
    #[arg(long, value_name = "PATH")]
    pub ro_try: Vec<PathBuf>,

    /// Like --rx, but PATH may be absent.
    #[arg(long, value_name = "PATH")]
    pub rx_try: Vec<PathBuf>,

    /// Like --rw, but PATH may be absent.
    #[arg(long, value_name = "PATH")]
    pub rw_try: Vec<PathBuf>,

    /// Allow TCP connections to PORT; once any --connect, --bind or --no-net is given, TCP
    /// connect and bind are denied on every port not listed (ABI 4).
    #[arg(long, value_name = "PORT")]
    pub connect: Vec<u16>,

    /// Allow binding TCP PORT (see --connect).
    #[arg(long, value_name = "PORT")]
    pub bind: Vec<u16>,

    /// Deny TCP connect and bind on every port not listed with --connect or --bind.
    #[arg(long)]
    pub no_net: bool,

    /// Do not scope signals and abstract UNIX sockets to the sandbox (scoped by default, ABI 6).
    #[arg(long)]
    pub no_scope: bool,

    /// Run even if the kernel cannot enforce every right asked, naming on stderr each one that is
    /// not enforced (a kernel without Landlock is still refused).
    #[arg(long)]
    pub best_effort: bool,

    /// Grant nothing by default: no system paths, no devices, not even the command's directory.
    #[arg(long)]
    pub no_defaults: bool,

    /// Let --rw and --rw-try directories also take new character and block device files
    /// (left out by default: a device node made there could reach the kernel's devices).
    #[arg(long)]
    pub allow_devices: bool,

    /// Run the command as USER (a name or number; GROUP, or else USER's primary group), with no
    /// supplementary groups. Needs root; recommended for CI containers that run as root, since
    /// Landlock does not stop chmod, chown or utime of the files a user owns.
    #[arg(long, value_name = "USER[:GROUP]")]
    pub user: Option<String>,

    /// The most processes and threads the command's user may have (RLIMIT_NPROC): past it,
    /// fork fails with EAGAIN. Default 4096 with --user, none without: the kernel counts every
    /// process of the uid (the operator's own too, without --user) and never limits root.
    #[arg(long, value_name = "N")]
    pub max_procs: Option<u64>,

    /// Keep the capabilities moot-sandbox was started with (by default every set is emptied, so
    /// root cannot chmod, mknod, read other processes or open raw sockets past Landlock).
    #[arg(long)]
    pub keep_caps: bool,

    /// Grant what RUNTIME's installed CLI needs, derived from the command (its install tree, #!
    /// interpreters, npm tree or Python venv), RUNTIME's state, config and temporary places
    /// (moved by the variables the CLI honours) and its provider's TCP port (the only port it
    /// may connect to; 443 when none is configured). --print-profile shows each grant and why.
    #[arg(long, value_name = "RUNTIME")]
    pub profile: Option<String>,

    /// Keep the CLI's state (its HOME, sessions, caches, temporary files) in DIR, a directory
    /// of this job or of its managed session (made owner-only when absent), never in the
    /// operator's own directories: --profile needs it for every CLI that writes state. Before
    /// each run the operator's provider config, credentials and settings are copied in afresh;
    /// the rest of DIR is kept, so a later run of the session finds its sessions.
    #[arg(long, value_name = "DIR", requires = "profile")]
    pub state: Option<PathBuf>,

    /// Behind a credential proxy (moot-broker --forward): copy the operator's logins (OAuth
    /// tokens, credential stores, which the proxy does not hold) into the private state anyway,
    /// so the seat holds them. Without it they are kept out.
    #[arg(long, requires = "state")]
    pub seat_holds_login: bool,

    /// Print the grants --profile derives for the command, one flag a line with its reason,
    /// and exit without running it.
    #[arg(long, requires = "profile")]
    pub print_profile: bool,

    /// Print as JSON what this kernel can enforce and the result of a real self-probe, then exit.
    #[arg(long, conflicts_with = "command")]
    pub check: bool,

    /// The command to confine, and its arguments.
    #[arg(last = true, value_name = "COMMAND", required_unless_present = "check")]
    pub command: Vec<OsString>,
}

/// Runs `--check`, or confines and execs the command; returns only on failure (or after
/// `--check`), having printed the failure once.
pub fn run(tool: &str, args: &SandboxArgs) -> ExitCode {
    let result = if args.check {
        check()
    } else if args.print_profile {
        print_profile(args)
    } else {
        confine_and_exec(tool, args).map(|never| match never {})
    };
    result.unwrap_or_else(|refusal| {
        report::print_error(tool, &refusal.error);
        ExitCode::from(refusal.status)
    })
}

/// A reason not to run the command, with its exit status.
struct Refusal {
    status: u8,
    error: anyhow::Error,
}

impl Refusal {
    fn usage(error: anyhow::Error) -> Self {
        Refusal {
            status: EXIT_USAGE,
            error,
        }
    }

    fn cannot_enforce(error: anyhow::Error) -> Self {
        Refusal {
            status: EXIT_CANNOT_ENFORCE,
            error,
        }
    }
}

impl From<Unresolved> for Refusal {
    fn from(unresolved: Unresolved) -> Self {
        let status = match unresolved {
            Unresolved::NotExecutable(_) => EXIT_CANNOT_INVOKE,
            Unresolved::Empty | Unresolved::NotFound { .. } => EXIT_NOT_FOUND,
        };
        Refusal {
            status: status as u8,
            error: anyhow!(unresolved),
        }
    }
}

fn confine_and_exec(tool: &str, args: &SandboxArgs) -> Result<Infallible, Refusal> {
    let argv = &args.command;
    let identity = args
        .user
        .as_deref()
        .map(Identity::parse)
        .transpose()
        .map_err(Refusal::usage)?;
    // Resolved before the sandbox exists: PATH's directories need not be readable inside it.
    let program = resolve_program(&argv[0], std::env::var_os("PATH").as_deref())?;
    let proxy = seat_proxy(args)?;
    let argv = seat_argv(argv, proxy.as_ref())?;
    let profile = derive_profile(args, &program, proxy.as_ref())?;
    if let (Some(profile), Some(proxy)) = (&profile, &proxy) {
        refuse_granted_key(profile, proxy)?;
    }
    if let Some(state) = profile.as_ref().and_then(|p| p.state.as_ref()) {
        let seat_user = identity.as_ref().map(|i| (i.uid.as_raw(), i.gid.as_raw()));
        state.prepare(seat_user).map_err(Refusal::usage)?;
    }
    let mut policy = Policy::from_args(args, &program)?;
    if let Some(profile) = &profile {
        policy.add_profile(profile);
    }
    // Checked before anything is restricted: once `/usr/bin/env` runs, a denied interpreter is
    // only "/usr/bin/env: 'bun': Permission denied", which names neither the sandbox nor a fix.
    if let Some(denied) = denied_exec(&policy, &program, args.profile.as_deref()) {
        return Err(Refusal {
            status: EXIT_CANNOT_INVOKE as u8,
            error: denied,
        });
    }
    let rules = open_rules(&policy.paths)?;

    let support = Support::detect();
    if !support.is_available() {
        return Err(Refusal::cannot_enforce(anyhow!(
            "cannot enforce ({support}): refusing to run the command unconfined"
        )));
    }
    let missing = policy.requested().minus(support.enforceable());
    if !missing.is_empty() {
        if !args.best_effort {
            return Err(Refusal::cannot_enforce(anyhow!(
                "cannot enforce ({support}): {} unavailable: {}",
                missing.describe(),
                remedy(&missing)
            )));
        }
        crate::eprintln_whole!("{tool}: not enforced ({support}): {}", missing.describe());
    }

    close_inherited_descriptors().map_err(|e| {
        Refusal::cannot_enforce(e.context("cannot close the descriptors the command would inherit"))
    })?;
    limit_processes(args.max_procs, identity.is_some())?;
    give_up_privileges(identity.as_ref(), args.keep_caps)?;
    // Set here, not only by the crate, so it holds on every path that runs the command.
    prctl::set_no_new_privs()
        .map_err(|e| Refusal::cannot_enforce(anyhow!("cannot set no_new_privs: {e}")))?;
    let level = if args.best_effort {
        CompatLevel::BestEffort
    } else {
        CompatLevel::HardRequirement
    };
    let status = restrict_self(&policy, rules, level)
        .map_err(|e| Refusal::cannot_enforce(anyhow!("cannot enforce ({support}): {e}")))?;
    verify(&status, args.best_effort)?;

    let profile_env = profile.iter().flat_map(|p| &p.env);
    let handed = hand_files(profile.iter().flat_map(|p| &p.files))
        .map_err(|e| Refusal::cannot_enforce(e.context("cannot hand the CLI its files")))?;
    let mut command = Command::new(&program);
    let unset: Vec<&str> = profile
        .iter()
        .flat_map(|p| &p.state)
        .flat_map(|s| &s.unset)
        .copied()
        .collect();
    for name in &unset {
        command.env_remove(name);
    }
    if let Some(proxy) = &proxy {
        for (name, value) in proxy_env(proxy, &unset) {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
    }
    let error = command
        .arg0(&argv[0])
        .args(&argv[1..])
        .envs(profile_env.map(|(name, value, _)| (name.as_str(), value.as_str())))
        .envs(
            handed
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str())),
        )
        .exec();
    Err(exec_failure(&program, error, identity.is_some()))
}

/// Writes each file a profile hands its CLI into a sealed memfd the command inherits (no write,
/// grow or shrink is possible once sealed, by anyone), and returns the variables that name them:
/// `$VAR` with `/proc/self/fd/N` appended. Landlock lets a process reopen its own memfd through
/// `/proc/self/fd`.
fn hand_files<'a>(
    files: impl Iterator<Item = &'a (&'static str, &'static str, &'static str)>,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut vars: Vec<(String, String)> = Vec::new();
    for (name, text, _) in files {
        let fd = sealed_memfd(name, text.as_bytes())?;
        let path = format!("/proc/self/fd/{fd}");
        let value = match vars.iter().position(|(n, _)| n == name) {
            Some(at) => format!("{}:{path}", vars.remove(at).1),
            None => match std::env::var(name) {
                Ok(given) if !given.is_empty() => format!("{given}:{path}"),
                _ => path,
            },
        };
        vars.push((name.to_string(), value));
    }
    Ok(vars)
}

/// A memfd holding `bytes`, sealed, left open across exec; its descriptor number.
fn sealed_memfd(name: &str, bytes: &[u8]) -> anyhow::Result<i32> {
    let label = std::ffi::CString::new(format!("moot-{name}"))?;
    // SAFETY: memfd_create takes a NUL-terminated name and flags; it returns a new descriptor
    // or -1.
    let fd = unsafe { libc::memfd_create(label.as_ptr(), libc::MFD_ALLOW_SEALING) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).context("memfd_create");
    }
    // SAFETY: fd was just created and is owned here; it is deliberately never closed (the
    // command inherits it), so it is turned back into a raw descriptor below.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    std::io::Write::write_all(&mut file, bytes).context("writing it")?;
    let seals = libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
    // SAFETY: fcntl on a descriptor this function owns, with an integer argument.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } < 0 {
        return Err(std::io::Error::last_os_error()).context("sealing it");
    }
    Ok(std::os::fd::IntoRawFd::into_raw_fd(file))
}

/// Marks every descriptor above standard error close-on-exec, so the command inherits only its
/// stdio. Landlock checks opens, not reads and writes: a descriptor the caller opened (a log, a
/// socket, a harness file) would keep its access inside the sandbox. Done before the ruleset
/// exists, while /proc/self/fd is still readable for a kernel older than close_range(2)'s
/// CLOEXEC flag (Linux 5.11).
fn close_inherited_descriptors() -> anyhow::Result<()> {
    // SAFETY: a plain system call on this process's own descriptor table.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked == 0 {
        return Ok(());
    }
    mark_listed_descriptors_cloexec()
}

/// [`close_inherited_descriptors`] for a kernel without close_range's CLOEXEC flag.
fn mark_listed_descriptors_cloexec() -> anyhow::Result<()> {
    for entry in fs::read_dir("/proc/self/fd").context("listing /proc/self/fd")? {
        let name = entry.context("listing /proc/self/fd")?.file_name();
        let Some(fd) = name.to_str().and_then(|n| n.parse::<RawFd>().ok()) else {
            continue;
        };
        if fd <= 2 {
            continue;
        }
        match fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)) {
            // EBADF: the listing's own descriptor, closed by now.
            Ok(_) | Err(Errno::EBADF) => {}
            Err(e) => return Err(anyhow!("descriptor {fd}: {e}")),
        }
    }
    Ok(())
}

/// Which file of the command's exec chain (the program, its `#!` interpreters) the sandbox
/// does not let it execute, and the grant that would: a denial is never a bare "Permission
/// denied".
fn denied_exec(policy: &Policy, program: &Path, profile: Option<&str>) -> Option<anyhow::Error> {
    let chain = profile::exec_chain(program, std::env::var_os("PATH").as_deref());
    let denied = chain.iter().position(|file| !policy.executes(file))?;
    let file = &chain[denied];
    let role = if denied == 0 {
        "the program itself".to_string()
    } else {
        format!("the #! interpreter of {}", chain[denied - 1].display())
    };
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
        "cannot run ({}): the sandbox denies executing {} ({role}): {hint}",
        program.display(),
        file.display()
    ))
}

/// The job's credential proxy, when moot-broker --forward runs this seat (see
/// src/seat_proxy.rs); half its variables are refused.
fn seat_proxy(args: &SandboxArgs) -> Result<Option<SeatProxy>, Refusal> {
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
fn refuse_granted_key(profile: &Profile, proxy: &SeatProxy) -> Result<(), Refusal> {
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
fn seat_argv(argv: &[OsString], proxy: Option<&SeatProxy>) -> Result<Vec<OsString>, Refusal> {
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
fn proxy_env<'a>(
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

/// The profile `--profile` asks for, derived in this process's environment (which the command
/// inherits).
fn derive_profile(
    args: &SandboxArgs,
    program: &Path,
    proxy: Option<&SeatProxy>,
) -> Result<Option<Profile>, Refusal> {
    let Some(runtime) = args.profile.as_deref() else {
        return Ok(None);
    };
    let meta = registry::find(runtime).map_err(|_| {
        let names: Vec<&str> = registry::all().iter().map(|meta| meta.name).collect();
        Refusal::usage(anyhow!(
            "--profile ({runtime}): no such runtime; one of {}",
            names.join(", ")
        ))
    })?;
    // The state is named absolute: the CLI finds its HOME wherever it changes directory to.
    let state = args
        .state
        .as_deref()
        .map(std::path::absolute)
        .transpose()
        .map_err(|e| Refusal::usage(anyhow!("--state: {e}")))?;
    if let Some(state) = &state {
        refuse_state_in_grant(state, args)?;
    }
    let env = profile::Env::current();
    profile::derive(runtime, &meta.needs, program, &env, state.as_deref(), proxy)
        .map(Some)
        .map_err(|e| Refusal::usage(anyhow!("--profile ({runtime}): {e:#}")))
}

/// A state inside (or holding) another writable grant is refused: the workspace's repository,
/// or whatever else writes there, would choose what the CLI loads from its HOME.
fn refuse_state_in_grant(state: &Path, args: &SandboxArgs) -> Result<(), Refusal> {
    // Compared as given and with links resolved: a grant spelled through a link is the same.
    let states = [state.to_path_buf(), crate::worktree::resolve(state)];
    for grant in args.rw.iter().chain(&args.rw_try) {
        let grant = std::path::absolute(grant).unwrap_or_else(|_| grant.clone());
        let grants = [grant.clone(), crate::worktree::resolve(&grant)];
        let overlap = states
            .iter()
            .any(|s| grants.iter().any(|g| s.starts_with(g) || g.starts_with(s)));
        if overlap {
            return Err(Refusal::usage(anyhow!(
                "--state ({}) is inside or holds the writable grant {}, where what the CLI \
                 loads from its HOME could be planted: give a directory of the job's own",
                state.display(),
                grant.display()
            )));
        }
    }
    Ok(())
}

/// `--print-profile`: the grants `--profile` derives for the command, on stdout; nothing runs.
fn print_profile(args: &SandboxArgs) -> Result<ExitCode, Refusal> {
    let program = resolve_program(&args.command[0], std::env::var_os("PATH").as_deref())?;
    let profile = derive_profile(args, &program, seat_proxy(args)?.as_ref())?;
    let text = profile.as_ref().map(Profile::to_string).unwrap_or_default();
    write_stdout(text.as_bytes(), "the profile")?;
    Ok(ExitCode::SUCCESS)
}

/// Writes a report on stdout; a failed write (a reader gone) is exit 1, not a kernel refusal.
fn write_stdout(bytes: &[u8], what: &str) -> Result<(), Refusal> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|e| Refusal {
            status: EXIT_OUTPUT_FAILED,
            error: anyhow!("cannot write {what} to stdout: {e}"),
        })
}

/// The default `--max-procs` of a `--user` seat: a fork bomb stops there, and a CLI with its
/// tools, language servers and their threads stays far below it.
const DEFAULT_USER_MAX_PROCS: u64 = 4096;

/// Sets RLIMIT_NPROC for the command (before the user switch, which keeps it).
fn limit_processes(asked: Option<u64>, other_user: bool) -> Result<(), Refusal> {
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
fn give_up_privileges(identity: Option<&Identity>, keep_caps: bool) -> Result<(), Refusal> {
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

fn remedy(missing: &Rights) -> &'static str {
    if missing.fs.is_empty() && missing.net.is_empty() {
        "pass --no-scope to run without scoping, or --best-effort"
    } else {
        "update the kernel, or pass --best-effort to run without them"
    }
}

/// The kernel applied the ruleset; make sure it is the ruleset that was asked for.
fn verify(status: &RestrictionStatus, best_effort: bool) -> Result<(), Refusal> {
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

fn exec_failure(program: &Path, error: std::io::Error, other_user: bool) -> Refusal {
    let shown = program.display();
    match Errno::from_raw(error.raw_os_error().unwrap_or(0)) {
        Errno::ENOENT => Refusal {
            status: EXIT_NOT_FOUND as u8,
            error: anyhow!("cannot run ({shown}): {error}: its #! interpreter may be missing"),
        },
        Errno::EACCES => Refusal {
            status: EXIT_CANNOT_INVOKE as u8,
            error: anyhow!(
                "cannot run ({shown}): {error}: the sandbox may deny the binary, its #! \
                 interpreter or its shared libraries; grant them with --rx{}",
                if other_user {
                    " (and the --user must be able to read and execute them)"
                } else {
                    ""
                }
            ),
        },
        _ => Refusal {
            status: EXIT_CANNOT_INVOKE as u8,
            error: anyhow!("cannot run ({shown}): {error}"),
        },
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
const DEFAULT_EXEC: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];
/// Configuration and process information: read only.
const DEFAULT_READ: &[&str] = &["/etc", "/proc"];
/// Device files every program may open.
const DEFAULT_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

impl Policy {
    fn from_args(args: &SandboxArgs, program: &Path) -> Result<Self, Refusal> {
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
    fn add_profile(&mut self, profile: &Profile) {
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
fn default_rules(program: &Path) -> Vec<PathRule> {
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
fn open_rules(paths: &[PathRule]) -> Result<Vec<PathBeneath<PathFd>>, Refusal> {
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

fn fs_name(access: AccessFs) -> &'static str {
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

fn net_name(access: AccessNet) -> &'static str {
    match access {
        AccessNet::BindTcp => "bind_tcp",
        AccessNet::ConnectTcp => "connect_tcp",
        AccessNet::BindUdp => "bind_udp",
        AccessNet::ConnectSendUdp => "connect_send_udp",
        _ => "unknown",
    }
}

fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::AbstractUnixSocket => "abstract_unix_socket",
        Scope::Signal => "signal",
        _ => "unknown",
    }
}

/// What the running kernel offers. Used only to explain and to refuse early: the ruleset itself
/// is built from [`TARGET_ABI`] and the crate's compatibility handling.
#[derive(Debug, Clone, Copy)]
enum Support {
    Available { abi: ABI, raw: i32 },
    NotEnabled,
    NotImplemented,
}

impl Support {
    fn detect() -> Self {
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
                LandlockStatus::NotImplemented => Support::NotImplemented,
            },
            Err(_) => Support::NotImplemented,
        }
    }

    fn is_available(&self) -> bool {
        matches!(self, Support::Available { .. })
    }

    /// The rights moot-sandbox can have enforced here: those of the kernel's ABI, up to the target.
    fn enforceable(&self) -> Rights {
        match *self {
            Support::Available { abi, .. } => Rights::of_abi(abi.min(TARGET_ABI)),
            Support::NotEnabled | Support::NotImplemented => Rights::NONE,
        }
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Support::Available { raw, .. } => write!(f, "kernel Landlock ABI {raw}"),
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

fn abi_number(abi: ABI) -> i32 {
    abi as i32
}

/// `--check`'s report.
#[derive(Debug, Serialize, Deserialize)]
pub struct CheckReport {
    /// `available`, `not_enabled` (built in, off at boot) or `not_implemented` (not built in).
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

fn not_covered() -> Vec<Uncovered> {
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

fn check() -> Result<ExitCode, Refusal> {
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

fn probe() -> Probe {
    run_probe().unwrap_or_else(|error| Probe {
        error: Some(format!("{error:#}")),
        ..Probe::default()
    })
}

fn run_probe() -> anyhow::Result<Probe> {
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

fn probe_in_thread(
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

    #[test]
    fn the_fallback_marks_every_descriptor_but_stdio_close_on_exec() {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let flags = |fd| FdFlag::from_bits_retain(fcntl(fd, FcntlArg::F_GETFD).unwrap());
        let file = fs::File::open("/dev/null").unwrap();
        // SAFETY: dup(2) of an open descriptor; the copy is owned by `inherited` alone.
        let inherited = unsafe { OwnedFd::from_raw_fd(libc::dup(file.as_raw_fd())) };
        assert!(!flags(inherited.as_raw_fd()).contains(FdFlag::FD_CLOEXEC));
        let stdio: Vec<FdFlag> = (0..3).map(flags).collect();
        mark_listed_descriptors_cloexec().unwrap();
        assert!(flags(inherited.as_raw_fd()).contains(FdFlag::FD_CLOEXEC));
        assert_eq!((0..3).map(flags).collect::<Vec<_>>(), stdio);
    }

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

    /// A file handed to the CLI reads back through /proc/self/fd, and nobody can change it.
    #[test]
    fn a_handed_file_is_sealed() {
        let fd = sealed_memfd("TEST", b"mcp:\n  enableProjectConfig: false\n").unwrap();
        let path = format!("/proc/self/fd/{fd}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "mcp:\n  enableProjectConfig: false\n"
        );
        let written = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|mut file| std::io::Write::write_all(&mut file, b"mcp: {}\n"));
        assert!(
            written.is_err_and(|e| e.raw_os_error() == Some(libc::EPERM)),
            "a sealed file was written"
        );
        // SAFETY: the test owns fd and closes it once.
        drop(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    }
}
