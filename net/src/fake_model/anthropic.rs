//! Anthropic Messages, as claude calls it.
//!
//! Streamed: `message_start` (usage with the input tokens), `ping`, then per content block a
//! `content_block_start`, its deltas (`text_delta`, `thinking_delta` then `signature_delta`,
//! `input_json_delta` in two halves for a `tool_use`) and a `content_block_stop`, with the block
//! `index` counting up from 0; then `message_delta` with the `stop_reason` and the output tokens,
//! then `message_stop`.

use serde_json::{json, Value};

use super::plan::{Call, Finish, Pace, Plan, ToolCall};
use super::sse::{halves, Encoder, Reply, Script, Stamp, Wire};

/// The signature a thinking block ends with (base64 of "fake-signature-not-real").
pub const SIGNATURE: &str = "ZmFrZS1zaWduYXR1cmUtbm90LXJlYWw=";

/// The reply to `count_tokens`.
pub fn count_tokens(stamp: &Stamp) -> Reply {
    Reply::ok(json!({"input_tokens": stamp.input_tokens}))
}

/// The Anthropic error body for `status` (529 is its overloaded error).
pub fn error(status: u16) -> Value {
    let (kind, message) = match status {
        400 => ("invalid_request_error", "The request is invalid (fake)"),
        429 => ("rate_limit_error", "Rate limited (fake)"),
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", "Internal server error (fake)"),
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// Anthropic Messages: the marker its [`Encoder`] is written for.
pub enum Message {}

impl Wire for Encoder<'_, Message> {
    const ID_PREFIX: &'static str = "msg_";

    fn stream(&self, _call: &Call, plan: &Plan) -> Script {
        let mut s = Script::default();
        let start = self.message(json!([]), None, 1);
        s.event("message_start", json!({"message": start}));
        s.event("ping", json!({}));
        let mut blocks = Blocks::default();
        match plan {
            Plan::Tool { call: tool, text } => {
                if let Some(text) = text {
                    blocks.text(
                        &mut s,
                        text,
                        Pace {
                            pieces: 1,
                            delay_ms: 0,
                        },
                    );
                }
                let args = tool.args.to_string();
                let block = json!({"type": "tool_use", "id": self.tool_id(tool),
                    "name": tool.name, "input": {}});
                let index = blocks.start(&mut s, block);
                for part in halves(&args) {
                    delta(
                        &mut s,
                        index,
                        json!({"type": "input_json_delta", "partial_json": part}),
                    );
                }
                blocks.stop(&mut s);
            }
            Plan::Drop { text } => {
                let index = blocks.start(&mut s, json!({"type": "text", "text": ""}));
                s.dropped(text, |s, piece| {
                    delta(s, index, json!({"type": "text_delta", "text": piece}))
                });
                return s;
            }
            Plan::Text {
                text,
                reasoning,
                pace,
                ..
            } => blocks.answer(&mut s, reasoning.as_deref(), text, *pace),
            Plan::HttpError { .. } => {}
        }
        s.event(
            "message_delta",
            json!({"delta": {"stop_reason": stop_reason(plan), "stop_sequence": null},
                "usage": {"output_tokens": self.head.stamp.output_tokens}}),
        );
        s.event("message_stop", json!({}));
        s
    }

    fn whole(&self, plan: &Plan) -> Value {
        let mut content = Vec::new();
        match plan {
            Plan::Tool { call: tool, text } => {
                if let Some(text) = text {
                    content.push(json!({"type": "text", "text": text}));
                }
                content.push(json!({"type": "tool_use", "id": self.tool_id(tool),
                    "name": tool.name, "input": tool.args}));
            }
            Plan::Text {
                text, reasoning, ..
            } if !text.is_empty() => {
                if let Some(reasoning) = reasoning {
                    content.push(
                        json!({"type": "thinking", "thinking": reasoning, "signature": SIGNATURE}),
                    );
                }
                content.push(json!({"type": "text", "text": text}));
            }
            Plan::Drop { text } => content.push(json!({"type": "text", "text": text})),
            _ => {}
        }
        self.message(
            Value::Array(content),
            Some(stop_reason(plan)),
            self.head.stamp.output_tokens,
        )
    }
}

fn stop_reason(plan: &Plan) -> &'static str {
    match plan {
        Plan::Tool { .. } => "tool_use",
        Plan::Text {
            finish: Finish::Length,
            ..
        } => "max_tokens",
        _ => "end_turn",
    }
}

impl Encoder<'_, Message> {
    fn usage(&self, output_tokens: u64) -> Value {
        json!({"input_tokens": self.head.stamp.input_tokens, "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    }

    fn message(&self, content: Value, stop: Option<&str>, output_tokens: u64) -> Value {
        json!({"id": self.head.id, "type": "message", "role": "assistant", "model": self.head.model,
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": self.usage(output_tokens)})
    }

    fn tool_id(&self, tool: &ToolCall) -> String {
        self.head.stamp.id(&format!("toolu_{}_", tool.idx))
    }
}

fn delta(s: &mut Script, index: usize, delta: Value) {
    s.event(
        "content_block_delta",
        json!({"index": index, "delta": delta}),
    );
}

/// The content blocks of a streamed message: each start gets the next index, each stop closes
/// the block just started.
#[derive(Default)]
struct Blocks {
    next: usize,
}

impl Blocks {
    fn start(&mut self, s: &mut Script, block: Value) -> usize {
        s.event(
            "content_block_start",
            json!({"index": self.next, "content_block": block}),
        );
        self.next
    }

    fn stop(&mut self, s: &mut Script) {
        s.event("content_block_stop", json!({"index": self.next}));
        self.next += 1;
    }

    fn text(&mut self, s: &mut Script, text: &str, pace: Pace) {
        let index = self.start(s, json!({"type": "text", "text": ""}));
        s.paced(text, pace, |s, piece| {
            delta(s, index, json!({"type": "text_delta", "text": piece}))
        });
        self.stop(s);
    }

    /// A thinking block when there is reasoning, then a text block when there is text (an
    /// empty answer has no block at all).
    fn answer(&mut self, s: &mut Script, reasoning: Option<&str>, text: &str, pace: Pace) {
        if let Some(reasoning) = reasoning {
            self.thinking(s, reasoning);
        }
        if !text.is_empty() {
            self.text(s, text, pace);
        }
    }

    fn thinking(&mut self, s: &mut Script, reasoning: &str) {
        let index = self.start(
            s,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        );
        s.paced(reasoning, Pace::NORMAL, |s, piece| {
            delta(
                s,
                index,
                json!({"type": "thinking_delta", "thinking": piece}),
            )
        });
        delta(
            s,
            index,
            json!({"type": "signature_delta", "signature": SIGNATURE}),
        );
        self.stop(s);
    }
}
