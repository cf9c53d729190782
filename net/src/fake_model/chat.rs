//! OpenAI chat completions, as omp, pi, Kimi Code and kimi-cli call it.
//!
//! Streamed: `chat.completion.chunk` objects whose `choices[0].delta` carries the role, then
//! `reasoning_content` or `content` pieces or `tool_calls` pieces (the id and name first, the
//! arguments in two halves), then an empty delta with the `finish_reason`, then a usage chunk with
//! no choices when `stream_options.include_usage` asks, then `data: [DONE]`.

use serde_json::{json, Value};

use super::plan::{Call, Finish, Plan, ToolCall};
use super::sse::{halves, Encoder, Script, Wire};

/// The OpenAI error body for `status`, shared with the Responses API.
pub fn error(status: u16) -> Value {
    let (kind, message) = match status {
        400 => ("invalid_request_error", "The request is invalid (fake)"),
        429 => ("rate_limit_exceeded", "Rate limit reached (fake)"),
        503 => ("server_overloaded", "The server is overloaded (fake)"),
        _ => (
            "server_error",
            "The server had an error while processing your request (fake)",
        ),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": kind}})
}

/// Chat completions: the marker its [`Encoder`] is written for.
pub enum Chat {}

impl Wire for Encoder<'_, Chat> {
    const ID_PREFIX: &'static str = "chatcmpl-";

    fn stream(&self, call: &Call, plan: &Plan) -> Script {
        let mut s = Script::default();
        self.chunk(&mut s, json!({"role": "assistant", "content": ""}), None);
        let finish = match plan {
            Plan::Tool { call: tool, text } => {
                if let Some(text) = text {
                    self.chunk(&mut s, json!({"content": text}), None);
                }
                self.tool_call(&mut s, tool);
                "tool_calls"
            }
            Plan::Drop { text } => {
                s.dropped(text, |s, piece| {
                    self.chunk(s, json!({"content": piece}), None)
                });
                return s;
            }
            Plan::Text {
                text,
                finish,
                reasoning,
                pace,
            } => {
                let normal = super::plan::Pace::NORMAL;
                s.paced(reasoning.as_deref().unwrap_or(""), normal, |s, piece| {
                    self.chunk(s, json!({"reasoning_content": piece}), None)
                });
                s.paced(text, *pace, |s, piece| {
                    self.chunk(s, json!({"content": piece}), None)
                });
                finish_reason(*finish)
            }
            Plan::HttpError { .. } => "stop",
        };
        self.chunk(&mut s, json!({}), Some(finish));
        let include_usage = call
            .body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        if include_usage {
            let mut chunk = self.envelope("chat.completion.chunk");
            chunk.insert("choices".into(), json!([]));
            chunk.insert("usage".into(), self.usage());
            s.data(&Value::Object(chunk));
        }
        s.done();
        s
    }

    fn whole(&self, plan: &Plan) -> Value {
        let (message, finish) = match plan {
            Plan::Tool { call: tool, text } => (
                json!({"role": "assistant", "content": text, "tool_calls": [{
                    "id": self.call_id(tool), "type": "function",
                    "function": {"name": tool.name, "arguments": tool.args.to_string()}}]}),
                "tool_calls",
            ),
            Plan::Text {
                text,
                finish,
                reasoning,
                ..
            } => {
                let mut message = json!({"role": "assistant", "content": text});
                if let Some(reasoning) = reasoning {
                    message["reasoning_content"] = reasoning.clone().into();
                }
                (message, finish_reason(*finish))
            }
            Plan::Drop { text } => (json!({"role": "assistant", "content": text}), "stop"),
            Plan::HttpError { .. } => (json!({"role": "assistant", "content": null}), "stop"),
        };
        let mut body = self.envelope("chat.completion");
        body.insert(
            "choices".into(),
            json!([{"index": 0, "message": message, "finish_reason": finish}]),
        );
        body.insert("usage".into(), self.usage());
        Value::Object(body)
    }
}

impl Encoder<'_, Chat> {
    fn usage(&self) -> Value {
        let (input, output) = (self.head.stamp.input_tokens, self.head.stamp.output_tokens);
        json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output})
    }

    fn envelope(&self, object: &str) -> serde_json::Map<String, Value> {
        let mut map = serde_json::Map::new();
        map.insert("id".into(), self.head.id.clone().into());
        map.insert("object".into(), object.into());
        map.insert("created".into(), self.head.stamp.created.into());
        map.insert("model".into(), self.head.model.clone().into());
        map
    }

    fn call_id(&self, tool: &ToolCall) -> String {
        self.head.stamp.id(&format!("call_{}_", tool.idx))
    }

    fn chunk(&self, script: &mut Script, delta: Value, finish: Option<&str>) {
        let mut chunk = self.envelope("chat.completion.chunk");
        chunk.insert(
            "choices".into(),
            json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
        );
        script.data(&Value::Object(chunk));
    }

    /// The call's id and name in one delta, its arguments in two more.
    fn tool_call(&self, s: &mut Script, tool: &ToolCall) {
        let head = json!({"index": 0, "id": self.call_id(tool), "type": "function",
            "function": {"name": tool.name, "arguments": ""}});
        self.chunk(s, json!({"tool_calls": [head]}), None);
        let args = tool.args.to_string();
        for part in halves(&args) {
            let delta = json!({"index": 0, "function": {"arguments": part}});
            self.chunk(s, json!({"tool_calls": [delta]}), None);
        }
    }
}

fn finish_reason(finish: Finish) -> &'static str {
    match finish {
        Finish::Stop => "stop",
        Finish::Length => "length",
    }
}
