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

/// Hands `kimi` its stderr file, then (for a Kimi Code stream) the session store's record of
/// how the final message ended: the session to look up may come from the stderr's resume hint.
pub fn hand_in(kimi: &mut Kimi, stderr_file: Option<&Path>, session_store: Option<&Path>) {
    if let Some(path) = stderr_file {
        if let Err(e) = read_stderr(kimi, path) {
            kimi.stderr_lost(format!("cannot read --stderr-file {}: {e}", path.display()));
        }
    }
    if let Some(dir) = session_store.filter(|_| kimi.is_kimi_code()) {
        let finish = match kimi.session_id() {
            Some(id) => store::final_finish(dir, id),
            None => Err("the stream named no session to look up in the session store".into()),
        };
        kimi.store_finish(finish);
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
