//! The HTTP side: routes a request to its wire API, picks the scenario, records the request, and
//! plays the reply (a whole JSON body, or SSE frames flushed one by one, paced or cut).

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, USER_AGENT};
use hyper::{Method, Response, StatusCode};
use serde_json::{json, Value};

use super::plan::{Api, Call, Plan, Planner};
use super::scenario::{Scenario, Texts, MODEL_ID};
use super::sse::{self, Reply, Stamp, Step};
use super::{anthropic, chat, responses, Options, Request};
use crate::http::{self, Body};

/// The largest request body read: a CLI's system prompt and tool schemas fit many times over.
const BODY_LIMIT: usize = 64 << 20;
/// Models `GET /v1/models` lists besides the one a request names.
const LISTED_MODELS: &[&str] = &[MODEL_ID, "claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5"];

/// The state one server's connections share.
pub struct Shared {
    options: Options,
    planner: Planner,
    state: Mutex<State>,
    /// Requests served so far, for unique ids.
    served: AtomicU64,
    /// The server's start in nanoseconds, so ids differ between two servers a session meets.
    epoch: u64,
}

#[derive(Default)]
struct State {
    /// Calls per scenario name, which `retry` counts.
    counters: HashMap<&'static str, u32>,
    requests: Vec<Request>,
    /// The line [`super::FakeModel::set_scenario`] set.
    scenario: Option<String>,
}

impl Shared {
    /// The state for a server with `options`; an unusable `retry_then` is an error.
    pub fn new(options: Options) -> Result<Shared, String> {
        let retry_then = Scenario::parse(options.retry_then.as_deref().unwrap_or("plain"))
            .map_err(|error| format!("retry_then: {error}"))?;
        let cwd = std::env::current_dir()
            .map(|dir| dir.display().to_string())
            .unwrap_or_else(|_| ".".to_string());
        let planner = Planner {
            texts: Texts {
                legacy: options.legacy_result,
            },
            retry_fails: options.retry_fails,
            retry_then,
            cwd,
        };
        Ok(Shared {
            options,
            planner,
            state: Mutex::new(State::default()),
            served: AtomicU64::new(0),
            epoch: now().as_nanos() as u64,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the counters half-written; keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sets the scenario line used when the URL names none.
    pub fn set_scenario(&self, line: &str) -> Result<(), String> {
        Scenario::parse(line)?;
        self.state().scenario = Some(line.trim().to_string());
        Ok(())
    }

    /// Every request served since the start or the last reset.
    pub fn requests(&self) -> Vec<Request> {
        self.state().requests.clone()
    }

    /// Clears the retry counters and the request list.
    pub fn reset(&self) {
        let mut state = self.state();
        state.counters.clear();
        state.requests.clear();
    }

    /// The scenario line when the URL names none: the one set, else the scenario file's first
    /// line (re-read on every request, so one server serves many runs), else `plain`.
    fn scenario_line(&self) -> String {
        if let Some(line) = self.state().scenario.clone() {
            return line;
        }
        self.options
            .scenario_file
            .as_deref()
            .and_then(|path| std::fs::read_to_string(path).ok())
            .and_then(|text| text.lines().next().map(str::to_string))
            .unwrap_or_else(|| "plain".to_string())
    }

    fn attempt(&self, scenario: &Scenario) -> u32 {
        if !matches!(scenario, Scenario::Retry | Scenario::Retry500) {
            return 0;
        }
        let mut state = self.state();
        let count = state.counters.entry(scenario.name()).or_insert(0);
        *count += 1;
        *count
    }

    fn record(&self, request: Request) {
        if let Some(log) = &self.options.log {
            append_line(log, &request);
        }
        self.state().requests.push(request);
    }
}

fn now() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Appends the request to the JSONL log. A log that cannot be written must not fail the model
/// call a CLI is waiting on, so the error is dropped, as a full disk drops any log line.
fn append_line(path: &Path, request: &Request) {
    let Ok(line) = serde_json::to_string(request) else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
    }
}

/// Writes a request body to the dump directory, named by time and route, for capturing what a
/// CLI sends. Best effort, as the log.
fn dump(dir: &Path, route: &str, t: f64, body: &Value) {
    let name = format!("{t:.6}-{}.json", route.trim_matches('/').replace('/', "_"));
    if std::fs::create_dir_all(dir).is_ok() {
        if let Ok(text) = serde_json::to_string_pretty(body) {
            let _ = std::fs::write(dir.join(name), text);
        }
    }
}

/// Splits `/s/<scenario>/rest` into the scenario and `/rest`, and drops the `/v1`, `/api/v1` or
/// `/openai/v1` prefix a base URL may carry, so every route is served with and without it.
pub fn route(path: &str) -> (Option<&str>, String) {
    let (scenario, rest) = match path.strip_prefix("/s/") {
        Some(tail) => match tail.split_once('/') {
            Some((name, rest)) => (Some(name), format!("/{rest}")),
            None => (Some(tail), "/".to_string()),
        },
        None => (None, path.to_string()),
    };
    for prefix in ["/v1", "/api/v1", "/openai/v1"] {
        if rest == prefix {
            return (scenario, "/".to_string());
        }
        if let Some(tail) = rest.strip_prefix(prefix).filter(|t| t.starts_with('/')) {
            return (scenario, tail.to_string());
        }
    }
    (scenario, rest)
}

/// The wire API a method and route belong to.
pub fn classify(method: &Method, route: &str) -> Api {
    let route = match route.trim_end_matches('/') {
        "" => "/",
        trimmed => trimmed,
    };
    match (method, route) {
        (&Method::HEAD, _) => Api::Health,
        (&Method::POST, "/chat/completions") => Api::Chat,
        (&Method::POST, "/messages") => Api::Anthropic,
        (&Method::POST, "/messages/count_tokens") => Api::CountTokens,
        (&Method::POST, "/responses") => Api::Responses,
        (&Method::GET, "/models") => Api::Models,
        (&Method::GET, r) if r.starts_with("/models/") => Api::Models,
        (&Method::GET, "/" | "/health" | "/healthz") => Api::Health,
        (&Method::GET, "/__reset") => Api::Reset,
        _ => Api::Unknown,
    }
}

/// Serves one request.
pub async fn handle(shared: Arc<Shared>, request: hyper::Request<Incoming>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let raw_path = parts.uri.path().to_string();
    let (url_scenario, route) = route(&raw_path);
    let api = classify(&parts.method, &route);
    let line = url_scenario
        .map(str::to_string)
        .unwrap_or_else(|| shared.scenario_line());
    let t = now().as_secs_f64();
    let mut record = Request {
        t,
        method: parts.method.to_string(),
        path: raw_path.clone(),
        api,
        scenario: line.trim().to_string(),
        user_agent: header(&parts.headers, USER_AGENT.as_str()),
        auth: parts.headers.contains_key(AUTHORIZATION) || parts.headers.contains_key("x-api-key"),
        ..Request::default()
    };
    let raw = if parts.method == Method::POST {
        match http::read_body(body, BODY_LIMIT).await {
            Ok(bytes) => bytes,
            Err(error) => {
                shared.record(record);
                return send(Reply::Json {
                    status: 413,
                    body: json!({"error": {"message": error.to_string(), "type": "invalid_request_error"}}),
                });
            }
        }
    } else {
        bytes::Bytes::new()
    };
    let reply = match refused_key(&shared.options, api, &parts.headers) {
        Some(refusal) => refusal,
        None => answer(&shared, &mut record, &route, &raw, &line),
    };
    shared.record(record);
    send(reply)
}

/// A model call without the required key, answered as a provider answers a wrong key.
fn refused_key(options: &Options, api: Api, headers: &hyper::HeaderMap) -> Option<Reply> {
    let key = options.required_key.as_deref()?;
    if matches!(api, Api::Health | Api::Reset) {
        return None;
    }
    let carried = [AUTHORIZATION.as_str(), "x-api-key"].iter().any(|name| {
        header(headers, name)
            .is_some_and(|value| value == key || value.strip_prefix("Bearer ") == Some(key))
    });
    (!carried).then(|| Reply::Json {
        status: 401,
        body: json!({"error": {"message": "invalid api key", "type": "authentication_error"}}),
    })
}

fn header(headers: &hyper::HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Decides the reply and fills in what the record learns from the body.
fn answer(shared: &Shared, record: &mut Request, route: &str, raw: &[u8], line: &str) -> Reply {
    let seed = shared
        .epoch
        .wrapping_add(shared.served.fetch_add(1, Ordering::Relaxed));
    let stamp = Stamp::new(seed, record.t as u64, raw.len());
    match record.api {
        Api::Health => return Reply::ok(json!({"ok": true})),
        Api::Reset => {
            shared.state().counters.clear();
            return Reply::ok(json!({"ok": true}));
        }
        Api::Models => return models(route, stamp.created),
        Api::Unknown => return not_found(route),
        Api::Chat | Api::Responses | Api::Anthropic | Api::CountTokens => {}
    }
    record.bytes = raw.len();
    let text = String::from_utf8_lossy(raw);
    let Ok(body) = serde_json::from_str::<Value>(&text) else {
        return Reply::Json {
            status: 400,
            body: json!({"error": {"message": "bad json", "type": "invalid_request_error"}}),
        };
    };
    if let Some(dir) = &shared.options.dump_dir {
        dump(dir, route, record.t, &body);
    }
    let call = Call {
        api: record.api,
        body: &body,
        raw: &text,
    };
    record.model = call.model().map(str::to_string);
    record.stream = body.get("stream").and_then(Value::as_bool);
    record.tool_names = call.tool_names();
    record.tool_results = call.tool_results();
    if record.api == Api::CountTokens {
        return anthropic::count_tokens(&stamp);
    }
    let scenario = match Scenario::parse(line) {
        Ok(scenario) => scenario,
        Err(error) => {
            return Reply::Json {
                status: 400,
                body: json!({"error": {"message": error, "type": "unknown_scenario"}}),
            }
        }
    };
    let plan = shared
        .planner
        .plan(&scenario, &call, shared.attempt(&scenario));
    record.plan = Some(plan.clone());
    // An error or a dropped stream reports no usage; a text or a tool call does.
    record.usage =
        matches!(plan, Plan::Text { .. } | Plan::Tool { .. }).then_some(super::SentUsage {
            input_tokens: stamp.input_tokens,
            output_tokens: stamp.output_tokens,
        });
    encode(&call, &plan, &stamp)
}

/// The reply `plan` makes in the request's wire API.
pub fn encode(call: &Call, plan: &Plan, stamp: &Stamp) -> Reply {
    if let Plan::HttpError { status } = plan {
        let body = match call.api {
            Api::Anthropic => anthropic::error(*status),
            _ => chat::error(*status),
        };
        return Reply::Json {
            status: *status,
            body,
        };
    }
    match call.api {
        Api::Anthropic => sse::reply::<anthropic::Message>(call, plan, stamp),
        Api::Responses => sse::reply::<responses::Response>(call, plan, stamp),
        _ => sse::reply::<chat::Chat>(call, plan, stamp),
    }
}

/// `GET /models` in the OpenAI shape, with the Anthropic and codex fields some clients read.
fn models(route: &str, created: u64) -> Reply {
    let entry = |id: &str| {
        json!({"id": id, "object": "model", "created": created, "owned_by": "fake",
            "type": "model", "display_name": id, "created_at": "2025-01-01T00:00:00Z"})
    };
    if let Some(id) = route.trim_end_matches('/').strip_prefix("/models/") {
        return Reply::ok(entry(id));
    }
    let data: Vec<Value> = LISTED_MODELS.iter().map(|id| entry(id)).collect();
    let slugs: Vec<Value> = LISTED_MODELS
        .iter()
        .map(|id| json!({"slug": id, "display_name": id}))
        .collect();
    Reply::ok(
        json!({"object": "list", "data": data, "models": slugs, "has_more": false,
        "first_id": LISTED_MODELS.first(), "last_id": LISTED_MODELS.last()}),
    )
}

fn not_found(route: &str) -> Reply {
    Reply::Json {
        status: 404,
        body: json!({"error": {"message": format!("not found: {route}"), "type": "not_found"}}),
    }
}

/// Turns a reply into a response; a stream is played by a task, frame by frame.
fn send(reply: Reply) -> Response<Body> {
    let request_id = format!("req_{:016x}", now().as_nanos() as u64);
    let mut response = match reply {
        Reply::Json { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = http::json(status, &body);
            if status == StatusCode::TOO_MANY_REQUESTS {
                response
                    .headers_mut()
                    .insert("retry-after", HeaderValue::from_static("1"));
            }
            response
        }
        Reply::Stream(script) => {
            let (sender, body) = http::channel();
            tokio::spawn(play(script.steps, sender));
            let mut response = http::respond(StatusCode::OK, "text/event-stream", body);
            let headers = response.headers_mut();
            headers.insert("cache-control", HeaderValue::from_static("no-cache"));
            headers.insert("connection", HeaderValue::from_static("close"));
            response
        }
    };
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// Sends each frame as its own chunk, sleeps through pauses, and ends the body at a cut (see
/// [`Step::Cut`]; the response asks for the connection to close).
async fn play(steps: Vec<Step>, sender: http::BodySender) {
    for step in steps {
        match step {
            Step::Frame(frame) => {
                if !sender.send(frame).await {
                    return; // the client hung up
                }
            }
            Step::Pause(pause) => tokio::time::sleep(pause).await,
            Step::Cut => return drop(sender),
        }
    }
}
