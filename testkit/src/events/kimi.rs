//! The independent reading of kimi's captures (see testkit/src/events.rs).
//!
//! Both CLIs print OpenAI-style messages: an assistant line's `tool_calls` are its calls, a
//! `role:"tool"` line (matched by `tool_call_id`) a result. A result's text is the string, or
//! the legacy CLI's text parts; it shows a denial when it names a kernel refusal or carries the
//! CLI's own "rejected" answer.

use serde_json::Value;

use super::{shows_denial, Counted};

/// Counts what the capture holds.
pub fn count(stream: &[u8]) -> Counted {
    let mut counted = Counted::default();
    let mut tokens: Option<(u64, u64)> = None;
    for row in super::rows(stream) {
        match row["role"].as_str() {
            Some("assistant") => {
                if let Some(calls) = row["tool_calls"].as_array() {
                    counted.calls += calls.len() as u64;
                }
                if let Some(usage) = row.get("usage").filter(|u| u.is_object()) {
                    let (input, output) = tokens.get_or_insert((0, 0));
                    *input += input_of(usage);
                    *output += output_of(usage);
                }
            }
            Some("tool") => {
                counted.results += 1;
                let text = text_of(&row["content"]);
                if shows_denial(&text) || text.contains("The tool call is rejected by the user") {
                    counted.denied += 1;
                }
            }
            _ => {}
        }
    }
    // A stream with no usage at all (every real capture) still gives 0 and 0 in the envelope.
    counted.usage = Some(tokens.unwrap_or((0, 0)));
    counted
}

/// Every prompt token of one step, whichever spelling the line uses.
fn input_of(usage: &Value) -> u64 {
    let n = |key: &str| usage[key].as_u64().unwrap_or(0);
    if usage.get("input_other").is_some() {
        n("input_other") + n("input_cache_read") + n("input_cache_creation")
    } else if usage.get("prompt_tokens").is_some() {
        n("prompt_tokens")
    } else {
        n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens")
    }
}

fn output_of(usage: &Value) -> u64 {
    ["completion_tokens", "output_tokens", "output"]
        .iter()
        .find_map(|key| usage[*key].as_u64())
        .unwrap_or(0)
}

/// A result's text: the string, or its parts' texts one per line.
fn text_of(content: &Value) -> String {
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
