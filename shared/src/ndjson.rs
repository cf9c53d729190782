//! Streaming NDJSON line reader with bounded memory.
//!
//! Lines are split on `\n` only (U+2028 inside a JSON string is not a line break); one trailing
//! `\r` is dropped so CRLF streams read the same. The buffer grows to the longest line seen, up to
//! the line ceiling, and is given back after a line over 8 MiB, so peak memory is one chunk plus
//! the larger of 8 MiB and the longest line; a line arriving in many reads is searched for its
//! newline once per byte, not once per read. A line over the ceiling is not buffered: its bytes are counted and discarded, and
//! the reader reports it as [`Segment::TooLong`] and carries on, because the stream must be drained
//! to EOF whatever it holds (the writer upstream must never block on a full pipe).

use std::io::{self, Read};

/// Default hard ceiling on one line: omp's `agent_end` re-serialises the whole transcript, so real
/// lines reach several MiB; 64 MiB leaves an order of magnitude of headroom.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Default ceiling on the number of non-blank lines (events) in one stream.
pub const DEFAULT_MAX_EVENTS: u64 = 50_000_000;

/// Bytes asked of the source per read, and the size the buffer shrinks back to.
const CHUNK: usize = 256 * 1024;

/// The buffer is given back only above this size: lines of a few MiB are routine (omp's
/// agent_end), and regrowing for each of them would copy them again and again.
const KEEP_BUFFER: usize = 8 * 1024 * 1024;

/// One piece of the stream the reader yields: a line, or what stands in for one.
#[derive(Debug, PartialEq, Eq)]
pub enum Segment<'a> {
    /// A complete line, without its `\n` (and without a trailing `\r`).
    Line(&'a [u8]),
    /// A line longer than the ceiling; `len` counts its bytes, which were discarded.
    TooLong { len: u64 },
    /// The bytes after the last `\n` when the stream ended without one: a line cut mid-write,
    /// or a writer that omits the final newline.
    Tail(&'a [u8]),
}

/// Reads [`Segment`]s from a byte source. A lending reader: each segment borrows the internal buffer.
pub struct LineReader<R> {
    source: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    start: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    /// Bytes after `start` already known to hold no newline.
    scanned: usize,
    eof: bool,
    max_line: usize,
    bytes: u64,
    lines: u64,
    /// Set once a BOM at the very start has been looked for.
    bom_checked: bool,
}

impl<R: Read> LineReader<R> {
    pub fn new(source: R, max_line: usize) -> Self {
        LineReader {
            source,
            buf: vec![0; CHUNK],
            start: 0,
            end: 0,
            scanned: 0,
            eof: false,
            max_line: max_line.max(1),
            bytes: 0,
            lines: 0,
            bom_checked: false,
        }
    }

    /// Total bytes read from the source so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Lines yielded so far (complete, too long, or tail).
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Whether the next [`LineReader::next_segment`] may have to wait for the source: no whole
    /// line is buffered and the source has not ended. A caller flushes its own output then, so
    /// what it wrote about the lines so far is out before it blocks.
    pub fn next_read_may_block(&self) -> bool {
        !self.eof && memchr::memchr(b'\n', &self.buf[self.start + self.scanned..self.end]).is_none()
    }

    /// The next segment, or `None` at end of stream. Interrupted reads are retried.
    pub fn next_segment(&mut self) -> io::Result<Option<Segment<'_>>> {
        loop {
            let unscanned = self.start + self.scanned;
            if let Some(found) = memchr::memchr(b'\n', &self.buf[unscanned..self.end]) {
                let pos = self.scanned + found;
                self.scanned = 0;
                let line_start = self.start;
                let line_end = line_start + pos;
                self.start = line_end + 1;
                self.lines += 1;
                if pos > self.max_line {
                    return Ok(Some(Segment::TooLong { len: pos as u64 }));
                }
                return Ok(Some(Segment::Line(strip_cr(
                    &self.buf[line_start..line_end],
                ))));
            }
            let pending = self.end - self.start;
            // A line arriving in many reads is searched for its newline only once per byte.
            self.scanned = pending;
            // Until the first bytes are known not to be a BOM, they cannot be judged too long:
            // a BOM split across reads would otherwise be counted into a line.
            if pending > self.max_line && self.bom_checked {
                self.scanned = 0;
                let len = self.discard_rest_of_line()?;
                self.lines += 1;
                return Ok(Some(Segment::TooLong { len }));
            }
            if self.eof {
                if pending == 0 {
                    return Ok(None);
                }
                let tail_start = self.start;
                self.start = self.end;
                self.scanned = 0;
                self.lines += 1;
                return Ok(Some(Segment::Tail(strip_cr(
                    &self.buf[tail_start..self.end],
                ))));
            }
            self.fill()?;
        }
    }

    /// Makes room and reads once more; sets `eof` when the source is exhausted.
    fn fill(&mut self) -> io::Result<()> {
        self.compact();
        if self.end == self.buf.len() {
            let grown = (self.buf.len() * 2).min(self.max_line + CHUNK + 1);
            self.buf.resize(grown.max(self.end + CHUNK), 0);
        }
        let n = read_retrying(&mut self.source, &mut self.buf[self.end..])?;
        if n == 0 {
            self.eof = true;
        }
        self.end += n;
        self.bytes += n as u64;
        if !self.bom_checked && (self.end >= 3 || self.eof) {
            // Only the very first bytes of the stream can be a BOM: nothing is consumed yet.
            self.bom_checked = true;
            if self.lines == 0 && self.buf[..self.end].starts_with(&[0xEF, 0xBB, 0xBF]) {
                self.start = 3;
                self.scanned = 0;
            }
        }
        Ok(())
    }

    /// Moves unconsumed bytes to the front, and gives memory back after a long line.
    fn compact(&mut self) {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.buf.len() > KEEP_BUFFER && self.end <= CHUNK {
            self.buf.truncate(2 * CHUNK);
            self.buf.shrink_to_fit();
        }
    }

    /// Drops the current over-long line through its `\n` (or EOF) and returns its length.
    fn discard_rest_of_line(&mut self) -> io::Result<u64> {
        let mut len = 0u64;
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                len += pos as u64;
                self.start += pos + 1;
                return Ok(len);
            }
            len += (self.end - self.start) as u64;
            self.start = 0;
            self.end = 0;
            if self.eof {
                return Ok(len);
            }
            self.fill()?;
        }
    }
}

fn read_retrying<R: Read>(source: &mut R, into: &mut [u8]) -> io::Result<usize> {
    loop {
        match source.read(into) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// True when a line holds nothing but ASCII whitespace.
pub fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(segment) = reader.next_segment().unwrap() {
            out.push(match segment {
                Segment::Line(l) => format!("L:{}", String::from_utf8_lossy(l)),
                Segment::TooLong { len } => format!("TOOLONG:{len}"),
                Segment::Tail(t) => format!("T:{}", String::from_utf8_lossy(t)),
            });
        }
        out
    }

    #[test]
    fn splits_on_newline_and_strips_cr() {
        assert_eq!(collect(b"a\r\nb\n\nc", 100), ["L:a", "L:b", "L:", "T:c"]);
    }

    #[test]
    fn unicode_line_separator_is_not_a_break() {
        let input = "{\"t\":\"x\u{2028}y\"}\n".as_bytes();
        assert_eq!(collect(input, 100), ["L:{\"t\":\"x\u{2028}y\"}"]);
    }

    #[test]
    fn over_long_line_is_counted_and_skipped() {
        let mut input = vec![b'x'; 10_000];
        input.extend_from_slice(b"\nok\n");
        assert_eq!(collect(&input, 100), ["TOOLONG:10000", "L:ok"]);
    }

    #[test]
    fn line_exactly_at_ceiling_is_kept() {
        let mut input = vec![b'y'; 100];
        input.push(b'\n');
        assert_eq!(collect(&input, 100), [format!("L:{}", "y".repeat(100))]);
    }

    #[test]
    fn lines_longer_than_a_chunk_parse_whole() {
        let long = "z".repeat(3 * CHUNK + 17);
        let input = format!("{long}\nend\n");
        let got = collect(input.as_bytes(), DEFAULT_MAX_LINE_BYTES);
        assert_eq!(got, [format!("L:{long}"), "L:end".to_string()]);
    }

    #[test]
    fn leading_bom_is_dropped() {
        assert_eq!(collect(b"\xEF\xBB\xBFa\nb\n", 100), ["L:a", "L:b"]);
    }

    /// A source that hands out one byte per read, as a slow pipe may.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, into: &mut [u8]) -> io::Result<usize> {
            let n = self.0.len().min(1).min(into.len());
            into[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn collect_trickled(input: &[u8], max: usize) -> Vec<String> {
        let mut reader = LineReader::new(Trickle(input), max);
        let mut out = Vec::new();
        while let Some(segment) = reader.next_segment().unwrap() {
            out.push(format!("{segment:?}"));
        }
        assert_eq!(reader.bytes(), input.len() as u64);
        out
    }

    /// Found writing the ndjson_lines fuzz target's byte accounting: with a ceiling under 3
    /// bytes, a BOM arriving in reads shorter than itself was judged too long before it was
    /// recognised, and counted into a line.
    #[test]
    fn bom_split_across_reads_with_a_tiny_ceiling_is_still_dropped() {
        assert_eq!(
            collect_trickled(b"\xEF\xBB\xBFa\nbcd\n", 1),
            ["Line([97])", "TooLong { len: 3 }"]
        );
    }

    /// Found by the ndjson_lines fuzz target on merging the scan-once reader: the bytes already
    /// scanned were counted from the old start after a BOM split across reads moved it, so the
    /// next scan began past the end of the data and panicked.
    #[test]
    fn bom_arriving_byte_by_byte_before_a_newline() {
        assert_eq!(
            collect_trickled(b"\xEF\xBB\xBF\nab\n", 100),
            ["Line([])", "Line([97, 98])"]
        );
        assert!(collect_trickled(b"\xEF\xBB\xBF", 16).is_empty());
    }

    #[test]
    fn lines_arriving_a_byte_at_a_time_read_the_same() {
        let input = b"ab\r\n\ncdef\nxyz";
        assert_eq!(
            collect_trickled(input, 100),
            [
                "Line([97, 98])",
                "Line([])",
                "Line([99, 100, 101, 102])",
                "Tail([120, 121, 122])"
            ]
        );
    }

    #[test]
    fn counts_bytes_and_lines() {
        let mut reader = LineReader::new(&b"a\nbb\nccc"[..], 100);
        while reader.next_segment().unwrap().is_some() {}
        assert_eq!((reader.bytes(), reader.lines()), (8, 3));
    }
}
