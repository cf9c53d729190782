//! What kimi leaves beside its stream, read once stdin has ended and handed to the [`Kimi`]
//! dialect before its verdict: the CLI's stderr (`--stderr-file`) and Kimi Code's session store
//! (`--session-store`). The reading is here, so the dialect stays a state machine that opens no
//! file.

use std::path::Path;

use super::store;
use super::stream::Kimi;
use crate::ndjson::{LineReader, Segment};
use crate::private_file;

/// Lines of the stderr file longer than this are skipped (the resume hint is short).
const MAX_STDERR_LINE: usize = 64 * 1024;

/// Where a Kimi Code run's end is checked: its stream is the same for a complete, a length-cut
/// and a dropped answer, so only the session store can tell.
#[derive(Debug, Clone, Copy)]
pub enum Store<'a> {
    /// `--session-store DIR`.
    At(&'a Path),
    /// `--no-session-store`: the caller accepts the answer unchecked.
    Unchecked,
    /// Neither: a Kimi Code run fails closed.
    NotGiven,
}

/// Hands `kimi` its stderr file, then (for a Kimi Code stream) the session store's record of
/// how the final message ended: the session to look up may come from the stderr's resume hint.
pub fn hand_in(kimi: &mut Kimi, stderr_file: Option<&Path>, store: Store) {
    if let Some(path) = stderr_file {
        if let Err(e) = read_stderr(kimi, path) {
            kimi.stderr_lost(format!("cannot read --stderr-file {}: {e}", path.display()));
        }
    }
    if !kimi.is_kimi_code() {
        return;
    }
    match store {
        Store::At(dir) => {
            let finish = match kimi.session_id() {
                Some(id) => store::final_finish(dir, id),
                None => Err("the stream named no session to look up in the session store".into()),
            };
            kimi.store_finish(finish);
        }
        Store::NotGiven => kimi.store_finish(Err(
            "no --session-store was given, and Kimi Code prints the same stream for a complete, \
             a length-cut and a dropped answer: give --session-store DIR (its \
             $KIMI_CODE_HOME/sessions), or --no-session-store to accept it unchecked"
                .into(),
        )),
        Store::Unchecked => {}
    }
}

/// Feeds every line of the stderr file to `kimi`; a file that is not a regular one, or cannot
/// be read to its end, is an error.
fn read_stderr(kimi: &mut Kimi, path: &Path) -> std::io::Result<()> {
    let file = private_file::open_regular(path)?;
    let mut reader = LineReader::new(file, MAX_STDERR_LINE);
    while let Some(segment) = reader.next_segment()? {
        if let Segment::Line(line) | Segment::Tail(line) = segment {
            kimi.stderr_line(line);
        }
    }
    Ok(())
}
