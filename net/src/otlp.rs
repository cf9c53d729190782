//! One run's events (shared/src/event.rs, as a parser's `--events` writes them) as one
//! OpenTelemetry trace, in the GenAI conventions: an `invoke_agent <runtime>` span with the
//! run's usage, and an `execute_tool <name>` child per tool call. Cost, the verdict and the
//! denials go under `moot.*`, since the conventions define no attribute for them.
//!
//! The events carry no clock: each is stamped with the time it was read, so a trace exported
//! while the parser reads the CLI's stream has the run's real timing, and one replayed from a
//! file spans the replay. The messages come from the `opentelemetry-proto` crate; moot-otlp
//! sends them as OTLP/HTTP protobuf or writes them as OTLP/JSON.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::{Event as SpanEvent, SpanKind};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use serde_json::Value;

/// The instrumentation scope the spans are reported under.
const SCOPE: &str = "moot";

/// Nanoseconds since the epoch, now.
pub fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_nanos()
        .try_into()
        .unwrap_or(u64::MAX)
}

/// A tool call whose result has not come yet.
struct OpenTool {
    span: Span,
}

/// Builds the trace from the events as they are read.
pub struct TraceBuilder {
    trace_id: Vec<u8>,
    root: Span,
    runtime: String,
    open: Vec<(String, OpenTool)>,
    done: Vec<Span>,
    ended: bool,
}

fn attribute(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn string(key: &str, value: &str) -> KeyValue {
    attribute(key, any_value::Value::StringValue(value.to_string()))
}

fn int(key: &str, value: u64) -> KeyValue {
    attribute(
        key,
        any_value::Value::IntValue(i64::try_from(value).unwrap_or(i64::MAX)),
    )
}

/// The string attributes of `names` present (non-null) in `event`, each under its key.
fn strings_of(event: &Value, names: &[(&str, &str)]) -> Vec<KeyValue> {
    names
        .iter()
        .filter_map(|(field, key)| event[*field].as_str().map(|value| string(key, value)))
        .collect()
}

fn random_bytes(n: usize) -> Vec<u8> {
    use std::io::Read;
    let mut bytes = vec![0u8; n];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() || bytes.iter().all(|b| *b == 0) {
        // Unique enough for a trace without the kernel's randomness: the time and the pid.
        let seed = now_nanos() ^ (u64::from(std::process::id()) << 32);
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = (seed.rotate_left(8 * i as u32) & 0xff) as u8 | 1;
        }
    }
    bytes
}

impl Default for TraceBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceBuilder {
    pub fn new() -> Self {
        let now = now_nanos();
        TraceBuilder {
            trace_id: random_bytes(16),
            root: Span {
                span_id: random_bytes(8),
                name: "invoke_agent".into(),
                kind: SpanKind::Internal as i32,
                start_time_unix_nano: now,
                end_time_unix_nano: now,
                attributes: vec![
                    string("gen_ai.operation.name", "invoke_agent"),
                    string("openinference.span.kind", "AGENT"),
                ],
                ..Default::default()
            },
            runtime: String::new(),
            open: Vec::new(),
            done: Vec::new(),
            ended: false,
        }
    }

    /// Reads one event, read at `at` (nanoseconds since the epoch).
    pub fn event(&mut self, event: &Value, at: u64) {
        match event["type"].as_str().unwrap_or("") {
            "start" => self.start(event, at),
            "tool_call" => self.tool_call(event, at),
            "tool_result" => self.tool_result(event, at),
            "retry" | "error" => self.root.events.push(SpanEvent {
                time_unix_nano: at,
                name: event["type"].as_str().unwrap_or("").to_string(),
                attributes: strings_of(event, &[("message", "moot.message")]),
                ..Default::default()
            }),
            "end" => self.end(event, at),
            _ => {}
        }
        self.root.end_time_unix_nano = self.root.end_time_unix_nano.max(at);
    }

    fn start(&mut self, event: &Value, at: u64) {
        self.root.start_time_unix_nano = at;
        self.runtime = event["runtime"].as_str().unwrap_or("unknown").to_string();
        self.root.name = format!("invoke_agent {}", self.runtime);
        self.root.attributes.extend(strings_of(
            event,
            &[
                ("runtime", "gen_ai.agent.name"),
                ("provider", "gen_ai.provider.name"),
                ("model", "gen_ai.request.model"),
                ("model", "gen_ai.response.model"),
                ("session_id", "gen_ai.conversation.id"),
                ("cli_version", "moot.cli_version"),
            ],
        ));
    }

    fn tool_call(&mut self, event: &Value, at: u64) {
        let name = event["name"].as_str().unwrap_or("unknown");
        let mut attributes = vec![
            string("gen_ai.operation.name", "execute_tool"),
            string("openinference.span.kind", "TOOL"),
            string("gen_ai.tool.name", name),
        ];
        attributes.extend(strings_of(
            event,
            &[("id", "gen_ai.tool.call.id"), ("kind", "moot.tool.kind")],
        ));
        let span = Span {
            span_id: random_bytes(8),
            parent_span_id: self.root.span_id.clone(),
            name: format!("execute_tool {name}"),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: at,
            end_time_unix_nano: at,
            attributes,
            ..Default::default()
        };
        let id = event["id"].as_str().unwrap_or("").to_string();
        self.open.push((id, OpenTool { span }));
    }

    fn tool_result(&mut self, event: &Value, at: u64) {
        let id = event["id"].as_str().unwrap_or("");
        let mut span = match self.open.iter().position(|(open, _)| open == id) {
            Some(index) => self.open.remove(index).1.span,
            // A result with no call seen: a span of no length, so it is not lost.
            None => {
                self.tool_call(event, at);
                match self.open.pop() {
                    Some((_, open)) => open.span,
                    None => return,
                }
            }
        };
        span.end_time_unix_nano = at;
        let status = event["status"].as_str().unwrap_or("completed");
        span.attributes.push(string("moot.tool.status", status));
        if let Some(code) = event["exit_code"].as_i64() {
            span.attributes.push(attribute(
                "moot.tool.exit_code",
                any_value::Value::IntValue(code),
            ));
        }
        if let Some(chars) = event["output_chars"].as_u64() {
            span.attributes.push(int("moot.tool.output_chars", chars));
        }
        if status != "completed" {
            span.status = Some(Status {
                code: StatusCode::Error as i32,
                message: status.to_string(),
            });
        }
        self.done.push(span);
    }

    fn end(&mut self, event: &Value, at: u64) {
        self.ended = true;
        self.root.end_time_unix_nano = at;
        let usage = &event["usage"];
        let counts = [
            ("input_tokens", "gen_ai.usage.input_tokens"),
            ("output_tokens", "gen_ai.usage.output_tokens"),
            ("cache_read_tokens", "gen_ai.usage.cache_read.input_tokens"),
            (
                "cache_write_tokens",
                "gen_ai.usage.cache_creation.input_tokens",
            ),
            ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens"),
        ];
        for (field, key) in counts {
            if let Some(count) = usage[field].as_u64() {
                self.root.attributes.push(int(key, count));
            }
        }
        if let Some(cost) = usage["cost_usd"].as_f64() {
            self.root.attributes.push(attribute(
                "moot.cost_usd",
                any_value::Value::DoubleValue(cost),
            ));
        }
        if let Some(source) = usage["source"].as_str() {
            self.root
                .attributes
                .push(string("moot.usage.source", source));
        }
        let ok = event["ok"].as_bool().unwrap_or(false);
        self.root
            .attributes
            .push(attribute("moot.ok", any_value::Value::BoolValue(ok)));
        self.root.attributes.extend(strings_of(
            event,
            &[
                ("error_class", "moot.error_class"),
                ("stop_reason", "moot.stop_reason"),
            ],
        ));
        let tools = &event["tools"];
        for field in ["calls", "completed", "failed", "denied"] {
            if let Some(count) = tools[field].as_u64() {
                self.root
                    .attributes
                    .push(int(&format!("moot.tools.{field}"), count));
            }
        }
        let denials: Vec<AnyValue> = tools["denials"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|denial| denial["said"].as_str())
            .map(|said| AnyValue {
                value: Some(any_value::Value::StringValue(said.to_string())),
            })
            .collect();
        if !denials.is_empty() {
            self.root.attributes.push(attribute(
                "moot.denials",
                any_value::Value::ArrayValue(ArrayValue { values: denials }),
            ));
        }
        self.root.status = Some(if ok {
            Status {
                code: StatusCode::Ok as i32,
                message: String::new(),
            }
        } else {
            Status {
                code: StatusCode::Error as i32,
                message: event["error_class"]
                    .as_str()
                    .unwrap_or("failed")
                    .to_string(),
            }
        });
    }

    /// The trace: the root span and its children, tool calls left without a result ended
    /// with the run and marked as such.
    pub fn finish(mut self) -> ExportTraceServiceRequest {
        let end = self.root.end_time_unix_nano;
        if !self.ended {
            self.root.status = Some(Status {
                code: StatusCode::Error as i32,
                message: "the events ended before the run's verdict".into(),
            });
        }
        for (_, open) in self.open.drain(..) {
            let mut span = open.span;
            span.end_time_unix_nano = end;
            span.attributes
                .push(string("moot.tool.status", "no_result"));
            span.status = Some(Status {
                code: StatusCode::Error as i32,
                message: "no result before the run ended".into(),
            });
            self.done.push(span);
        }
        let trace_id = self.trace_id;
        let mut spans = vec![self.root];
        spans.append(&mut self.done);
        for span in &mut spans {
            span.trace_id = trace_id.clone();
        }
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![
                        string("service.name", "moot"),
                        string("moot.runtime", &self.runtime),
                    ],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    scope: Some(InstrumentationScope {
                        name: SCOPE.into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                        ..Default::default()
                    }),
                    spans,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }
}

/// The OTLP/HTTP traces URL of a collector: `endpoint` as given when it already ends in
/// `/v1/traces`, else with that path added (OTEL_EXPORTER_OTLP_ENDPOINT's rule).
pub fn traces_url(endpoint: &str) -> String {
    let trimmed = endpoint.trim_end_matches('/');
    if trimmed.ends_with("/v1/traces") {
        trimmed.to_string()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

/// The headers OTEL_EXPORTER_OTLP_HEADERS (or _TRACES_HEADERS) names: `key=value` pairs,
/// comma-separated, values percent-decoded.
pub fn headers_from_env() -> anyhow::Result<Vec<(String, String)>> {
    let Some(raw) = std::env::var_os("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        .or_else(|| std::env::var_os("OTEL_EXPORTER_OTLP_HEADERS"))
    else {
        return Ok(Vec::new());
    };
    let raw = raw
        .into_string()
        .map_err(|_| anyhow::anyhow!("OTEL_EXPORTER_OTLP_HEADERS is not UTF-8"))?;
    raw.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').with_context(|| {
                "OTEL_EXPORTER_OTLP_HEADERS holds a pair with no '=' (want key=value,...)"
            })?;
            Ok((key.trim().to_string(), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&hi), Some(&lo)) if hex(hi).is_some() && hex(lo).is_some() => {
                out.push((hex(hi).unwrap_or(0) * 16 + hex(lo).unwrap_or(0)) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends `request` to the collector's traces URL as OTLP/HTTP protobuf, within `timeout`.
pub fn send(
    url: &str,
    headers: &[(String, String)],
    request: &ExportTraceServiceRequest,
    timeout: Duration,
) -> anyhow::Result<()> {
    use prost::Message;
    let body = request.encode_to_vec();
    let runtime = crate::http::runtime().context("cannot start the HTTP client")?;
    runtime.block_on(async {
        let client = crate::http::client(None)?;
        let mut builder =
            hyper::Request::post(url).header(hyper::header::CONTENT_TYPE, "application/x-protobuf");
        for (key, value) in headers {
            builder = builder.header(key.as_str(), value.as_str());
        }
        let request = builder
            .body(crate::http::full(body))
            .with_context(|| format!("{url} is not a URL a request can be sent to"))?;
        let response = tokio::time::timeout(timeout, client.request(request))
            .await
            .map_err(|_| {
                anyhow::anyhow!("the collector at {url} did not answer within {timeout:?}")
            })?
            .with_context(|| format!("cannot reach the collector at {url}"))?;
        let status = response.status();
        if !status.is_success() {
            let body =
                tokio::time::timeout(timeout, crate::http::read_body(response.into_body(), 4096))
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or_default();
            anyhow::bail!(
                "the collector at {url} refused the trace: HTTP {status}: {}",
                moot::report::one_line(&String::from_utf8_lossy(&body))
            );
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a any_value::Value> {
        span.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
    }

    #[test]
    fn a_run_becomes_one_agent_span_with_a_child_per_tool_call() {
        let mut trace = TraceBuilder::new();
        let events = [
            json!({"type":"start","runtime":"omp","cli_version":null,"model":"m","provider":"p","session_id":"s"}),
            json!({"type":"tool_call","id":"c1","name":"bash","kind":"execute","input":{}}),
            json!({"type":"tool_result","id":"c1","name":"bash","kind":"execute","status":"denied","exit_code":1,"output_chars":40}),
            json!({"type":"tool_call","id":"c2","name":"read","kind":"read","input":{}}),
            json!({"type":"end","ok":true,"error_class":null,"stop_reason":"stop",
                   "usage":{"input_tokens":10,"output_tokens":2,"cache_read_tokens":3,"cache_write_tokens":0,"reasoning_tokens":1,"cost_usd":0.5,"source":"messages","reported":"per_turn"},
                   "tools":{"calls":2,"completed":0,"failed":0,"denied":1,"by_kind":{},"denials":[{"id":"c1","name":"bash","said":"Permission denied"}]}}),
        ];
        for (i, event) in events.iter().enumerate() {
            trace.event(event, 1_000 + i as u64);
        }
        let request = trace.finish();
        let spans = &request.resource_spans[0].scope_spans[0].spans;
        assert_eq!(spans.len(), 3);
        let root = &spans[0];
        assert_eq!(root.name, "invoke_agent omp");
        assert_eq!(
            attr(root, "gen_ai.usage.input_tokens"),
            Some(&any_value::Value::IntValue(10))
        );
        assert_eq!(
            attr(root, "gen_ai.usage.cache_read.input_tokens"),
            Some(&any_value::Value::IntValue(3))
        );
        assert_eq!(
            attr(root, "moot.cost_usd"),
            Some(&any_value::Value::DoubleValue(0.5))
        );
        assert!(spans.iter().all(|s| s.trace_id == root.trace_id));
        let denied = &spans[1];
        assert_eq!(denied.name, "execute_tool bash");
        assert_eq!(denied.parent_span_id, root.span_id);
        assert_eq!(
            attr(denied, "moot.tool.status"),
            Some(&any_value::Value::StringValue("denied".into()))
        );
        assert_eq!(
            denied.status.as_ref().map(|s| s.code),
            Some(StatusCode::Error as i32)
        );
        let unanswered = &spans[2];
        assert_eq!(
            attr(unanswered, "moot.tool.status"),
            Some(&any_value::Value::StringValue("no_result".into()))
        );
    }

    #[test]
    fn endpoints_and_headers_follow_the_otel_rules() {
        assert_eq!(traces_url("http://h:4318"), "http://h:4318/v1/traces");
        assert_eq!(traces_url("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(traces_url("http://h/v1/traces"), "http://h/v1/traces");
        assert_eq!(percent_decode("Bearer%20abc%2"), "Bearer abc%2");
    }
}
