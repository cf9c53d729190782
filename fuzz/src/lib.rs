//! The checks behind every fuzz target, so a target file is one line and a new parser gets the
//! same invariants by naming its dialect: `fuzz_target!(|data: &[u8]| check_parser::<Kimi>(data));`
//!
//! A failed check panics, which libFuzzer reports as a crash and saves the input under
//! `fuzz/artifacts/<target>/`.

use std::io::{self, Read};
use std::sync::OnceLock;

use clap::{Args, FromArgMatches};

use moot::envelope::Envelope;
use moot::gitmoot_result::{self, ResultError};
use moot::ndjson::{self, Item, LineReader};
use moot::outcome::ProcessOutcome;
use moot::parse::{self, Dialect, ParseArgs};
use moot::testkit;

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
/// keeps ([`moot::testkit::check_envelope`]). Returns the serialised envelope.
fn check_envelope(envelope: &Envelope, input_len: usize, require_result: bool) -> String {
    let json = serde_json::to_string(envelope).expect("the envelope serialises");
    testkit::check_envelope(&json, input_len as u64, require_result);
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
    while let Some(item) = reader.next_item().expect("reading from memory cannot fail") {
        items += 1;
        match item {
            Item::Line(line) => {
                assert!(
                    line.len() <= ceiling,
                    "a line of {} > {ceiling}",
                    line.len()
                );
                at = expect_at(&input, at, line);
                at += usize::from(input.get(at) == Some(&b'\r'));
                assert_eq!(input.get(at), Some(&b'\n'), "a line not ended by \\n");
                at += 1;
            }
            Item::TooLong { len } => {
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
            Item::Tail(tail) => {
                assert!(
                    tail.len() <= ceiling,
                    "a tail of {} > {ceiling}",
                    tail.len()
                );
                at = expect_at(&input, at, tail);
                at += usize::from(input.get(at) == Some(&b'\r'));
                assert_eq!(at, input.len(), "a tail before the end of the input");
            }
        }
    }
    assert_eq!(at, input.len(), "bytes unaccounted for");
    assert_eq!(reader.bytes(), input.len() as u64);
    assert_eq!(reader.lines(), items);
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
