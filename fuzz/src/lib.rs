//! The checks behind every fuzz target, so a target file is one line and a new parser gets the
//! same invariants by naming its dialect: `fuzz_target!(|data: &[u8]| check_parser::<Kimi>(data));`
//!
//! A failed check panics, which libFuzzer reports as a crash and saves the input under
//! `fuzz/artifacts/<target>/`.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::sync::OnceLock;

use clap::{Args, FromArgMatches};

use moot::dialect::Dialect;
use moot::envelope::Envelope;
use moot::gitmoot_result::{self, ResultError};
use moot::model::Host;
use moot::ndjson::{self, LineReader, Segment};
use moot::outcome::ProcessOutcome;
use moot::parse::{self, ParseArgs};
use moot::render::{self, Format, RenderArgs, Rendering};
use moot::{stage, worktree};

/// Arbitrary bytes through the whole parse driver and one dialect, three ways:
/// 1. as the tool runs by default (whole reads, default limits, the result required): the
///    envelope must hold every invariant of [`check_envelope`];
/// 2. the same bytes delivered in small, uneven reads with interruptions: the envelope must be
///    byte-identical to the first (read boundaries never change a verdict);
/// 3. with small limits, an exit status and `--text` semantics derived from the bytes: the
///    invariants still hold.
pub fn check_parser<D: Dialect + Default>(data: &[u8]) {
    let defaults = args(ndjson::DEFAULT_MAX_LINE_BYTES, ndjson::DEFAULT_MAX_EVENTS);
    let whole = envelope::<D>(data, &defaults, None, true, None);
    let json = check_envelope(&whole, data.len(), true);

    let step = 1 + data.len() % 13;
    let chunked = envelope::<D>(data, &defaults, None, true, Some(step));
    let chunked_json = serde_json::to_string(&chunked).expect("the envelope serialises");
    assert_eq!(json, chunked_json, "read boundaries changed the verdict");

    let seed = data
        .iter()
        .fold(data.len(), |h, &b| h.wrapping_mul(31) ^ b as usize);
    let tight = args(1 + seed % 256, (seed % 8) as u64);
    let exit_code = [0, 1, 2, 124, 125, 126, 127, 137, 143, 255, -1][seed % 11];
    let require_result = seed % 2 == 0;
    let limited = envelope::<D>(data, &tight, Some(exit_code), require_result, None);
    check_envelope(&limited, data.len(), require_result);
}

/// The tool's flags with their defaults, as clap builds them (so a flag added later needs no
/// change here), and the two ceilings set.
fn args(max_line_bytes: usize, max_events: u64) -> ParseArgs {
    static DEFAULTS: OnceLock<ParseArgs> = OnceLock::new();
    let mut args = DEFAULTS
        .get_or_init(|| {
            let command = ParseArgs::augment_args(clap::Command::new("fuzz"));
            ParseArgs::from_arg_matches(&command.get_matches_from(["fuzz"]))
                .expect("the default flags parse")
        })
        .clone();
    args.max_line_bytes = max_line_bytes;
    args.max_events = max_events;
    args
}

fn envelope<D: Dialect + Default>(
    data: &[u8],
    args: &ParseArgs,
    exit_code: Option<i32>,
    require_result: bool,
    step: Option<usize>,
) -> Envelope {
    let parsed = match step {
        None => parse::parse(D::default(), data, args),
        Some(step) => parse::parse(D::default(), Uneven::new(data, step), args),
    };
    let mut parsed = parsed.expect("reading from memory cannot fail");
    if let Some(code) = exit_code {
        parsed.fold_process(ProcessOutcome::from_exit_code(code));
    }
    parsed.into_envelope(require_result)
}

/// Serialises the envelope as the tool prints it and holds it to the contract every parser
/// keeps ([`moot_testkit::check_envelope`]). Returns the serialised envelope.
fn check_envelope(envelope: &Envelope, input_len: usize, require_result: bool) -> String {
    let json = serde_json::to_string(envelope).expect("the envelope serialises");
    moot_testkit::check_envelope(&json, input_len as u64, require_result);
    json
}

/// The extractor on arbitrary text: it never panics; a result it returns re-validates to
/// itself and is found again when wrapped alone; text that never names the key has none.
pub fn check_extract(data: &[u8]) {
    let Ok(answer) = std::str::from_utf8(data) else {
        return;
    };
    match gitmoot_result::extract(answer) {
        Ok(result) => {
            assert_eq!(
                gitmoot_result::validate(result.clone()).as_ref(),
                Ok(&result),
                "a returned result does not re-validate to itself"
            );
            let wrapped = serde_json::json!({ "gitmoot_result": result }).to_string();
            assert_eq!(gitmoot_result::extract(&wrapped), Ok(result));
        }
        Err(ResultError::Invalid(why)) => assert!(!why.is_empty()),
        Err(ResultError::Missing) => {}
    }
    if !answer.contains("\"gitmoot_result\"") {
        assert_eq!(gitmoot_result::extract(answer), Err(ResultError::Missing));
    }
}

/// The line reader on arbitrary bytes, with a small line ceiling (the first byte) and uneven
/// reads (the second). When the first byte is 0xFF the ceiling is 256 KiB to 9 MiB instead
/// (past the reader's 256 KiB chunk, and for the top of the range past the 8 MiB it keeps), and
/// the input a line of exactly the ceiling or one byte more (the second byte's low bit) made of
/// the rest repeated, then the rest again: the buffer grows to the line and shrinks back. Every byte must be accounted for exactly: the items,
/// their newlines, stripped `\r`s and a leading BOM rebuild the input; no line is longer than
/// the ceiling; the counters agree.
pub fn check_lines(data: &[u8]) {
    let [config, step, rest @ ..] = data else {
        return;
    };
    let (input, max_line, step) = if *config == 0xFF {
        let max_line = 256 * 1024 + *step as usize * 36 * 1024;
        let long = max_line + usize::from(step & 1 == 0);
        let unit = if rest.is_empty() { &b"x"[..] } else { rest };
        let mut input: Vec<u8> = unit.iter().copied().cycle().take(long).collect();
        input.push(b'\n');
        input.extend_from_slice(rest);
        (input, max_line, 4096 * (1 + *step as usize % 16))
    } else {
        (rest.to_vec(), *config as usize, 1 + *step as usize)
    };
    let mut reader = LineReader::new(Uneven::new(&input, step), max_line);
    let ceiling = max_line.max(1);
    let mut at = 0usize;
    if input.starts_with(&[0xEF, 0xBB, 0xBF]) {
        at = 3;
    }
    let mut items = 0u64;
    while let Some(item) = reader
        .next_segment()
        .expect("reading from memory cannot fail")
    {
        items += 1;
        match item {
            Segment::Line(line) => {
                at = expect_within(&input, at, line, ceiling);
                assert_eq!(input.get(at), Some(&b'\n'), "a line not ended by \\n");
                at += 1;
            }
            Segment::TooLong { len } => {
                let len = usize::try_from(len).expect("fits");
                assert!(len > ceiling, "a too-long line of {len} <= {ceiling}");
                let body = input
                    .get(at..at + len)
                    .expect("the too-long line is in the input");
                assert!(!body.contains(&b'\n'), "a too-long line spans a newline");
                at += len;
                if at < input.len() {
                    assert_eq!(input[at], b'\n');
                    at += 1;
                }
            }
            Segment::Tail(tail) => {
                at = expect_within(&input, at, tail, ceiling);
                assert_eq!(at, input.len(), "a tail before the end of the input");
            }
        }
    }
    assert_eq!(at, input.len(), "bytes unaccounted for");
    assert_eq!(reader.bytes(), input.len() as u64);
    assert_eq!(reader.lines(), items);
}

/// Checks that `item` (a line or the tail, its `\n` left out) holds at most `ceiling` bytes and
/// sits at `at` in `input`; returns the offset after it and the `\r` the reader dropped, if any.
fn expect_within(input: &[u8], at: usize, item: &[u8], ceiling: usize) -> usize {
    assert!(
        item.len() <= ceiling,
        "an item of {} > {ceiling}",
        item.len()
    );
    let end = expect_at(input, at, item);
    end + usize::from(input.get(end) == Some(&b'\r'))
}

/// Checks that `expected` sits at `at` in `input` and returns the offset after it.
fn expect_at(input: &[u8], at: usize, expected: &[u8]) -> usize {
    let end = at + expected.len();
    assert_eq!(
        input.get(at..end),
        Some(expected),
        "an item differs from the input at {at}"
    );
    end
}

/// A source that hands out at most `step` bytes per read and is interrupted every third read,
/// the way a pipe under load behaves.
pub struct Uneven<'a> {
    data: &'a [u8],
    step: usize,
    reads: u64,
}

impl<'a> Uneven<'a> {
    pub fn new(data: &'a [u8], step: usize) -> Self {
        Uneven {
            data,
            step: step.max(1),
            reads: 0,
        }
    }
}

impl Read for Uneven<'_> {
    fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
        self.reads += 1;
        if self.reads.is_multiple_of(3) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = self.step.min(into.len()).min(self.data.len());
        into[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// moot-render's argument validation on an arbitrary command line: the bytes split at NUL into
/// words, leading `MOOT_*=value` words taken as the environment (as `env(1)` would), the rest
/// parsed by the tool's own clap definition and checked by [`render::prepare`] against a fixed
/// host (see [`RenderFixture`]). Whatever the words:
/// - a refusal is one line without control characters and never quotes the prompt (see
///   [`check_prompt_stays_out`]);
/// - a rendering is the same on a second try; its argv holds no NUL; a prompt of
///   [`stage::STAGE_THRESHOLD`] bytes or more is staged and on no argv word; a staged prompt
///   sits outside the worktree and every writable grant; every output format round-trips to
///   the argv (NUL-separated, JSON, and the shell line through a POSIX unquoter).
pub fn check_render(data: &[u8]) {
    let fixture = RenderFixture::get();
    let mut words = data.split(|&b| b == 0).peekable();
    let mut host = fixture.host.clone();
    while let Some((name, value)) = words.peek().and_then(|w| env_assignment(w)) {
        host.env.insert(name, value);
        words.next();
    }
    let argv = std::iter::once(OsStr::new("moot-render")).chain(words.map(OsStr::from_bytes));
    let command = RenderArgs::augment_args(clap::Command::new("moot-render"));
    let Ok(matches) = command.try_get_matches_from(argv) else {
        return; // clap's own usage errors; the one-line folding is unit-tested in report.rs
    };
    let args = RenderArgs::from_arg_matches(&matches).expect("clap's matches fit the struct");
    if args.list || !RenderFixture::confines(&args) {
        return;
    }
    let first = render::prepare(&args, &host);
    let again = render::prepare(&args, &host);
    assert_eq!(
        format!("{first:?}"),
        format!("{again:?}"),
        "not deterministic"
    );
    match first {
        Ok(rendering) => check_rendering(&rendering, &args, &host),
        Err(refusal) => check_refusal(&refusal.to_string()),
    }
    check_prompt_stays_out(&args, &host);
}

fn env_assignment(word: &[u8]) -> Option<(String, String)> {
    let (name, value) = std::str::from_utf8(word).ok()?.split_once('=')?;
    name.starts_with("MOOT_")
        .then(|| (name.to_string(), value.to_string()))
}

fn check_refusal(line: &str) {
    assert!(!line.is_empty(), "an empty refusal");
    assert!(
        !line.chars().any(char::is_control),
        "a refusal that is not one plain line: {line:?}"
    );
}

/// A prompt text no flag, runtime name or message can hold by chance.
const CANARY: &str = "canary-3f9c1e-prompt-text";

/// No refusal quotes the prompt: the same command line with a canary in place of every prompt
/// argument (or the canary file as `--prompt-file`) is refused, if at all, without the canary.
/// (Checking the fuzzer's own prompt would flag coincidences: a prompt `kimi-cli` is in the
/// list of runtimes an unknown one is refused with.)
fn check_prompt_stays_out(args: &RenderArgs, host: &Host) {
    let mut canary = args.clone();
    if !canary.prompt.is_empty() {
        canary.prompt.fill(CANARY.into());
    } else if canary.job.prompt_file.is_some() {
        canary.job.prompt_file = Some(RenderFixture::CANARY_FILE.to_string());
    } else {
        return;
    }
    if let Err(refusal) = render::prepare(&canary, host) {
        let line = refusal.to_string();
        assert!(
            !line.contains(CANARY),
            "a refusal quotes the prompt: {line:?}"
        );
    }
}

fn check_rendering(rendering: &Rendering, args: &RenderArgs, host: &Host) {
    let argv = &rendering.built.argv;
    assert!(!argv.is_empty(), "an empty argv");
    assert!(
        argv.iter().all(|word| !word.contains('\0')),
        "an argv word with a NUL cannot be executed"
    );
    if rendering.prompt.len() >= stage::STAGE_THRESHOLD {
        assert!(rendering.stage.is_some(), "a large prompt was not staged");
        assert!(
            argv.iter().all(|word| !word.contains(&rendering.prompt)),
            "a large prompt is on argv"
        );
    }
    if let Some(plan) = &rendering.stage {
        let writable = args.job.add_dir.iter().map(|dir| host.cwd.join(dir));
        for protected in writable.chain([host.cwd.clone()]) {
            assert!(
                !worktree::contains(&protected, &plan.dir),
                "the prompt is staged inside {}",
                protected.display()
            );
        }
    }
    let output = render::Output::of(rendering);
    let nul = render::payload(&output, Format::Nul);
    let words: Vec<&[u8]> = nul.split(|&b| b == 0).collect();
    let (last, words) = words.split_last().expect("split yields at least one item");
    assert!(last.is_empty(), "the NUL format does not end in NUL");
    assert!(
        words.iter().copied().eq(argv.iter().map(String::as_bytes)),
        "the NUL format differs from the argv"
    );

    let json: serde_json::Value = serde_json::from_slice(&render::payload(&output, Format::Json))
        .expect("the JSON format parses");
    assert_eq!(
        json["argv"],
        serde_json::json!(argv),
        "the JSON argv differs"
    );

    let sh = String::from_utf8(render::payload(&output, Format::Sh)).expect("the sh line is UTF-8");
    let line = sh
        .strip_suffix('\n')
        .expect("the sh line ends in a newline");
    assert!(!line.contains('\n'), "the sh format is more than one line");
    assert_eq!(
        &sh_words(line),
        argv,
        "the sh line does not unquote to the argv"
    );
}

/// Splits one line the way a POSIX shell (with `$'...'`) reads the words `render::sh_quote`
/// writes: bare characters, `'...'`, `\x` outside quotes, and `$'...'` with `\\ \' \n \t \r
/// \xHH`. Written separately from the quoter, so the two check each other.
fn sh_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            words.extend(word.take());
            continue;
        }
        let current = word.get_or_insert_with(String::new);
        match c {
            '\'' => current.extend(chars.by_ref().take_while(|&c| c != '\'')),
            '\\' => current.push(chars.next().expect("a backslash at the end of the line")),
            '$' if chars.peek() == Some(&'\'') => {
                chars.next();
                let mut bytes = Vec::new();
                while let Some(c) = chars.next() {
                    let c = match c {
                        '\'' => break,
                        '\\' => match chars.next().expect("an escape at the end") {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            'x' => {
                                let hex: String = chars.by_ref().take(2).collect();
                                bytes.push(u8::from_str_radix(&hex, 16).expect("two hex digits"));
                                continue;
                            }
                            other => other,
                        },
                        c => c,
                    };
                    bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                current.push_str(&String::from_utf8(bytes).expect("the $'...' word is UTF-8"));
            }
            c => current.push(c),
        }
    }
    words.extend(word);
    words
}

/// The fixed machine moot-render is fuzzed on, made once per process as
/// `$TMPDIR/moot-fuzz-render`: `repo/` (the working directory, a git worktree with `src/`, prompts of each kind,
/// a system prompt and an extension), `tmp/` (TMPDIR) and `stage/` (0700, for `--stage-dir`).
/// Standard input is /dev/null, so `-` reads an empty prompt instead of waiting.
struct RenderFixture {
    host: Host,
}

impl RenderFixture {
    /// A prompt file holding [`CANARY`].
    const CANARY_FILE: &'static str = "canary.md";

    fn get() -> &'static RenderFixture {
        static FIXTURE: OnceLock<RenderFixture> = OnceLock::new();
        FIXTURE.get_or_init(|| Self::make().expect("the render fixture can be made"))
    }

    fn make() -> io::Result<RenderFixture> {
        // A fixed name, so seeds (fuzz/seed.py) can give absolute paths in it.
        let base = std::env::temp_dir().join("moot-fuzz-render");
        let repo = base.join("repo");
        for dir in [".git", "src", "docs"] {
            fs::create_dir_all(repo.join(dir))?;
        }
        fs::create_dir_all(base.join("tmp"))?;
        fs::create_dir_all(base.join("stage"))?;
        fs::set_permissions(base.join("stage"), fs::Permissions::from_mode(0o700))?;
        let big = "Refactor the parser. ".repeat(stage::STAGE_THRESHOLD / 16);
        let files: [(&str, &[u8]); 8] = [
            (Self::CANARY_FILE, CANARY.as_bytes()),
            ("small.md", b"Fix the failing test in src/lib.rs."),
            ("big.md", big.as_bytes()),
            ("latin1.md", b"caf\xe9"),
            ("empty.md", b""),
            ("nul.md", b"a\0b"),
            ("system.md", b"You are a careful reviewer."),
            ("ext.ts", b"export default function () {}"),
        ];
        for (name, bytes) in files {
            fs::write(repo.join(name), bytes)?;
        }
        std::env::set_current_dir(&repo)?;
        let null = File::open("/dev/null")?;
        nix::unistd::dup2(null.as_raw_fd(), 0).map_err(io::Error::from)?;
        let host = Host {
            worktree: worktree::find(&repo),
            here: repo.clone(),
            cwd: repo,
            euid: nix::unistd::geteuid().as_raw(),
            fresh_uuid: "0b6c3f4e-8a4e-4c1b-9d2a-6f1e2d3c4b5a".to_string(),
            tmpdir: base.join("tmp").display().to_string(),
            stage_suffix: "f00d".to_string(),
            env: Default::default(),
        };
        Ok(RenderFixture { host })
    }

    /// Whether the command line reads only inside the fixture: `--prompt-file` is opened
    /// whatever it is (it may be a pipe), so an absolute or climbing path could block on a
    /// device or read one without end. Other paths are only inspected (stat), never opened
    /// unless regular files.
    fn confines(args: &RenderArgs) -> bool {
        args.job
            .prompt_file
            .as_deref()
            .is_none_or(|file| file == "-" || !(file.starts_with('/') || file.contains("..")))
    }
}
