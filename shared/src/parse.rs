//! The one mechanism every stream parser uses: read NDJSON in one pass, feed each line to a
//! runtime's [`Dialect`], fold in the process outcome, extract the `gitmoot_result`, and print
//! one envelope (or, with `--text`, the answer alone).
//!
//! A dialect decides what the stream says; this module owns everything that is the same for all
//! of them: line limits, the cut last line, lone surrogate escapes read as U+FFFD (see
//! [`surrogate`]), the precedence of an unreadable row over every other verdict, the process
//! outcome, the result contract, output and exit statuses.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use nix::fcntl::{fcntl, FcntlArg};
use serde_json::Value;

use crate::dialect::{Dialect, RunFailure, Verdict};
use crate::envelope::{Envelope, ErrorClass, Run, RunError};
use crate::event::{End, Events};
use crate::exporter::{Exporter, Tee};
use crate::gitmoot_result::{self, ResultError};
use crate::ndjson::{self, LineReader, Segment};
use crate::outcome::{Bearing, ProcessOutcome};
use crate::report::{self, one_line};
use crate::{atomic_file, cleanup, surrogate};

/// Exit status of a run that succeeded.
pub const EXIT_OK: u8 = 0;
/// Exit status of a run (or its result) that failed.
pub const EXIT_RUN_FAILED: u8 = 1;
/// Exit status of a usage or I/O error: bad flags, unreadable stdin, unwritable stdout, a
/// `--cleanup` directory left behind.
pub const EXIT_USAGE: u8 = 2;

/// The flags every parser takes.
#[derive(Debug, Clone, Args)]
pub struct ParseArgs {
    /// Print only the final answer text (the adapter.sh contract); a failed run prints nothing
    /// on stdout, one line on stderr, and exits 1. The gitmoot_result is not required.
    #[arg(long)]
    pub text: bool,

    /// With --text, still require the answer's gitmoot_result: for a CLI that records nowhere
    /// whether its answer was finished (the legacy kimi-cli), a result object is the only proof,
    /// so a run without one fails closed (no_result, invalid_result).
    #[arg(long, requires = "text")]
    pub require_result: bool,

    /// The runtime's exit status (or moot-run's), folded into the verdict: 124 is a deadline
    /// kill, 128+N a signal, any other nonzero status a failure.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exit_code: Option<i32>,

    /// moot-run's status file, read when stdin ends and folded into the verdict.
    #[arg(long, value_name = "FILE", conflicts_with = "exit_code")]
    pub status_file: Option<PathBuf>,

    /// Hard ceiling on one line in bytes; a longer line fails the run as malformed_stream.
    #[arg(long, value_name = "BYTES", default_value_t = ndjson::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,

    /// Ceiling on the number of non-blank lines; past it the run fails as malformed_stream
    /// (the rest of stdin is still drained).
    #[arg(long, value_name = "N", default_value_t = ndjson::DEFAULT_MAX_EVENTS)]
    pub max_events: u64,

    /// On success only, write the run's session id to FILE (0600, atomically), so a later turn
    /// can resume it; a failed or interrupted run never persists a reusable session id.
    #[arg(long, value_name = "FILE")]
    pub session_file: Option<PathBuf>,

    /// Remove DIR and everything in it once stdin has ended and the verdict is out (the
    /// caller's scratch directory, status file included); repeatable. One that does not exist
    /// is fine; one that is not a directory, or cannot be removed, exits 2.
    #[arg(long, value_name = "DIR")]
    pub cleanup: Vec<PathBuf>,

    /// At the stream's first model event (thinking, text or a tool call), create
    /// DIR/proxy-first-output (0600, exclusive) holding `output\n`, while the CLI still runs: a
    /// managed session's runner watches it. Nothing of the event enters it.
    #[arg(long, value_name = "DIR")]
    pub activity_dir: Option<PathBuf>,

    /// Once the output is written and flushed, write `complete <status>\n` to FILE (the exit
    /// status about to be returned): a caller that finds no such line, or another status, knows
    /// the parser died while its answer was draining, whatever exit status it saw.
    #[arg(long, value_name = "FILE")]
    pub completion_file: Option<PathBuf>,

    /// Write the run's typed events to FILE as NDJSON while the stream is read, flushed whenever
    /// the parser waits for more of the stream, so a tail shows them live (see moot(7), EVENTS). `-` writes them on
    /// stdout instead of the envelope: `moot-parse-omp --events - < run.ndjson` replays a
    /// capture as events.
    #[arg(long, value_name = "FILE", value_parser = events_target)]
    pub events: Option<PathBuf>,

    /// Print one short line per tool call, tool result and model turn on stderr, so a CI log
    /// shows the job moving.
    #[arg(long)]
    pub progress: bool,

    /// Send the run as one OpenTelemetry trace over OTLP/HTTP (protobuf) to the collector at URL
    /// (`/v1/traces` is added unless the URL ends with it; headers from
    /// OTEL_EXPORTER_OTLP_HEADERS), through moot-otlp. A trace that cannot be sent is one warning
    /// line; the verdict and the exit status are unchanged.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// Write the run's trace as OTLP/JSON to FILE, through moot-otlp.
    #[arg(long, value_name = "FILE")]
    pub otlp_file: Option<PathBuf>,
}

/// The flags as a parser gets them with none given.
impl Default for ParseArgs {
    fn default() -> Self {
        ParseArgs {
            text: false,
            require_result: false,
            exit_code: None,
            status_file: None,
            max_line_bytes: ndjson::DEFAULT_MAX_LINE_BYTES,
            max_events: ndjson::DEFAULT_MAX_EVENTS,
            session_file: None,
            cleanup: Vec::new(),
            activity_dir: None,
            completion_file: None,
            events: None,
            progress: false,
            otlp_endpoint: None,
            otlp_file: None,
        }
    }
}

/// The token of `--activity-dir`, and the file it goes in.
pub const ACTIVITY_TOKEN: &[u8] = b"output\n";
pub const ACTIVITY_FILE: &str = "proxy-first-output";

/// The whole `main.rs` of a parser that takes no flag of its own: `TOOL`, its `Cli` (the doc
/// comments given become its `--help`), `main`, and the test that its command is well formed.
///
/// ```ignore
/// moot::parser_main! {
///     /// Read ... on stdin and print one JSON envelope on stdout: ...
///     tool: "moot-parse-x",
///     dialect: X::default(),
///     examples: EXAMPLES,
/// }
/// ```
#[macro_export]
macro_rules! parser_main {
    ($(#[doc = $doc:expr])* tool: $tool:literal, dialect: $dialect:expr, examples: $examples:expr $(,)?) => {
        const TOOL: &str = $tool;

        $(#[doc = $doc])*
        #[derive(clap::Parser)]
        #[command(name = TOOL, version, after_help = $crate::parse::help_footer($examples))]
        struct Cli {
            #[command(flatten)]
            args: $crate::parse::ParseArgs,
        }

        fn main() -> std::process::ExitCode {
            use $crate::parse::EXIT_USAGE;
            $crate::report::main::<Cli>(TOOL, EXIT_USAGE, EXIT_USAGE, |cli| {
                $crate::parse::run_parser(TOOL, $dialect, &cli.args)
            })
        }

        #[test]
        fn cli_is_well_formed() {
            $crate::report::check_cli::<Cli>();
        }
    };
}

/// The part of every parser's `--help` that is the same for all: the envelope, the error
/// classes and the exit statuses, followed by the tool's own examples.
pub fn help_footer(examples: &str) -> String {
    format!(
        "\
Output: {{\"gitmoot_result\": {{...}}|null, \"run\": {{runtime, ok, error: {{class, message, last_text}}|null,
answer (null unless ok), session_id, provider, family, model, cli_version, stop_reason,
usage: {{input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens,
cost_usd, source, reported}}, tools: {{calls, completed, failed, denied, by_kind, denials}},
process, lines, bytes}}}}
With --events FILE, the run's typed events (start, text, reasoning, tool_call, tool_result, usage,
retry, error, end) go to FILE as NDJSON while the stream is read; see moot(7), EVENTS.

{classes}

Exit status: 0 the run succeeded; 1 the run or its result failed (the envelope says why);
2 usage or I/O error.

{examples}",
        classes = error_classes_help()
    )
}

/// Help lines are wrapped at this width.
const HELP_WIDTH: usize = 96;

/// `Error classes (run.error.class): truncated, ...`, every [`ErrorClass`], wrapped.
fn error_classes_help() -> String {
    let names: Vec<&str> = ErrorClass::ALL.iter().map(|class| class.name()).collect();
    let mut text = String::new();
    let mut line = String::from("Error classes (run.error.class):");
    for (i, name) in names.iter().enumerate() {
        let word = if i + 1 == names.len() {
            format!("{name}.")
        } else {
            format!("{name},")
        };
        if line.len() + 1 + word.len() > HELP_WIDTH {
            text.push_str(&line);
            text.push('\n');
            line = word;
        } else {
            line.push(' ');
            line.push_str(&word);
        }
    }
    text + &line
}

/// The pipe buffer a parser asks for on its stdin: the unprivileged maximum of a stock kernel
/// (`/proc/sys/fs/pipe-max-size`).
const PIPE_BYTES: i32 = 1024 * 1024;

/// Enlarges stdin's pipe from the kernel's 64 KiB to [`PIPE_BYTES`], so a writer streaming
/// gigabytes hands over 16 times more per wake-up of the parser and the two switch less. Best
/// effort: on a file or a terminal the kernel refuses (EBADF), as it does a size over the
/// limit, and reading works the same.
fn widen_pipe(stdin: &impl AsFd) {
    let _ = fcntl(
        stdin.as_fd().as_raw_fd(),
        FcntlArg::F_SETPIPE_SZ(PIPE_BYTES),
    );
}

/// Runs a parser binary: reads stdin, prints the envelope or the answer, removes the
/// `--cleanup` directories, returns the status.
pub fn run_parser<D: Dialect>(
    tool: &str,
    dialect: D,
    args: &ParseArgs,
) -> anyhow::Result<ExitCode> {
    run_parser_with(tool, dialect, args, |_| {})
}

/// [`run_parser`], handing the dialect to `at_end` once stdin has ended and before it gives its
/// verdict: the moment to read what the CLI left beside its stream (kimi's stderr and session
/// store), so that the dialect itself stays a pure state machine that opens no file.
pub fn run_parser_with<D: Dialect>(
    tool: &str,
    dialect: D,
    args: &ParseArgs,
    at_end: impl FnOnce(&mut D),
) -> anyhow::Result<ExitCode> {
    check_flags(args)?;
    let (mut events, exporter) = events_for(tool, D::RUNTIME, args);
    let stdin = io::stdin().lock();
    widen_pipe(&stdin);
    let parsed = parse_with(dialect, stdin, args, &mut events, at_end)?;
    // Only now, with stdin ended, is the writer done with the directories (an error reading
    // stdin leaves them to the caller). They go however the verdict is delivered; the
    // completion line goes first, as its file may be in one of them.
    let delivered = deliver(tool, parsed, &mut events, args).and_then(|status| {
        events.close_output();
        if let Some(Err(why)) = exporter.map(Exporter::finish) {
            crate::eprintln_whole!("{tool}: warning: the run's trace was not exported ({why})");
        }
        if let Some(path) = &args.completion_file {
            acknowledge(path, status)?;
        }
        Ok(status)
    });
    let cleaned = clean_up(tool, &args.cleanup);
    match delivered {
        Ok(_) if !cleaned => Ok(ExitCode::from(EXIT_USAGE)),
        Ok(status) => Ok(ExitCode::from(status)),
        Err(error) => Err(error),
    }
}

/// `--events`' value: a file, or `-` for stdout. Nothing else is checked here: `--events -`
/// with `--text` is refused by [`check_flags`], as both would print on stdout.
fn events_target(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err("an empty path (give a file, or - for stdout)".into());
    }
    Ok(PathBuf::from(value))
}

/// Flag combinations clap cannot express: `--events -` and `--text` both want stdout.
pub fn check_flags(args: &ParseArgs) -> anyhow::Result<()> {
    if args.text && events_on_stdout(args) {
        anyhow::bail!(
            "--events - prints the events on stdout, where --text prints the answer: give --events a file"
        );
    }
    Ok(())
}

/// A buffer for the events. They are flushed whenever the parser may wait for more of the
/// stream, so a live reader sees each one; a stream read in one go is written in blocks this
/// large, one system call each, rather than std's 8 KiB (which took a third of the cost of
/// writing the events of a 100 MiB stream).
fn events_buffer<W: Write>(out: W) -> io::BufWriter<W> {
    io::BufWriter::with_capacity(256 * 1024, out)
}

/// The events a run's flags ask for: a tally only, or written to `--events` (a file created
/// 0600 and truncated, or stdout for `-`) and/or to a moot-otlp child (`--otlp-*`), with
/// `--progress` lines or without.
///
/// Events and traces are side outputs: a file that cannot be opened or an exporter that cannot
/// start is one warning line, and the stream is still read and its verdict printed, since the
/// CLI writing into this parser's stdin has no one else to hand its stream to.
fn events_for(tool: &str, runtime: &'static str, args: &ParseArgs) -> (Events, Option<Exporter>) {
    use std::os::unix::fs::OpenOptionsExt;
    let warn = |error: anyhow::Error| {
        crate::eprintln_whole!("{tool}: warning: {}", one_line(&format!("{error:#}")));
    };
    let primary: Option<Box<dyn Write>> = match args.events.as_deref() {
        None => None,
        Some(path) if path.as_os_str() == "-" => Some(Box::new(events_buffer(io::stdout()))),
        Some(path) => std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .with_context(|| {
                format!(
                    "cannot open --events ({}), no events written",
                    path.display()
                )
            })
            .map_err(warn)
            .ok()
            .map(|file| Box::new(events_buffer(file)) as Box<dyn Write>),
    };
    let (exporter, pipe) = if args.otlp_endpoint.is_some() || args.otlp_file.is_some() {
        match Exporter::spawn(args.otlp_endpoint.as_deref(), args.otlp_file.as_deref()) {
            Ok((exporter, pipe)) => (Some(exporter), Some(pipe)),
            Err(error) => {
                warn(error.context("no trace exported"));
                (None, None)
            }
        }
    } else {
        (None, None)
    };
    let mut events = Events::tally(runtime);
    events = match (primary, pipe) {
        (None, None) => events,
        (Some(primary), None) => events.writing_to(primary),
        (primary, exporter) => events.writing_to(Box::new(Tee {
            primary,
            exporter: exporter.map(events_buffer),
        })),
    };
    if args.progress {
        events = events.with_progress(tool);
    }
    (events, exporter)
}

/// Whether the events go to stdout, in place of the envelope.
fn events_on_stdout(args: &ParseArgs) -> bool {
    args.events
        .as_deref()
        .is_some_and(|path| path.as_os_str() == "-")
}

/// Writes `complete <status>` to the completion file (appended: the caller made it, and reads
/// it through a descriptor it opened before).
fn acknowledge(path: &std::path::Path, status: u8) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
        .and_then(|mut file| file.write_all(format!("complete {status}\n").as_bytes()))
        .with_context(|| format!("cannot write --completion-file ({})", path.display()))
}

/// Publishes the first model activity of a turn: the fixed token, in a file created once.
/// A token already there was published by an earlier reader of the same turn; any other
/// failure is one warning line, and the run goes on (its verdict does not depend on it).
fn publish_activity(runtime: &str, dir: &std::path::Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(ACTIVITY_FILE);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&path)
        .and_then(|mut file| file.write_all(ACTIVITY_TOKEN));
    match written {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => crate::eprintln_whole!(
            "moot-parse-{runtime}: warning: cannot publish model activity in {}: {e}",
            dir.display()
        ),
        _ => {}
    }
}

/// Removes the `--cleanup` directories; at the first that cannot be, prints one line and
/// returns false.
fn clean_up(tool: &str, dirs: &[PathBuf]) -> bool {
    let removed =
        cleanup::check(dirs).and_then(|removable| removable.iter().try_for_each(cleanup::remove));
    if let Err(error) = &removed {
        report::print_error(tool, error);
    }
    removed.is_ok()
}

/// Folds in the process outcome, writes the session file and prints the verdict; returns the
/// exit status.
fn deliver(
    tool: &str,
    mut parsed: Parsed,
    events: &mut Events,
    args: &ParseArgs,
) -> anyhow::Result<u8> {
    match (&args.status_file, args.exit_code) {
        (Some(path), _) => match ProcessOutcome::read(path) {
            Ok(outcome) => parsed.fold_process(outcome),
            // The envelope must still be printed: an unknown outcome is a failed run, not a
            // lost one.
            Err(e) => parsed.fold_bearing(Bearing::Killed(format!(
                "the process outcome is unknown ({e:#})"
            ))),
        },
        (None, Some(code)) => parsed.fold_process(ProcessOutcome::from_exit_code(code)),
        (None, None) => {}
    }
    let envelope = parsed.into_envelope(!args.text || args.require_result);
    let run = &envelope.run;
    events.end(End {
        ok: run.ok,
        error_class: run.error.as_ref().map(|error| error.class.name()),
        stop_reason: run.facts.stop_reason.as_deref(),
        usage: &run.facts.usage,
        tools: &run.facts.tools,
    });
    if let Some(error) = events.take_write_error() {
        // On stdout the events are the output: losing them is losing the verdict.
        if events_on_stdout(args) {
            return Err(anyhow::Error::new(error).context("cannot write to stdout"));
        }
        crate::eprintln_whole!(
            "{tool}: warning: cannot write --events: {error}; the verdict is still printed"
        );
    }
    if let (Some(path), Some(id), true) = (
        &args.session_file,
        &envelope.run.facts.session_id,
        envelope.run.ok,
    ) {
        atomic_file::write(path, format!("{id}\n").as_bytes())
            .with_context(|| format!("cannot write --session-file ({})", path.display()))?;
    }
    if let Some(error) = &envelope.run.error {
        crate::eprintln_whole!(
            "{tool}: {}: {}",
            error.class.name(),
            one_line(&error.message)
        );
    }
    let out = if events_on_stdout(args) {
        String::new()
    } else if args.text {
        envelope
            .run
            .answer
            .clone()
            .map(with_final_newline)
            .unwrap_or_default()
    } else {
        let mut json = serde_json::to_string(&envelope).context("cannot serialise the envelope")?;
        json.push('\n');
        json
    };
    write_stdout(out.as_bytes()).context("cannot write to stdout")?;
    Ok(if envelope.run.ok {
        EXIT_OK
    } else {
        EXIT_RUN_FAILED
    })
}

fn with_final_newline(mut text: String) -> String {
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// Prints the verdict. A reader that went away (EPIPE) is an error like any other: a verdict
/// nobody received was not delivered, so the exit status must not say it was.
fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(bytes).and_then(|()| stdout.flush())
}

/// A stream read to its end, before the process outcome and the result contract are applied.
#[derive(Debug, Clone)]
pub struct Parsed {
    runtime: &'static str,
    verdict: Verdict,
    process: Option<ProcessOutcome>,
    lines: u64,
    bytes: u64,
}

/// Reads the whole stream (to EOF, whatever it holds) through one dialect, tallying its events
/// without writing them.
pub fn parse<D: Dialect>(dialect: D, input: impl Read, args: &ParseArgs) -> io::Result<Parsed> {
    parse_with(dialect, input, args, &mut Events::tally(D::RUNTIME), |_| {})
}

/// [`parse`], handing the dialect to `at_end` between the end of the stream and its verdict
/// (see [`run_parser_with`]).
pub fn parse_with<D: Dialect>(
    mut dialect: D,
    input: impl Read,
    args: &ParseArgs,
    events: &mut Events,
    at_end: impl FnOnce(&mut D),
) -> io::Result<Parsed> {
    let mut reader = LineReader::new(input, args.max_line_bytes);
    let mut drift: Option<String> = None;
    let mut rows = 0u64;
    let mut line_no = 0u64;
    let mut activity = args.activity_dir.as_deref();
    loop {
        if events.writing() && reader.next_read_may_block() {
            events.flush();
        }
        let Some(segment) = reader.next_segment()? else {
            break;
        };
        line_no += 1;
        let finding = match segment {
            Segment::Line(line) | Segment::Tail(line) if ndjson::is_blank(line) => continue,
            _ if rows >= args.max_events => Err(format!(
                "the stream has more than {} events (--max-events)",
                args.max_events
            )),
            Segment::Line(line) => {
                rows += 1;
                dialect
                    .line(&surrogate::replace_lone(line), events)
                    .map_err(|drift| drift.describe(D::RUNTIME))
            }
            Segment::Tail(tail) => {
                rows += 1;
                dialect
                    .cut_line(&surrogate::replace_lone(tail))
                    .map_err(|drift| drift.describe(D::RUNTIME))
            }
            Segment::TooLong { len } => Err(format!(
                "the line is {len} bytes, over the ceiling of {} bytes (--max-line-bytes)",
                args.max_line_bytes
            )),
        };
        if let Err(message) = finding {
            drift.get_or_insert_with(|| format!("line {line_no}: {message}"));
        }
        if let Some(dir) = activity.filter(|_| dialect.model_spoke()) {
            publish_activity(D::RUNTIME, dir);
            activity = None;
        }
    }
    at_end(&mut dialect);
    let mut verdict = dialect.finish();
    verdict.facts.tools = events.summary().clone();
    if let Some(message) = drift {
        verdict.failure = Some(RunFailure::new(ErrorClass::MalformedStream, message));
    }
    if rows == 0 {
        verdict.failure = nothing_printed(verdict.failure.take());
    }
    Ok(Parsed {
        runtime: D::RUNTIME,
        verdict,
        process: None,
        lines: reader.lines(),
        bytes: reader.bytes(),
    })
}

/// The failure of a stream with no event at all. Every dialect fails it, most as a stream that
/// never ended; the class says instead that the CLI never started talking, which is a different
/// fault (see [`ErrorClass::NoOutput`]). A finding the dialect made elsewhere (Kimi's error on
/// stderr) is more specific and is kept.
fn nothing_printed(failure: Option<RunFailure>) -> Option<RunFailure> {
    match failure {
        Some(failure)
            if !matches!(
                failure.class,
                ErrorClass::NoAgentEnd | ErrorClass::EmptyAnswer
            ) =>
        {
            Some(failure)
        }
        _ => Some(RunFailure::new(
            ErrorClass::NoOutput,
            "the CLI printed nothing on stdout: it could not start, or ended before its first \
             event",
        )),
    }
}

impl Parsed {
    /// Folds in how the process ended. A killed run is never a success: the stream is incomplete
    /// by construction, so `process` outranks the stream's own finding (which stays in the
    /// message). A plain nonzero exit fails the run too, but a failure the stream itself proved
    /// is the more specific class and is kept.
    /// A failed run whose process exited nonzero, or printed nothing, also quotes the last line
    /// of the command's stderr (kept by moot-run's status file): that is where a CLI that could
    /// not start says why.
    pub fn fold_process(&mut self, outcome: ProcessOutcome) {
        self.fold_bearing(outcome.bearing());
        if let (Some(failure), Some(said)) =
            (self.verdict.failure.as_mut(), outcome.stderr_last_line())
        {
            if outcome.exit_code != 0 || failure.class == ErrorClass::NoOutput {
                failure.message = format!("{}; its stderr ends: {said}", failure.message);
            }
        }
        self.process = Some(outcome);
    }

    /// Folds in a bearing alone (an unreadable status file is a `Killed` one).
    pub fn fold_bearing(&mut self, bearing: Bearing) {
        let prior = self.verdict.failure.take();
        self.verdict.failure = match (bearing, prior) {
            (Bearing::Clean, prior) => prior,
            (Bearing::Failed(why), Some(mut failure)) => {
                failure.message = format!("{} ({why})", failure.message);
                Some(failure)
            }
            (Bearing::Failed(why) | Bearing::Killed(why), None) => Some(RunFailure::new(
                ErrorClass::Process,
                format!("{why}, although the stream looked complete"),
            )),
            (Bearing::Killed(why), Some(failure)) => Some(RunFailure::new(
                ErrorClass::Process,
                format!("{why}; the stream: {}", failure.message),
            )),
            // Whatever the kept head and tail seem to say, the stream is not the CLI's whole.
            (Bearing::Limited(why), _) => Some(RunFailure::new(ErrorClass::OutputLimit, why)),
            // Whatever the answer says, the job reached past its seat.
            (Bearing::Tampered(why), _) => Some(RunFailure::new(ErrorClass::Tampered, why)),
        };
    }

    /// Applies the result contract (when `require_result`) and builds the envelope.
    pub fn into_envelope(self, require_result: bool) -> Envelope {
        let Parsed {
            runtime,
            mut verdict,
            process,
            lines,
            bytes,
        } = self;
        let mut gitmoot_result: Option<Value> = None;
        if require_result && verdict.failure.is_none() {
            match gitmoot_result::extract(&verdict.answer) {
                Ok(result) => gitmoot_result = Some(result),
                Err(ResultError::Missing) => {
                    verdict.failure = Some(RunFailure::new(
                        ErrorClass::NoResult,
                        "the answer carries no gitmoot_result object",
                    ))
                }
                Err(ResultError::Invalid(why)) => {
                    verdict.failure = Some(RunFailure::new(
                        ErrorClass::InvalidResult,
                        format!("the answer's gitmoot_result is invalid: {why}"),
                    ))
                }
            }
        }
        let mut facts = verdict.facts;
        let ok = verdict.failure.is_none();
        facts.family = facts.family.filter(|_| ok);
        let (answer, error) = match verdict.failure {
            None => (Some(verdict.answer), None),
            Some(failure) => {
                let last_text = if verdict.answer.trim().is_empty() {
                    verdict.last_text
                } else {
                    Some(verdict.answer)
                };
                let error = RunError {
                    class: failure.class,
                    message: failure.message,
                    last_text,
                };
                (None, Some(error))
            }
        };
        Envelope {
            gitmoot_result,
            run: Run {
                runtime,
                ok,
                error,
                answer,
                facts,
                process,
                lines,
                bytes,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Default` is what clap gives a parser with no flag, so code without clap sees the same.
    #[test]
    fn the_default_flags_are_clap_defaults() {
        use clap::{Args, FromArgMatches};
        let command = ParseArgs::augment_args(clap::Command::new("moot-parse"));
        let matches = command.get_matches_from(["moot-parse"]);
        let parsed = ParseArgs::from_arg_matches(&matches).unwrap();
        assert_eq!(format!("{parsed:?}"), format!("{:?}", ParseArgs::default()));
    }
}
