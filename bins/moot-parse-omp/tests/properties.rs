//! Properties of moot-parse-omp that must hold for every input, not just the golden cases:
//! any byte stream gives exactly one envelope and a documented exit status; unknown events
//! inserted anywhere never change a verdict; a valid gitmoot_result is found whatever prose
//! surrounds it. (A successful capture cut anywhere is never a success: tests/invariants.rs,
//! for every parser.)
//!
//! Most properties call the library (the same `parse` the tool runs) for speed; a bounded number
//! of cases also go through the built binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::OnceLock;

use moot::gitmoot_result;
use moot::runtime::omp::stream::Omp;
use moot::runtime::pi_family;
use moot_testkit::{cases, check_envelope, envelope_of, line_boundaries, run, verdict};
use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::{json, Map, Value};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-omp");

/// The event types the omp dialect reads (omp reads no type of its own); every other type is
/// unknown to it.
const LOAD_BEARING: &[&str] = pi_family::FAMILY_EVENTS;

/// The envelope the tool prints for `stream` with its default flags (`--text` when
/// `require_result` is false), checked against the envelope contract.
fn envelope(stream: &[u8], require_result: bool) -> Value {
    envelope_of(Omp::default(), stream, require_result)
}

/// Every golden input under testdata/omp, byte for byte.
fn streams() -> &'static [Vec<u8>] {
    static STREAMS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    STREAMS.get_or_init(|| {
        cases("omp")
            .iter()
            .map(|case| std::fs::read(&case.input).unwrap())
            .collect()
    })
}

/// Every line of every golden input: real shapes for the stream generator to recombine.
fn real_lines() -> &'static [Vec<u8>] {
    static LINES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    LINES.get_or_init(|| {
        streams()
            .iter()
            .flat_map(|s| s.split(|&b| b == b'\n').map(<[u8]>::to_vec))
            .collect()
    })
}

/// A line: a real one, a real one cut short, a real one with a byte flipped, or random bytes.
fn line() -> impl Strategy<Value = Vec<u8>> {
    let real = select(real_lines());
    prop_oneof![
        4 => real.clone(),
        1 => (real.clone(), any::<Index>()).prop_map(|(l, at)| {
            let cut = if l.is_empty() { 0 } else { at.index(l.len()) };
            l[..cut].to_vec()
        }),
        1 => (real, any::<Index>(), any::<u8>()).prop_map(|(mut l, at, b)| {
            if !l.is_empty() {
                let i = at.index(l.len());
                l[i] = b;
            }
            l
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

/// Byte streams: arbitrary bytes, or lines recombined from real captures with `\n` or `\r\n`
/// endings and maybe no final newline.
fn stream() -> impl Strategy<Value = Vec<u8>> {
    let lines = (
        proptest::collection::vec(line(), 0..24),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(lines, crlf, final_newline)| {
            let end: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let mut out = lines.join(end);
            if final_newline && !lines.is_empty() {
                out.extend_from_slice(end);
            }
            out
        });
    prop_oneof![proptest::collection::vec(any::<u8>(), 0..4096), lines]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The library path of the tool: one envelope holding the contract, with the result
    /// required (the default) and without it (`--text`).
    #[test]
    fn any_byte_stream_gives_one_envelope(stream in stream()) {
        envelope(&stream, true);
        envelope(&stream, false);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The binary itself: exactly one line on stdout, an exit status in {0, 1} that is 0
    /// exactly when `run.ok`, and stderr empty on success, one line naming the class otherwise.
    #[test]
    fn the_binary_prints_one_envelope_and_exits_0_or_1(stream in stream()) {
        let out = run(BIN, &[], &stream);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let json = stdout.strip_suffix('\n').expect("stdout ends with a newline");
        let envelope = check_envelope(json, stream.len() as u64, true);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if envelope["run"]["ok"] == true {
            prop_assert_eq!(out.status.code(), Some(0));
            prop_assert_eq!(stderr, "");
        } else {
            prop_assert_eq!(out.status.code(), Some(1));
            let class = envelope["run"]["error"]["class"].as_str().unwrap();
            let prefix = format!("moot-parse-omp: {class}: ");
            prop_assert!(stderr.starts_with(&prefix), "{}", stderr);
            prop_assert_eq!(stderr.lines().count(), 1);
        }
    }
}

/// The dialect's own vocabulary, and fragments of its JSON, for [`json_value`]'s strings.
const DIALECT_WORDS: &[&str] = &[
    "message_end",
    "assistant",
    "agent_end",
    "type",
    "role",
    "{\"type\":\"message_end\"",
    "\"role\":\"assistant\"",
    "}{",
    "\\",
    "\u{2028}",
    "",
];

/// A JSON value of bounded depth whose strings include the dialect's own vocabulary, so an
/// unknown event can carry what looks like a message_end or an assistant role inside it.
fn json_value() -> impl Strategy<Value = Value> {
    let word = select(DIALECT_WORDS);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        word.prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z]{1,10}",
        select(vec!["message", "role", "content", "isTerminal", "usage"]).prop_map(String::from),
    ]
}

/// One unknown event: a type outside the load-bearing set, at any position among random fields
/// (none of them a second `type`), serialised as one valid JSON line.
fn unknown_event() -> impl Strategy<Value = Vec<u8>> {
    let kind =
        "[a-z_]{1,24}".prop_filter("an unknown type", |k| !LOAD_BEARING.contains(&k.as_str()));
    (
        kind,
        proptest::collection::vec((key(), json_value()), 0..5),
        any::<Index>(),
    )
        .prop_map(|(kind, fields, at)| {
            let mut fields: Vec<(String, Value)> =
                fields.into_iter().filter(|(k, _)| k != "type").collect();
            fields.insert(
                at.index(fields.len() + 1),
                ("type".into(), Value::from(kind)),
            );
            let object: Map<String, Value> = fields.into_iter().collect();
            let mut line = serde_json::to_vec(&Value::Object(object)).unwrap();
            line.push(b'\n');
            line
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Unknown event types inserted at any line boundaries of any golden stream leave the
    /// verdict exactly as it was.
    #[test]
    fn unknown_events_anywhere_never_change_the_verdict(
        which in any::<Index>(),
        insertions in proptest::collection::vec((any::<Index>(), unknown_event()), 1..5),
    ) {
        // An event added to a stream with none is the CLI's first (no_output no longer holds).
        let with_rows: Vec<&Vec<u8>> =
            streams().iter().filter(|s| moot_testkit::has_a_row(s)).collect();
        let original = with_rows[which.index(with_rows.len())];
        let boundaries = line_boundaries(original);
        let mut at: Vec<(usize, Vec<u8>)> = insertions
            .into_iter()
            .map(|(i, line)| (boundaries[i.index(boundaries.len())], line))
            .collect();
        at.sort_by_key(|(offset, _)| *offset);
        let mut mixed = Vec::new();
        let mut copied = 0;
        for (offset, line) in at {
            mixed.extend_from_slice(&original[copied..offset]);
            mixed.extend_from_slice(&line);
            copied = offset;
        }
        mixed.extend_from_slice(&original[copied..]);
        prop_assert_eq!(verdict(envelope(original, true)), verdict(envelope(&mixed, true)));
    }
}

/// A valid gitmoot_result with awkward strings: quotes, braces, backslashes, fences, unicode.
fn valid_result() -> impl Strategy<Value = Value> {
    let text = "[a-z {}\\[\\]\"\\\\`\n\u{e9}\u{2028}]{0,20}";
    let decision = select(gitmoot_result::DECISIONS.to_vec());
    let strings = proptest::collection::vec(text, 0..3);
    (
        decision,
        ("[a-z]", text).prop_map(|(first, rest)| format!("{first}{rest}")),
        proptest::collection::vec(json_value(), 0..3),
        strings.clone(),
        strings,
        any::<bool>(),
    )
        .prop_map(
            |(decision, summary, findings, changes, tests, with_arrays)| {
                let mut result = json!({"decision": decision, "summary": summary});
                if with_arrays {
                    result["findings"] = Value::from(findings);
                    result["changes_made"] = Value::from(changes);
                    result["tests_run"] = Value::from(tests);
                }
                result
            },
        )
}

/// Prose around the result: words, braces, quotes, backslashes, fences and half-objects, but
/// never the literal `gitmoot_result` (no `_` can be produced). Bounded in length so the
/// extractor's scan budget (64 times the answer's length) is not what is under test.
fn prose() -> impl Strategy<Value = String> {
    let token = select(vec![
        "Here",
        " is",
        " the",
        " verdict",
        ":",
        " ",
        "\n",
        "{",
        "}",
        "\"",
        "\\",
        "\\\"",
        "[",
        "]",
        "```json\n",
        "```",
        "\n```\n",
        "{\"a\":",
        "{\"note\": \"",
        "gitmoot",
        "result",
        "'{'",
        "\t",
        "\u{2028}",
        "\u{e9}",
    ]);
    proptest::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_valid_result_is_found_whatever_surrounds_it(
        result in valid_result(),
        before in prose(),
        after in prose(),
    ) {
        let expected = gitmoot_result::validate(result.clone()).unwrap();
        let object = json!({ "gitmoot_result": result }).to_string();
        let answer = format!("{before}{object}{after}");
        prop_assert_eq!(gitmoot_result::extract(&answer), Ok(expected));
    }
}
