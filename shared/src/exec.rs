//! moot-run's engine: run one command bounded in time, and account for how it ended.
//!
//! The command runs in its own process group with stdin on /dev/null, a parent-death signal and
//! a seccomp filter that keeps every process of the job out of every other's memory and
//! descriptors (src/seccomp.rs). Its stdout and stderr are sockets of moot-run's, which no
//! process in the job can reopen, copied to ours as bytes arrive (stdout also to a transcript)
//! within a byte limit each (src/capture.rs). A deadline, an output past its limit, or INT, TERM
//! or HUP sent to moot-run, ends the whole group: the signal (SIGTERM for the deadline and the
//! limit) to the group, SIGKILL after a grace period. When the command itself exits, every
//! process it left behind is killed, `setsid` and double forks included: moot-run is their
//! subreaper (src/reaper.rs). Residual: if moot-run itself is killed with SIGKILL, only the
//! command (the parent-death signal) dies, not its descendants.
//!
//! Exit statuses follow timeout(1) (see [`crate::outcome`]); `--status-file` records the same
//! outcome atomically before moot-run's stdout closes, so a parser at the end of the pipeline
//! that reads it when its input ends always finds it.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, IsTerminal, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::builder::PossibleValuesParser;
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::prctl;
use nix::sys::signal::{self, killpg, SigAction, SigHandler, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::unistd::{getpid, getppid, Pid};

use crate::capture::{self, Pump, Sink};
use crate::env_preset::{self, Pattern};
use crate::outcome::{
    signal_exit_code, signal_name, OutputLimit, ProcessOutcome, Tampered, EXIT_CANNOT_INVOKE,
    EXIT_NOT_FOUND, EXIT_OUTPUT_LIMIT, EXIT_RUNNER_FAILED, EXIT_TAMPERED, EXIT_TIMED_OUT,
};
use crate::private_file::{self, FileId};
use crate::program::{resolve_program, Unresolved};
use crate::protect::Snapshot;
use crate::report;
use crate::seccomp::Filter;
use crate::seconds::parse_seconds;
use crate::{atomic_file, cleanup, reaper};

/// The signals moot-run and moot-broker pass on to the command (and then end it after the grace).
pub const FORWARDED: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// NUL-separated argv on stdin larger than this is refused: the kernel would refuse to exec it.
const MAX_STDIN_ARGV: u64 = 64 << 20;

/// After every process of the job has been killed, how long at least moot-run lets the copy of
/// its stdout or stderr go without moving a byte (the grace period, when longer) before it
/// gives up on delivering it.
const DELIVERY_IDLE_AT_LEAST: Duration = Duration::from_secs(1);

/// How long the sweep that kills what the command left behind may take (a process stuck in the
/// kernel dies only when it leaves it).
const SWEEP_WITHIN: Duration = Duration::from_secs(5);

/// moot-run's flags (the binary flattens them into its command line).
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// End the command SECS seconds after it starts (fractions allowed): SIGTERM to its process
    /// group, SIGKILL after --grace; moot-run then exits 124.
    #[arg(long, value_name = "SECS", value_parser = positive_seconds)]
    pub deadline: Option<Duration>,

    /// Seconds between the terminating signal (the deadline's SIGTERM, or an INT, TERM or HUP
    /// moot-run received and forwarded) and SIGKILL to the whole group.
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = parse_seconds)]
    pub grace: Duration,

    /// Also write the command's stdout to FILE, byte for byte as it arrives (created 0600).
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,

    /// Send the command's stderr to FILE (created 0600) instead of moot-run's stderr.
    #[arg(long, value_name = "FILE")]
    pub stderr_file: Option<PathBuf>,

    /// The most of the command's stdout moot-run passes on and keeps in --transcript (K, M, G
    /// suffixes). Past it the command is ended as at the deadline, the head and the last
    /// quarter (at most 4 MiB) are kept, the middle dropped, and moot-run exits 123.
    // The default is far above any real run (the largest real transcripts are a few MiB) and
    // far below what fills a CI runner's disk.
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = capture::parse_size)]
    pub max_output: u64,

    /// The same limit for the command's stderr (passed through or in --stderr-file).
    #[arg(long, value_name = "SIZE", default_value = "16M", value_parser = capture::parse_size)]
    pub max_stderr: u64,

    /// Write how the run ended to FILE as JSON, atomically, before moot-run's stdout closes:
    /// {"exit_code","signal","timed_out","elapsed_ms","pid"}, "output_limit" when an output
    /// passed its limit, and "tampered" when the job changed what --protect keeps.
    #[arg(long, value_name = "FILE")]
    pub status_file: Option<PathBuf>,

    /// Give the command only the common environment allowlist plus RUNTIME's own names.
    #[arg(long, value_name = "RUNTIME", value_parser = PossibleValuesParser::new(env_preset::runtimes()))]
    pub env_preset: Option<String>,

    /// With --env-preset, also keep VAR; 'PREFIX*' keeps every variable starting with PREFIX.
    #[arg(long, value_name = "VAR", requires = "env_preset")]
    pub keep: Vec<Pattern>,

    /// Keep DIR's git configuration as it was: in every `.git` in it, what git reads as
    /// configuration or runs (config, hooks, info, a `.git` file), and every `.gitmodules`. Anything the command
    /// changed there is put back once it has ended, and moot-run exits 122. Give it for every
    /// worktree the command may write.
    #[arg(long, value_name = "DIR")]
    pub protect: Vec<PathBuf>,

    /// Remove DIR and everything in it when the run ends, however it ends (moot-render's staged
    /// prompt directory).
    #[arg(long, value_name = "DIR")]
    pub cleanup: Vec<PathBuf>,

    /// Run the command in DIR, which must be a directory (moot-run's own files, --transcript
    /// and the rest, are still named from where moot-run runs). Most CLIs work in the
    /// directory they start in whatever they are granted: give the worktree here, so the job
    /// does not depend on where the pipeline was started.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// Read NUL-terminated argv from stdin and append it to COMMAND, which is then a prefix:
    /// `moot-render … | moot-run --stdin-argv -- moot-sandbox --rw "$wt" --` keeps moot-run
    /// (and the files it writes) outside the sandbox, with the sandbox wrapping only the CLI.
    #[arg(long, requires = "command")]
    pub stdin_argv: bool,

    /// The command and its arguments; without them, NUL-terminated argv is read from stdin.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// A deadline of 0 would end the command before it starts: refused as a usage error.
fn positive_seconds(text: &str) -> Result<Duration, String> {
    match parse_seconds(text)? {
        zero if zero.is_zero() => Err("the deadline must be more than 0 seconds".into()),
        duration => Ok(duration),
    }
}

/// Runs the command of `args` and returns moot-run's exit status, having printed any failure
/// once, removed the `--cleanup` directories and written the status file.
pub fn run(tool: &str, args: &RunArgs) -> ExitCode {
    let mut record = Record::default();
    // Where the status file goes, as it is now: checked again before it is written.
    let status_dir = args
        .status_file
        .as_deref()
        .and_then(|path| FileId::at(private_file::parent_dir(path)).ok());
    let mut checked = None;
    let mut protected = None;
    if let Err(failure) = execute(tool, args, &mut record, &mut checked, &mut protected) {
        report::print_error(tool, &failure.error);
        record.ending = failure.ending;
    }
    if let Some(snapshot) = protected {
        // The sweep again: on an error path it may not have run, and nothing of the job may be
        // alive while the protected set is compared and put back.
        let _ = reaper::kill_every_descendant(SWEEP_WITHIN);
        record.tampered = snapshot.verify_and_restore();
        if let Some(tampered) = &record.tampered {
            report::print_error(tool, &anyhow!("{tampered}"));
        }
    }
    // Only directories that passed the check are ever removed. They are checked once the argv
    // has been read (the producer, moot-render, has staged by then), or now if the run ended
    // before that.
    let removable = checked.unwrap_or_else(|| {
        cleanup::check(&args.cleanup).unwrap_or_else(|error| {
            report::print_error(tool, &error);
            Vec::new()
        })
    });
    if !remove_all(tool, &removable) {
        record.ending = Ending::RunnerFailed;
    }
    if let Some(path) = &args.status_file {
        if let Err(error) = write_status(path, status_dir, &record.outcome()) {
            report::print_error(tool, &error);
            record.ending = Ending::RunnerFailed;
        }
    }
    let code = record.outcome().exit_code;
    ExitCode::from(u8::try_from(code).unwrap_or(EXIT_RUNNER_FAILED as u8))
}

/// A moot-run command line that will not run, `args` with its program first: moot-run's own
/// after a usage error clap reported, or the one moot-broker refused to start. Its `--cleanup`
/// directories are still removed (with every check), so a refused pipeline leaves no staged
/// prompt behind. When the argv comes on stdin, stdin is read to its end first: the producer
/// (moot-render) has staged by then, and a stage written after the check would be left.
pub fn clean_up_unrun(tool: &str, args: &[OsString]) {
    let dirs = cleanup::dirs_in_raw_args(args.iter().cloned());
    if dirs.is_empty() {
        return;
    }
    if argv_comes_on_stdin(args) {
        drain_stdin();
    }
    match cleanup::check(&dirs) {
        Ok(removable) => {
            remove_all(tool, &removable);
        }
        Err(error) => report::print_error(tool, &error),
    }
}

/// Whether the raw moot-run command line `args` (program first) reads its command from stdin:
/// `--stdin-argv` among its options, or no command after them.
fn argv_comes_on_stdin(args: &[OsString]) -> bool {
    let words = args.get(1..).unwrap_or_default();
    let (options, command) = match words.iter().position(|word| word == "--") {
        Some(end) => (&words[..end], Some(&words[end + 1..])),
        None => (words, None),
    };
    options.iter().any(|word| word == "--stdin-argv") || command.is_some_and(<[_]>::is_empty)
}

/// Reads stdin to its end (or [`MAX_STDIN_ARGV`], past which moot-run would refuse it), so
/// that its producer has finished; a terminal is not read.
fn drain_stdin() {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return;
    }
    let mut chunk = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    while read <= MAX_STDIN_ARGV {
        match stdin.lock().read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => read += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

/// Removes checked directories; prints each failure and says whether all went.
fn remove_all(tool: &str, removable: &[cleanup::Removable]) -> bool {
    let mut all = true;
    for dir in removable {
        if let Err(error) = cleanup::remove(dir) {
            report::print_error(tool, &error);
            all = false;
        }
    }
    all
}

/// How a run ended. [`Record::outcome`] is the one place this becomes an exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The command exited with this status.
    Exited(i32),
    /// Signal N ended the command.
    Signaled(i32),
    /// moot-run itself failed: bad usage, or an I/O error of its own.
    RunnerFailed,
    /// The command was found but could not be executed.
    CannotInvoke,
    /// The command was not found.
    NotFound,
}

impl From<ExitStatus> for Ending {
    fn from(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Ending::Exited(code),
            (None, Some(signal)) => Ending::Signaled(signal),
            (None, None) => Ending::RunnerFailed,
        }
    }
}

/// Everything the status file says about a run.
#[derive(Debug)]
struct Record {
    ending: Ending,
    timed_out: bool,
    pid: Option<u32>,
    elapsed: Option<Duration>,
    output_limit: Option<OutputLimit>,
    tampered: Option<Tampered>,
    stderr_tail: Option<String>,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            ending: Ending::RunnerFailed,
            timed_out: false,
            pid: None,
            elapsed: None,
            output_limit: None,
            tampered: None,
            stderr_tail: None,
        }
    }
}

impl Record {
    fn outcome(&self) -> ProcessOutcome {
        let exit_code = match self.ending {
            // Whatever else happened, the job reached past its seat.
            _ if self.tampered.is_some() => EXIT_TAMPERED,
            // A run whose transcript or status is incomplete is moot-run's failure, deadline or not.
            Ending::RunnerFailed => EXIT_RUNNER_FAILED,
            _ if self.output_limit.is_some() => EXIT_OUTPUT_LIMIT,
            _ if self.timed_out => EXIT_TIMED_OUT,
            Ending::Exited(code) => code,
            Ending::Signaled(signal) => signal_exit_code(signal),
            Ending::CannotInvoke => EXIT_CANNOT_INVOKE,
            Ending::NotFound => EXIT_NOT_FOUND,
        };
        ProcessOutcome {
            exit_code,
            signal: match self.ending {
                Ending::Signaled(signal) => Some(signal_name(signal)),
                _ => None,
            },
            timed_out: self.timed_out,
            elapsed_ms: self
                .elapsed
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            pid: self.pid,
            output_limit: self.output_limit.clone(),
            tampered: self.tampered.clone(),
            stderr_tail: self.stderr_tail.clone(),
        }
    }
}

/// A failure of the run, and the ending it gives.
struct Failure {
    ending: Ending,
    error: anyhow::Error,
}

impl Failure {
    fn runner(error: impl Into<anyhow::Error>) -> Self {
        Failure {
            ending: Ending::RunnerFailed,
            error: error.into(),
        }
    }
}

impl From<Unresolved> for Failure {
    fn from(unresolved: Unresolved) -> Self {
        Failure {
            ending: match unresolved {
                Unresolved::NotExecutable(_) => Ending::CannotInvoke,
                Unresolved::Empty | Unresolved::NotFound { .. } => Ending::NotFound,
            },
            error: anyhow!(unresolved),
        }
    }
}

/// Runs the command. `checked` gets the `--cleanup` directories that may be removed, once the
/// argv is read (none when a check refused one: the command then does not run).
fn execute(
    tool: &str,
    args: &RunArgs,
    record: &mut Record,
    checked: &mut Option<Vec<cleanup::Removable>>,
    protected: &mut Option<Snapshot>,
) -> Result<(), Failure> {
    // First, before any thread exists, so every thread inherits the blocked mask and no signal
    // that arrives while the command starts is lost.
    let signals = Signals::catch()
        .context("cannot set up signal handling")
        .map_err(Failure::runner)?;
    let mut argv = args.command.clone();
    if argv.is_empty() || args.stdin_argv {
        argv.extend(argv_from_stdin(&signals).map_err(Failure::runner)?);
    }
    match cleanup::check(&args.cleanup) {
        Ok(removable) => *checked = Some(removable),
        Err(error) => {
            // Refused: nothing is removed, and the command does not run.
            *checked = Some(Vec::new());
            return Err(Failure::runner(error));
        }
    }
    let env = child_env(tool, args);
    let search_path = match &env {
        Some(vars) => vars
            .iter()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.clone()),
        None => std::env::var_os("PATH"),
    };
    let mut program = resolve_program(&argv[0], search_path.as_deref())?;
    let cwd = args
        .cwd
        .as_deref()
        .map(working_dir)
        .transpose()
        .map_err(Failure::runner)?;
    if cwd.is_some() {
        // A program found relative to where moot-run runs is still that program in DIR.
        program = std::path::absolute(&program)
            .context("cannot name the program absolutely")
            .map_err(Failure::runner)?;
    }
    let transcript = open_private(args.transcript.as_deref(), "--transcript")?;
    let stderr = open_private(args.stderr_file.as_deref(), "--stderr-file")?;
    let written = [
        (
            args.transcript.as_deref(),
            identity(transcript.as_ref()),
            "--transcript",
        ),
        (
            args.stderr_file.as_deref(),
            identity(stderr.as_ref()),
            "--stderr-file",
        ),
    ];

    if !args.protect.is_empty() {
        *protected = Some(Snapshot::take(&args.protect).map_err(Failure::runner)?);
    }
    // Before the command starts, so every orphan it makes is re-parented here.
    reaper::become_subreaper()
        .context("cannot become the reaper of the command's descendants")
        .map_err(Failure::runner)?;
    let outputs = Outputs::open(transcript, stderr)
        .context("cannot set up the command's stdout and stderr")
        .map_err(Failure::runner)?;
    let (child, outputs) = outputs.spawn(&program, &argv, env.as_deref(), cwd.as_deref())?;
    let started = Instant::now();
    record.pid = Some(child.id());
    let mut group = Group::new(child);
    let running = outputs
        .start(args)
        .context("cannot copy the command's output")
        .map_err(Failure::runner)?;

    let timed_out = group
        .supervise(
            &signals,
            running.overflow.as_ref(),
            args.deadline.map(|d| started + d),
            args.grace,
        )
        .map_err(Failure::runner)?;
    record.elapsed = Some(started.elapsed());
    record.timed_out = timed_out;
    record.ending = group
        .finish()
        .context("cannot collect the command's exit status")
        .map_err(Failure::runner)?
        .into();
    // Every process the command left behind, `setsid` or not, before the outputs are read to
    // their end: none of them can add to the stream after the command is gone.
    if let Err(left) = reaper::kill_every_descendant(SWEEP_WITHIN) {
        return Err(Failure::runner(anyhow!(
            "{left} processes the command left behind were still alive {} s after SIGKILL",
            SWEEP_WITHIN.as_secs()
        )));
    }
    let delivered = running
        .finish(tool, args.grace.max(DELIVERY_IDLE_AT_LEAST))
        .map_err(Failure::runner)?;
    record.output_limit = delivered.limit;
    record.stderr_tail = delivered.stderr_tail;
    for (path, id, flag) in written {
        if let (Some(path), Some(id)) = (path, id) {
            still_there(path, id, flag).map_err(Failure::runner)?;
        }
    }
    Ok(())
}

/// The command's stdout and stderr before it runs: a socket pair each, and where each goes.
struct Outputs {
    stdout: (OwnedFd, OwnedFd),
    stderr: (OwnedFd, OwnedFd),
    transcript: Option<File>,
    stderr_file: Option<File>,
}

/// The copies of a running command's outputs, and the descriptor that becomes readable when
/// one passes its limit (`None` once both copies are over).
struct Running {
    stdout: Pump,
    stderr: Pump,
    overflow: Option<OwnedFd>,
}

impl Outputs {
    fn open(transcript: Option<File>, stderr_file: Option<File>) -> io::Result<Self> {
        Ok(Outputs {
            stdout: capture::channel()?,
            stderr: capture::channel()?,
            transcript,
            stderr_file,
        })
    }

    /// Spawns the command on the child ends, which are closed here once it runs: the copies
    /// reach end of file when the last process of the job that holds one is gone.
    fn spawn(
        self,
        program: &Path,
        argv: &[OsString],
        env: Option<&[(OsString, OsString)]>,
        cwd: Option<&Path>,
    ) -> Result<(Child, Started), Failure> {
        let Outputs {
            stdout: (child_out, our_out),
            stderr: (child_err, our_err),
            transcript,
            stderr_file,
        } = self;
        let child = spawn(program, argv, env, cwd, child_out, child_err)?;
        Ok((
            child,
            Started {
                stdout: our_out,
                stderr: our_err,
                transcript,
                stderr_file,
            },
        ))
    }
}

/// moot-run's ends of a started command's outputs.
struct Started {
    stdout: OwnedFd,
    stderr: OwnedFd,
    transcript: Option<File>,
    stderr_file: Option<File>,
}

impl Started {
    fn start(self, args: &RunArgs) -> io::Result<Running> {
        let (overflow, told) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        // Unbuffered writes to duplicates of fds 1 and 2: no buffering between the command and
        // whoever reads moot-run. The originals stay open until moot-run exits, after the
        // status file is written.
        let our_stdout = File::from(io::stdout().as_fd().try_clone_to_owned()?);
        let mut stdout_sinks: Vec<Sink> = self
            .transcript
            .map(|file| Sink {
                file,
                label: "--transcript",
                fatal: true,
            })
            .into_iter()
            .collect();
        stdout_sinks.push(Sink {
            file: our_stdout,
            label: "stdout",
            fatal: true,
        });
        let stderr_sink = match self.stderr_file {
            Some(file) => Sink {
                file,
                label: "--stderr-file",
                fatal: true,
            },
            None => Sink {
                file: File::from(io::stderr().as_fd().try_clone_to_owned()?),
                label: "stderr",
                fatal: false,
            },
        };
        Ok(Running {
            stdout: Pump::start(
                "stdout",
                self.stdout,
                stdout_sinks,
                args.max_output,
                told.try_clone()?,
            )?,
            stderr: Pump::start(
                "stderr",
                self.stderr,
                vec![stderr_sink],
                args.max_stderr,
                told,
            )?,
            overflow: Some(overflow),
        })
    }
}

impl Running {
    /// Waits for both copies to end, as long as each makes progress (`idle` at most without
    /// a byte); returns the output that passed its limit. A copy that stalls is a failure:
    /// what the command printed was not all delivered.
    fn finish(self, tool: &str, idle: Duration) -> anyhow::Result<Delivered> {
        let mut limit = None;
        let mut stderr_tail = None;
        for (pump, stream) in [(self.stdout, "stdout"), (self.stderr, "stderr")] {
            let Some(copied) = pump.finish(idle) else {
                anyhow::bail!(
                    "cannot deliver the command's {stream}: no byte of it moved for {:.1} s \
                     after every process of the job was killed (the reader downstream stopped \
                     reading, or a process outside the job holds it open)",
                    idle.as_secs_f64()
                );
            };
            if let Some((label, e)) = copied.sink {
                let kept = if label == "stdout" && e.kind() == io::ErrorKind::BrokenPipe {
                    "; the transcript, if any, has every byte"
                } else {
                    ""
                };
                return Err(e).context(format!("cannot write {label}{kept}"));
            }
            if let Some(e) = copied.read {
                return Err(e).context(format!("cannot read the command's {stream}"));
            }
            if stream == "stderr" {
                let whole = (copied.last.len() as u64) < capture::LAST_KEPT;
                stderr_tail = ProcessOutcome::stderr_tail_from(&copied.last, whole);
            }
            if let (None, Some(overflow)) = (&limit, copied.overflow) {
                limit = Some(OutputLimit {
                    stream: stream.to_string(),
                    limit: overflow.limit,
                    dropped: overflow.dropped,
                });
            }
        }
        if let Some(limit) = &limit {
            crate::eprintln_whole!(
                "{tool}: the command's {} passed --max-{} ({} bytes): it was ended, and {} bytes \
                 of its middle were dropped (its head and tail are kept)",
                limit.stream,
                if limit.stream == "stdout" {
                    "output"
                } else {
                    "stderr"
                },
                limit.limit,
                limit.dropped
            );
        }
        Ok(Delivered { limit, stderr_tail })
    }
}

/// What [`Running::finish`] found once both outputs were delivered.
struct Delivered {
    /// The output that passed its limit, if one did.
    limit: Option<OutputLimit>,
    /// [`ProcessOutcome::stderr_tail`].
    stderr_tail: Option<String>,
}

fn identity(file: Option<&File>) -> Option<FileId> {
    file.and_then(|file| file.metadata().ok())
        .map(|meta| FileId::of(&meta))
}

/// A file moot-run wrote is still under its name: otherwise whoever moved it (or its directory)
/// may have left another file there, which a replay would read as the run's.
fn still_there(path: &Path, id: FileId, flag: &str) -> anyhow::Result<()> {
    if FileId::of_name(path).ok() != Some(id) {
        anyhow::bail!(
            "{flag} ({}): moved or replaced while the command ran: the file under that name is \
             not the one moot-run wrote",
            path.display()
        );
    }
    Ok(())
}

/// The argv `moot-render … | moot-run` hands over: NUL-terminated tokens. A last token without
/// its NUL means the producer was cut off, and running a truncated prompt would be worse than
/// not running at all. INT, TERM or HUP while waiting for it (a producer that never ends) stops
/// moot-run with nothing run, since they are blocked and would otherwise go unheard.
fn argv_from_stdin(signals: &Signals) -> anyhow::Result<Vec<OsString>> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        anyhow::bail!(
            "no command (after --): give one, or pipe NUL-terminated argv on stdin \
             (moot-render … | moot-run)"
        );
    }
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        signals
            .wait(Some(stdin.as_fd()), None)
            .context("cannot wait for stdin")?;
        let received = signals.take().context("cannot read signals")?;
        if let Some(signal) = received.iter().find(|s| FORWARDED.contains(s)) {
            anyhow::bail!(
                "interrupted ({}) while reading the command from stdin: nothing was run",
                signal.as_str()
            );
        }
        match stdin.lock().read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("cannot read the command from stdin"),
        }
        if bytes.len() as u64 > MAX_STDIN_ARGV {
            anyhow::bail!(
                "argv on stdin (over {} MiB): too large to execute",
                MAX_STDIN_ARGV >> 20
            );
        }
    }
    split_nul_argv(bytes)
}

fn split_nul_argv(mut bytes: Vec<u8>) -> anyhow::Result<Vec<OsString>> {
    if bytes.is_empty() {
        anyhow::bail!(
            "no command (stdin is empty): give one after --, or pipe NUL-terminated argv on stdin"
        );
    }
    if bytes.pop() != Some(0) {
        anyhow::bail!(
            "argv on stdin (last token unterminated): every token must end with a NUL byte; \
             was its producer cut off?"
        );
    }
    Ok(bytes
        .split(|&b| b == 0)
        .map(|token| OsString::from_vec(token.to_vec()))
        .collect())
}

/// The command's environment under `--env-preset`, or `None` to inherit moot-run's unchanged.
fn child_env(tool: &str, args: &RunArgs) -> Option<Vec<(OsString, OsString)>> {
    // clap only accepts runtimes that have a preset.
    let preset = env_preset::preset(args.env_preset.as_deref()?)?;
    let curated = env_preset::curate(std::env::vars_os(), preset, &args.keep);
    for warning in &curated.warnings {
        crate::eprintln_whole!("{tool}: {warning}");
    }
    Some(curated.vars)
}

/// Opens `--transcript` or `--stderr-file` (src/private_file.rs: private, and never through a
/// planted symlink, hard link or FIFO).
fn open_private(path: Option<&Path>, flag: &str) -> Result<Option<File>, Failure> {
    let Some(path) = path else {
        return Ok(None);
    };
    let file = private_file::create_private(path)
        .with_context(|| format!("{flag} ({})", path.display()))
        .map_err(Failure::runner)?;
    Ok(Some(file))
}

/// Writes the status file atomically: a temporary file in the same directory, renamed over it,
/// so a reader sees either nothing or the whole outcome.
fn write_status(
    path: &Path,
    dir_at_start: Option<FileId>,
    outcome: &ProcessOutcome,
) -> anyhow::Result<()> {
    let dir = private_file::parent_dir(path);
    if dir_at_start.is_some_and(|then| FileId::at(dir).ok() != Some(then)) {
        anyhow::bail!(
            "--status-file ({}): its directory was moved or replaced while the command ran: not \
             written there",
            path.display()
        );
    }
    let mut json = serde_json::to_vec(outcome).context("cannot serialise the status")?;
    json.push(b'\n');
    atomic_file::write(path, &json)
        .with_context(|| format!("cannot write --status-file ({})", path.display()))
}

/// `--cwd`'s directory, absolute; anything but a directory is refused before the command
/// starts (a chdir failing in the child would read as the command not being found).
fn working_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    let shown = dir.display();
    let metadata = std::fs::metadata(dir).with_context(|| format!("--cwd ({shown})"))?;
    if !metadata.is_dir() {
        bail!("--cwd ({shown}): not a directory");
    }
    std::path::absolute(dir).with_context(|| format!("--cwd ({shown})"))
}

fn spawn(
    program: &Path,
    argv: &[OsString],
    env: Option<&[(OsString, OsString)]>,
    cwd: Option<&Path>,
    stdout: OwnedFd,
    stderr: OwnedFd,
) -> Result<Child, Failure> {
    let mut command = Command::new(program);
    command
        .arg0(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0);
    if let Some(vars) = env {
        command.env_clear().envs(vars.iter().map(|(k, v)| (k, v)));
    }
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    let parent = getpid();
    let filter = Filter::deny_cross_process();
    // SAFETY: the closure runs in the forked child before exec; it makes only async-signal-safe
    // system calls (sigprocmask, prctl, getppid) and allocates nothing.
    unsafe {
        command.pre_exec(move || prepare_child(parent, &filter));
    }
    command
        .spawn()
        .map_err(|error| spawn_failure(program, argv, error))
}

/// Prepares the child between fork and exec. The signals moot-run blocks (to read them from its
/// signalfd) are unblocked: a blocked mask survives exec, and a command that inherits a blocked
/// SIGTERM cannot be stopped by one. Then the parent-death signal: PR_SET_PDEATHSIG fires when
/// the *thread* that forked the child exits, not the process, so moot-run spawns from its main
/// thread, which lives as long as moot-run does. If moot-run already died before this ran,
/// getppid no longer names it and the signal would never come, so the child gives up instead.
/// Last the seccomp filter, which then holds for the command and everything it starts.
fn prepare_child(parent: Pid, filter: &Filter) -> io::Result<()> {
    SigSet::empty().thread_set_mask()?;
    prctl::set_pdeathsig(Signal::SIGKILL)?;
    if getppid() != parent {
        return Err(io::Error::from_raw_os_error(Errno::ESRCH as i32));
    }
    filter.install()
}

fn spawn_failure(program: &Path, argv: &[OsString], error: io::Error) -> Failure {
    let shown = program.display();
    let (ending, error) = match Errno::from_raw(error.raw_os_error().unwrap_or(0)) {
        Errno::ENOENT => (
            Ending::NotFound,
            anyhow!("cannot run ({shown}): {error}: its #! interpreter may be missing"),
        ),
        Errno::E2BIG => {
            let largest = argv.iter().map(|arg| arg.len()).max().unwrap_or(0);
            (
                Ending::CannotInvoke,
                anyhow!(
                    "cannot run ({shown}): argument list too long (largest argument {largest} \
                     bytes; the kernel takes at most 128 KiB per argument): stage a large prompt \
                     in a file (moot-render does from 100 KiB)"
                ),
            )
        }
        Errno::EACCES
        | Errno::EPERM
        | Errno::ENOEXEC
        | Errno::ETXTBSY
        | Errno::EISDIR
        | Errno::ELOOP
        | Errno::ENOTDIR => (
            Ending::CannotInvoke,
            anyhow!("cannot run ({shown}): {error}"),
        ),
        _ => (
            Ending::RunnerFailed,
            anyhow!("cannot start ({shown}): {error}"),
        ),
    };
    Failure { ending, error }
}

/// Blocks INT, TERM and HUP (to forward) and CHLD (to notice the command's exit) on the calling
/// thread, to be read from the signalfd returned; call it before any other thread exists. A
/// forwarded signal the tool inherited as ignored (nohup, a background job) stays ignored and
/// is not caught, and the command inherits the same disposition; [`prepare_child`] (and
/// moot-broker's own) unblocks the rest in the child.
pub fn catch_forwarded_signals() -> nix::Result<SignalFd> {
    let mut caught = SigSet::empty();
    caught.add(Signal::SIGCHLD);
    for signal in FORWARDED {
        caught.add(signal);
    }
    caught.thread_block()?;
    let mut ignored = SigSet::empty();
    for signal in FORWARDED {
        if inherited_ignored(signal)? {
            ignored.add(signal);
            caught.remove(signal);
        }
    }
    ignored.thread_unblock()?;
    SignalFd::with_flags(&caught, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
}

/// The signals of [`catch_forwarded_signals`], read from a signalfd so the supervision loop
/// waits for a signal, the deadline or the grace period in one poll.
struct Signals {
    fd: SignalFd,
}

impl Signals {
    fn catch() -> nix::Result<Self> {
        Ok(Signals {
            fd: catch_forwarded_signals()?,
        })
    }

    /// Waits until a signal is pending, `also` is readable (or closed), or `timeout` (`None`:
    /// forever) has passed.
    fn wait(&self, also: Option<BorrowedFd>, timeout: Option<Duration>) -> nix::Result<()> {
        let timeout = match timeout {
            // Rounded up to the next millisecond, so the loop does not spin on a sub-ms remainder.
            Some(left) => PollTimeout::try_from(left.as_millis() + 1).unwrap_or(PollTimeout::MAX),
            None => PollTimeout::NONE,
        };
        let mut fds: Vec<PollFd> = std::iter::once(self.fd.as_fd())
            .chain(also)
            .map(|fd| PollFd::new(fd, PollFlags::POLLIN))
            .collect();
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The signals received since the last call.
    fn take(&self) -> nix::Result<Vec<Signal>> {
        let mut received = Vec::new();
        while let Some(info) = self.fd.read_signal()? {
            if let Ok(signal) = Signal::try_from(info.ssi_signo as i32) {
                received.push(signal);
            }
        }
        Ok(received)
    }
}

/// Whether `signal` was ignored when moot-run started; the signal is blocked, so briefly setting
/// its default action to read the old one cannot let it through.
fn inherited_ignored(signal: Signal) -> nix::Result<bool> {
    let default = SigAction::new(
        SigHandler::SigDfl,
        signal::SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: installs SIG_DFL, or SIG_IGN again, never a handler: nothing runs asynchronously.
    let old = unsafe { signal::sigaction(signal, &default)? };
    if old.handler() == SigHandler::SigIgn {
        // SAFETY: as above.
        unsafe { signal::sigaction(signal, &old)? };
        return Ok(true);
    }
    Ok(false)
}

/// The command's process group, led by the command; killed and reaped on drop if the run is
/// abandoned, so no error path leaves it behind.
struct Group {
    child: Child,
    pgid: Pid,
    reaped: bool,
}

impl Group {
    fn new(child: Child) -> Self {
        // process_group(0) made the child the leader of a group numbered by its pid.
        let pgid = Pid::from_raw(child.id() as i32);
        Group {
            child,
            pgid,
            reaped: false,
        }
    }

    /// Waits for the command to exit while enforcing the deadline and forwarding signals;
    /// returns whether the deadline expired. The command is left unreaped, so its pid (the
    /// group's number) cannot be reused before [`Group::finish`] has swept the group.
    fn supervise(
        &mut self,
        signals: &Signals,
        mut overflow: Option<&OwnedFd>,
        deadline: Option<Instant>,
        grace: Duration,
    ) -> anyhow::Result<bool> {
        let mut timed_out = false;
        let mut kill_at: Option<Instant> = None;
        loop {
            if reaper::reap_orphans(self.pgid).context("cannot wait for the command")? {
                // An exit first seen after the deadline is not one within it: moot-run may have
                // been stopped meanwhile (a SIGSTOP from a process of the job, when no
                // moot-sandbox scopes its signals), and the deadline is the contract.
                let late = deadline.is_some_and(|d| Instant::now() >= d);
                return Ok(timed_out || late);
            }
            let now = Instant::now();
            if !timed_out && deadline.is_some_and(|d| now >= d) {
                timed_out = true;
                self.signal(Signal::SIGTERM);
                kill_at.get_or_insert(now + grace);
            }
            if let Some(fd) = overflow {
                match told(fd) {
                    Told::Nothing => {}
                    // Both copies are over: nothing more will be said.
                    Told::Closed => overflow = None,
                    Told::Limit => {
                        overflow = None;
                        self.signal(Signal::SIGTERM);
                        kill_at.get_or_insert(now + grace);
                    }
                }
            }
            if kill_at.is_some_and(|k| now >= k) {
                self.signal(Signal::SIGKILL);
                kill_at = None;
            }
            let wake = [deadline.filter(|_| !timed_out), kill_at]
                .into_iter()
                .flatten()
                .min();
            signals
                .wait(
                    overflow.map(|fd| fd.as_fd()),
                    wake.map(|at| at.saturating_duration_since(now)),
                )
                .context("cannot wait for signals")?;
            for signal in signals.take().context("cannot read signals")? {
                if FORWARDED.contains(&signal) {
                    self.signal(signal);
                    kill_at.get_or_insert(Instant::now() + grace);
                }
            }
        }
    }

    /// Signals the whole group. ESRCH (nobody left) is the goal, not an error.
    fn signal(&self, signal: Signal) {
        let _ = killpg(self.pgid, signal);
    }

    /// Kills what is left of the group, then reaps the command (the rest of what it left
    /// behind is [`reaper::kill_every_descendant`]'s).
    fn finish(mut self) -> io::Result<ExitStatus> {
        self.signal(Signal::SIGKILL);
        self.reaped = true;
        self.child.wait()
    }
}

/// What the overflow descriptor says: a copy passed its limit, both copies are over, or nothing.
enum Told {
    Nothing,
    Closed,
    Limit,
}

fn told(fd: &OwnedFd) -> Told {
    let mut ready = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    if !matches!(poll(&mut ready, PollTimeout::ZERO), Ok(n) if n > 0) {
        return Told::Nothing;
    }
    let mut byte = [0u8; 2];
    match nix::unistd::read(fd.as_raw_fd(), &mut byte) {
        Ok(0) => Told::Closed,
        Ok(_) => Told::Limit,
        Err(_) => Told::Nothing,
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.reaped {
            self.signal(Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argv_comes_on_stdin_when_flagged_or_when_no_command_follows() {
        let on_stdin = |words: &[&str]| argv_comes_on_stdin(&os(words));
        assert!(on_stdin(&["moot-run", "--stdin-argv", "--", "cmd"]));
        assert!(on_stdin(&["moot-run", "--cleanup", "/s", "--"]));
        assert!(!on_stdin(&["moot-run", "--cleanup", "/s", "--", "cmd"]));
        // After `--` it is the command's own flag.
        assert!(!on_stdin(&["moot-run", "--", "cmd", "--stdin-argv"]));
        assert!(!on_stdin(&["moot-run", "--bogus"]));
    }

    fn os(items: &[&str]) -> Vec<OsString> {
        items.iter().map(OsString::from).collect()
    }

    #[test]
    fn nul_terminated_argv_splits_into_tokens() {
        let argv = split_nul_argv(b"omp\0-p\0\0-- -x\n@y\0".to_vec()).expect("valid argv");
        assert_eq!(argv, os(&["omp", "-p", "", "-- -x\n@y"]));
    }

    #[test]
    fn truncated_or_empty_argv_is_refused() {
        let cut = split_nul_argv(b"omp\0-p".to_vec()).expect_err("cut off");
        assert!(cut.to_string().contains("unterminated"), "{cut}");
        let empty = split_nul_argv(Vec::new()).expect_err("empty");
        assert!(empty.to_string().contains("stdin is empty"), "{empty}");
    }

    #[test]
    fn outcome_follows_timeout_conventions() {
        let record = |ending, timed_out| Record {
            ending,
            timed_out,
            pid: Some(7),
            elapsed: Some(Duration::from_millis(1500)),
            output_limit: None,
            tampered: None,
            stderr_tail: None,
        };
        let cases = [
            (Ending::Exited(0), false, 0, None),
            (Ending::Exited(3), false, 3, None),
            (Ending::Signaled(9), false, 137, Some("SIGKILL")),
            (Ending::Signaled(15), true, 124, Some("SIGTERM")),
            (Ending::Exited(0), true, 124, None),
            (Ending::RunnerFailed, true, 125, None),
            (Ending::CannotInvoke, false, 126, None),
            (Ending::NotFound, false, 127, None),
        ];
        for (ending, timed_out, code, signal) in cases {
            let outcome = record(ending, timed_out).outcome();
            assert_eq!(outcome.exit_code, code, "{ending:?} timed_out={timed_out}");
            assert_eq!(outcome.signal.as_deref(), signal);
            assert_eq!(outcome.timed_out, timed_out);
            assert_eq!(outcome.elapsed_ms, Some(1500));
            assert_eq!(outcome.pid, Some(7));
        }
    }

    #[test]
    fn a_deadline_is_seconds_more_than_zero() {
        assert_eq!(positive_seconds("0.25"), Ok(Duration::from_millis(250)));
        assert!(positive_seconds("0").is_err());
        assert!(positive_seconds("0.000").is_err());
        for bad in ["", "abc", "-1", "inf", "NaN", "1e300", "1e1"] {
            assert!(positive_seconds(bad).is_err(), "{bad:?} was accepted");
        }
    }
}
