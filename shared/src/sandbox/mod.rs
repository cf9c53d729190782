//! moot-sandbox's engine: confine one command with Landlock, then exec it.
//!
//! The policy is an allowlist (Landlock cannot deny below a grant): paths readable, executable or
//! writable, TCP ports to connect to or bind, and signals and abstract UNIX sockets scoped to the
//! sandbox. The ruleset is one fallible builder chain ([`restrict_self`]); the rights are the ones
//! the crate assigns to `TARGET_ABI` (policy.rs), the newest ABI this build was tested on, so a
//! crate update cannot change what a flag means. moot-sandbox fails closed: a kernel that cannot enforce every
//! right asked is refused unless `--best-effort` (which then says what is not enforced), and a
//! kernel that enforces nothing at all is refused even then.
//!
//! Not covered, by Landlock ABI 7: UDP (ABI 10), pathname UNIX sockets (ABI 9: a sandboxed
//! process can still connect to, say, a docker socket it can name), stat(2) and access(2) (not
//! mediated), and standard input, output and error, which keep the access they were opened with
//! (every other inherited descriptor is closed at exec: [`close_inherited_descriptors`]).
//!
//! The engine is this module's flow (flags, refusals, the exec) and four parts that use its
//! `Refusal` and `SandboxArgs` and nothing of each other's flow: `policy` (the Landlock policy and
//! ruleset), `check` (`--check` and the kernel probe), `descriptors` (what the command inherits)
//! and `seat` (the credential proxy's side, the seat's user and process limit); and a leaf,
//! `environment` (what the host and a container's seccomp profile allow, for `check`'s refusal
//! and moot-doctor's report).

use std::convert::Infallible;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::anyhow;
use landlock::CompatLevel;
use nix::errno::Errno;
use nix::sys::prctl;

use crate::model::Meta;
use crate::outcome::{EXIT_CANNOT_INVOKE, EXIT_NOT_FOUND};
use crate::privilege::Identity;
use crate::profile::{self, Profile};
use crate::program::{resolve_program, Unresolved};
use crate::registry;
use crate::report;
use crate::seat_proxy::SeatProxy;

mod check;
mod descriptors;
pub mod environment;
mod policy;
mod seat;

use check::{check, Support};
use descriptors::{close_inherited_descriptors, hand_files};
use policy::{denied_exec, open_rules, remedy, restrict_self, verify, Policy};
use seat::{
    give_up_privileges, limit_processes, proxy_env, refuse_granted_key, refuse_unreachable,
    seat_argv, seat_proxy, warn_unproxied,
};

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
    /// and exit without running it. Without a command, for the runtime's executable on PATH.
    #[arg(long, requires = "profile")]
    pub print_profile: bool,

    /// Print as JSON what this kernel can enforce and the result of a real self-probe, then exit.
    #[arg(long, conflicts_with = "command")]
    pub check: bool,

    /// The command to confine, and its arguments.
    #[arg(
        last = true,
        value_name = "COMMAND",
        required_unless_present_any = ["check", "print_profile"]
    )]
    pub command: Vec<OsString>,
}

/// The environment a job would run in (moot-doctor's report), with the verdict of the probe
/// `--check` runs: a throwaway thread confined, a write outside its grant denied.
pub fn environment() -> environment::Environment {
    let enforces = Support::detect().is_available() && check::probe().passed;
    environment::Environment::detect(enforces)
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
        warn_unproxied(
            tool,
            args.profile.as_deref().unwrap_or_default(),
            profile,
            proxy,
        );
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
    // The files the kernel executes to start the command: the program, its `#!` interpreters,
    // what a shell shim execs.
    let chain = crate::profile::exec_chain(&program, std::env::var_os("PATH").as_deref());
    if let Some(denied) = denied_exec(&policy, &program, &chain, args.profile.as_deref()) {
        return Err(Refusal {
            status: EXIT_CANNOT_INVOKE as u8,
            error: denied,
        });
    }
    if let Some(identity) = &identity {
        refuse_unreachable(args, identity, &chain)?;
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

/// The profile `--profile` asks for, derived in this process's environment (which the command
/// inherits).
/// The record `--profile` names; an unknown name is a usage error listing the known ones.
fn profile_runtime(runtime: &str) -> Result<&'static Meta, Refusal> {
    registry::find(runtime).map_err(|_| {
        let names: Vec<&str> = registry::all().iter().map(|meta| meta.name).collect();
        Refusal::usage(anyhow!(
            "--profile ({runtime}): no such runtime; one of {}",
            names.join(", ")
        ))
    })
}

fn derive_profile(
    args: &SandboxArgs,
    program: &Path,
    proxy: Option<&SeatProxy>,
) -> Result<Option<Profile>, Refusal> {
    let Some(runtime) = args.profile.as_deref() else {
        return Ok(None);
    };
    let meta = profile_runtime(runtime)?;
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

/// `--print-profile`: the grants `--profile` derives for the command (the runtime's executable
/// when none is given), on stdout; nothing runs.
fn print_profile(args: &SandboxArgs) -> Result<ExitCode, Refusal> {
    let named = match (args.command.first(), args.profile.as_deref()) {
        (Some(command), _) => command.clone(),
        (None, Some(runtime)) => profile_runtime(runtime)?.executable.into(),
        // clap: --print-profile requires --profile.
        (None, None) => return Ok(ExitCode::SUCCESS),
    };
    let program = resolve_program(&named, std::env::var_os("PATH").as_deref())?;
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
