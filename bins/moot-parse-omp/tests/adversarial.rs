//! Hostile input. The committed corpus (testdata/adversarial/, verdicts decided and explained in
//! its README.md) runs as golden cases; inputs too large to commit are generated here at run
//! time: a 100 MiB single line, 10 million tiny lines, a stream that never ends, and a stdout
//! closed under the tool. Bounds are generous and never on time: memory is read from the
//! kernel's own peak (VmHWM) while the process is alive.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-omp");
const MIB: u64 = 1024 * 1024;

const SESSION: &str = r#"{"type":"session","version":3,"id":"01a229c0-91fa-75fa-8206-38514f5ba04a","cwd":"/tmp/rcws-omp"}"#;
const ANSWER_ROW: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"All good.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"done\"}}"}],"provider":"fake","model":"fake-model","usage":{"input":10,"output":2},"stopReason":"stop"}}"#;
const END: &str = r#"{"type":"agent_end","messages":[],"isTerminal":true}"#;

#[test]
fn golden_cases() {
    let checked = moot_testkit::check_goldens(BIN, "moot-parse-omp", "adversarial");
    assert!(checked >= 38, "only {checked} adversarial cases");
}

/// The rows that end a minimal successful run (the answer and agent_end), each with its newline.
fn ending() -> String {
    format!("{ANSWER_ROW}\n{END}\n")
}

/// A running moot-parse-omp whose stdin the test writes and whose peak memory it reads.
struct Parser {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Parser {
    fn spawn(args: &[&str]) -> Parser {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        Parser { child, stdin }
    }

    fn write(&mut self, bytes: &[u8]) {
        self.stdin.as_mut().unwrap().write_all(bytes).unwrap();
    }

    /// The process's peak resident memory so far, in bytes (VmHWM). Read while stdin is still
    /// open, so the process is alive and has read everything but the pipe's last 64 KiB.
    fn peak_memory(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .expect("VmHWM in /proc/<pid>/status");
        let kib: u64 = line
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .expect("VmHWM in kB");
        kib * 1024
    }

    /// Closes stdin and returns the envelope, the exit status and stderr.
    fn finish(mut self) -> (serde_json::Value, Option<i32>, String) {
        drop(self.stdin.take());
        let out = self.child.wait_with_output().unwrap();
        let envelope = serde_json::from_slice(&out.stdout).unwrap();
        (
            envelope,
            out.status.code(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }
}

/// Writes `total` bytes of one line's body in pieces, never holding it whole in the test.
fn write_body(parser: &mut Parser, total: u64, byte: u8) {
    let piece = vec![byte; MIB as usize];
    let mut left = total;
    while left > 0 {
        let n = left.min(MIB);
        parser.write(&piece[..n as usize]);
        left -= n;
    }
}

/// A 100 MiB line is over the default 64 MiB ceiling: the run fails closed as
/// malformed_stream naming the line, the rest of the stream is still read (the session id),
/// and the line is counted and dropped, never held whole.
#[test]
fn a_100_mib_line_over_the_ceiling_fails_closed_without_holding_it() {
    let mut parser = Parser::spawn(&[]);
    parser.write(format!("{SESSION}\n{{\"type\":\"tool_execution_end\",\"x\":\"").as_bytes());
    write_body(&mut parser, 100 * MIB, b'x');
    parser.write(format!("\"}}\n{}", ending()).as_bytes());
    let peak = parser.peak_memory();
    let (envelope, status, stderr) = parser.finish();
    let line_len = 100 * MIB + 36;
    assert_eq!(status, Some(1), "{stderr}");
    assert_eq!(envelope["run"]["error"]["class"], "malformed_stream");
    assert_eq!(
        envelope["run"]["error"]["message"],
        format!("line 2: the line is {line_len} bytes, over the ceiling of 67108864 bytes (--max-line-bytes)")
    );
    assert_eq!(
        envelope["run"]["session_id"],
        "01a229c0-91fa-75fa-8206-38514f5ba04a"
    );
    assert_eq!(envelope["run"]["lines"], 4);
    // The reader buffers up to the ceiling before it knows the line is too long, and no more
    // (about 68 MiB measured): holding the whole line would cost over 100 MiB.
    assert!(peak < 96 * MIB, "peak memory {} MiB", peak / MIB);
}

/// Under a raised ceiling the same 100 MiB line is read whole and the run succeeds; memory is
/// bounded by the line, not by the stream.
#[test]
fn a_100_mib_line_under_a_raised_ceiling_is_read_whole() {
    let mut parser = Parser::spawn(&["--max-line-bytes", "134217728"]);
    parser.write(format!("{SESSION}\n{{\"type\":\"tool_execution_end\",\"x\":\"").as_bytes());
    write_body(&mut parser, 100 * MIB, b'y');
    parser.write(format!("\"}}\n{}", ending()).as_bytes());
    let peak = parser.peak_memory();
    let (envelope, status, stderr) = parser.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(envelope["run"]["ok"], true);
    assert_eq!(envelope["run"]["lines"], 4);
    // About 132 MiB measured: the buffer doubles up to the line.
    assert!(peak < 300 * MIB, "peak memory {} MiB", peak / MIB);
}

/// Ten million tiny rows (`{}`, an object that is no event) are skipped one by one; the
/// answer after them still counts, every line is counted, and memory does not grow with them.
#[test]
fn ten_million_tiny_lines() {
    const ROWS: u64 = 10_000_000;
    let mut parser = Parser::spawn(&[]);
    parser.write(format!("{SESSION}\n").as_bytes());
    let block = b"{}\n".repeat(100_000);
    for _ in 0..ROWS / 100_000 {
        parser.write(&block);
    }
    parser.write(ending().as_bytes());
    let peak = parser.peak_memory();
    let (envelope, status, stderr) = parser.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(envelope["run"]["ok"], true);
    assert_eq!(envelope["run"]["lines"], ROWS + 3);
    // About 4.5 MiB measured; keeping the rows would cost 30 MiB more.
    assert!(peak < 16 * MIB, "peak memory {} MiB", peak / MIB);
}

/// A stream that does not end: while stdin stays open and hundreds of MiB of deltas flow, the
/// parser's peak memory stays where it was after the first few MiB. When the stream finally
/// ends properly, the verdict is the ending's.
#[test]
fn a_stream_that_never_ends_keeps_memory_bounded() {
    let mut parser = Parser::spawn(&[]);
    parser.write(format!("{SESSION}\n").as_bytes());
    let delta = r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"0123456789abcdef"},"message":{"role":"assistant","content":[]}}"#;
    let block = format!("{delta}\n").repeat(8192);
    let mut written = 0u64;
    let mut early_peak = 0;
    while written < 512 * MIB {
        parser.write(block.as_bytes());
        written += block.len() as u64;
        if early_peak == 0 && written >= 16 * MIB {
            early_peak = parser.peak_memory();
        }
    }
    let late_peak = parser.peak_memory();
    assert!(
        late_peak <= early_peak + 4 * MIB,
        "memory grew with the stream: {} KiB after 16 MiB, {} KiB after {} MiB",
        early_peak / 1024,
        late_peak / 1024,
        written / MIB
    );
    assert!(late_peak < 16 * MIB, "peak memory {} MiB", late_peak / MIB);
    parser.write(ending().as_bytes());
    let (envelope, status, stderr) = parser.finish();
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(envelope["run"]["ok"], true);
}

/// A reader that goes away (`moot-parse-omp | head -c 1`): the tool is not killed by SIGPIPE,
/// says on one line that stdout was lost and exits 2 (an I/O error), for a success and a
/// failure, with a multi-MiB envelope that cannot fit in the pipe. A failed `--text` run prints
/// nothing, so it loses nothing and keeps its 1.
#[test]
fn sigpipe_on_stdout_is_an_output_failure() {
    let big_answer = "z".repeat(4 * MIB as usize);
    let answer_row = ANSWER_ROW.replace("All good.", &big_answer);
    for (stream, verdict) in [
        (format!("{SESSION}\n{answer_row}\n{END}\n"), 0),
        (format!("{SESSION}\n{answer_row}\n"), 1),
    ] {
        for args in [&[][..], &["--text"][..]] {
            let mut parser = Parser::spawn(args);
            let mut stdout = parser.child.stdout.take().unwrap();
            parser.write(stream.as_bytes());
            drop(parser.stdin.take());
            let mut first = [0u8; 1];
            if verdict == 0 || args.is_empty() {
                stdout.read_exact(&mut first).unwrap();
            }
            drop(stdout);
            let out = parser.child.wait_with_output().unwrap();
            let stderr = String::from_utf8(out.stderr).unwrap();
            let prints = verdict == 0 || args.is_empty();
            let want = if prints { 2 } else { 1 };
            assert_eq!(out.status.code(), Some(want), "{args:?}: {stderr}");
            let lost = "moot-parse-omp: cannot write to stdout: Broken pipe (os error 32)\n";
            assert_eq!(stderr.ends_with(lost), prints, "{args:?}: {stderr}");
            if verdict == 1 {
                assert!(
                    stderr.starts_with("moot-parse-omp: no_agent_end: "),
                    "{stderr}"
                );
            }
        }
    }
}
