//! The command's stdout and stderr: each a socket of moot-run's, copied on its own thread to
//! where it goes (stdout and the transcript; stderr or `--stderr-file`), within a byte limit.
//!
//! Why a socket and not a pipe: every process in the job shares the CLI's uid and sandbox, and
//! a pipe can be reopened by anyone who can see `/proc/<cli>/fd/1`, so a program the agent ran
//! could add its own lines to the stream the verdict is read from (SECURITY.md). Opening a
//! socket through `/proc` fails (ENXIO), and the seccomp filter (src/seccomp.rs) keeps the
//! descriptor itself out of reach, so only the CLI (and what it hands its own stdout to) writes
//! there.
//!
//! Past the limit the copy keeps the head (the limit less a tail budget) and the last
//! [`tail_budget`] bytes, drops the middle, says so once through the `overflow` descriptor (so
//! moot-run ends the job) and goes on reading to end of file in bounded memory.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use nix::sys::socket::{shutdown, socketpair, AddressFamily, Shutdown, SockFlag, SockType};

/// The most of a stream's end kept past its limit.
const MAX_TAIL: u64 = 4 << 20;

/// A connected socket pair for one of the command's outputs: the command writes into
/// `child`, moot-run reads `ours`. Each end is shut down in the direction it never uses.
pub fn channel() -> io::Result<(OwnedFd, OwnedFd)> {
    let (child, ours) = socketpair(
        AddressFamily::Unix,
        SockType::Stream,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    // nix 0.29 takes raw descriptors for shutdown(2).
    shutdown(child.as_raw_fd(), Shutdown::Read)?;
    shutdown(ours.as_raw_fd(), Shutdown::Write)?;
    Ok((child, ours))
}

/// How much of a stream's end is kept when it passes `limit`: a quarter, at most 4 MiB.
pub fn tail_budget(limit: u64) -> u64 {
    (limit / 4).min(MAX_TAIL)
}

/// Where one output goes: a file, named by `label` in errors. A sink that fails is dropped; the
/// copy goes on into the others.
pub struct Sink {
    pub file: File,
    pub label: &'static str,
    /// Whether losing this sink fails the run (the transcript, stdout, `--stderr-file`); the
    /// caller's own stderr is not: nothing would be left to report on.
    pub fatal: bool,
}

/// A stream that passed its limit: its limit and how many bytes of its middle were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    pub limit: u64,
    pub dropped: u64,
}

/// How much of a stream's very end [`Copied::last`] keeps, whatever the limit: enough for the
/// few lines a CLI that fails at start-up prints.
pub const LAST_KEPT: u64 = 1024;

/// What a copy did.
#[derive(Debug, Default)]
pub struct Copied {
    pub read: Option<io::Error>,
    /// The first failure of a fatal sink, with its label.
    pub sink: Option<(&'static str, io::Error)>,
    pub overflow: Option<Overflow>,
    /// The stream's last [`LAST_KEPT`] bytes.
    pub last: Vec<u8>,
}

/// One output's copy, on its own thread so a stalled reader downstream never delays the
/// deadline.
pub struct Pump {
    done: mpsc::Receiver<Copied>,
    /// Bytes read so far: how [`Pump::finish`] tells a slow reader downstream from a stalled one.
    progress: Arc<AtomicU64>,
}

impl Pump {
    /// Starts copying `from` into `sinks` within `limit` bytes; `overflow` gets one byte when
    /// the limit is passed.
    pub fn start(
        name: &str,
        from: OwnedFd,
        sinks: Vec<Sink>,
        limit: u64,
        overflow: OwnedFd,
    ) -> io::Result<Self> {
        let (sender, done) = mpsc::channel();
        let progress = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&progress);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let copied = copy(
                    File::from(from),
                    sinks,
                    limit,
                    File::from(overflow),
                    &counter,
                );
                // The receiver is gone only if moot-run stopped waiting; nothing to report then.
                let _ = sender.send(copied);
            })?;
        Ok(Pump { done, progress })
    }

    /// What the copy did, or `None` if it stopped making progress (no byte read, so none
    /// delivered, for `idle`) before it reached end of file: a reader downstream that stopped
    /// reading, or a writer outside the job that keeps the socket open without writing.
    pub fn finish(self, idle: Duration) -> Option<Copied> {
        let mut seen = self.progress.load(Ordering::Relaxed);
        loop {
            match self.done.recv_timeout(idle) {
                Ok(copied) => return Some(copied),
                Err(mpsc::RecvTimeoutError::Disconnected) => return None,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let now = self.progress.load(Ordering::Relaxed);
                    if now == seen {
                        return None;
                    }
                    seen = now;
                }
            }
        }
    }
}

fn copy(
    mut from: File,
    sinks: Vec<Sink>,
    limit: u64,
    mut overflow: File,
    progress: &AtomicU64,
) -> Copied {
    let mut out = Sinks {
        sinks: sinks.into_iter().map(Some).collect(),
        failed: None,
    };
    let tail_size = tail_budget(limit);
    let head_size = limit - tail_size;
    let mut tail = Ring::new(tail_size);
    let mut last = Ring::new(LAST_KEPT);
    let mut total = 0u64;
    let mut read_error = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                read_error = Some(e);
                break;
            }
        };
        progress.fetch_add(n as u64, Ordering::Relaxed);
        let chunk = &buf[..n];
        last.push(chunk);
        // The part that still fits in the head goes out at once; the rest waits in the tail.
        let head_room = usize::try_from(head_size.saturating_sub(total)).unwrap_or(usize::MAX);
        let (now, later) = chunk.split_at(head_room.min(n));
        out.write(now);
        let before = total;
        total += n as u64;
        tail.push(later);
        if before <= limit && total > limit {
            // Says so once; the reader may already be gone, which is fine.
            let _ = overflow.write_all(b"!");
        }
    }
    let (first, second) = tail.contents();
    out.write(first);
    out.write(second);
    let (older, newer) = last.contents();
    Copied {
        read: read_error,
        sink: out.failed,
        overflow: (total > limit).then(|| Overflow {
            limit,
            dropped: total - limit,
        }),
        last: [older, newer].concat(),
    }
}

struct Sinks {
    sinks: Vec<Option<Sink>>,
    failed: Option<(&'static str, io::Error)>,
}

impl Sinks {
    /// Writes to every sink still there, in order (the transcript first: if stdout blocks on a
    /// stalled reader, the bytes are on disk).
    fn write(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        for slot in &mut self.sinks {
            let Some(sink) = slot else { continue };
            if let Err(e) = sink.file.write_all(bytes) {
                if sink.fatal && self.failed.is_none() {
                    self.failed = Some((sink.label, e));
                }
                *slot = None;
            }
        }
    }
}

/// The last `capacity` bytes pushed into it.
struct Ring {
    buf: Vec<u8>,
    capacity: usize,
    /// Where the next byte goes once `buf` is full.
    next: usize,
}

impl Ring {
    fn new(capacity: u64) -> Self {
        let capacity = usize::try_from(capacity).unwrap_or(usize::MAX);
        Ring {
            buf: Vec::new(),
            capacity,
            next: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        if self.capacity == 0 {
            return;
        }
        if bytes.len() >= self.capacity {
            bytes = &bytes[bytes.len() - self.capacity..];
            self.buf.clear();
            self.buf.extend_from_slice(bytes);
            self.next = 0;
            return;
        }
        let room = self.capacity - self.buf.len();
        let (fill, wrap) = bytes.split_at(room.min(bytes.len()));
        self.buf.extend_from_slice(fill);
        for &byte in wrap {
            self.buf[self.next] = byte;
            self.next = (self.next + 1) % self.capacity;
        }
    }

    /// The bytes kept, oldest first, in two pieces.
    fn contents(&self) -> (&[u8], &[u8]) {
        let (newer, older) = self.buf.split_at(self.next);
        (older, newer)
    }
}

/// Parses a byte count: digits with an optional K, M, G or T suffix (powers of 1024), at least
/// one byte: `256M`, `1G`, `65536`.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let (digits, shift) = match text.as_bytes().last() {
        Some(b'K' | b'k') => (&text[..text.len() - 1], 10),
        Some(b'M' | b'm') => (&text[..text.len() - 1], 20),
        Some(b'G' | b'g') => (&text[..text.len() - 1], 30),
        Some(b'T' | b't') => (&text[..text.len() - 1], 40),
        _ => (text, 0),
    };
    let bad = || format!("{text:?}: a size is a number of bytes, with K, M, G or T for KiB..TiB");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let number: u64 = digits.parse().map_err(|_| bad())?;
    let size = number.checked_shl(shift).filter(|s| s >> shift == number);
    match size {
        Some(0) => Err(format!("{text:?}: a limit must be at least one byte")),
        Some(size) => Ok(size),
        None => Err(bad()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Seek;

    #[test]
    fn sizes_take_binary_suffixes() {
        assert_eq!(parse_size("65536"), Ok(65536));
        assert_eq!(parse_size("256M"), Ok(256 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("2K"), Ok(2048));
        for bad in [
            "",
            "M",
            "0",
            "0K",
            "-1",
            "1.5M",
            "1MB",
            "99999999999999999999",
            "20000000T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn the_ring_keeps_the_last_bytes_in_order() {
        let mut ring = Ring::new(5);
        ring.push(b"ab");
        ring.push(b"cdefg");
        let joined = |r: &Ring| [r.contents().0, r.contents().1].concat();
        assert_eq!(joined(&ring), b"cdefg");
        ring.push(b"hi");
        assert_eq!(joined(&ring), b"efghi");
        ring.push(b"0123456789");
        assert_eq!(joined(&ring), b"56789");
        ring.push(b"x");
        assert_eq!(joined(&ring), b"6789x");
    }

    /// Copies `input` through a real socket pair with `limit`; returns what the sink got, the
    /// overflow and whether the overflow descriptor was told.
    fn through(input: &[u8], limit: u64) -> (Vec<u8>, Option<Overflow>, bool) {
        let (child, ours) = channel().expect("socketpair");
        let (wake_read, wake_write) = nix::unistd::pipe().expect("pipe");
        let sink = tempfile::tempfile().expect("tempfile");
        let pump = Pump::start(
            "test",
            ours,
            vec![Sink {
                file: sink.try_clone().expect("dup"),
                label: "sink",
                fatal: true,
            }],
            limit,
            wake_write,
        )
        .expect("pump");
        File::from(child).write_all(input).expect("write");
        let copied = pump.finish(Duration::from_secs(10)).expect("copy ends");
        assert!(copied.read.is_none() && copied.sink.is_none(), "{copied:?}");
        let mut got = Vec::new();
        let mut sink = sink;
        sink.rewind().expect("rewind");
        sink.read_to_end(&mut got).expect("read");
        let mut told = [0u8; 8];
        let told = File::from(wake_read).read(&mut told).expect("read wake") > 0;
        (got, copied.overflow, told)
    }

    #[test]
    fn a_stream_within_its_limit_passes_whole() {
        let input: Vec<u8> = (0..100u8).collect();
        assert_eq!(through(&input, 100), (input, None, false));
    }

    #[test]
    fn past_its_limit_a_stream_keeps_its_head_and_tail() {
        let input: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let (got, overflow, told) = through(&input, 100);
        // A tail of 25 bytes, a head of 75.
        assert_eq!(got.len(), 100);
        assert_eq!(&got[..75], &input[..75]);
        assert_eq!(&got[75..], &input[975..]);
        assert_eq!(
            overflow,
            Some(Overflow {
                limit: 100,
                dropped: 900
            })
        );
        assert!(told);
    }

    #[test]
    fn the_childs_end_cannot_be_reopened_through_proc() {
        let (child, _ours) = channel().expect("socketpair");
        let fd = std::os::fd::AsRawFd::as_raw_fd(&child);
        let error = std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/self/fd/{fd}"))
            .expect_err("a socket cannot be opened by path");
        assert_eq!(error.raw_os_error(), Some(nix::libc::ENXIO), "{error}");
    }
}
