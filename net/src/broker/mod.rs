//! moot-broker: the read-only omp seat's job-local credential proxy.
//!
//! omp reads its credentials from an auth broker. A read-only seat must not hold the shared
//! broker's token, see other providers' credentials, or change the shared broker's state, yet it
//! can read every ancestor's /proc/<pid>/environ. So moot-broker keeps the upstream token to
//! itself, serves the seat a loopback proxy ([`proxy`]) under a random job bearer written only
//! into the seat's own `config.yml` ([`seat`]), runs the command with no `OMP_AUTH_BROKER_*`
//! variable, and removes the seat and closes the proxy when the command ends, however it ends.
//!
//! Refusals ([`refuse`]) happen before anything is created: one line, exit 2.

pub mod forward;
pub mod guard;
pub mod proxy;
pub mod refuse;
pub mod seat;
pub mod upstream;
mod view;

use std::cell::Cell;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{kill, SigSet, Signal};
use nix::sys::signalfd::SignalFd;
use nix::unistd::{getpid, getppid, Pid};
use tokio::io::unix::AsyncFd;

use crate::http;
use guard::Guard;
use moot::exec;
use moot::report::print_error;
use moot::seat_proxy::SeatProxy;
use proxy::Proxy;
use seat::Seat;
use upstream::{Polled, Upstream};

/// A refusal or a usage error: nothing was created and the command did not run.
pub const EXIT_USAGE: u8 = 2;
/// moot-broker itself failed after the checks (upstream unreachable, the seat not writable).
pub const EXIT_FAILED: u8 = 1;
/// The command could not be executed / was not found (as the shell's).
const EXIT_CANNOT_INVOKE: u8 = 126;
const EXIT_NOT_FOUND: u8 = 127;

/// The largest `--models-file` copied into the seat.
const MODELS_LIMIT: usize = 1024 * 1024;

/// moot-broker's flags (the binary flattens them into its command line).
#[derive(Debug, clap::Args)]
pub struct BrokerArgs {
    /// The shared broker: an https:// origin, or http:// on a loopback address
    /// [default: $OMP_AUTH_BROKER_URL].
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,

    /// The file holding the shared broker's token: a regular file owned by this user, mode 0600
    /// or stricter [default: $OMP_AUTH_BROKER_TOKEN_FILE].
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// Also trust the PEM certificates in FILE for an https upstream (a private CA).
    #[arg(long, value_name = "FILE")]
    pub upstream_ca: Option<PathBuf>,

    /// The seat's provider-qualified model (PROVIDER/MODEL, e.g. kimi-code/k3): the seat sees
    /// only PROVIDER's credentials. Give moot-render the same --model.
    #[arg(
        long,
        value_name = "PROVIDER/MODEL",
        required_unless_present = "forward"
    )]
    pub model: Option<String>,

    /// Instead of an omp seat, a credential proxy to the provider at URL (an https:// base URL,
    /// or http:// on a loopback address): the command gets MOOT_PROXY_URL and MOOT_PROXY_TOKEN,
    /// and only a request carrying that token reaches the provider, with the real key.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with_all = ["upstream", "token_file", "model", "seat_dir", "models_file"]
    )]
    pub forward: Option<String>,

    /// With --forward: the file holding the provider's key (a regular file owned by this user,
    /// mode 0600 or stricter).
    #[arg(
        long,
        value_name = "FILE",
        requires = "forward",
        conflicts_with = "key_env"
    )]
    pub key_file: Option<PathBuf>,

    /// With --forward: the variable of this environment holding the provider's key; in the
    /// command's environment it holds the job token instead, where the CLI looks for its key
    /// (as does every other variable that holds the key, whichever flag gave it).
    #[arg(long, value_name = "NAME", requires = "forward")]
    pub key_env: Option<String>,

    /// With --forward: how the provider takes its key.
    #[arg(long, value_enum, default_value = "auto", requires = "forward")]
    pub key_header: forward::Scheme,

    /// The seat directory to create (it must not exist; its parent must), removed when the
    /// command ends [default: a new directory in $TMPDIR].
    #[arg(long, value_name = "DIR")]
    pub seat_dir: Option<PathBuf>,

    /// Copy FILE into the seat as omp's models.yml (a provider's base URL; no keys belong here).
    #[arg(long, value_name = "FILE")]
    pub models_file: Option<PathBuf>,

    /// Seconds between a forwarded INT, TERM or HUP and SIGKILL to the command; keep it below an
    /// enclosing moot-run's --grace, so the seat is removed before moot-run's SIGKILL.
    #[arg(long, value_name = "SECS", default_value = "3", value_parser = moot::seconds::parse_seconds)]
    pub grace: Duration,

    /// The command to run with the seat or the proxy (every `{port}` in it becomes the proxy's
    /// port, every `{seat}` the seat directory: moot-sandbox --state {seat}/state keeps omp's
    /// state in the seat).
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// Everything checked, nothing created yet.
struct Job {
    mode: Mode,
    upstream_ca: Option<PathBuf>,
    grace: Duration,
    command: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

/// What moot-broker serves the command.
enum Mode {
    /// The read-only omp seat in front of the shared auth broker.
    Seat(SeatJob),
    /// A credential proxy to one provider.
    Forward(ForwardJob),
}

struct SeatJob {
    upstream: refuse::Upstream,
    token: String,
    provider: String,
    seat_dir: PathBuf,
    models: Option<Vec<u8>>,
}

struct ForwardJob {
    provider_url: String,
    scheme: forward::Scheme,
    key: String,
}

/// Runs moot-broker: the checks, then the seat and its proxy for the command's lifetime.
pub fn run(tool: &str, args: &BrokerArgs) -> ExitCode {
    let job = match check(args, std::env::vars_os().collect()) {
        Ok(job) => job,
        Err(e) => {
            print_error(tool, &e);
            clean_up_unstarted(tool, &args.command);
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let started = Cell::new(false);
    let status = match serve(job, &started) {
        Ok(status) => status,
        Err(e) => {
            print_error(tool, &e);
            ExitCode::from(EXIT_FAILED)
        }
    };
    if !started.get() {
        clean_up_unstarted(tool, &args.command);
    }
    status
}

/// A command that never started (refused, the upstream unreachable, the seat not creatable)
/// leaves no staged prompt behind: when it is moot-run, its `--cleanup` directories are removed
/// as moot-run would have removed them (see [`exec::clean_up_unrun`]).
pub fn clean_up_unstarted(tool: &str, command: &[OsString]) {
    let program = command.first().map(Path::new).and_then(Path::file_name);
    if program.is_some_and(|name| name == "moot-run") {
        exec::clean_up_unrun(tool, command);
    }
}

/// Every refusal, in the order a user fixes them; reads but creates nothing.
fn check(args: &BrokerArgs, env: Vec<(OsString, OsString)>) -> anyhow::Result<Job> {
    refuse::no_token_in_env(env.iter().cloned())?;
    let mode = match &args.forward {
        Some(url) => Mode::Forward(check_forward(args, url, &env)?),
        None => Mode::Seat(check_seat(args, &env)?),
    };
    Ok(Job {
        mode,
        upstream_ca: args.upstream_ca.clone(),
        grace: args.grace,
        command: args.command.clone(),
        env,
    })
}

/// The credential proxy's checks: the provider's URL, one key, no `{seat}` in the command.
fn check_forward(
    args: &BrokerArgs,
    url: &str,
    env: &[(OsString, OsString)],
) -> anyhow::Result<ForwardJob> {
    refuse::upstream("--forward", url)?;
    crate::egress::check_route(url).map_err(|why| anyhow!("--forward {url}: {why}"))?;
    let (key, key_env) = match (&args.key_file, &args.key_env) {
        (Some(path), _) => (refuse::secret_file("--key-file", path)?, None),
        (None, Some(name)) => {
            let value = env
                .iter()
                .find(|(k, v)| k == name.as_str() && !v.is_empty())
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .ok_or_else(|| anyhow!("--key-env {name}: the variable is not set"))?;
            (value, Some(OsString::from(name)))
        }
        (None, None) => bail!("--forward needs the provider's key: give --key-file or --key-env"),
    };
    args.key_header
        .header(&key)
        .with_context(|| match &key_env {
            Some(name) => format!("--key-env {}", name.to_string_lossy()),
            None => "--key-file".to_string(),
        })?;
    if args
        .command
        .iter()
        .any(|word| word.as_bytes().windows(6).any(|w| w == b"{seat}"))
    {
        bail!("{{seat}} names the omp seat, which --forward does not make; remove it");
    }
    // Any process of any user may read a command line (/proc/PID/cmdline, undumpable or not),
    // so a token put in its place would not keep the key: this one already shows it.
    if args
        .command
        .iter()
        .any(|word| holds(word.as_bytes(), key.as_bytes()))
    {
        bail!(
            "the command line holds the provider's key, which any process can read in \
             /proc/PID/cmdline; let the CLI read it from its configuration or its variable \
             (--key-env), where the command gets the job token instead"
        );
    }
    Ok(ForwardJob {
        provider_url: url.to_string(),
        scheme: args.key_header,
        key,
    })
}

/// The read-only omp seat's checks.
fn check_seat(args: &BrokerArgs, env: &[(OsString, OsString)]) -> anyhow::Result<SeatJob> {
    let from_env = |name: &str| {
        env.iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
    };
    let upstream = match (&args.upstream, from_env(refuse::ENV_URL)) {
        (Some(url), _) => url.clone(),
        (None, Some(url)) => url.to_string_lossy().into_owned(),
        (None, None) => bail!(
            "no upstream broker: give --upstream or set {}",
            refuse::ENV_URL
        ),
    };
    let upstream = refuse::upstream("--upstream", &upstream)?;
    crate::egress::check_route(&upstream.base)
        .map_err(|why| anyhow!("the upstream broker {}: {why}", upstream.base))?;
    let token_file = match (&args.token_file, from_env(refuse::ENV_TOKEN_FILE)) {
        (Some(path), _) => path.clone(),
        (None, Some(path)) => PathBuf::from(path),
        (None, None) => bail!(
            "no upstream token: give --token-file or set {}",
            refuse::ENV_TOKEN_FILE
        ),
    };
    let token = refuse::token_file(&token_file)?;
    let provider = refuse::provider(args.model.as_deref().unwrap_or_default())?;
    let seat_dir = match &args.seat_dir {
        Some(dir) => free_dir(dir)?,
        None => {
            std::env::temp_dir().join(format!("moot-seat.{}", moot::session::random_hex::<8>()?))
        }
    };
    let models = match &args.models_file {
        Some(path) => Some(
            moot::private_file::read_small(path, MODELS_LIMIT)
                .with_context(|| format!("--models-file ({})", path.display()))?,
        ),
        None => None,
    };
    if models
        .as_deref()
        .is_some_and(|m| m.windows(6).any(|w| w == b"apiKey"))
    {
        bail!(
            "--models-file: it pins an apiKey, which omp would use instead of the broker's \
             credential; remove it"
        );
    }
    Ok(SeatJob {
        upstream,
        token,
        provider,
        seat_dir,
        models,
    })
}

/// A seat directory that can be created: absent, in an existing directory.
fn free_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    let what = || format!("--seat-dir ({})", dir.display());
    if std::fs::symlink_metadata(dir).is_ok() {
        return Err(anyhow!(
            "already exists; name a new directory (it is removed afterwards)"
        ))
        .with_context(what);
    }
    let parent = moot::private_file::parent_dir(dir);
    if !parent.is_dir() {
        return Err(anyhow!("its parent is not a directory")).with_context(what);
    }
    std::path::absolute(dir).with_context(what)
}

fn serve(job: Job, started: &Cell<bool>) -> anyhow::Result<ExitCode> {
    let signals = exec::catch_forwarded_signals().context("catching signals")?;
    match &job.mode {
        Mode::Seat(seat) => {
            // SAFETY: no thread exists yet; the runtime below starts the first.
            let guard =
                unsafe { Guard::start(&seat.seat_dir) }.context("starting the seat's guard")?;
            let runtime = http::runtime().context("starting the proxy's runtime")?;
            runtime.block_on(deliver(&job, seat, signals, guard, started))
        }
        Mode::Forward(forward) => {
            // No guard: nothing is made on disk, and the proxy dies with this process.
            let runtime = http::runtime().context("starting the proxy's runtime")?;
            runtime.block_on(deliver_forward(&job, forward, signals, started))
        }
    }
}

/// Serves the credential proxy while the command runs; afterwards the token is refused and the
/// port closed.
async fn deliver_forward(
    job: &Job,
    forward: &ForwardJob,
    signals: SignalFd,
    started: &Cell<bool>,
) -> anyhow::Result<ExitCode> {
    let client = http::client(job.upstream_ca.as_deref())?;
    let token = seat::job_token()?;
    let forwarder = forward::Forwarder::new(
        &forward.provider_url,
        token.clone(),
        forward.scheme,
        &forward.key,
        client,
    )?;
    let listener = http::bind_loopback().context("binding the proxy")?;
    let port = listener.local_addr()?.port();
    let served = Arc::clone(&forwarder);
    let server = tokio::spawn(http::serve(listener, move |request| {
        Arc::clone(&served).handle(request)
    }));
    // The proxy's variables (moot-sandbox rewrites the seat's copies with them), and the
    // caller's variables that hold the key with the token in its place: the one --key-env
    // named, where the CLI looks for its key, and any other.
    let mut proxy_env =
        SeatProxy::exported(port, &token, &forward.provider_url, forward.key.as_bytes());
    let keyless = keyless_env(&job.env, forward.key.as_bytes(), &token);
    // The proxy's own names are set above, whatever the caller had in them.
    proxy_env.extend(
        keyless
            .into_iter()
            .filter(|(name, _)| !moot::seat_proxy::VARS.iter().any(|var| name == var)),
    );
    let command = command(job, port, None, &|_| false, &proxy_env);
    let outcome = supervise(job, command, signals, started).await;
    forwarder.close();
    server.abort();
    let _ = server.await;
    outcome.map(|ended| match ended {
        Ended::Ran(status) | Ended::NotRun(status) => ExitCode::from(status),
    })
}

/// The variables of `env` whose value holds `key`, each with `token` in place of every
/// occurrence.
///
/// Only moot-broker may hold the key. Replacing it here rather than leaving it to moot-sandbox
/// (which rewrites the CLI's environment the same way) keeps it out of every process between:
/// an exec'd program's `/proc/PID/environ` is the environment it was given, for its whole life;
/// moot-run and moot-sandbox are dumpable (their `/proc` open to their user, under the ptrace
/// rules) from their exec until their `main` makes them undumpable; and each child moot-run
/// forks shows moot-run's environment, under moot-run's name, until its own exec. exec resets
/// the flag, so no call of theirs closes the window before it: the key must not be in what
/// they are given at all.
/// Found by the e2e suite's /proc watcher: a variable the caller had exported with the key
/// besides `--key-file`, in moot-run's fork child.
fn keyless_env(env: &[(OsString, OsString)], key: &[u8], token: &str) -> Vec<(OsString, OsString)> {
    env.iter()
        .filter(|(_, value)| holds(value.as_bytes(), key))
        .map(|(name, value)| {
            let value = value.as_bytes();
            let mut out = Vec::with_capacity(value.len());
            let mut from = 0;
            for at in memchr::memmem::find_iter(value, key) {
                // memmem finds occurrences that do not overlap; this keeps it so regardless.
                if at < from {
                    continue;
                }
                out.extend_from_slice(&value[from..at]);
                out.extend_from_slice(token.as_bytes());
                from = at + key.len();
            }
            out.extend_from_slice(&value[from..]);
            (name.clone(), OsString::from_vec(out))
        })
        .collect()
}

/// Whether `bytes` hold `key` (an empty key is held nowhere).
fn holds(bytes: &[u8], key: &[u8]) -> bool {
    !key.is_empty() && memchr::memmem::find(bytes, key).is_some()
}

/// Fetches the first snapshot, makes the seat, runs the command while serving the proxy, and
/// removes the seat whatever happened after it was made (its guard, should moot-broker die).
async fn deliver(
    job: &Job,
    seat_job: &SeatJob,
    signals: SignalFd,
    mut guard: Guard,
    started: &Cell<bool>,
) -> anyhow::Result<ExitCode> {
    let client = http::client(job.upstream_ca.as_deref())?;
    let upstream = Upstream::new(
        seat_job.upstream.base.clone(),
        seat_job.token.clone(),
        client,
    );
    let (known, first) = match upstream
        .snapshot(None)
        .await
        .context("the upstream broker")?
    {
        Polled::Changed {
            generation,
            snapshot,
        } => (generation, snapshot),
        Polled::Unchanged => bail!("the upstream broker answered 304 to a first snapshot"),
    };
    let bearer = seat::job_token()?;
    let listener = http::bind_loopback().context("binding the proxy")?;
    let port = listener.local_addr()?.port();
    let proxy = Proxy::new(seat_job.provider.clone(), bearer.clone(), upstream, &first);
    let seat = Seat::create(
        &seat_job.seat_dir,
        &format!("http://127.0.0.1:{port}"),
        &bearer,
        seat_job.models.as_deref(),
        |dir| guard.made(dir),
    )?;
    let served = Arc::clone(&proxy);
    let server = tokio::spawn(http::serve(listener, move |request| {
        Arc::clone(&served).handle(request)
    }));
    let followed = Arc::clone(&proxy);
    let follower = tokio::spawn(async move {
        upstream::follow(followed.upstream(), known, |snapshot| {
            followed.apply(&snapshot)
        })
        .await
    });
    // No OMP_AUTH_BROKER_* variable: an inherited URL would override config.yml and bypass
    // the proxy.
    let hidden = |name: &OsStr| name.as_bytes().starts_with(b"OMP_AUTH_BROKER_");
    let command = command(job, port, Some(&seat_job.seat_dir), &hidden, &seat.env());
    let outcome = supervise(job, command, signals, started).await;
    if let Ok(Ended::Ran(status)) = outcome {
        if status != 0 && !proxy.was_reached() {
            moot::eprintln_whole!(
                "moot-broker: the command failed without ever reaching the proxy on 127.0.0.1:{port} \
                 (does its sandbox allow it: moot-sandbox --connect {{port}}?)"
            );
        }
    }
    server.abort();
    follower.abort();
    // Both tasks end at their next poll; the listener closes with the server task.
    let _ = server.await;
    let removed = seat.remove();
    if removed {
        guard.removed();
    }
    outcome.map(|ended| match ended {
        // A seat left behind holds the job bearer: a success is no longer one.
        Ended::Ran(0) if !removed => ExitCode::from(EXIT_FAILED),
        Ended::Ran(status) | Ended::NotRun(status) => ExitCode::from(status),
    })
}

/// How the command ended: its status once it ran, or the status of why it never did.
#[derive(Clone, Copy)]
enum Ended {
    Ran(u8),
    NotRun(u8),
}

/// Runs the command and waits for it, passing on INT, TERM and HUP (SIGKILL after the grace);
/// `started` is set once the command runs.
async fn supervise(
    job: &Job,
    mut command: Command,
    signals: SignalFd,
    started: &Cell<bool>,
) -> anyhow::Result<Ended> {
    let mut child = match command.spawn() {
        Ok(child) => {
            started.set(true);
            child
        }
        Err(e) => {
            let status = if e.kind() == io::ErrorKind::NotFound {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_INVOKE
            };
            moot::eprintln_whole!(
                "moot-broker: cannot run ({}): {e}",
                job.command[0].to_string_lossy()
            );
            return Ok(Ended::NotRun(status));
        }
    };
    let pid = Pid::from_raw(child.id() as i32);
    // SAFETY: the SignalFd owns its descriptor, keeps it open and returns the same one for as
    // long as the AsyncFd holds it.
    let mut signals =
        unsafe { AsyncFd::register_with_interest(signals, tokio::io::Interest::READABLE) }
            .map_err(|e| anyhow!("watching signals: {e}"))?;
    let mut kill_at: Option<tokio::time::Instant> = None;
    loop {
        if let Some(status) = child.try_wait().context("waiting for the command")? {
            return Ok(Ended::Ran(exit_code(status)));
        }
        let grace_over = async {
            match kill_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            ready = signals.readable_mut() => {
                let mut ready = ready.context("reading signals")?;
                while let Ok(Some(info)) = ready.get_inner_mut().read_signal() {
                    let Ok(signal) = Signal::try_from(info.ssi_signo as i32) else { continue };
                    if exec::FORWARDED.contains(&signal) {
                        let _ = kill(pid, signal);
                        kill_at.get_or_insert(tokio::time::Instant::now() + job.grace);
                    }
                }
                ready.clear_ready();
            }
            () = grace_over => {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
    }
}

/// The command: `{port}` (and `{seat}`, when there is one) filled in, the caller's environment
/// without the variables `hidden` names, then `set`.
fn command(
    job: &Job,
    port: u16,
    seat_dir: Option<&Path>,
    hidden: &dyn Fn(&OsStr) -> bool,
    set: &[(OsString, OsString)],
) -> Command {
    let port = port.to_string();
    let argv: Vec<OsString> = job
        .command
        .iter()
        .map(|word| fill_placeholders(word, &port, seat_dir))
        .collect();
    let unproxied = crate::egress::loopback_exempted(&job.env);
    let set: Vec<&(OsString, OsString)> = set.iter().chain(&unproxied).collect();
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]).env_clear();
    command.envs(
        job.env
            .iter()
            .filter(|(name, _)| !hidden(name))
            .filter(|(name, _)| !set.iter().any(|(given, _)| given == name))
            .map(|(k, v)| (k, v)),
    );
    command.envs(set.iter().map(|(k, v)| (k, v)));
    let parent = getpid();
    // SAFETY: runs in the forked child before exec and makes only async-signal-safe system
    // calls (sigprocmask, prctl, getppid), allocating nothing.
    unsafe {
        command.pre_exec(move || prepare_child(parent));
    }
    command
}

/// Unblocks the signals moot-broker reads from its signalfd (a blocked mask survives exec) and
/// asks for SIGTERM if moot-broker dies, so the command never outlives the proxy unnoticed.
fn prepare_child(parent: Pid) -> io::Result<()> {
    SigSet::empty().thread_set_mask()?;
    prctl::set_pdeathsig(Signal::SIGTERM)?;
    if getppid() != parent {
        return Err(io::Error::from_raw_os_error(Errno::ESRCH as i32));
    }
    Ok(())
}

/// `word` with every `{port}` and `{seat}` replaced by the proxy's port and the seat directory
/// (no seat: `{seat}` stays, which the checks refuse).
fn fill_placeholders(word: &OsString, port: &str, seat: Option<&Path>) -> OsString {
    let mut values: Vec<(&[u8], &[u8])> = vec![(b"{port}", port.as_bytes())];
    if let Some(seat) = seat {
        values.push((b"{seat}", seat.as_os_str().as_bytes()));
    }
    let mut out = Vec::with_capacity(word.len());
    let mut rest = word.as_bytes();
    'scan: while !rest.is_empty() {
        for &(name, value) in &values {
            if let Some(after) = rest.strip_prefix(name) {
                out.extend_from_slice(value);
                rest = after;
                continue 'scan;
            }
        }
        out.push(rest[0]);
        rest = &rest[1..];
    }
    OsString::from_vec(out)
}

/// The command's status as moot-broker's own: its code, or 128+N for signal N.
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.saturating_add(signal as u8),
        (None, None) => EXIT_FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variable_holding_the_key_gets_the_token() {
        let env: Vec<(OsString, OsString)> = [
            ("A_KEY", "sk-1"),
            ("HEADER", "Bearer sk-1, sk-1sk-1"),
            ("OTHER", "sk-2"),
            ("EMPTY", ""),
        ]
        .iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let keyless = keyless_env(&env, b"sk-1", "tok");
        let expected: Vec<(OsString, OsString)> = vec![
            ("A_KEY".into(), "tok".into()),
            ("HEADER".into(), "Bearer tok, toktok".into()),
        ];
        assert_eq!(keyless, expected);
        assert!(keyless_env(&env, b"", "tok").is_empty());
        assert_eq!(keyless_env(&env, b"aa", "t"), vec![]);
        let overlapping = [("V".into(), "aaaaa".into())];
        assert_eq!(
            keyless_env(&overlapping, b"aa", "t"),
            vec![("V".into(), "tta".into())]
        );
    }

    #[test]
    fn placeholders_are_filled() {
        let fill =
            |word: &str, port| fill_placeholders(&word.into(), port, Some(Path::new("/s/seat")));
        assert_eq!(fill("--connect={port}", "8"), "--connect=8");
        assert_eq!(fill("{port}{port}x", "12"), "1212x");
        assert_eq!(fill("{por}", "1"), "{por}");
        assert_eq!(fill("--state={seat}", "1"), "--state=/s/seat");
    }
}
