//! The independent reading of codex's captures (see testkit/src/events.rs).
//!
//! A tool call is an item of a tool type, printed as `item.started` and again as
//! `item.completed` under the same id: one call per start, or per completion with no start
//! open, and one result per completion. Usage
//! is the last `turn.completed`'s figures, as printed (codex prints the thread's running total,
//! with cached tokens already inside `input_tokens`); a stream with none has zero usage.

use std::collections::HashSet;

use super::{rows, shows_denial, Counted};

/// The item types that are a tool call.
const TOOL_ITEMS: &[&str] = &[
    "command_execution",
    "file_change",
    "mcp_tool_call",
    "collab_tool_call",
    "web_search",
];

/// Counts what the capture holds.
pub fn count(stream: &[u8]) -> Counted {
    let mut counted = Counted {
        usage: Some((0, 0)),
        ..Counted::default()
    };
    let mut ids = HashSet::new(); // started, not completed
    for row in rows(stream) {
        let item = &row["item"];
        let is_tool = item["type"]
            .as_str()
            .is_some_and(|kind| TOOL_ITEMS.contains(&kind));
        match row["type"].as_str() {
            Some("item.started")
                if is_tool && ids.insert(item["id"].as_str().unwrap_or("").to_string()) =>
            {
                counted.calls += 1;
            }
            Some("item.completed") if is_tool => {
                // A completion whose start was not seen is its call too.
                if !ids.remove(item["id"].as_str().unwrap_or("")) {
                    counted.calls += 1;
                }
                counted.results += 1;
                let output = item["aggregated_output"]
                    .as_str()
                    .or_else(|| item["error"]["message"].as_str())
                    .unwrap_or("");
                if item["status"] == "declined" || shows_denial(output) {
                    counted.denied += 1;
                }
            }
            Some("turn.completed") => {
                let usage = &row["usage"];
                counted.usage = Some((
                    usage["input_tokens"].as_u64().unwrap_or(0),
                    usage["output_tokens"].as_u64().unwrap_or(0),
                ));
            }
            _ => {}
        }
    }
    counted
}
