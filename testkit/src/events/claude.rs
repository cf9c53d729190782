//! The independent reading of claude's captures (see testkit/src/events.rs).
//!
//! Claude Code writes one row per line in stream-json, and with `--output-format json
//! --verbose` every row as one JSON array on one line: both are flattened into the same rows.
//! Tool calls are the `tool_use` parts of assistant rows, results the `tool_result` parts of user
//! rows (subagents' included: their calls act on the workspace too). A result is a denial when
//! its text shows one, or when Claude Code itself says it refused the call: the result row's
//! `permission_denials` or a `system/permission_denied` row names it.

use std::collections::HashSet;

use serde_json::Value;

use super::{rows, shows_denial, Counted};

/// Counts what the capture holds.
pub fn count(stream: &[u8]) -> Counted {
    let all: Vec<Value> = rows(stream)
        .flat_map(|row| match row {
            Value::Array(elements) => elements,
            other => vec![other],
        })
        .collect();
    let mut refused = HashSet::new();
    for row in &all {
        if row["type"] == "result" {
            for denial in row["permission_denials"].as_array().into_iter().flatten() {
                if let Some(id) = denial["tool_use_id"].as_str() {
                    refused.insert(id.to_string());
                }
            }
        }
        if row["type"] == "system" && row["subtype"] == "permission_denied" {
            if let Some(id) = row["tool_use_id"].as_str() {
                refused.insert(id.to_string());
            }
        }
    }
    let mut counted = Counted::default();
    for row in &all {
        let parts = row["message"]["content"].as_array().into_iter().flatten();
        match row["type"].as_str() {
            Some("assistant") => {
                counted.calls += parts.filter(|p| p["type"] == "tool_use").count() as u64;
            }
            Some("user") => {
                for part in parts.filter(|p| p["type"] == "tool_result") {
                    counted.results += 1;
                    let id = part["tool_use_id"].as_str().unwrap_or_default();
                    if refused.contains(id) || shows_denial(&result_text(&part["content"])) {
                        counted.denied += 1;
                    }
                }
            }
            _ => {}
        }
    }
    counted.usage = Some(usage(&all));
    counted
}

/// A tool result's content: a string, or an array whose text parts are its text.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Every prompt token Anthropic bills: its uncached input plus cache writes and reads.
fn prompt(usage: &Value) -> u64 {
    [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ]
    .iter()
    .map(|key| usage[*key].as_u64().unwrap_or(0))
    .sum()
}

/// The run's input and output tokens: the result row's, when it is the last of the result and
/// assistant rows (an assistant row after it means the run went on, and that result is not the
/// run's); else the main thread's real assistant messages summed, each message id once (Claude
/// Code repeats a message's usage on every row of it).
fn usage(all: &[Value]) -> (u64, u64) {
    let last = all
        .iter()
        .rev()
        .find(|row| row["type"] == "result" || row["type"] == "assistant");
    if let Some(result) = last.filter(|row| row["type"] == "result") {
        let usage = &result["usage"];
        return (prompt(usage), usage["output_tokens"].as_u64().unwrap_or(0));
    }
    let mut seen = HashSet::new();
    let (mut input, mut output) = (0, 0);
    for row in all.iter().filter(|row| row["type"] == "assistant") {
        let message = &row["message"];
        let main_thread = row["parent_tool_use_id"].is_null();
        let real = message["model"] != "<synthetic>";
        let id = message["id"].as_str().unwrap_or_default().to_string();
        if main_thread && real && message["usage"].is_object() && seen.insert(id) {
            input += prompt(&message["usage"]);
            output += message["usage"]["output_tokens"].as_u64().unwrap_or(0);
        }
    }
    (input, output)
}
