//! The independent reading of opencode's captures (see testkit/src/events.rs).
//!
//! opencode prints a `tool_use` row when a call has ended, carrying the call and its final
//! state (`completed` or `error`): one call and one result. A row in any other state is a call
//! still under way; the same `callID` is then counted as a call once. Usage is per step, on
//! each `step_finish`: its `input` leaves the cached prompt out and its `output` the reasoning,
//! so the run's figures are the sums with those added back.

use std::collections::HashSet;

use serde_json::Value;

use super::{rows, shows_denial, Counted};

/// The words opencode puts in a refused call's error: its permission layer (a rejected ask, a
/// deny rule) and its file system layer's name for EACCES and EPERM.
const REFUSALS: &[&str] = &[
    "rejected permission",
    "specified a rule which prevents you",
    "PermissionDenied",
];

/// Counts what the capture holds.
pub fn count(stream: &[u8]) -> Counted {
    let mut counted = Counted::default();
    let mut called = HashSet::new();
    let (mut input, mut output) = (0, 0);
    for row in rows(stream) {
        let part = &row["part"];
        match row["type"].as_str() {
            Some("tool_use") => {
                let state = &part["state"];
                let id = part["callID"].as_str().unwrap_or_default().to_string();
                let status = state["status"].as_str();
                if !matches!(status, Some("completed" | "error")) {
                    if called.insert(id) {
                        counted.calls += 1;
                    }
                    continue;
                }
                if !called.remove(&id) {
                    counted.calls += 1;
                }
                counted.results += 1;
                let said = state["output"]
                    .as_str()
                    .or(state["error"].as_str())
                    .unwrap_or_default();
                let refused =
                    status == Some("error") && REFUSALS.iter().any(|words| said.contains(words));
                if refused || shows_denial(said) {
                    counted.denied += 1;
                }
            }
            Some("step_finish") => {
                let tokens = &part["tokens"];
                if tokens.is_object() {
                    let n = |v: &Value| v.as_u64().unwrap_or(0);
                    input += n(&tokens["input"])
                        + n(&tokens["cache"]["read"])
                        + n(&tokens["cache"]["write"]);
                    output += n(&tokens["output"]) + n(&tokens["reasoning"]);
                }
            }
            _ => {}
        }
    }
    // No step_finish, no usage: the envelope's figures are then 0.
    counted.usage = Some((input, output));
    counted
}
