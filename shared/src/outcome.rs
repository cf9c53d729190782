//! The outcome of the runtime's process, as moot-run records it and the parsers fold it in.
//!
//! Exit statuses follow timeout(1): the child's own status, 124 when the deadline killed it, 125
//! when moot-run itself failed, 126 when the command could not be invoked, 127 when it was not
//! found, 128+N when signal N ended it; 123 when an output passed its limit and moot-run ended
//! the command (timeout(1) has no such case; the status file says which limit); and 122 when the
//! job changed what `--protect` keeps (the status file's `tampered` names it), whatever else
//! happened.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub use crate::protect::Tampered;

pub const EXIT_TAMPERED: i32 = 122;
pub const EXIT_OUTPUT_LIMIT: i32 = 123;
pub const EXIT_TIMED_OUT: i32 = 124;
pub const EXIT_RUNNER_FAILED: i32 = 125;
pub const EXIT_CANNOT_INVOKE: i32 = 126;
pub const EXIT_NOT_FOUND: i32 = 127;
const SIGNAL_BASE: i32 = 128;
/// A status file is one short JSON line; anything past this is not one moot-run wrote.
const STATUS_FILE_LIMIT: usize = 8192;

/// The status file moot-run writes, and what `--exit-code` is expanded to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessOutcome {
    /// The status moot-run exits with (timeout(1) conventions).
    pub exit_code: i32,
    /// The signal that ended the child (`SIGTERM`), when one did.
    pub signal: Option<String>,
    /// True when the deadline expired and moot-run killed the group.
    pub timed_out: bool,
    /// Wall time of the run, when known.
    #[serde(default)]
    pub elapsed_ms: Option<u64>,
    /// The child's pid, when it was spawned.
    #[serde(default)]
    pub pid: Option<u32>,
    /// The output that passed its limit (`--max-output`, `--max-stderr`), when one did: the
    /// command was then ended, and what was kept is that output's head and tail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_limit: Option<OutputLimit>,
    /// What the job changed of the protected set (`--protect`), when it changed anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tampered: Option<Tampered>,
    /// The end of the command's stderr (at most 1 KiB, whole lines, terminal escapes dropped and
    /// other control characters but newlines made spaces), when it wrote any: what a CLI that failed before its first event
    /// said about why, for the parser's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
}

/// Which of the command's outputs passed its limit, the limit, and how much was dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputLimit {
    /// `stdout` (the stream and transcript) or `stderr`.
    pub stream: String,
    pub limit: u64,
    pub dropped: u64,
}

/// How a process outcome bears on the verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bearing {
    /// Exit 0: the stream alone decides.
    Clean,
    /// A plain nonzero exit: the run fails, but the stream's own finding is more specific.
    Failed(String),
    /// Killed, timed out, or never ran: the stream is incomplete by construction.
    Killed(String),
    /// An output passed its limit: its middle was dropped and the command ended.
    Limited(String),
    /// The job changed what the operator's own tools later trust or run (`--protect`).
    Tampered(String),
}

impl ProcessOutcome {
    /// Expands a shell exit status (`$?` of moot-run or of the runtime itself).
    pub fn from_exit_code(code: i32) -> Self {
        let signal =
            (code > SIGNAL_BASE && code != EXIT_TIMED_OUT).then(|| signal_name(code - SIGNAL_BASE));
        ProcessOutcome {
            exit_code: code,
            signal,
            timed_out: code == EXIT_TIMED_OUT,
            elapsed_ms: None,
            pid: None,
            output_limit: None,
            tampered: None,
            stderr_tail: None,
        }
    }

    /// Reads a status file written by moot-run.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        // The status file may sit where the agent can write: never follow, block or flood.
        let bytes = crate::private_file::read_small(path, STATUS_FILE_LIMIT)
            .with_context(|| format!("cannot read status file {}", path.display()))?;
        serde_json::from_slice(&bytes)
            .with_context(|| format!("status file {} is not a moot-run status", path.display()))
    }

    /// [`ProcessOutcome::stderr_tail`] from the last bytes of the command's stderr: a line cut
    /// by the start of what was kept is dropped, and nothing is `None`.
    pub fn stderr_tail_from(last: &[u8], whole: bool) -> Option<String> {
        let mut kept = last;
        if !whole {
            // The buffer started mid-stream: skip to the first whole line, if there is one.
            if let Some(newline) = kept.iter().position(|&b| b == b'\n') {
                kept = &kept[newline + 1..];
            }
        }
        let text = plain_text(&String::from_utf8_lossy(kept));
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_string())
    }

    /// The last line of the command's stderr with text on it, at most 300 characters: the
    /// line a failure's message quotes.
    pub fn stderr_last_line(&self) -> Option<String> {
        let line = self
            .stderr_tail
            .as_deref()?
            .lines()
            .map(str::trim)
            .rfind(|line| !line.is_empty())?;
        let mut shown: String = line.chars().take(300).collect();
        if shown.len() < line.len() {
            shown.push_str("...");
        }
        Some(shown)
    }

    pub fn bearing(&self) -> Bearing {
        if let Some(tampered) = &self.tampered {
            return Bearing::Tampered(format!("{tampered} (exit {})", self.exit_code));
        }
        if let Some(limit) = &self.output_limit {
            return Bearing::Limited(format!(
                "the command's {} passed its limit of {} bytes and the command was ended \
                 (exit {}): {} bytes of its middle were dropped, its head and tail kept",
                limit.stream, limit.limit, self.exit_code, limit.dropped
            ));
        }
        if self.timed_out {
            let after = self
                .elapsed_ms
                .map(|ms| format!(" after {ms} ms"))
                .unwrap_or_default();
            return Bearing::Killed(format!(
                "the process was killed at its deadline{after} (exit {})",
                self.exit_code
            ));
        }
        if let Some(signal) = &self.signal {
            return Bearing::Killed(format!(
                "the process was killed by {signal} (exit {})",
                self.exit_code
            ));
        }
        match self.exit_code {
            0 => Bearing::Clean,
            EXIT_RUNNER_FAILED => Bearing::Killed(
                "moot-run failed before or while running the process (exit 125)".into(),
            ),
            EXIT_CANNOT_INVOKE => {
                Bearing::Killed("the command could not be invoked (exit 126)".into())
            }
            EXIT_NOT_FOUND => Bearing::Killed("the command was not found (exit 127)".into()),
            code => Bearing::Failed(format!("the process exited with status {code}")),
        }
    }
}

/// `text` without terminal escapes (CSI sequences such as colours are dropped whole) and with
/// every other control character but the newline made a space.
fn plain_text(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, up to the final byte (@ to ~).
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else if c.is_control() && c != '\n' {
            plain.push(' ');
        } else {
            plain.push(c);
        }
    }
    plain
}

/// The status a process ended by signal `number` is reported with: 128+N, as a shell does.
pub fn signal_exit_code(number: i32) -> i32 {
    SIGNAL_BASE + number
}

/// `SIGTERM` for 15; `signal 99` for numbers the platform does not name.
pub fn signal_name(number: i32) -> String {
    nix::sys::signal::Signal::try_from(number)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {number}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_expand_like_timeout() {
        assert_eq!(ProcessOutcome::from_exit_code(0).bearing(), Bearing::Clean);
        assert!(ProcessOutcome::from_exit_code(124).timed_out);
        assert_eq!(
            ProcessOutcome::from_exit_code(137).signal.as_deref(),
            Some("SIGKILL")
        );
        assert_eq!(
            ProcessOutcome::from_exit_code(143).signal.as_deref(),
            Some("SIGTERM")
        );
        assert!(matches!(
            ProcessOutcome::from_exit_code(1).bearing(),
            Bearing::Failed(_)
        ));
        assert!(matches!(
            ProcessOutcome::from_exit_code(127).bearing(),
            Bearing::Killed(_)
        ));
    }
}
