//! The typed events on every real capture: `<case>.events` goldens (`--events -` byte for byte),
//! the schema holding every line, the end event agreeing with the envelope, and the envelope's
//! `run.tools` and usage agreeing with an independent reading of the capture (one counter per
//! dialect, under `events/`, that walks the raw rows as plain JSON and shares no code with the
//! parser).

use std::path::Path;

use serde_json::Value;

use crate::{cases, run_in, Case};

mod claude;
mod codex;
mod kimi;
mod opencode;
mod pi_family;

/// What an independent reading of a capture counts.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counted {
    /// Tool calls the model made.
    pub calls: u64,
    /// Tool results the CLI reported (completed, failed or denied).
    pub results: u64,
    /// Results whose output shows a refusal (see [`shows_denial`]).
    pub denied: u64,
    /// The run's input and output tokens, where the reader can tell them; `None` leaves the
    /// envelope's figures unchecked for this capture.
    pub usage: Option<(u64, u64)>,
}

/// The counter for `dialect`'s captures.
fn counter(dialect: &str) -> fn(&[u8]) -> Counted {
    match dialect {
        "omp" | "pi" => pi_family::count,
        "claude" => claude::count,
        "codex" => codex::count,
        "kimi" => kimi::count,
        "opencode" => opencode::count,
        other => panic!("no independent event counter for dialect {other}"),
    }
}

/// Whether a tool's output shows that the kernel or the CLI refused it, read the plain way.
pub fn shows_denial(output: &str) -> bool {
    let lower = output.to_lowercase();
    [
        "permission denied",
        "operation not permitted",
        "eacces",
        "eperm",
    ]
    .iter()
    .any(|word| lower.contains(word))
}

/// Every line of a capture that parses as JSON (a cut or foreign line is left out).
pub fn rows(stream: &[u8]) -> impl Iterator<Item = Value> + '_ {
    stream
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
}

/// The schema every event line must hold to.
fn schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/moot-events.schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("the events schema is JSON");
    jsonschema::validator_for(&schema).expect("the events schema compiles")
}

/// Validates every line of `events` (NDJSON) against the schema; returns the first failure.
pub fn validate_lines(events: &[u8]) -> Result<usize, String> {
    let validator = schema();
    let mut checked = 0;
    for (n, line) in events.split(|b| *b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let event: Value = serde_json::from_slice(line)
            .map_err(|e| format!("event line {} is not JSON: {e}", n + 1))?;
        if let Some(error) = validator.iter_errors(&event).next() {
            return Err(format!(
                "event line {} breaks the schema at {}: {error}",
                n + 1,
                error.instance_path()
            ));
        }
        checked += 1;
    }
    Ok(checked)
}

/// Checks every `real-*` case of `dialect` (see the module doc); with `MOOT_BLESS=1` the
/// `.events` files are (re)written instead. Returns how many captures were checked.
pub fn check_event_goldens(bin: &str, dialect: &str) -> usize {
    let bless = std::env::var_os("MOOT_BLESS").is_some();
    let count = counter(dialect);
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut calls_seen = 0;
    for case in cases(dialect)
        .iter()
        .filter(|c| c.name.starts_with("real-"))
    {
        checked += 1;
        let input = std::fs::read(&case.input).expect("read case input");
        let mut args = case.args.clone();
        args.extend(["--events".to_string(), "-".to_string()]);
        let output = run_in(bin, &args, &input, Some(&case.dir));
        let golden = case.dir.join(format!("{}.events", case.name));
        if bless {
            std::fs::write(&golden, &output.stdout).expect("bless");
            continue;
        }
        let counted = count(&input);
        calls_seen += counted.calls;
        if let Err(why) = check_one(case, &golden, &output, &counted) {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} event golden case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        bless || calls_seen > 0,
        "no real capture of {dialect} holds a tool call: the tool counts were never tested"
    );
    checked
}

fn check_one(
    case: &Case,
    golden: &Path,
    output: &std::process::Output,
    counted: &Counted,
) -> Result<(), String> {
    let want = std::fs::read(golden)
        .map_err(|e| format!("no {} ({e}); run with MOOT_BLESS=1", golden.display()))?;
    if output.stdout != want {
        return Err(format!(
            "--events - differs from {}\n  got: {}",
            golden.display(),
            String::from_utf8_lossy(&output.stdout)
        ));
    }
    validate_lines(&output.stdout)?;
    let envelope: Value = serde_json::from_slice(
        &std::fs::read(&case.expected).map_err(|e| format!("no envelope golden: {e}"))?,
    )
    .map_err(|e| format!("envelope golden is not JSON: {e}"))?;
    let run = &envelope["run"];
    let ok = run["ok"].as_bool().ok_or("run.ok missing")?;
    if output.status.code() != Some(if ok { 0 } else { 1 }) {
        return Err(format!(
            "--events - exits {:?}, the envelope says ok={ok}",
            output.status.code()
        ));
    }
    let lines: Vec<Value> = rows(&output.stdout).collect();
    let first = lines.first().ok_or("no event at all")?;
    let last = lines.last().ok_or("no event at all")?;
    if first["type"] != "start" || last["type"] != "end" {
        return Err("the events do not open with start and close with end".into());
    }
    if last["ok"] != run["ok"] || last["usage"] != run["usage"] || last["tools"] != run["tools"] {
        return Err(format!(
            "the end event {last} disagrees with the envelope's run {run}"
        ));
    }
    let of_type = |kind: &str| lines.iter().filter(|e| e["type"] == kind).count() as u64;
    let tools = &run["tools"];
    let number = |v: &Value| v.as_u64().unwrap_or(u64::MAX);
    let got = Counted {
        calls: number(&tools["calls"]),
        results: number(&tools["completed"]) + number(&tools["failed"]) + number(&tools["denied"]),
        denied: number(&tools["denied"]),
        usage: counted.usage.map(|_| {
            (
                number(&run["usage"]["input_tokens"]),
                number(&run["usage"]["output_tokens"]),
            )
        }),
    };
    if &got != counted {
        return Err(format!(
            "the envelope counts {got:?}, an independent reading of the capture {counted:?}"
        ));
    }
    if of_type("tool_call") != got.calls || of_type("tool_result") != got.results {
        return Err("the tool events disagree with run.tools".into());
    }
    Ok(())
}
