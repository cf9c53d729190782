//! Byte-level probes for NDJSON lines a dialect does not decode, or cannot.
//!
//! Two questions every stream parser asks of raw bytes: may this line be skipped without decoding
//! it (the hot path: deltas and tool output are most of a long run), and does a line that failed
//! to parse still name a row the parser would have read (then it fails closed instead of
//! skipping). Both must draw the same line for every dialect, so the probes live here.

/// The `type` value of a line that opens exactly with `{"type":"` and a value holding no escape;
/// `None` for any other opening (the line must then be decoded to be judged).
pub fn opening_type(line: &[u8]) -> Option<&[u8]> {
    const OPENING: &[u8] = b"{\"type\":\"";
    let rest = line.strip_prefix(OPENING)?;
    let end = memchr::memchr2(b'"', b'\\', rest)?;
    (rest[end] == b'"').then_some(&rest[..end])
}

/// True when the line opens with a `type` outside `read`, the types a dialect decodes.
pub fn opens_with_unread_type(line: &[u8], read: &[&str]) -> bool {
    opening_type(line).is_some_and(|kind| !read.iter().any(|r| r.as_bytes() == kind))
}

/// True when the raw bytes hold `"<field>"`, then optional blanks, a colon, optional blanks and
/// the quoted `value`. Every occurrence of the key is tried; a key inside another string (its
/// quote escaped) never matches.
pub fn raw_field_is(raw: &[u8], field: &str, value: &str) -> bool {
    raw_values_of(raw, field).any(|rest| is_quoted(rest, value))
}

/// True when the raw bytes hold `"<field>"` as a key (followed by a colon), whatever its value.
pub fn raw_has_key(raw: &[u8], field: &str) -> bool {
    raw_values_of(raw, field).next().is_some()
}

/// The bytes after each `"<field>":` of the raw line, blanks skipped; an occurrence whose
/// opening quote is escaped (the key text inside another string) is passed over. These probes
/// run on every hot line, so they allocate nothing: the key is found by its bare name and its
/// quotes are checked in place.
fn raw_values_of<'r>(raw: &'r [u8], field: &'r str) -> impl Iterator<Item = &'r [u8]> {
    let name = field.as_bytes();
    memchr::memmem::find_iter(raw, name).filter_map(move |at| {
        let quoted = at > 0 && raw[at - 1] == b'"' && raw.get(at + name.len()) == Some(&b'"');
        let escaped = at > 1 && raw[at - 2] == b'\\';
        if !quoted || escaped {
            return None;
        }
        skip_blanks(&raw[at + name.len() + 1..])
            .strip_prefix(b":")
            .map(skip_blanks)
    })
}

/// True when `rest` opens with `value` in double quotes.
fn is_quoted(rest: &[u8], value: &str) -> bool {
    rest.strip_prefix(b"\"")
        .and_then(|r| r.strip_prefix(value.as_bytes()))
        .is_some_and(|r| r.first() == Some(&b'"'))
}

/// The first of `values` that the raw bytes give as their `type` anywhere (see [`raw_field_is`]),
/// in one pass over the line's `type` keys.
pub fn raw_type_among<'v>(raw: &[u8], values: &[&'v str]) -> Option<&'v str> {
    raw_values_of(raw, "type")
        .filter_map(|rest| values.iter().position(|value| is_quoted(rest, value)))
        .min()
        .map(|i| values[i])
}

fn skip_blanks(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .unwrap_or(bytes.len());
    &bytes[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_field_matcher_is_precise() {
        assert!(raw_field_is(
            br#"{"type" : "message_end""#,
            "type",
            "message_end"
        ));
        assert!(raw_field_is(
            br#"{"a":{"type":"x"},"type":	"message_end"}"#,
            "type",
            "message_end"
        ));
        assert!(!raw_field_is(
            br#"{"type":"message_end_x"}"#,
            "type",
            "message_end"
        ));
        assert!(!raw_field_is(
            br#"{"note":"type", "message_end"}"#,
            "type",
            "message_end"
        ));
        assert!(!raw_field_is(
            br#"{"x":"\"type\":\"message_end\""}"#,
            "type",
            "message_end"
        ));
        assert!(!raw_field_is(
            br#"{"type":1,"v":"message_end"}"#,
            "type",
            "message_end"
        ));
    }

    #[test]
    fn raw_key_needs_a_colon_and_an_unescaped_quote() {
        assert!(raw_has_key(
            br#"{"duration_api_ms":1,"total_cost_usd" : 0.2"#,
            "total_cost_usd"
        ));
        assert!(!raw_has_key(
            br#"{"note":"total_cost_usd"}"#,
            "total_cost_usd"
        ));
        assert!(!raw_has_key(
            br#"{"x":"\"total_cost_usd\":1"}"#,
            "total_cost_usd"
        ));
    }

    #[test]
    fn opening_type_reads_only_a_plain_opening() {
        assert_eq!(
            opening_type(br#"{"type":"stream_event","x":1}"#),
            Some(&b"stream_event"[..])
        );
        assert_eq!(opening_type(br#"{ "type":"notice"}"#), None);
        assert_eq!(opening_type(br#"{"type":"a\"b"}"#), None);
        assert_eq!(opening_type(br#"{"type":"cut"#), None);
        assert_eq!(opening_type(br#"{"subtype":"x","type":"result"}"#), None);
    }

    #[test]
    fn unread_types_are_named_by_the_opening() {
        let read = ["result", "assistant"];
        assert!(opens_with_unread_type(br#"{"type":"user"}"#, &read));
        assert!(!opens_with_unread_type(br#"{"type":"result"}"#, &read));
        assert!(!opens_with_unread_type(br#"{"is_error":true}"#, &read));
    }

    #[test]
    fn raw_type_among_names_the_first_listed_match() {
        let line = br#"{"type":"item.completed","item":{"type":"agent_message""#;
        assert_eq!(
            raw_type_among(line, &["turn.failed", "agent_message"]),
            Some("agent_message")
        );
        assert_eq!(raw_type_among(line, &["turn.failed"]), None);
    }
}
