//! Kimi Code's session store: the one channel that says how its final answer ended.
//!
//! Kimi Code 2.1.0 prints the same stream-json, exits 0 and writes its resume hint whether the
//! provider finished the answer, cut it at the length limit or dropped the stream mid-answer.
//! Its session store records the difference: every assistant message appended to
//! `<store>/<workdir>/<session_id>/agents/main/wire.jsonl` carries
//! `meta.finish.finishReason` (`completed`; `truncated` with `rawFinishReason: "length"` for a
//! length cut; `null` for a stream that ended without one). moot-parse-kimi reads it with
//! `--session-store` (the adapter passes the sessions below the seat's private HOME, where the
//! agent writes: nothing here follows a link or reads without a bound).

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ndjson::{LineReader, Segment};
use crate::private_file;

/// A wire.jsonl line longer than this is skipped (messages are short; tool output is elsewhere).
const MAX_WIRE_LINE: usize = 16 << 20;

/// The largest wire.jsonl read. The store is in the seat's private state, where the agent
/// writes: a sparse file of terabytes would keep the parser reading long after the deadline.
/// A larger one is not trusted, and the run's finish is then unknown.
const MAX_WIRE_FILE: u64 = 256 << 20;

/// How the final assistant message of a session ended, as the store records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    pub reason: Option<String>,
    pub raw: Option<String>,
}

impl Finish {
    /// The provider finished the message itself.
    pub fn is_complete(&self) -> bool {
        self.reason.as_deref() == Some("completed")
    }
}

#[derive(Deserialize)]
struct WireLine {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<Appended>,
}

#[derive(Deserialize)]
struct Appended {
    message: Option<Body>,
    meta: Option<Meta>,
}

#[derive(Deserialize)]
struct Body {
    role: Option<String>,
}

#[derive(Deserialize)]
struct Meta {
    source: Option<String>,
    finish: Option<FinishField>,
}

#[derive(Deserialize)]
struct FinishField {
    #[serde(rename = "finishReason")]
    reason: Option<String>,
    #[serde(rename = "rawFinishReason")]
    raw: Option<String>,
}

/// The finish of the session's last model message, or why it cannot be known.
pub fn final_finish(store: &Path, session_id: &str) -> Result<Finish, String> {
    let wire = wire_file(store, session_id)?;
    let file = private_file::open_regular(&wire)
        .map_err(|e| format!("cannot read {}: {e}", wire.display()))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if size > MAX_WIRE_FILE {
        return Err(format!(
            "{} is {size} bytes, more than the {MAX_WIRE_FILE} a session records: not read",
            wire.display()
        ));
    }
    let mut reader = LineReader::new(std::io::Read::take(file, MAX_WIRE_FILE), MAX_WIRE_LINE);
    let mut last = None;
    while let Some(segment) = reader
        .next_segment()
        .map_err(|e| format!("cannot read {}: {e}", wire.display()))?
    {
        let (Segment::Line(line) | Segment::Tail(line)) = segment else {
            continue;
        };
        if let Some(finish) = model_message_finish(line) {
            last = Some(finish);
        }
    }
    last.ok_or_else(|| format!("{} records no model message", wire.display()))
}

fn model_message_finish(line: &[u8]) -> Option<Finish> {
    let line: WireLine = serde_json::from_slice(line).ok()?;
    if line.kind.as_deref() != Some("agent.message.appended") {
        return None;
    }
    let appended = line.message?;
    let meta = appended.meta?;
    let from_model = appended.message?.role.as_deref() == Some("assistant")
        && meta.source.as_deref() == Some("llm");
    if !from_model {
        return None;
    }
    let finish = meta.finish.unwrap_or(FinishField {
        reason: None,
        raw: None,
    });
    Some(Finish {
        reason: finish.reason,
        raw: finish.raw,
    })
}

/// `<store>/<any workdir>/<session_id>/agents/main/wire.jsonl`: the session id is a
/// `session_<uuid>` the stream printed, never a path.
fn wire_file(store: &Path, session_id: &str) -> Result<PathBuf, String> {
    let plain = session_id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !plain {
        return Err(format!("the session id {session_id:?} is not Kimi Code's"));
    }
    let workdirs = std::fs::read_dir(store)
        .map_err(|e| format!("cannot list the session store {}: {e}", store.display()))?;
    // Every directory on the way is a real one: the store is the agent's to write, and a link
    // would send the parser to a session outside it.
    let real_dir = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    workdirs
        .flatten()
        .map(|dir| dir.path())
        .find_map(|workdir| {
            let mut dir = workdir;
            for name in [session_id, "agents", "main"] {
                if !real_dir(&dir) {
                    return None;
                }
                dir.push(name);
            }
            let wire = dir.join("wire.jsonl");
            (real_dir(&dir) && wire.is_file()).then_some(wire)
        })
        .ok_or_else(|| {
            format!(
                "the session store {} has no session {session_id}",
                store.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(lines: &[&str]) -> (tempfile::TempDir, String) {
        let store = tempfile::tempdir().unwrap();
        let id = "session_f392483f-45e4-4c03-b77c-c3c1cfe00078";
        let dir = store.path().join("wd_x_1").join(id).join("agents/main");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("wire.jsonl"), lines.join("\n") + "\n").unwrap();
        (store, id.to_string())
    }

    const USER: &str = r#"{"message":{"message":{"role":"user","content":[]},"meta":{"source":"input"}},"type":"agent.message.appended"}"#;

    fn assistant(finish: &str) -> String {
        format!(
            r#"{{"message":{{"message":{{"role":"assistant","content":[]}},"meta":{{"source":"llm","finish":{finish}}}}},"type":"agent.message.appended"}}"#
        )
    }

    #[test]
    fn the_last_model_message_decides() {
        let cut = assistant(r#"{"finishReason":"truncated","rawFinishReason":"length"}"#);
        let done = assistant(r#"{"finishReason":"completed","rawFinishReason":"stop"}"#);
        let (store, id) = store_with(&[USER, &done, &cut]);
        let finish = final_finish(store.path(), &id).unwrap();
        assert_eq!(finish.raw.as_deref(), Some("length"));
        assert!(!finish.is_complete());
        let (store, id) = store_with(&[USER, &cut, &done, r#"{"type":"prompt.completed"}"#]);
        assert!(final_finish(store.path(), &id).unwrap().is_complete());
        let dropped = assistant(r#"{"finishReason":null,"rawFinishReason":null}"#);
        let (store, id) = store_with(&[USER, &dropped]);
        assert_eq!(
            final_finish(store.path(), &id).unwrap(),
            Finish {
                reason: None,
                raw: None
            }
        );
    }

    #[test]
    fn a_missing_session_or_a_path_as_id_is_an_error() {
        let (store, _) = store_with(&[USER]);
        assert!(final_finish(store.path(), "session_other")
            .unwrap_err()
            .contains("has no session"));
        assert!(final_finish(store.path(), "../../etc")
            .unwrap_err()
            .contains("not Kimi Code's"));
        let (store, id) = store_with(&[USER]);
        assert!(final_finish(store.path(), &id)
            .unwrap_err()
            .contains("no model message"));
    }

    /// The store is the agent's: a session directory that is a link is not followed, and a
    /// wire file too large to be a session's (a sparse one of terabytes) is not read.
    #[test]
    fn a_linked_session_or_a_huge_wire_file_is_not_read() {
        let done = assistant(r#"{"finishReason":"completed","rawFinishReason":"stop"}"#);
        let (elsewhere, id) = store_with(&[USER, &done]);
        let store = tempfile::tempdir().unwrap();
        std::fs::create_dir(store.path().join("wd_y")).unwrap();
        std::os::unix::fs::symlink(
            elsewhere.path().join("wd_x_1").join(&id),
            store.path().join("wd_y").join(&id),
        )
        .unwrap();
        let error = final_finish(store.path(), &id).unwrap_err();
        assert!(error.contains("has no session"), "{error}");

        let (store, id) = store_with(&[USER, &done]);
        let wire = store
            .path()
            .join("wd_x_1")
            .join(&id)
            .join("agents/main/wire.jsonl");
        std::fs::File::options()
            .write(true)
            .open(&wire)
            .unwrap()
            .set_len(MAX_WIRE_FILE + 1)
            .unwrap();
        let error = final_finish(store.path(), &id).unwrap_err();
        assert!(error.contains("not read"), "{error}");
    }
}
