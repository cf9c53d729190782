//! A JSON string as the stream spelled it, borrowed from the line and decoded only when
//! something must read its text.
//!
//! A tool's output is most of a stream's bytes (a `cat` of a large file is one multi-MiB
//! string full of escapes), and the tally of tool calls reads every result whether or not
//! events are written. Decoding each output into a `String` cost the parsers as much as the
//! rest of their work together; searching its JSON text for a few ASCII words, and counting its
//! characters on that text, costs a pass over bytes the parser already holds.

use std::borrow::Cow;

use serde::de::{Deserialize, Deserializer, Error as _};
use serde_json::value::RawValue;

/// A JSON string literal, quotes and escapes included (so always at least `""`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonStr<'a>(&'a str);

impl<'a> JsonStr<'a> {
    /// The literal as the stream spelled it.
    pub fn raw(self) -> &'a str {
        self.0
    }

    /// Whether the decoded text contains `needle`, searched in the JSON text. Only for needles
    /// of printable ASCII other than `"` and `\`, which every JSON writer leaves as they are.
    pub fn mentions(self, needle: &str) -> bool {
        debug_assert!(is_verbatim(needle), "{needle:?} may be escaped in JSON");
        memchr::memmem::find(self.body().as_bytes(), needle.as_bytes()).is_some()
    }

    /// The text, borrowed when the literal has no escape.
    pub fn text(self) -> Cow<'a, str> {
        let body = self.body();
        if !body.contains('\\') {
            return Cow::Borrowed(body);
        }
        // The literal was checked when it was read; a failure here would be serde_json's own.
        Cow::Owned(serde_json::from_str::<String>(self.0).unwrap_or_default())
    }

    /// The number of characters of the text, counted on the JSON text: every character spelled
    /// as itself is one, every escape one, and a surrogate pair's two escapes one together.
    /// Tool output is full of escapes (`\n`, `\"`), so where every escape is a run of one or
    /// two backslashes and no `\u` is among them (almost always), this is a few vectorised
    /// counts over the bytes; otherwise it reads escape by escape.
    pub fn chars(self) -> usize {
        let body = self.body().as_bytes();
        let counts = count_bytes(body);
        if counts.doubled == 0 && counts.unicode == 0 {
            // Every escape is then one backslash and one char: two bytes for a char.
            counts.spelled - counts.backslashes
        } else {
            chars_escape_by_escape(body, counts.spelled)
        }
    }

    /// Whether the text, leading whitespace left out, starts with `prefix` (a needle as for
    /// [`JsonStr::mentions`]); `None` when that cannot be told without decoding (the text
    /// opens with another escape, perhaps of a space, or is blank).
    pub fn opens_with(self, prefix: &str) -> Option<bool> {
        let mut rest = self.body();
        loop {
            let trimmed = rest.trim_start_matches([' ', '\t', '\n', '\r']);
            match trimmed.strip_prefix('\\') {
                Some(escaped) if escaped.starts_with(['n', 't', 'r']) => rest = &escaped[1..],
                Some(escaped) if escaped.starts_with('u') => return None,
                _ if trimmed.is_empty() => return None,
                _ => return Some(trimmed.starts_with(prefix)),
            }
        }
    }

    /// The literal `raw`, if it is one: only for text a JSON reader has already checked (a
    /// [`RawValue`]'s), so that checking it is not a second pass over a multi-MiB string.
    pub fn checked(raw: &'a RawValue) -> Option<JsonStr<'a>> {
        let raw = raw.get();
        raw.starts_with('"').then_some(JsonStr(raw))
    }

    fn body(self) -> &'a str {
        &self.0[1..self.0.len() - 1]
    }
}

/// What [`JsonStr::chars`] counts in a JSON string's body.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    /// Bytes that start a UTF-8 char.
    spelled: usize,
    backslashes: usize,
    /// Backslashes right after a backslash.
    doubled: usize,
    /// `u`s right after a backslash.
    unicode: usize,
}

/// [`Counts`] of `body`, in one pass: each is summed in byte-wide lanes over blocks of at most
/// 255 bytes, so no lane overflows, which is the form the compiler turns into vector code on
/// any x86-64 (the parsers are built for any).
fn count_bytes(body: &[u8]) -> Counts {
    const BLOCK: usize = 255;
    let Some((&first, later)) = body.split_first() else {
        return Counts::default();
    };
    let counted = Counts {
        spelled: usize::from(!is_continuation(first)),
        backslashes: usize::from(first == b'\\'),
        ..Counts::default()
    };
    // Each byte after the first, with the byte before it.
    let pairs = later.chunks(BLOCK).zip(body.chunks(BLOCK));
    pairs.fold(counted, |counted, (now, before)| {
        let mut lanes = [0u8; 4];
        for (&byte, &previous) in now.iter().zip(before) {
            let after_backslash = previous == b'\\';
            lanes[0] += u8::from(!is_continuation(byte));
            lanes[1] += u8::from(byte == b'\\');
            lanes[2] += u8::from((byte == b'\\') & after_backslash);
            lanes[3] += u8::from((byte == b'u') & after_backslash);
        }
        Counts {
            spelled: counted.spelled + usize::from(lanes[0]),
            backslashes: counted.backslashes + usize::from(lanes[1]),
            doubled: counted.doubled + usize::from(lanes[2]),
            unicode: counted.unicode + usize::from(lanes[3]),
        }
    })
}

/// [`JsonStr::chars`] for any text: `spelled` less what each escape spells beyond its char.
fn chars_escape_by_escape(body: &[u8], spelled: usize) -> usize {
    let mut chars = spelled;
    let mut at = 0;
    while let Some(found) = memchr::memchr(b'\\', &body[at..]) {
        let escape = at + found;
        // `\uXXXX` is six characters of JSON text for one (none for a high surrogate, whose
        // low half counts it); any other escape two for one.
        let length = if body.get(escape + 1) == Some(&b'u') {
            6
        } else {
            2
        };
        let high_surrogate = length == 6 && body.get(escape + 2..escape + 4).is_some_and(is_high);
        chars -= if high_surrogate { length } else { length - 1 };
        at = escape + length;
    }
    chars
}

fn is_continuation(byte: u8) -> bool {
    (byte as i8) < -64
}

/// The first two hex digits of a `\uXXXX` escape name a high surrogate (D800 to DBFF).
fn is_high(hex: &[u8]) -> bool {
    matches!(hex, [b'd' | b'D', b'8' | b'9' | b'a' | b'b' | b'A' | b'B'])
}

fn is_verbatim(needle: &str) -> bool {
    needle
        .bytes()
        .all(|byte| (b' '..=b'~').contains(&byte) && byte != b'"' && byte != b'\\')
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = <&'a RawValue>::deserialize(deserializer)?;
        JsonStr::checked(raw).ok_or_else(|| {
            D::Error::custom(format_args!(
                "invalid type: {}, expected a string",
                raw.get().chars().take(40).collect::<String>()
            ))
        })
    }
}

/// A field read as a string when it is one and as nothing otherwise: any JSON value decodes, so
/// a field only the events read can never fail a row the verdict reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LooseStr<'a>(pub Option<JsonStr<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for LooseStr<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(|raw| LooseStr(JsonStr::checked(raw)))
    }
}

/// A JSON object's fields in order, each value as the stream spelled it: what an event writes
/// as it was read (a tool call's input) without decoding it. A repeated name keeps its first
/// place and its last value, as a decoded object would.
#[derive(Debug, Default)]
pub struct RawFields<'a>(pub Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for RawFields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Fields<'a> {
            type Value = RawFields<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Self::Value, M::Error> {
                let mut fields: Vec<(Cow<'a, str>, &'a RawValue)> = Vec::new();
                while let Some((name, value)) = map.next_entry::<Cow<'a, str>, &'a RawValue>()? {
                    match fields.iter_mut().find(|(seen, _)| *seen == name) {
                        Some(field) => field.1 = value,
                        None => fields.push((name, value)),
                    }
                }
                Ok(RawFields(fields))
            }
        }
        deserializer.deserialize_map(Fields(std::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> JsonStr<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn text_and_chars_agree_with_a_full_decode() {
        for json in [
            r#""""#,
            r#""plain""#,
            r#""line\nnext\t\"quoted\" \\ slash\/""#,
            r#""h\u00e9llo w\u00f6rld ünïcode""#,
            r#""emoji \ud83d\ude00 and raw 😀""#,
            r#""\u0000\u001f\b\f\r""#,
            r#""\\\\ two \\\" three \\\\\\ four \\n""#,
            r#""\\""#,
            r#""\\\"\\n""#,
            r#""a\nb\\c\"d é€😀 \t\\\\x\n\n\n\n\n\n\n\n\"\"\"\"\"\"\"\"\"\"""#,
            r#""aaaaaaa\nbbbbbbb\\cccccc\\\\ddddd\\\\\\\\éééé\\nn""#,
        ] {
            let decoded: String = serde_json::from_str(json).unwrap();
            let text = read(json);
            assert_eq!(text.text(), decoded, "{json}");
            assert_eq!(text.chars(), decoded.chars().count(), "{json}");
        }
    }

    #[test]
    fn counting_by_lanes_agrees_with_counting_escape_by_escape() {
        // Pieces with escapes of each kind, at every alignment.
        let pieces = ["a", "é", "😀", "\n", "\"", "\t", "bcdefgh", "\u{1}", "\\x"];
        let mut seed = 7u64;
        for _ in 0..2000 {
            let mut text = String::new();
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for round in 0..(seed >> 57) {
                text.push_str(pieces[((seed >> (round * 3 % 48)) % 9) as usize]);
            }
            let json = serde_json::to_string(&text).unwrap();
            let body = &json.as_bytes()[1..json.len() - 1];
            let counts = count_bytes(body);
            let chars = text.chars().count();
            assert_eq!(
                chars_escape_by_escape(body, counts.spelled),
                chars,
                "{json}"
            );
            if !text.contains(['\u{1}', '\\']) {
                assert_eq!((counts.doubled, counts.unicode), (0, 0), "{json}");
                assert_eq!(counts.spelled - counts.backslashes, chars, "{json}");
            }
            assert_eq!(read(&json).chars(), chars, "{json}");
        }
    }

    #[test]
    fn opens_with_reads_past_blank_space_and_its_escapes() {
        assert_eq!(
            read(r#""  \n\t\r <system>ERROR: x""#).opens_with("<system>"),
            Some(true)
        );
        assert_eq!(read(r#""x <system>""#).opens_with("<system>"), Some(false));
        assert_eq!(read(r#""\"<system>""#).opens_with("<system>"), Some(false));
        assert_eq!(read(r#""\u00a0<system>""#).opens_with("<system>"), None);
        assert_eq!(read(r#""  \n""#).opens_with("<system>"), None);
    }

    #[test]
    fn raw_fields_keep_their_order_and_a_repeated_name_its_last_value() {
        let json = r#"{"b":[1, 2],"a":"x","b":{"c":null}}"#;
        let RawFields(fields) = serde_json::from_str(json).unwrap();
        let fields: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (&**n, v.get())).collect();
        assert_eq!(fields, [("b", r#"{"c":null}"#), ("a", r#""x""#)]);
        assert!(serde_json::from_str::<RawFields<'_>>("[1]").is_err());
    }

    #[test]
    fn unescaped_text_is_borrowed() {
        assert!(matches!(
            read(r#""no escapes""#).text(),
            Cow::Borrowed("no escapes")
        ));
    }

    #[test]
    fn mentions_searches_the_text() {
        let text = read(r#""cat: x: Permission denied\n""#);
        assert!(text.mentions("Permission denied"));
        assert!(!text.mentions("permission denied"));
    }

    #[test]
    fn only_strings_are_read() {
        for json in ["null", "12", "[\"a\"]", "{\"a\":1}"] {
            assert!(serde_json::from_str::<JsonStr<'_>>(json).is_err(), "{json}");
            assert_eq!(
                serde_json::from_str::<LooseStr<'_>>(json).unwrap(),
                LooseStr(None)
            );
        }
        let loose = serde_json::from_str::<LooseStr<'_>>(r#""a""#).unwrap();
        assert_eq!(loose.0.map(JsonStr::raw), Some(r#""a""#));
    }
}
