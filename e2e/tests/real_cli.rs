//! OpenTelemetry end to end: every pinned real CLI runs its toolwrite scenario against the fake
//! model (moot-doctor, which keeps each run's stream), its parser exports the run with
//! `--otlp-endpoint` to a real Arize Phoenix on 127.0.0.1, and the spans are read back through
//! Phoenix's REST API: one trace per run, an `invoke_agent <runtime>` root whose
//! `gen_ai.usage.*` equal the envelope's, and one `execute_tool` child per tool call.
//!
//! Slow (Phoenix takes half a minute to start), so not part of `cargo test` (`test = false`)
//! but of `make test-realcli`, after scripts/realcli/install.sh and
//! scripts/otlp/install-phoenix.sh. A missing CLI or Phoenix fails under MOOT_NO_SKIP.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use moot_e2e::tool;
use moot_testkit::skip;
use serde_json::Value;

const TEST: &str = "phoenix_receives_one_trace_per_run_of_every_cli";

/// Phoenix as scripts/otlp/install-phoenix.sh lays it out.
fn phoenix_program() -> PathBuf {
    std::env::var_os("PHOENIX_DIR")
        .map_or_else(|| std::env::temp_dir().join("moot-phoenix"), PathBuf::from)
        .join("venv/bin/phoenix")
}

/// A port free on 127.0.0.1 right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `url` (Python's urllib: the machine has python3, and the test needs no HTTP crate).
fn get(url: &str) -> Option<Vec<u8>> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, urllib.request\nsys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=10).read())",
            url,
        ])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// A Phoenix server on loopback, killed (its whole process group) when dropped.
struct Phoenix {
    child: Child,
    origin: String,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start(program: &Path) -> Phoenix {
        use std::os::unix::process::CommandExt;
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("phoenix.log")).unwrap();
        let child = Command::new(program)
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        let phoenix = Phoenix {
            child,
            origin: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let started = Instant::now();
        while get(&format!("{}/healthz", phoenix.origin)).is_none() {
            let log = std::fs::read_to_string(phoenix._dir.path().join("phoenix.log"))
                .unwrap_or_default();
            assert!(
                started.elapsed() < Duration::from_secs(240),
                "Phoenix did not answer /healthz within 240 s; its log ends:\n{}",
                &log[log.len().saturating_sub(2000)..]
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        eprintln!(
            "Phoenix up at {} after {:.1} s",
            phoenix.origin,
            started.elapsed().as_secs_f64()
        );
        phoenix
    }

    /// The spans of trace `trace_id` in the default project, once at least `want` are there
    /// (Phoenix inserts in the background), or what is there after 60 s.
    fn spans_of(&self, trace_id: &str, want: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let spans = self.all_spans(trace_id);
            if spans.len() >= want || started.elapsed() > Duration::from_secs(60) {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn all_spans(&self, trace_id: &str) -> Vec<Value> {
        let mut found = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = format!("{}/v1/projects/default/spans?limit=1000", self.origin);
            if let Some(cursor) = &cursor {
                url.push_str(&format!("&cursor={cursor}"));
            }
            let Some(body) = get(&url) else {
                return found;
            };
            let page: Value = serde_json::from_slice(&body).unwrap();
            found.extend(
                page["data"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|span| span["context"]["trace_id"] == trace_id)
                    .cloned(),
            );
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => return found,
            }
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(-(self.child.id() as i32));
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

/// PATH with `dirs` first and the system's directories after.
fn path_with(dirs: &[PathBuf]) -> std::ffi::OsString {
    let mut all = dirs.to_vec();
    all.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
    std::env::join_paths(all).unwrap()
}

/// The stream of `runtime`'s real toolwrite run, as moot-doctor kept it.
fn toolwrite_stream(runtime: &str, keep: &Path) -> Result<Vec<u8>, String> {
    let (program, path) = moot_testkit::realcli::installed(runtime)
        .ok_or_else(|| format!("{runtime} is not installed (scripts/realcli/install.sh)"))?;
    let out = Command::new(tool("moot-doctor"))
        .env("PATH", path_with(&path))
        .arg("--program")
        .arg(&program)
        .arg("--keep")
        .arg(keep)
        .args(["--scenario", "toolwrite", runtime])
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(format!(
            "moot-doctor {runtime}: exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    // moot-doctor keeps <DIR>/<runtime>/<scenario>.ndjson.
    std::fs::read(keep.join(runtime).join("toolwrite.ndjson"))
        .map_err(|e| format!("moot-doctor kept no toolwrite.ndjson for {runtime}: {e}"))
}

fn attribute<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// Exports one run and checks what Phoenix holds of it; `Err` says what is wrong.
fn export_and_read_back(
    phoenix: &Phoenix,
    runtime: &str,
    parser: &str,
    stream: &[u8],
) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap();
    let trace_file = dir.path().join("trace.json");
    let parser = tool(&format!("moot-parse-{parser}"));
    // A parser that judges the answer by what the CLI left beside its stream (Kimi Code's
    // session store) is told to accept the stream alone: the trace is under test here, and
    // moot-doctor has judged the run with its evidence already.
    let help = Command::new(&parser).arg("--help").output().unwrap();
    let unchecked = String::from_utf8_lossy(&help.stdout)
        .contains("--no-session-store")
        .then_some("--no-session-store");
    let mut child = Command::new(&parser)
        .args(unchecked)
        .arg("--otlp-endpoint")
        .arg(&phoenix.origin)
        .arg("--otlp-file")
        .arg(&trace_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(stream).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() != Some(0) || stderr.contains("warning") {
        return Err(format!(
            "{}: exit {:?}: {stderr}",
            parser.display(),
            out.status.code()
        ));
    }
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &envelope["run"];
    let trace: Value = serde_json::from_slice(&std::fs::read(&trace_file).unwrap()).unwrap();
    let sent = trace["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let trace_id = sent[0]["traceId"].as_str().unwrap();
    let calls = run["tools"]["calls"].as_u64().unwrap() as usize;
    if calls == 0 {
        return Err(format!("the toolwrite run made no tool call: {run}"));
    }
    let spans = phoenix.spans_of(trace_id, 1 + calls);
    let roots: Vec<&Value> = spans.iter().filter(|s| s["parent_id"].is_null()).collect();
    let [root] = roots[..] else {
        return Err(format!("{} root spans in trace {trace_id}", roots.len()));
    };
    // The envelope's runtime: kimi-cli's parser reports the dialect's name, kimi.
    let named = run["runtime"].as_str().unwrap_or(runtime);
    if root["name"] != format!("invoke_agent {named}") || root["status_code"] != "OK" {
        return Err(format!("the root span: {root}"));
    }
    let usage = &run["usage"];
    for (field, key) in [
        ("input_tokens", "gen_ai.usage.input_tokens"),
        ("output_tokens", "gen_ai.usage.output_tokens"),
        ("cache_read_tokens", "gen_ai.usage.cache_read.input_tokens"),
        (
            "cache_write_tokens",
            "gen_ai.usage.cache_creation.input_tokens",
        ),
        ("reasoning_tokens", "gen_ai.usage.reasoning.output_tokens"),
    ] {
        if attribute(root, key) != &usage[field] {
            return Err(format!(
                "{key} is {} in Phoenix, {} in the envelope",
                attribute(root, key),
                usage[field]
            ));
        }
    }
    let root_id = &root["context"]["span_id"];
    let children: Vec<&Value> = spans
        .iter()
        .filter(|s| &s["parent_id"] == root_id)
        .collect();
    let tools_ok = children.len() == calls
        && children.iter().all(|span| {
            span["name"]
                .as_str()
                .is_some_and(|name| name.starts_with("execute_tool "))
                && attribute(span, "gen_ai.tool.call.id").is_string()
                && attribute(span, "gen_ai.tool.name").is_string()
        });
    if !tools_ok || spans.len() != 1 + calls {
        return Err(format!(
            "{} spans, {} children of the root, {calls} tool calls in the envelope: {spans:?}",
            spans.len(),
            children.len()
        ));
    }
    Ok(format!(
        "{runtime}: trace {trace_id}, {} tool span(s), {} tokens in, {} out",
        children.len(),
        usage["input_tokens"],
        usage["output_tokens"]
    ))
}

#[test]
fn phoenix_receives_one_trace_per_run_of_every_cli() {
    let program = phoenix_program();
    if !program.is_file() {
        return skip(
            TEST,
            &format!(
                "Phoenix is not installed at {} (scripts/otlp/install-phoenix.sh)",
                program.display()
            ),
        );
    }
    let phoenix = Phoenix::start(&program);
    let mut failures = Vec::new();
    let mut exported = 0;
    for meta in moot::registry::all()
        .iter()
        .filter(|meta| meta.doctor.is_some())
    {
        let Some(parser) = meta.parser else { continue };
        let keep = tempfile::tempdir().unwrap();
        let stream = match toolwrite_stream(meta.name, keep.path()) {
            Ok(stream) => stream,
            Err(why) if why.contains("is not installed") => {
                skip(TEST, &why);
                continue;
            }
            Err(why) => {
                failures.push(why);
                continue;
            }
        };
        match export_and_read_back(&phoenix, meta.name, parser, &stream) {
            Ok(line) => {
                eprintln!("{line}");
                exported += 1;
            }
            Err(why) => failures.push(format!("{}: {why}", meta.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(exported > 0 || std::env::var_os(moot_testkit::NO_SKIP).is_none());
}
