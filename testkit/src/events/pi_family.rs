//! The independent reading of pi_family's captures (see testkit/src/events.rs), for omp and pi
//! alike: both write the same rows.
//!
//! A tool call is a `toolCall` part of an assistant `message_end`; a result is a `toolResult`
//! `message_end`. The `tool_execution_start`/`_end` events that run the same call, and the
//! `turn_end`/`agent_end` rows that repeat the messages, are not counted again.

use serde_json::Value;

use super::{rows, shows_denial, Counted};

/// Counts what the capture holds.
pub fn count(stream: &[u8]) -> Counted {
    let mut counted = Counted::default();
    let (mut input, mut output) = (0u64, 0u64);
    let mut rollup: Option<(u64, u64)> = None;
    let (mut agent_ends, mut rollups) = (0u64, 0u64);
    for row in rows(stream) {
        match row["type"].as_str() {
            Some("message_end") => {
                let message = &row["message"];
                match message["role"].as_str() {
                    Some("assistant") => {
                        let parts = message["content"].as_array().map_or(&[][..], |p| p);
                        counted.calls += parts
                            .iter()
                            .filter(|part| part["type"] == "toolCall")
                            .count() as u64;
                        let usage = &message["usage"];
                        let n = |key: &str| usage[key].as_u64().unwrap_or(0);
                        // The family's `input` leaves the cached prompt tokens out; the
                        // envelope's counts them.
                        input += n("input") + n("cacheRead") + n("cacheWrite");
                        output += n("output");
                    }
                    Some("toolResult") => {
                        counted.results += 1;
                        let text: String = message["content"]
                            .as_array()
                            .map_or(&[][..], |p| p)
                            .iter()
                            .filter_map(|part| part["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("\n");
                        let refused = message["isError"] == true
                            && (text.contains("requires approval")
                                || text.starts_with("Tool call denied"));
                        if refused || shows_denial(&text) {
                            counted.denied += 1;
                        }
                    }
                    _ => {}
                }
            }
            Some("agent_end") => {
                agent_ends += 1;
                if let Some(usage) = row["telemetry"]["usage"].as_object() {
                    rollups += 1;
                    let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
                    let (i, o) = rollup.unwrap_or((0, 0));
                    rollup = Some((i + n("inputTokens"), o + n("outputTokens")));
                }
            }
            _ => {}
        }
    }
    // omp's telemetry rollup stands in for the sum only when every run carried one and it is
    // no lower on either axis; no real capture carries one, but the rule is plain enough.
    counted.usage = Some(match rollup {
        Some((i, o)) if rollups == agent_ends && i >= input && o >= output => (i, o),
        _ => (input, output),
    });
    counted
}
