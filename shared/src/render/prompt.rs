//! Reading the one prompt a command line names, and checking it is text a CLI can take.

use std::fs::File;
use std::io::{self, Read};

use super::RenderArgs;
use crate::model::{Meta, Refusal};
use crate::stage::{self};

/// Reads the one prompt the command line names, and checks it is text a CLI can take.
pub(super) fn read_prompt(meta: &Meta, args: &RenderArgs) -> Result<String, Refusal> {
    let usage = "give exactly one prompt: after --, or --prompt-file FILE, or - for stdin";
    if args.stdin.iter().any(|a| a != "-") || args.stdin.len() > 1 {
        return Err(Refusal::new(
            "unexpected argument after RUNTIME",
            format!("a prompt goes after -- ({usage})"),
        ));
    }
    if args.prompt.len() > 1 {
        return Err(Refusal::new(
            "prompt",
            format!(
                "{} arguments after --; quote the prompt as one argument",
                args.prompt.len()
            ),
        ));
    }
    let sources = [
        !args.prompt.is_empty(),
        args.job.prompt_file.is_some(),
        !args.stdin.is_empty(),
    ];
    let given = sources.iter().filter(|s| **s).count();
    if args.job.health {
        return match given {
            0 => Ok(meta.health_prompt.to_string()),
            _ => Err(Refusal::new(
                "--health",
                format!(
                    "it delivers {}'s own check prompt; give no prompt",
                    meta.name
                ),
            )),
        };
    }
    let bytes = match given {
        0 => return Err(Refusal::new("prompt", format!("none given; {usage}"))),
        1 => prompt_bytes(args)?,
        _ => {
            return Err(Refusal::new(
                "prompt",
                format!("more than one given; {usage}"),
            ))
        }
    };
    checked_text(bytes)
}

fn prompt_bytes(args: &RenderArgs) -> Result<Vec<u8>, Refusal> {
    let limit = stage::MAX_PROMPT_BYTES;
    if let Some(arg) = args.prompt.first() {
        return Ok(arg.as_encoded_bytes().to_vec());
    }
    match args.job.prompt_file.as_deref() {
        Some(file) if file != "-" => {
            let read = open_regular(file).and_then(|f| read_capped(f, limit));
            read.map_err(|e| {
                Refusal::new("--prompt-file", format!("cannot read it: {e}")).value(file)
            })
        }
        _ => read_capped(io::stdin().lock(), limit)
            .map_err(|e| Refusal::new("stdin", format!("cannot read the prompt: {e}"))),
    }
}

/// Opens a prompt file that must be a regular file (a symbolic link to one is fine): a FIFO
/// would hang moot-render until someone writes it, a device would never end. Opened
/// non-blocking, so even a FIFO's open returns at once to be refused.
fn open_regular(path: &str) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(
            "not a regular file; to read a pipe, give --prompt-file - and pipe it on stdin",
        ));
    }
    Ok(file)
}

/// Reads at most `limit` bytes; more is an error (a prompt that size is a mistake, and holding
/// an unbounded stream in memory is not an option).
pub(super) fn read_capped(reader: impl Read, limit: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Err(io::Error::other(format!(
            "more than {limit} bytes, the most moot-render reads"
        )));
    }
    Ok(bytes)
}

/// The prompt as text: UTF-8, not blank, no NUL (no CLI takes those on argv or as a prompt).
/// The messages never quote the prompt.
pub(super) fn checked_text(bytes: Vec<u8>) -> Result<String, Refusal> {
    let text = String::from_utf8(bytes).map_err(|e| {
        Refusal::new(
            "prompt",
            format!(
                "not valid UTF-8 (first bad byte at offset {}); re-encode it as UTF-8",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    if let Some(offset) = text.find('\0') {
        return Err(Refusal::new(
            "prompt",
            format!("contains a NUL byte at offset {offset}; remove it"),
        ));
    }
    if text.trim().is_empty() {
        let what = if text.is_empty() {
            "empty"
        } else {
            "blank (only whitespace)"
        };
        return Err(Refusal::new("prompt", format!("{what}; give the task")));
    }
    Ok(text)
}
