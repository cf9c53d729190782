//! The wire formats checked against what the real CLIs sent and were answered.
//!
//! testdata/requests/<cli>/ holds two request bodies each real CLI sent to its fake model
//! (its first model call, and the call carrying a tool result) and the fake model's replies to
//! them, which the CLI accepted in the end-to-end runs (testdata/requests/
//! README.md says how they were captured). Each body must be recognised as the CLI's wire API
//! asks, and this server's reply must be the accepted one, event for event, up to ids, clocks and
//! token counts.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use hyper::Method;
use serde_json::{json, Value};

use super::plan::{Api, Call, Plan, Planner};
use super::scenario::{Scenario, Texts};
use super::server::{classify, encode};
use super::sse::{parse_frames, parse_sse, wire_text, Reply, Script, Stamp};

/// Every registered CLI (by runtime name, its directory under testdata/requests/), the wire API
/// it speaks and the shell tool its pinned version offers, from its install file
/// (`WIRE`, the first of `SHELL_TOOLS`), sorted by name.
fn clis() -> Vec<(&'static str, Api, &'static str)> {
    let mut clis: Vec<_> = moot::registry::all()
        .iter()
        .filter_map(|meta| {
            let certify = meta.doctor?;
            let api = match certify.install_field("WIRE")? {
                "chat" => Api::Chat,
                "anthropic" => Api::Anthropic,
                "responses" => Api::Responses,
                other => panic!("{}: WIRE={other}", meta.name),
            };
            let shell = certify
                .install_field("SHELL_TOOLS")?
                .split_whitespace()
                .next()?;
            Some((meta.name, api, shell))
        })
        .collect();
    clis.sort_by_key(|(name, ..)| *name);
    clis
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata/requests")
}

/// A captured request: its route (`chat/completions`, ...) and its body.
struct Capture {
    api: Api,
    body: Value,
    raw: String,
}

impl Capture {
    fn load(cli: &str, name: &str) -> Capture {
        let path = dir().join(cli).join(format!("{name}.json"));
        let file: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        let route = format!("/{}", file["route"].as_str().unwrap());
        let body = file["body"].clone();
        Capture {
            api: classify(&Method::POST, &route),
            raw: body.to_string(),
            body,
        }
    }

    fn call(&self) -> Call<'_> {
        Call {
            api: self.api,
            body: &self.body,
            raw: &self.raw,
        }
    }

    fn reply(&self, scenario: &str) -> Reply {
        let planner = Planner {
            texts: Texts { legacy: false },
            retry_fails: 1,
            retry_then: Scenario::Plain,
            cwd: "/work".into(),
        };
        let call = self.call();
        let plan = planner.plan(&Scenario::parse(scenario).unwrap(), &call, 1);
        encode(&call, &plan, &Stamp::new(7, 1_700_000_000, self.raw.len()))
    }

    fn script(&self, scenario: &str) -> Script {
        match self.reply(scenario) {
            Reply::Stream(script) => script,
            other => panic!("{scenario}: not a stream: {other:?}"),
        }
    }
}

#[test]
fn every_capture_directory_is_a_known_cli() {
    let mut found: Vec<String> = fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    let known: Vec<&str> = clis().iter().map(|(cli, ..)| *cli).collect();
    assert_eq!(found, known);
}

#[test]
fn each_cli_request_is_recognised() {
    for (cli, api, shell) in &clis() {
        let first = Capture::load(cli, "first");
        let after = Capture::load(cli, "after-tool");
        for capture in [&first, &after] {
            assert_eq!(capture.api, *api, "{cli}");
            assert!(capture.call().stream(), "{cli} streams");
            assert!(
                capture.call().tool_names().iter().any(|n| n == shell),
                "{cli} offers {shell}: {:?}",
                capture.call().tool_names()
            );
            if *api == Api::Chat {
                let usage = capture.body.pointer("/stream_options/include_usage");
                assert_eq!(usage, Some(&json!(true)), "{cli} asks for usage");
            }
        }
        assert_eq!(first.call().tool_results(), 0, "{cli}");
        assert_eq!(after.call().tool_results(), 1, "{cli}");
        match first.reply("tool") {
            Reply::Stream(_) => {}
            other => panic!("{cli}: {other:?}"),
        }
    }
}

#[test]
fn the_tool_scenario_calls_the_cli_shell_then_answers() {
    let planner_plan = |capture: &Capture| {
        let planner = Planner {
            texts: Texts { legacy: false },
            retry_fails: 1,
            retry_then: Scenario::Plain,
            cwd: "/work".into(),
        };
        planner.plan(&Scenario::Tool, &capture.call(), 0)
    };
    for (cli, _, shell) in &clis() {
        match planner_plan(&Capture::load(cli, "first")) {
            Plan::Tool { call, .. } => {
                assert_eq!(call.name, *shell, "{cli}");
                let command = call.args.get("command").or(call.args.get("cmd"));
                assert_eq!(command, Some(&json!("ls")), "{cli}: {}", call.args);
            }
            other => panic!("{cli}: {other:?}"),
        }
        match planner_plan(&Capture::load(cli, "after-tool")) {
            Plan::Text { text, .. } => assert!(text.contains("listed files"), "{cli}"),
            other => panic!("{cli}: {other:?}"),
        }
    }
}

/// The replies the CLI accepted for each captured body: (body name, scenario) → SSE text.
fn accepted(cli: &str) -> BTreeMap<(String, String), String> {
    let mut replies = BTreeMap::new();
    for entry in fs::read_dir(dir().join(cli)).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".sse") {
            let (body, scenario) = stem.split_once('.').unwrap();
            let text = fs::read_to_string(&path).unwrap();
            replies.insert((body.to_string(), scenario.to_string()), text);
        }
    }
    replies
}

/// Fields that differ between two servers for the same answer: ids, clocks, token counts, and
/// the tool arguments' JSON spelling (compared parsed, see [`arguments`]).
const VARYING: &[&str] = &[
    "id",
    "call_id",
    "item_id",
    "created",
    "created_at",
    "input_tokens",
    "prompt_tokens",
    "total_tokens",
    "partial_json",
    "arguments",
];

fn normalise(value: &mut Value, event: Option<&str>) {
    match value {
        Value::Object(map) => {
            map.remove("_args"); // the first captures' server leaked a private field into one event
            for (key, field) in map.iter_mut() {
                let varying = VARYING.contains(&key.as_str())
                    || (key == "delta" && event == Some("response.function_call_arguments.delta"));
                if varying && !field.is_null() {
                    *field = json!("*");
                } else {
                    normalise(field, event);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| normalise(item, event)),
        _ => {}
    }
}

/// The tool call arguments a stream carries, joined from their pieces and parsed.
fn arguments(frames: &[(Option<String>, Value)]) -> Option<Value> {
    let mut joined = String::new();
    for (event, data) in frames {
        let piece = match event.as_deref() {
            Some("response.function_call_arguments.delta") => data.get("delta"),
            Some("content_block_delta") => data.pointer("/delta/partial_json"),
            None => data.pointer("/choices/0/delta/tool_calls/0/function/arguments"),
            _ => None,
        };
        joined.push_str(piece.and_then(Value::as_str).unwrap_or(""));
    }
    (!joined.is_empty()).then(|| serde_json::from_str(&joined).unwrap())
}

fn json_frames(frames: Vec<(Option<String>, String)>) -> Vec<(Option<String>, Value)> {
    frames
        .into_iter()
        .map(|(event, data)| {
            let value = serde_json::from_str(&data).unwrap_or(Value::String(data));
            (event, value)
        })
        .collect()
}

fn normalised(frames: &[(Option<String>, Value)]) -> Vec<(Option<String>, Value)> {
    frames
        .iter()
        .cloned()
        .map(|(event, mut data)| {
            normalise(&mut data, event.as_deref());
            (event, data)
        })
        .collect()
}

#[test]
fn each_reply_is_the_one_the_cli_accepted() {
    let mut compared = 0;
    for (cli, ..) in &clis() {
        for ((body, scenario), python) in accepted(cli) {
            let ours = json_frames(parse_frames(&Capture::load(cli, &body).script(&scenario)));
            let theirs = json_frames(parse_sse(&python));
            let at = format!("{cli} {body} {scenario}");
            assert_eq!(arguments(&ours), arguments(&theirs), "{at}: tool arguments");
            let (ours, theirs) = (normalised(&ours), normalised(&theirs));
            assert_eq!(ours.len(), theirs.len(), "{at}: frame count");
            for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                assert_eq!(a, b, "{at}: frame {i}");
            }
            compared += 1;
        }
    }
    assert_eq!(compared, clis().len() * 6);
}

/// Every scenario a model call can stream.
const STREAMED: &[&str] = &[
    "plain", "tool", "toolloop", "length", "empty", "thinking", "slow",
];

/// Chat completions: each chunk carries `choices[0].delta`; one finish_reason, on the last
/// choices chunk; the usage chunk (no choices) when asked; `[DONE]` last.
fn check_chat(frames: &[(Option<String>, Value)], at: &str) {
    let (done, chunks) = frames.split_last().unwrap();
    assert_eq!(done.1, json!("[DONE]"), "{at}");
    let (usage, choices) = chunks.split_last().unwrap();
    assert_eq!(usage.1["choices"], json!([]), "{at}: usage chunk");
    assert_eq!(usage.1["usage"]["completion_tokens"], json!(42), "{at}");
    let finishes: Vec<usize> = choices
        .iter()
        .enumerate()
        .filter(|(_, (_, c))| !c["choices"][0]["finish_reason"].is_null())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(finishes, vec![choices.len() - 1], "{at}: one finish, last");
    for (event, chunk) in choices {
        assert!(event.is_none(), "{at}");
        assert_eq!(chunk["object"], json!("chat.completion.chunk"), "{at}");
        assert!(chunk["choices"][0]["delta"].is_object(), "{at}: {chunk}");
    }
}

/// Anthropic: message_start, ping, blocks with indices 0, 1, ... each started, filled and
/// stopped in turn, message_delta with a stop_reason, message_stop.
fn check_anthropic(frames: &[(Option<String>, Value)], at: &str) {
    let names: Vec<&str> = frames.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    assert_eq!(names[..2], ["message_start", "ping"], "{at}");
    assert_eq!(
        names[names.len() - 2..],
        ["message_delta", "message_stop"],
        "{at}"
    );
    let mut open: Option<u64> = None;
    let mut next = 0;
    for (name, data) in &frames[2..frames.len() - 2] {
        assert_eq!(data["type"].as_str(), name.as_deref(), "{at}");
        let index = data["index"].as_u64().unwrap();
        match name.as_deref().unwrap() {
            "content_block_start" => {
                assert_eq!((open, index), (None, next), "{at}: start");
                open = Some(index);
                next += 1;
            }
            "content_block_delta" => assert_eq!(open, Some(index), "{at}: delta"),
            "content_block_stop" => {
                assert_eq!(open.take(), Some(index), "{at}: stop");
            }
            other => panic!("{at}: {other}"),
        }
    }
    assert_eq!(open, None, "{at}: a block left open");
    let stop = &frames[frames.len() - 2].1;
    assert!(stop["delta"]["stop_reason"].is_string(), "{at}");
    assert_eq!(stop["usage"]["output_tokens"], json!(42), "{at}");
}

/// Responses: sequence numbers 0, 1, ...; created first; each item added then done at the same
/// output index; completed (or incomplete) last, holding the done items and the usage.
fn check_responses(frames: &[(Option<String>, Value)], at: &str) {
    let mut added = BTreeMap::new();
    let mut done = Vec::new();
    for (i, (name, data)) in frames.iter().enumerate() {
        assert_eq!(data["sequence_number"], json!(i), "{at}");
        assert_eq!(data["type"].as_str(), name.as_deref(), "{at}");
        let index = data["output_index"].as_u64();
        match name.as_deref().unwrap() {
            "response.output_item.added" => {
                assert!(
                    added.insert(index, data["item"]["id"].clone()).is_none(),
                    "{at}"
                )
            }
            "response.output_item.done" => {
                assert_eq!(added.get(&index), Some(&data["item"]["id"]), "{at}");
                done.push(data["item"].clone());
            }
            _ => {}
        }
    }
    assert_eq!(frames[0].0.as_deref(), Some("response.created"), "{at}");
    let (last, data) = frames.last().unwrap();
    let response = &data["response"];
    match last.as_deref().unwrap() {
        "response.completed" => assert_eq!(response["status"], json!("completed"), "{at}"),
        "response.incomplete" => assert_eq!(
            response["incomplete_details"]["reason"],
            json!("max_output_tokens"),
            "{at}"
        ),
        other => panic!("{at}: ends with {other}"),
    }
    assert_eq!(response["output"], Value::Array(done), "{at}");
    assert_eq!(response["usage"]["output_tokens"], json!(42), "{at}");
}

#[test]
fn every_streamed_scenario_has_the_event_shape_its_api_requires() {
    for (cli, api, _) in &clis() {
        for body in ["first", "after-tool"] {
            let capture = Capture::load(cli, body);
            for scenario in STREAMED {
                let (text, cut) = wire_text(&capture.script(scenario));
                assert!(!cut, "{cli} {scenario}");
                let frames = json_frames(parse_sse(&text));
                let at = format!("{cli} {body} {scenario}");
                match api {
                    Api::Chat => check_chat(&frames, &at),
                    Api::Anthropic => check_anthropic(&frames, &at),
                    Api::Responses => check_responses(&frames, &at),
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}

#[test]
fn a_dropped_stream_is_cut_after_a_few_deltas_with_no_terminator() {
    let terminators = ["[DONE]", "message_stop", "response.completed"];
    for (cli, ..) in &clis() {
        let (text, cut) = wire_text(&Capture::load(cli, "first").script("drop"));
        assert!(cut, "{cli}");
        for terminator in terminators {
            assert!(!text.contains(terminator), "{cli}: {terminator}");
        }
        assert!(
            text.contains("\"looked \""),
            "{cli}: a delta before the cut"
        );
        assert!(!text.contains("gitmoot_result"), "{cli}");
    }
}

#[test]
fn errors_carry_the_status_and_body_each_api_defines() {
    let expect = [
        ("error", 500, "server_error", "api_error"),
        (
            "fatal",
            400,
            "invalid_request_error",
            "invalid_request_error",
        ),
        ("overloaded", 503, "server_overloaded", "overloaded_error"),
        ("retry", 429, "rate_limit_exceeded", "rate_limit_error"),
    ];
    for (cli, api, _) in &clis() {
        let capture = Capture::load(cli, "first");
        for (scenario, status, openai, anthropic) in expect {
            let Reply::Json { status: got, body } = capture.reply(scenario) else {
                panic!("{cli} {scenario}: not an error");
            };
            if *api == Api::Anthropic {
                let status = if scenario == "overloaded" {
                    529
                } else {
                    status
                };
                assert_eq!(got, status, "{cli} {scenario}");
                assert_eq!(body["type"], json!("error"));
                assert_eq!(body["error"]["type"], json!(anthropic), "{cli} {scenario}");
            } else {
                assert_eq!(got, status, "{cli} {scenario}");
                assert_eq!(body["error"]["type"], json!(openai), "{cli} {scenario}");
            }
        }
    }
}

#[test]
fn a_request_without_stream_gets_one_json_answer() {
    for (cli, api, _) in &clis() {
        let mut capture = Capture::load(cli, "first");
        capture.body["stream"] = json!(false);
        let Reply::Json { status: 200, body } = capture.reply("length") else {
            panic!("{cli}: not JSON");
        };
        let (text, stop) = match api {
            Api::Chat => (
                &body["choices"][0]["message"]["content"],
                &body["choices"][0]["finish_reason"],
            ),
            Api::Anthropic => (&body["content"][0]["text"], &body["stop_reason"]),
            _ => (
                &body["output"][0]["content"][0]["text"],
                &body["incomplete_details"]["reason"],
            ),
        };
        assert!(text.as_str().unwrap().ends_with("output tok"), "{cli}");
        let want = ["length", "max_tokens", "max_output_tokens"];
        assert!(want.contains(&stop.as_str().unwrap()), "{cli}: {stop}");
    }
}

#[test]
fn a_custom_tool_is_called_with_custom_tool_call_events() {
    let mut capture = Capture::load("codex", "first");
    let tools = capture.body["tools"].as_array().unwrap();
    let custom: Vec<Value> = tools
        .iter()
        .filter(|t| t["type"] == json!("custom"))
        .cloned()
        .collect();
    assert_eq!(custom.len(), 1, "codex offers apply_patch as a custom tool");
    capture.body["tools"] = Value::Array(custom);
    let frames = json_frames(parse_frames(&capture.script("tool")));
    check_responses(&frames, "codex custom");
    let names: Vec<&str> = frames.iter().filter_map(|(e, _)| e.as_deref()).collect();
    assert!(
        names.contains(&"response.custom_tool_call_input.done"),
        "{names:?}"
    );
    let done = frames
        .iter()
        .find(|(e, _)| e.as_deref() == Some("response.output_item.done"))
        .unwrap();
    assert_eq!(done.1["item"]["type"], json!("custom_tool_call"));
    assert_eq!(done.1["item"]["name"], json!("apply_patch"));
    assert!(done.1["item"]["input"].is_string());
}
