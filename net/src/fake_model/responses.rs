//! OpenAI Responses, as codex calls it.
//!
//! Streamed: numbered events (`sequence_number` from 0): `response.created`,
//! `response.in_progress`, then per output item `response.output_item.added`, its deltas
//! (`response.output_text.delta`, `response.function_call_arguments.delta`,
//! `response.reasoning_summary_text.delta`) and their `.done` events, then
//! `response.output_item.done`; last `response.completed` with the usage, or
//! `response.incomplete` with `incomplete_details.reason = max_output_tokens` after a length cut.

use serde_json::{json, Value};

use super::plan::{Call, Finish, Pace, Plan, ToolCall, ToolKind};
use super::sse::{halves, Encoder, Script, Wire};

/// Responses: the marker its [`Encoder`] is written for.
pub enum Response {}

impl Wire for Encoder<'_, Response> {
    const ID_PREFIX: &'static str = "resp_";

    fn stream(&self, _call: &Call, plan: &Plan) -> Script {
        let mut s = Script::numbered();
        s.event(
            "response.created",
            json!({"response": self.object("in_progress", vec![])}),
        );
        s.event(
            "response.in_progress",
            json!({"response": self.object("in_progress", vec![])}),
        );
        let mut output = Vec::new();
        match plan {
            Plan::Tool { call: tool, .. } => output.push(self.tool_call(&mut s, tool)),
            Plan::Drop { text } => {
                let id = self.head.stamp.id("msg_");
                self.message_start(&mut s, &id, 0);
                s.dropped(text, |s, piece| text_delta(s, &id, 0, piece));
                return s;
            }
            Plan::Text {
                text,
                reasoning,
                pace,
                ..
            } => {
                if let Some(reasoning) = reasoning {
                    output.push(self.reasoning(&mut s, reasoning));
                }
                output.push(self.message(&mut s, text, *pace, output.len()));
            }
            Plan::HttpError { .. } => {}
        }
        let (name, response) = self.finished(plan, output);
        s.event(name, json!({"response": response}));
        s
    }

    fn whole(&self, plan: &Plan) -> Value {
        let item = match plan {
            Plan::Tool { call: tool, .. } => {
                let (id, call_id) = self.tool_ids(tool);
                self.tool_item(tool, &id, &call_id, true)
            }
            Plan::Text { text, .. } | Plan::Drop { text } => {
                message_item(&self.head.stamp.id("msg_"), text, true)
            }
            Plan::HttpError { .. } => message_item(&self.head.stamp.id("msg_"), "", true),
        };
        self.finished(plan, vec![item]).1
    }
}

fn incomplete(plan: &Plan) -> bool {
    matches!(
        plan,
        Plan::Text {
            finish: Finish::Length,
            ..
        }
    )
}

/// A message item holding `text`: in progress (no content yet) or done.
fn message_item(id: &str, text: &str, done: bool) -> Value {
    let (status, content) = if done {
        (
            "completed",
            json!([{"type": "output_text", "text": text, "annotations": []}]),
        )
    } else {
        ("in_progress", json!([]))
    };
    json!({"id": id, "type": "message", "status": status, "role": "assistant", "content": content})
}

impl Encoder<'_, Response> {
    /// The response object in `status`, with `output` and (once it is over) the usage.
    fn object(&self, status: &str, output: Vec<Value>) -> Value {
        let (input, out) = (self.head.stamp.input_tokens, self.head.stamp.output_tokens);
        let usage = (status != "in_progress").then(|| {
            json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": input + out})
        });
        let details = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
        json!({"id": self.head.id, "object": "response", "created_at": self.head.stamp.created,
            "status": status, "model": self.head.model, "output": output, "usage": usage,
            "incomplete_details": details, "error": null})
    }

    fn finished(&self, plan: &Plan, output: Vec<Value>) -> (&'static str, Value) {
        if incomplete(plan) {
            ("response.incomplete", self.object("incomplete", output))
        } else {
            ("response.completed", self.object("completed", output))
        }
    }

    /// The tool call item, in progress (arguments empty) or done.
    fn tool_item(&self, tool: &ToolCall, id: &str, call_id: &str, done: bool) -> Value {
        let status = if done { "completed" } else { "in_progress" };
        match tool.kind {
            ToolKind::LocalShell => json!({"id": id, "type": "local_shell_call",
                "call_id": call_id, "status": status,
                "action": {"type": "exec", "command": tool.args["command"], "env": {}}}),
            ToolKind::Function | ToolKind::Custom => {
                let input = if done { input(tool) } else { String::new() };
                let (kind, field) = match tool.kind {
                    ToolKind::Custom => ("custom_tool_call", "input"),
                    _ => ("function_call", "arguments"),
                };
                json!({"id": id, "type": kind, "call_id": call_id, "name": tool.name,
                    field: input, "status": status})
            }
        }
    }

    fn tool_ids(&self, tool: &ToolCall) -> (String, String) {
        let prefix = match tool.kind {
            ToolKind::LocalShell => "lsh_",
            ToolKind::Function => "fc_",
            ToolKind::Custom => "ctc_",
        };
        (
            self.head.stamp.id(prefix),
            self.head.stamp.id(&format!("call_{}_", tool.idx)),
        )
    }

    fn tool_call(&self, s: &mut Script, tool: &ToolCall) -> Value {
        let (id, call_id) = self.tool_ids(tool);
        let added = self.tool_item(tool, &id, &call_id, false);
        s.event(
            "response.output_item.added",
            json!({"output_index": 0, "item": added}),
        );
        let events = match tool.kind {
            ToolKind::Function => Some(("response.function_call_arguments", "arguments")),
            ToolKind::Custom => Some(("response.custom_tool_call_input", "input")),
            ToolKind::LocalShell => None,
        };
        if let Some((event, field)) = events {
            let input = input(tool);
            for part in halves(&input) {
                s.event(
                    &format!("{event}.delta"),
                    json!({"item_id": id, "output_index": 0, "delta": part}),
                );
            }
            s.event(
                &format!("{event}.done"),
                json!({"item_id": id, "output_index": 0, field: input}),
            );
        }
        let done = self.tool_item(tool, &id, &call_id, true);
        s.event(
            "response.output_item.done",
            json!({"output_index": 0, "item": done}),
        );
        done
    }

    fn message_start(&self, s: &mut Script, id: &str, index: usize) {
        s.event(
            "response.output_item.added",
            json!({"output_index": index, "item": message_item(id, "", false)}),
        );
        s.event(
            "response.content_part.added",
            json!({"item_id": id, "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
        );
    }

    fn message(&self, s: &mut Script, text: &str, pace: Pace, index: usize) -> Value {
        let id = self.head.stamp.id("msg_");
        self.message_start(s, &id, index);
        s.paced(text, pace, |s, piece| text_delta(s, &id, index, piece));
        s.event(
            "response.output_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": text,
                "logprobs": []}),
        );
        s.event(
            "response.content_part.done",
            json!({"item_id": id, "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "text": text, "annotations": []}}),
        );
        let done = message_item(&id, text, true);
        s.event(
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        );
        done
    }

    /// A reasoning item with one summary part, always output 0.
    fn reasoning(&self, s: &mut Script, reasoning: &str) -> Value {
        let id = self.head.stamp.id("rs_");
        let at = json!({"item_id": id, "output_index": 0, "summary_index": 0});
        let with = |extra: Value| {
            let mut fields = at.clone();
            if let (Some(fields), Value::Object(extra)) = (fields.as_object_mut(), extra) {
                fields.extend(extra);
            }
            fields
        };
        s.event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"id": id, "type": "reasoning", "summary": []}}),
        );
        let part = |text: &str| json!({"type": "summary_text", "text": text});
        s.event(
            "response.reasoning_summary_part.added",
            with(json!({"part": part("")})),
        );
        s.paced(reasoning, Pace::NORMAL, |s, piece| {
            s.event(
                "response.reasoning_summary_text.delta",
                with(json!({"delta": piece})),
            )
        });
        s.event(
            "response.reasoning_summary_text.done",
            with(json!({"text": reasoning})),
        );
        s.event(
            "response.reasoning_summary_part.done",
            with(json!({"part": part(reasoning)})),
        );
        let item = json!({"id": id, "type": "reasoning", "summary": [part(reasoning)]});
        s.event(
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        );
        item
    }
}

/// A call's input as sent: a custom tool's string as is, a function's arguments as JSON text.
fn input(tool: &ToolCall) -> String {
    match (&tool.kind, &tool.args) {
        (ToolKind::Custom, Value::String(text)) => text.clone(),
        (_, args) => args.to_string(),
    }
}

fn text_delta(s: &mut Script, id: &str, index: usize, piece: &str) {
    s.event(
        "response.output_text.delta",
        json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece,
            "logprobs": []}),
    );
}
