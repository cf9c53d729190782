//! The kimi CLIs' own text, read beside their stream-json rows: Kimi Code's stderr (its fatal
//! error and the resume hint) and the legacy kimi-cli's plain-text errors on stdout, which Rich
//! folds at 80 columns. Kept bounded, so a CLI printing megabytes cannot exhaust memory.

use std::borrow::Cow;

/// Rich, which prints the legacy CLI's errors, folds them at this width when stdout is not a
/// terminal; a plain line exactly this wide continues on the next one.
const FOLD_WIDTH: usize = 80;

/// At most this much of the CLI's own text is kept for the failure message (bounded memory).
const MAX_PLAIN_TEXT: usize = 16 * 1024;

/// The prefix of the resume hint, on stdout (Kimi Code) and stderr (both CLIs).
const RESUME_HINT: &str = "To resume this session: kimi -r ";

/// How Kimi Code opens the fatal error it prints on stderr before exiting 1.
const STDERR_ERROR: &str = "error: ";

/// The line Kimi Code prints after its fatal error, which is not part of it.
const STDERR_LOG_POINTER: &str = "See log: ";

/// What the CLI's stderr says: the last resume hint, and the last fatal error Kimi Code printed
/// (its `error:` line and what follows, up to `See log:`).
#[derive(Debug, Default)]
pub(super) struct Stderr {
    pub(super) session_id: Option<String>,
    /// Kimi Code's fatal error, verbatim.
    pub(super) error: Option<BoundedText>,
    /// The lines read are the continuation of that error.
    in_error: bool,
}

/// Text kept for a failure message, bounded so a CLI printing megabytes cannot exhaust memory.
#[derive(Debug, Default)]
pub(super) struct BoundedText {
    text: String,
    clipped: bool,
}

/// The CLI's plain-text lines, joined back where Rich folded them.
#[derive(Debug, Default)]
pub(super) struct PlainText {
    text: BoundedText,
    last_width: usize,
}

impl Stderr {
    /// Reads one line: a resume hint, the opening of a fatal error, its end (`See log:`), or a
    /// line of the error that is open.
    pub(super) fn line(&mut self, raw: &[u8]) {
        let decoded = String::from_utf8_lossy(raw);
        let line = strip_ansi(&decoded);
        let line = line.trim_end();
        if let Some(id) = resume_hint_id(line) {
            self.session_id = Some(id);
            self.in_error = false;
        } else if line.starts_with(STDERR_ERROR) {
            let mut text = BoundedText::default();
            text.push(None, line);
            self.error = Some(text);
            self.in_error = true;
        } else if line.starts_with(STDERR_LOG_POINTER) {
            self.in_error = false;
        } else if self.in_error && !line.trim().is_empty() {
            if let Some(text) = self.error.as_mut() {
                text.push(Some('\n'), line);
            }
        }
    }
}

impl BoundedText {
    /// Appends `piece`, after `separator` unless the text is empty.
    pub(super) fn push(&mut self, separator: Option<char>, piece: &str) {
        if self.clipped {
            return;
        }
        if let Some(separator) = separator.filter(|_| !self.text.is_empty()) {
            self.text.push(separator);
        }
        let room = MAX_PLAIN_TEXT.saturating_sub(self.text.len());
        if piece.len() <= room {
            self.text.push_str(piece);
            return;
        }
        let cut = (0..=room)
            .rev()
            .find(|at| piece.is_char_boundary(*at))
            .unwrap_or(0);
        self.text.push_str(&piece[..cut]);
        self.clipped = true;
    }

    pub(super) fn message(&self) -> String {
        if self.clipped {
            format!("{} […]", self.text)
        } else {
            self.text.clone()
        }
    }
}

impl PlainText {
    pub(super) fn push(&mut self, line: &str) {
        let separator = (self.last_width != FOLD_WIDTH).then_some('\n');
        self.text.push(separator, line);
        self.last_width = line.chars().count();
    }

    pub(super) fn is_empty(&self) -> bool {
        self.text.text.is_empty()
    }

    pub(super) fn message(&self) -> String {
        self.text.message()
    }
}

/// Drops ANSI escape sequences (CSI `ESC [ … final`), which a CLI writing to a terminal-like
/// stderr may colour its error with.
fn strip_ansi(text: &str) -> Cow<'_, str> {
    if !text.contains('\u{1b}') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    Cow::Owned(out)
}

/// The session id of a `To resume this session: kimi -r <id>` line.
fn resume_hint_id(line: &str) -> Option<String> {
    let (_, rest) = line.split_once(RESUME_HINT)?;
    let id = rest.split_whitespace().next()?;
    Some(id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_hint_ids() {
        assert_eq!(
            resume_hint_id("To resume this session: kimi -r 0b29b32c-c9af-4ef7"),
            Some("0b29b32c-c9af-4ef7".into())
        );
        assert_eq!(
            resume_hint_id("  To resume this session: kimi -r session_x  "),
            Some("session_x".into())
        );
        assert_eq!(resume_hint_id("To resume this session: kimi -r "), None);
        assert_eq!(resume_hint_id("kimi -r abc"), None);
    }

    #[test]
    fn plain_text_is_unfolded_at_the_fold_width() {
        let mut plain = PlainText::default();
        let first = "a".repeat(FOLD_WIDTH);
        plain.push(&first);
        plain.push("bc");
        plain.push("next line");
        assert_eq!(plain.message(), format!("{first}bc\nnext line"));
    }

    #[test]
    fn plain_text_is_bounded() {
        let mut plain = PlainText::default();
        let long = "é".repeat(MAX_PLAIN_TEXT);
        plain.push(&long);
        plain.push("more");
        assert!(plain.text.text.len() <= MAX_PLAIN_TEXT);
        assert!(plain.message().ends_with(" […]"));
    }

    #[test]
    fn ansi_colour_is_dropped() {
        assert_eq!(
            strip_ansi("\u{1b}[38;2;232;92;92merror: failed\u{1b}[39m"),
            "error: failed"
        );
        assert_eq!(strip_ansi("plain"), "plain");
    }
}
