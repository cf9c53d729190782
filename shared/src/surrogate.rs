//! Lone UTF-16 surrogate escapes, read as JavaScript reads them.
//!
//! JavaScript strings are UTF-16 and may hold half of a surrogate pair (an emoji cut in two);
//! `JSON.stringify` then writes the half as an escape (`"\ud83d"`), as Python's `json.dumps`
//! does with `ensure_ascii`. The CLIs that write the streams are such programs, and their
//! readers (JSON.parse then TextEncoder, Go's encoding/json) take the half for U+FFFD.
//! serde_json refuses the string instead, which would fail a good run as `malformed_stream`
//! over one broken character of its answer.
//!
//! So before a line is decoded, every `\uXXXX` escape in D800–DFFF that is not a high
//! surrogate directly followed by a low one is rewritten to `\ufffd`, in a copy of the line.
//! The escape keeps its six bytes, so line lengths, byte counts and offsets are unchanged.
//! Nothing else changes: raw invalid UTF-8 (a surrogate encoded raw included), raw control
//! characters, bad escapes and duplicate keys reach serde exactly as they were and fail as
//! before; a well-formed pair stays the character it encodes.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem::Finder;

/// The opening of a `\u` escape, searched for once per line (one SIMD pass when there is none).
static UNICODE_ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));

/// The escape a lone surrogate becomes: U+FFFD REPLACEMENT CHARACTER, six bytes as well.
const REPLACEMENT: &[u8; 6] = b"\\ufffd";

/// `json` with every lone surrogate escape replaced by `\ufffd`; borrowed, untouched, when it
/// holds none. Only JSON text is rewritten: a line that does not open like a JSON object or
/// array (after JSON whitespace) is some program's own words, which it keeps verbatim.
pub fn replace_lone(json: &[u8]) -> Cow<'_, [u8]> {
    if !matches!(json.trim_ascii_start().first(), Some(b'{' | b'[')) {
        return Cow::Borrowed(json);
    }
    let mut copy: Option<Vec<u8>> = None;
    // Where the next escape may start: past the low half of a pair already read.
    let mut from = 0;
    for at in UNICODE_ESCAPE.find_iter(json) {
        // Cheapest test first: most `\u` escapes (control characters, ANSI colours, text
        // written with ensure_ascii) are no surrogate, and no surrogate's hex opens without d.
        if at < from || !matches!(json.get(at + 2), Some(b'd' | b'D')) {
            continue;
        }
        let Some(unit @ 0xD800..=0xDFFF) = hex4(json, at + 2) else {
            continue;
        };
        if !opens_an_escape(json, at) {
            // `\\u…`: an escaped backslash, then the letter u.
            continue;
        }
        if unit <= 0xDBFF && is_low_escape(json, at + 6) {
            // A pair: the character it encodes. The low half is read with it.
            from = at + 12;
            continue;
        }
        copy.get_or_insert_with(|| json.to_vec())[at..at + 6].copy_from_slice(REPLACEMENT);
    }
    copy.map_or(Cow::Borrowed(json), Cow::Owned)
}

/// True when the backslash at `at` opens an escape: it follows an even run of backslashes
/// (each pair of them an escaped backslash). In a JSON string the first backslash of a run
/// always opens an escape, so counting back within the run is enough.
fn opens_an_escape(json: &[u8], at: usize) -> bool {
    let run = json[..at].iter().rev().take_while(|&&b| b == b'\\').count();
    run % 2 == 0
}

/// The code unit of the four hex digits at `at`, of either case.
fn hex4(json: &[u8], at: usize) -> Option<u16> {
    let digits = json.get(at..at + 4)?;
    digits.iter().try_fold(0u16, |unit, &digit| {
        let value = (digit as char).to_digit(16)?;
        Some((unit << 4) | value as u16)
    })
}

/// True when a `\u` escape of a low surrogate (DC00–DFFF) starts at `at`. A backslash right
/// after a whole escape always opens the next one.
fn is_low_escape(json: &[u8], at: usize) -> bool {
    json.get(at..at + 2) == Some(b"\\u")
        && hex4(json, at + 2).is_some_and(|unit| (0xDC00..=0xDFFF).contains(&unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rewritten line as text, and whether it was copied.
    fn rewrite(line: &str) -> (String, bool) {
        let out = replace_lone(line.as_bytes());
        let copied = matches!(out, Cow::Owned(_));
        assert_eq!(out.len(), line.len(), "the length changed: {line}");
        (String::from_utf8(out.into_owned()).unwrap(), copied)
    }

    fn rewritten(line: &str) -> String {
        rewrite(line).0
    }

    fn untouched(line: &str) {
        assert_eq!(rewrite(line), (line.to_string(), false), "{line}");
    }

    /// What serde reads from the rewritten line: the string value of `{"t": …}`.
    fn decoded(line: &str) -> Result<String, String> {
        #[derive(serde::Deserialize)]
        struct Row {
            t: String,
        }
        serde_json::from_slice::<Row>(&replace_lone(line.as_bytes()))
            .map(|row| row.t)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn lone_high_becomes_the_replacement_character() {
        assert_eq!(rewritten(r#"{"t":"a\ud83db"}"#), r#"{"t":"a\ufffdb"}"#);
        assert_eq!(decoded(r#"{"t":"a\ud83db"}"#).unwrap(), "a\u{FFFD}b");
    }

    #[test]
    fn lone_low_becomes_the_replacement_character() {
        assert_eq!(rewritten(r#"{"t":"a\ude00b"}"#), r#"{"t":"a\ufffdb"}"#);
        assert_eq!(decoded(r#"{"t":"\udfff"}"#).unwrap(), "\u{FFFD}");
    }

    #[test]
    fn high_at_the_end_of_a_string() {
        assert_eq!(rewritten(r#"{"t":"x\ud83d"}"#), r#"{"t":"x\ufffd"}"#);
        assert_eq!(decoded(r#"{"t":"\udbff"}"#).unwrap(), "\u{FFFD}");
    }

    #[test]
    fn low_then_high_are_two_lone_halves() {
        assert_eq!(
            rewritten(r#"{"t":"\ude00\ud83d"}"#),
            r#"{"t":"\ufffd\ufffd"}"#
        );
        assert_eq!(
            decoded(r#"{"t":"\ude00\ud83d"}"#).unwrap(),
            "\u{FFFD}\u{FFFD}"
        );
    }

    #[test]
    fn a_pair_stays_the_character_it_encodes() {
        untouched(r#"{"t":"\ud83d\ude00"}"#);
        assert_eq!(decoded(r#"{"t":"\ud83d\ude00"}"#).unwrap(), "😀");
        untouched(r#"{"t":"\uD83D\uDE00\ud800\udc00\udbff\udfff"}"#);
    }

    #[test]
    fn a_high_before_a_pair_is_lone_and_the_pair_survives() {
        assert_eq!(
            rewritten(r#"{"t":"\ud83d\ud83d\ude00"}"#),
            r#"{"t":"\ufffd\ud83d\ude00"}"#
        );
        assert_eq!(
            decoded(r#"{"t":"\ud83d\ud83d\ude00\ude00"}"#).unwrap(),
            "\u{FFFD}😀\u{FFFD}"
        );
    }

    #[test]
    fn an_escaped_backslash_is_not_an_escape() {
        untouched(r#"{"t":"\\ud83d"}"#);
        assert_eq!(decoded(r#"{"t":"\\ud83d"}"#).unwrap(), r"\ud83d");
        untouched(r#"{"t":"\\\\ud83d \\\\\\\\ude00"}"#);
        // An odd run: escaped backslashes, then an escape.
        assert_eq!(
            rewritten(r#"{"t":"\\\ud83d \\\\\ude00"}"#),
            r#"{"t":"\\\ufffd \\\\\ufffd"}"#
        );
        assert_eq!(decoded(r#"{"t":"\\\ud83d"}"#).unwrap(), "\\\u{FFFD}");
    }

    #[test]
    fn a_high_followed_by_an_escaped_backslash_is_lone() {
        assert_eq!(
            rewritten(r#"{"t":"\ud83d\\ude00"}"#),
            r#"{"t":"\ufffd\\ude00"}"#
        );
        assert_eq!(
            decoded(r#"{"t":"\ud83d\\ude00"}"#).unwrap(),
            "\u{FFFD}\\ude00"
        );
    }

    #[test]
    fn uppercase_hex_is_read_too() {
        assert_eq!(rewritten(r#"{"t":"\uD83D!"}"#), r#"{"t":"\ufffd!"}"#);
        assert_eq!(rewritten(r#"{"t":"\uDc00"}"#), r#"{"t":"\ufffd"}"#);
        assert_eq!(decoded(r#"{"t":"\uD83D"}"#).unwrap(), "\u{FFFD}");
    }

    #[test]
    fn an_escape_cut_at_the_end_of_the_line() {
        untouched(r#"{"t":"\u"#);
        untouched(r#"{"t":"\ud8"#);
        untouched(r#"{"t":"\ud83"#);
        // A whole high escape with nothing after it is lone.
        assert_eq!(rewritten(r#"{"t":"\ud83d"#), r#"{"t":"\ufffd"#);
        // A high followed by a cut low is lone too; the cut low stays for serde to refuse.
        assert_eq!(rewritten(r#"{"t":"\ud83d\ude0"#), r#"{"t":"\ufffd\ude0"#);
        untouched("{\\u");
        untouched("[\\");
    }

    #[test]
    fn other_escapes_are_left_alone() {
        untouched(r#"{"t":"\u0000\u00e9\u2028\ue000\uffff\ufffd\n\"\\"}"#);
        untouched(r#"{"t":"\uzzzz \ud8zz"}"#);
        assert!(decoded(r#"{"t":"\ud83d\uzzzz"}"#).is_err());
    }

    #[test]
    fn only_json_text_is_rewritten() {
        untouched(r"Error code: 500 - {'message': 'bad \ud83d'}");
        untouched(r#""\ud83d""#);
        assert_eq!(
            rewritten(" \t{\"t\":\"\\udc00\"}"),
            " \t{\"t\":\"\\ufffd\"}"
        );
        assert_eq!(rewritten(r#"[{"t":"\udc00"}]"#), r#"[{"t":"\ufffd"}]"#);
    }

    #[test]
    fn strictness_elsewhere_is_kept() {
        // Raw invalid UTF-8, a surrogate encoded raw, a raw control character, a bad escape.
        for line in [
            &b"{\"t\":\"\xff\"}"[..],
            b"{\"t\":\"\xed\xa0\xbd\"}",
            b"{\"t\":\"a\x01\"}",
            b"{\"t\":\"\\x41\"}",
        ] {
            assert!(matches!(replace_lone(line), Cow::Borrowed(_)));
        }
        assert!(
            decoded(r#"{"t":"\ud83d","t":"x"}"#).is_err(),
            "duplicate key"
        );
    }

    /// What JavaScript reads from a JSON string's contents: JSON.parse to UTF-16 code units,
    /// then TextEncoder, which writes U+FFFD for each lone surrogate (as from_utf16_lossy does).
    fn as_javascript_reads(contents: &str) -> String {
        let mut units = Vec::new();
        let mut rest = contents;
        while let Some(c) = rest.chars().next() {
            rest = &rest[c.len_utf8()..];
            if c != '\\' {
                units.extend(c.encode_utf16(&mut [0; 2]).iter());
                continue;
            }
            let escaped = rest.chars().next().unwrap();
            rest = &rest[1..];
            match escaped {
                'u' => {
                    units.push(u16::from_str_radix(&rest[..4], 16).unwrap());
                    rest = &rest[4..];
                }
                '\\' => units.push(u16::from(b'\\')),
                other => panic!("no such escape in the test alphabet: {other}"),
            }
        }
        String::from_utf16_lossy(&units)
    }

    /// Every string of up to five pieces of an alphabet of halves, pairs, escaped backslashes
    /// and the letters that follow them decodes, after the rewrite, as JavaScript reads it.
    #[test]
    fn every_short_string_reads_as_javascript_reads_it() {
        const PIECES: &[&str] = &[
            r"\ud83d", r"\ude00", r"\uD800", r"\uDFFF", r"\u0041", r"\\", "u", "d83d", "x",
        ];
        let mut strings = vec![String::new()];
        let mut checked = 0;
        for _ in 0..5 {
            strings = strings
                .iter()
                .flat_map(|s| PIECES.iter().map(move |piece| format!("{s}{piece}")))
                .collect();
            for contents in &strings {
                let line = format!("{{\"t\":\"{contents}\"}}");
                assert_eq!(
                    decoded(&line).as_deref(),
                    Ok(as_javascript_reads(contents).as_str()),
                    "{line}"
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 9 + 81 + 729 + 6561 + 59049);
    }

    #[test]
    fn many_lone_halves_in_one_line() {
        let line = format!("{{\"t\":\"{}\"}}", r"\ud800x".repeat(1000));
        let want = format!("{{\"t\":\"{}\"}}", r"\ufffdx".repeat(1000));
        assert_eq!(rewritten(&line), want);
    }
}
