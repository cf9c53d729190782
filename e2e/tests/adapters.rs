//! End to end: every scripts/adapters/<runtime>/adapter.sh run by /bin/sh with a stub runtime on
//! PATH that replays a real capture and exits as the real CLI did. Checks stdout (only the
//! response), stderr (one diagnostic line on failure), the exit status, and the argv and stdin
//! the runtime received. The tools are the workspace's built binaries (src/lib.rs builds them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use moot_e2e::{root, tool_dir};

/// A directory of stub CLIs; put first on PATH.
struct Stubs {
    dir: tempfile::TempDir,
    /// The adapter's TMPDIR, apart from `dir` (which tests grant to the sandbox): the scratch
    /// directory the adapter makes there must never be in the agent's reach.
    tmp: tempfile::TempDir,
}

impl Stubs {
    fn new() -> Self {
        Stubs {
            dir: tempfile::tempdir().unwrap(),
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    /// A fresh set with `name` installed, replaying `capture` and exiting 0.
    fn with(name: &str, capture: &str) -> Self {
        let stubs = Stubs::new();
        stubs.install(name, capture, 0);
        stubs
    }

    /// Writes `text` to a system prompt file beside the stubs; returns its path.
    fn system_prompt(&self, text: &str) -> PathBuf {
        let system = self.path("system.md");
        fs::write(&system, text).unwrap();
        system
    }

    /// Installs `name` replaying `capture` (relative to testdata/) and exiting with `exit`.
    fn install(&self, name: &str, capture: &str, exit: i32) -> &Self {
        let stub = self.path(name);
        fs::copy(root().join("scripts/stub/stub-runtime"), &stub).unwrap();
        fs::set_permissions(&stub, fs::Permissions::from_mode(0o755)).unwrap();
        fs::copy(
            root().join("testdata").join(capture),
            self.path(&format!("{name}.stdout")),
        )
        .unwrap();
        fs::write(self.path(&format!("{name}.exit")), exit.to_string()).unwrap();
        self
    }

    /// Makes `name` also print `capture`'s stderr (relative to testdata/).
    fn with_stderr(&self, name: &str, capture: &str) -> &Self {
        fs::copy(
            root().join("testdata").join(capture),
            self.path(&format!("{name}.stderr")),
        )
        .unwrap();
        self
    }

    /// The sandbox flag granting the stubs' directory read-write (`MOOT_SANDBOX_FLAGS`).
    fn rw_grant(&self) -> String {
        format!("--rw {}", self.dir.path().display())
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    /// The argv the stub received (without argv[0]), or None when it never ran.
    fn argv(&self, name: &str) -> Option<Vec<String>> {
        let raw = fs::read(self.path(&format!("{name}.argv"))).ok()?;
        Some(
            raw.split(|b| *b == 0)
                .map(|a| String::from_utf8(a.to_vec()).unwrap())
                .collect::<Vec<_>>()
                .split_last()
                .map(|(_, args)| args.to_vec())
                .unwrap_or_default(),
        )
    }

    /// Kimi Code's session store (under the adapter's HOME), recording how the final answer of
    /// session `id` ended (`completed`, or `truncated` for a length cut).
    fn kimi_session_store(&self, id: &str, finish_reason: &str) -> &Self {
        let dir = self
            .dir
            .path()
            .join(".kimi-code/sessions/wd_ws_1")
            .join(id)
            .join("agents/main");
        fs::create_dir_all(&dir).unwrap();
        let line = format!(
            r#"{{"message":{{"message":{{"role":"assistant","content":[]}},"meta":{{"source":"llm","finish":{{"finishReason":"{finish_reason}","rawFinishReason":"x"}}}}}},"type":"agent.message.appended"}}"#
        );
        fs::write(dir.join("wire.jsonl"), line + "\n").unwrap();
        self
    }

    fn stdin(&self, name: &str) -> Vec<u8> {
        fs::read(self.path(&format!("{name}.stdin"))).unwrap()
    }
}

/// Runs one adapter with exactly `env` (plus PATH, HOME and TMPDIR), as Mosaic's runner does:
/// `/bin/sh adapter.sh`, stdin closed.
fn adapter(runtime: &str, stubs: &Stubs, env: &[(&str, &str)]) -> Output {
    adapter_verb(runtime, stubs, &[], env)
}

/// [`adapter`] with a verb and its arguments (`start`, `health`, `validate REF`).
fn adapter_verb(runtime: &str, stubs: &Stubs, verb: &[&str], env: &[(&str, &str)]) -> Output {
    let out = adapter_command(runtime, stubs, verb, env).output().unwrap();
    assert_tmpdir_empty(stubs);
    out
}

fn assert_tmpdir_empty(stubs: &Stubs) {
    assert_eq!(
        fs::read_dir(stubs.tmp.path()).unwrap().count(),
        0,
        "the adapter left files in TMPDIR"
    );
}

/// The command [`adapter`] runs, for a test that drives the process itself.
fn adapter_command(runtime: &str, stubs: &Stubs, args: &[&str], env: &[(&str, &str)]) -> Command {
    let tmp = stubs.tmp.path();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        stubs.dir.path().display(),
        tool_dir().display()
    );
    let mut command = Command::new("/bin/sh");
    command
        .arg(root().join(format!("scripts/adapters/{runtime}/adapter.sh")))
        .args(args)
        .env_clear()
        .env("PATH", path)
        .env("HOME", stubs.dir.path())
        .env("TMPDIR", tmp)
        // Every seat behind the credential proxy, as by default (the stubs call no provider).
        .env("MOOT_PROVIDER_URL", "http://127.0.0.1:9/v1")
        .env("MOOT_PROVIDER_KEY_ENV", "STUB_PROVIDER_KEY")
        .env("STUB_PROVIDER_KEY", "sk-stub-provider-key-0123456789")
        .stdin(std::process::Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

fn answer_of(expected_envelope: &str) -> String {
    let path = root().join("testdata").join(expected_envelope);
    let envelope: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    let answer = envelope["run"]["answer"].as_str().unwrap().to_string();
    if answer.ends_with('\n') {
        answer
    } else {
        answer + "\n"
    }
}

/// A failed run: nothing on stdout, exactly one diagnostic line, a nonzero status.
fn assert_failed(out: &Output, status: i32, stderr_prefix: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(status), "stderr: {stderr}");
    assert!(out.stdout.is_empty(), "stdout: {}", text(&out.stdout));
    assert_eq!(stderr.lines().count(), 1, "stderr: {stderr}");
    assert!(stderr.starts_with(stderr_prefix), "stderr: {stderr}");
}

fn assert_answered(out: &Output, expected_envelope: &str) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), answer_of(expected_envelope));
}

/// [`adapter`], checked to have answered as `expected_envelope` (relative to testdata/) says.
fn adapter_answered(
    runtime: &str,
    stubs: &Stubs,
    env: &[(&str, &str)],
    expected_envelope: &str,
) -> Output {
    let out = adapter(runtime, stubs, env);
    assert_answered(&out, expected_envelope);
    out
}

#[test]
fn omp_answers_with_the_final_text_only() {
    let stubs = Stubs::with("omp", "omp/real-plain.ndjson");
    let system = stubs.system_prompt("be brief");
    let out = adapter_answered(
        "omp",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "Review\n-this @now"),
            ("MOSAIC_PROVIDER", "anthropic"),
            ("MOSAIC_MODEL", "claude-sonnet-4-5"),
            ("MOSAIC_THINKING", "high"),
            ("MOSAIC_SYSTEM_PROMPT_FILE", system.to_str().unwrap()),
            ("ANTHROPIC_API_KEY", "sk-secret-never-printed"),
        ],
        "omp/real-plain.json",
    );
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    assert_eq!(
        stubs.argv("omp").unwrap(),
        [
            "-p",
            "--mode=json",
            "--approval-mode=always-ask",
            "--no-session",
            "--no-extensions",
            "--no-skills",
            "--no-rules",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--thinking",
            "high",
            "--append-system-prompt",
            system.to_str().unwrap(),
            "--",
            "Review\n-this @now"
        ]
    );
    assert!(
        stubs.stdin("omp").is_empty(),
        "the runtime's stdin must be /dev/null"
    );
    assert_eq!(fs::read_to_string(&system).unwrap(), "be brief");
}

/// A failed run through each adapter: nothing on stdout, one line naming the error class, exit
/// 1, whether the CLI exited 0 (omp, pi and opencode do on failures) or not.
#[test]
fn failed_runs_print_nothing_and_one_line() {
    let cases = [
        (
            "omp",
            "omp/real-toolloop-maxtime.ndjson",
            0,
            "moot-parse-omp: truncated: TRUNCATED",
        ),
        (
            "omp",
            "omp/real-error.ndjson",
            1,
            "moot-parse-omp: retry_exhausted: omp gave up retrying",
        ),
        (
            "codex",
            "codex/real-length.ndjson",
            1,
            "moot-parse-codex: truncated",
        ),
        (
            "pi",
            "pi/real-error.ndjson",
            0,
            "moot-parse-pi: retry_exhausted",
        ),
        (
            "opencode",
            "opencode/real-toolwrite-outside-rejected.ndjson",
            0,
            "moot-parse-opencode: not_terminal: opencode stopped after rejecting",
        ),
    ];
    for (runtime, capture, exit, line) in cases {
        let stubs = Stubs::new();
        stubs.install(runtime, capture, exit);
        let out = adapter(runtime, &stubs, &[("MOSAIC_REQUEST", "Run the tool.")]);
        assert_failed(&out, 1, line);
    }
}

/// With a workspace the run is a seat: moot-sandbox enforces workspace-write, so omp runs
/// yolo (its write mode would refuse bash headless), declared widened.
#[test]
fn omp_in_a_workspace_runs_confined_with_write_policy() {
    let stubs = Stubs::with("omp", "omp/real-tool.ndjson");
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path().to_str().unwrap();
    let grant = stubs.rw_grant();
    adapter_answered(
        "omp",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "fix it"),
            ("MOSAIC_WORKSPACE", ws),
            ("MOOT_SANDBOX_FLAGS", &grant),
        ],
        "omp/real-tool.json",
    );
    assert_eq!(
        stubs.argv("omp").unwrap(),
        [
            "-p",
            "--mode=json",
            "--approval-mode=yolo",
            "--no-session",
            "--no-extensions",
            "--no-skills",
            "--no-rules",
            "--add-dir",
            ws,
            "--",
            "fix it"
        ]
    );
}

/// A seat's CLI holds no provider key by default: a seat with no provider named is refused
/// (one line, exit 2, nothing run) unless the caller says it may hold the key.
#[test]
fn a_seat_without_the_credential_proxy_is_refused_unless_asked_for() {
    let stubs = Stubs::with("omp", "omp/real-tool.ndjson");
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path().to_str().unwrap();
    let grant = stubs.rw_grant();
    let seat = [
        ("MOSAIC_REQUEST", "fix it"),
        ("MOSAIC_WORKSPACE", ws),
        ("MOOT_SANDBOX_FLAGS", grant.as_str()),
        ("MOOT_PROVIDER_URL", ""),
    ];
    let refused = adapter("omp", &stubs, &seat);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = text(&refused.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("MOOT_PROVIDER_URL is not set") && stderr.contains("MOOT_KEY_IN_SEAT=1"),
        "{stderr}"
    );
    assert!(stubs.argv("omp").is_none(), "the CLI ran");
    let keyless = [
        ("MOOT_PROVIDER_URL", "http://127.0.0.1:9/v1"),
        ("MOOT_PROVIDER_KEY_ENV", ""),
    ];
    let refused = adapter("omp", &stubs, &[&seat[..3], &keyless[..]].concat());
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("without MOOT_PROVIDER_KEY_FILE"));
    let asked = [&seat[..], &[("MOOT_KEY_IN_SEAT", "1")][..]].concat();
    let ran = adapter("omp", &stubs, &asked);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
}

#[test]
fn omp_oversize_request_is_staged_and_removed() {
    let stubs = Stubs::with("omp", "omp/real-plain.ndjson");
    let request = "x".repeat(120 * 1024); // an environment string is capped at 128 KiB
    adapter_answered(
        "omp",
        &stubs,
        &[("MOSAIC_REQUEST", &request)],
        "omp/real-plain.json",
    );
    let argv = stubs.argv("omp").unwrap();
    assert!(argv.iter().all(|a| a.len() < 1024), "a large argv element");
    let attachment = assert_attachment_removed(&argv);
    assert!(attachment.ends_with("/prompt.md"));
}

/// Staged and confined at once: the sandbox lets the CLI read the staged prompt, and the
/// prompt is still removed when the run ends.
#[test]
fn omp_oversize_request_in_a_workspace_is_staged_confined_and_removed() {
    let stubs = Stubs::with("omp", "omp/real-plain.ndjson");
    let workspace = tempfile::tempdir().unwrap();
    let grant = stubs.rw_grant();
    let request = "x".repeat(120 * 1024);
    adapter_answered(
        "omp",
        &stubs,
        &[
            ("MOSAIC_REQUEST", &request),
            ("MOSAIC_WORKSPACE", workspace.path().to_str().unwrap()),
            ("MOOT_SANDBOX_FLAGS", &grant),
        ],
        "omp/real-plain.json",
    );
    assert_attachment_removed(&stubs.argv("omp").unwrap());
}

/// The staged prompt an argv attaches (`@file`), checked to be gone now the run has ended.
fn assert_attachment_removed(argv: &[String]) -> &str {
    let attachment = argv.iter().find(|a| a.starts_with('@')).expect("an @file");
    assert!(
        !Path::new(&attachment[1..]).exists(),
        "the staged prompt was not removed"
    );
    attachment
}

#[test]
fn missing_request_is_refused() {
    let stubs = Stubs::with("omp", "omp/real-plain.ndjson");
    let out = adapter("omp", &stubs, &[]);
    assert_failed(&out, 2, "moot adapter (omp): MOSAIC_REQUEST is not set");
    assert!(stubs.argv("omp").is_none(), "the runtime must not run");
}

#[test]
fn a_refused_render_stops_before_the_runtime() {
    let stubs = Stubs::with("omp", "omp/real-plain.ndjson");
    let out = adapter(
        "omp",
        &stubs,
        &[("MOSAIC_REQUEST", "hi"), ("MOSAIC_MODEL", "a model")],
    );
    assert_failed(&out, 2, "moot-render: --model (a model)");
    assert!(stubs.argv("omp").is_none());
}

#[test]
fn claude_needs_an_effort_and_an_absolute_executable() {
    let stubs = Stubs::with("claude", "claude/real-plain.ndjson");
    let out = adapter("claude", &stubs, &[("MOSAIC_REQUEST", "hi")]);
    assert_failed(&out, 2, "moot adapter (claude): MOSAIC_THINKING is not set");
    let with = |bin: &str| {
        adapter(
            "claude",
            &stubs,
            &[
                ("MOSAIC_REQUEST", "hi"),
                ("MOSAIC_THINKING", "high"),
                ("MOSAIC_CLAUDE_BIN", bin),
            ],
        )
    };
    assert_failed(
        &with("claude"),
        2,
        "moot adapter (claude): MOSAIC_CLAUDE_BIN (claude) must be an absolute path",
    );
    let plain_file = stubs.path("claude.stdout");
    assert_failed(
        &with(plain_file.to_str().unwrap()),
        2,
        "moot adapter (claude): MOSAIC_CLAUDE_BIN",
    );
    assert!(stubs.argv("claude").is_none());
}

#[test]
fn claude_runs_the_named_binary_and_resumes_only_after_success() {
    let stubs = Stubs::with("real-claude", "claude/real-plain.ndjson");
    let bin = stubs.path("real-claude");
    let sessions = tempfile::tempdir().unwrap();
    let (settings, mcp) = claude_bundle(&stubs);
    let env = |request: &'static str| {
        vec![
            ("MOSAIC_REQUEST", request),
            ("MOSAIC_THINKING", "high"),
            ("MOSAIC_CLAUDE_BIN", bin.to_str().unwrap()),
            ("MOSAIC_SESSION_DIR", sessions.path().to_str().unwrap()),
            ("MOSAIC_CLAUDE_SETTINGS", settings.to_str().unwrap()),
            ("MOSAIC_CLAUDE_MCP_CONFIG", mcp.to_str().unwrap()),
        ]
    };
    adapter_answered(
        "claude",
        &stubs,
        &env("first turn"),
        "claude/real-plain.json",
    );
    let argv = stubs.argv("real-claude").unwrap();
    // A managed session: the bundle, and nothing else loaded.
    let managed = [
        "--permission-mode",
        "plan",
        "--effort",
        "high",
        "--settings",
        settings.to_str().unwrap(),
        "--mcp-config",
        mcp.to_str().unwrap(),
        "--strict-mcp-config",
        "--setting-sources",
        "user",
        "--disable-slash-commands",
        "--restricted",
    ];
    let stream = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
    ];
    assert_eq!(argv[..13], managed);
    assert_eq!(argv[13], "--session-id");
    assert_eq!(argv[15..20], stream);
    assert_eq!(argv[20..], ["--", "first turn"]);
    let stored = fs::read_to_string(sessions.path().join("claude.session")).unwrap();
    assert_eq!(stored, "99805b40-d436-4d58-8b71-a1bed56e3211\n");

    stubs.install("real-claude", "claude/real-error.ndjson", 1);
    let second = adapter("claude", &stubs, &env("second turn"));
    assert_eq!(second.status.code(), Some(1));
    assert!(second.stdout.is_empty());
    let argv = stubs.argv("real-claude").unwrap();
    assert_eq!(
        argv[13..15],
        ["--resume", "99805b40-d436-4d58-8b71-a1bed56e3211"]
    );
    assert_eq!(argv[15..20], stream);
    assert_eq!(argv[20..], ["--", "second turn"]);
    let kept = fs::read_to_string(sessions.path().join("claude.session")).unwrap();
    assert_eq!(
        kept, stored,
        "a failed turn must not replace the stored session"
    );
}

/// A managed claude session's bundle: a settings file and an MCP configuration.
fn claude_bundle(stubs: &Stubs) -> (std::path::PathBuf, std::path::PathBuf) {
    let settings = stubs.path("settings.json");
    let mcp = stubs.path("mcp.json");
    fs::write(&settings, "{}").unwrap();
    fs::write(&mcp, r#"{"mcpServers":{}}"#).unwrap();
    (settings, mcp)
}

/// A managed claude session (a session directory) refuses to start without its bundle.
#[test]
fn a_managed_claude_session_needs_its_bundle() {
    let stubs = Stubs::with("claude", "claude/real-plain.ndjson");
    let sessions = tempfile::tempdir().unwrap();
    let (settings, _) = claude_bundle(&stubs);
    let base = [
        ("MOSAIC_REQUEST", "x"),
        ("MOSAIC_THINKING", "high"),
        ("MOSAIC_SESSION_DIR", sessions.path().to_str().unwrap()),
    ];
    let out = adapter("claude", &stubs, &base);
    assert_failed(
        &out,
        2,
        "moot adapter (claude): MOSAIC_CLAUDE_SETTINGS is not set: a managed claude session",
    );
    let mut missing_mcp = base.to_vec();
    missing_mcp.push(("MOSAIC_CLAUDE_SETTINGS", settings.to_str().unwrap()));
    missing_mcp.push(("MOSAIC_CLAUDE_MCP_CONFIG", "/nonexistent/mcp.json"));
    let out = adapter("claude", &stubs, &missing_mcp);
    assert_failed(
        &out,
        2,
        "moot adapter (claude): MOSAIC_CLAUDE_MCP_CONFIG (/nonexistent/mcp.json) is not a readable file",
    );
    assert!(
        stubs.argv("claude").is_none(),
        "claude ran without its bundle"
    );
}

#[test]
fn codex_folds_the_system_prompt_into_the_request() {
    let stubs = Stubs::with("codex", "codex/real-plain.ndjson");
    let system = stubs.system_prompt("You are the reviewer.\n");
    adapter_answered(
        "codex",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "Review the diff."),
            ("MOSAIC_MODEL", "gpt-5.5"),
            ("MOSAIC_SYSTEM_PROMPT_FILE", system.to_str().unwrap()),
        ],
        "codex/real-plain.json",
    );
    // The adapter runs in this test's directory: the repository under review is this one.
    let repository = if root().join(".git").exists() {
        root()
    } else {
        root().join("e2e")
    };
    let untrusted = format!(
        r#"projects={{"{}"={{trust_level="untrusted"}}}}"#,
        fs::canonicalize(repository).unwrap().display()
    );
    assert_eq!(
        stubs.argv("codex").unwrap(),
        [
            "exec",
            "--sandbox",
            "read-only",
            "--json",
            "--model",
            "gpt-5.5",
            "-c",
            &untrusted,
            "--ignore-rules",
            "--",
            "You are the reviewer.\n\n\nReview the diff."
        ]
    );
}

/// A resumable run on the fake provider's fake-model at effort high: `request`, the system
/// prompt file `system` and the session directory `sessions`.
fn fake_model_env<'a>(
    request: &'a str,
    system: &'a Path,
    sessions: &'a Path,
) -> [(&'static str, &'a str); 6] {
    [
        ("MOSAIC_REQUEST", request),
        ("MOSAIC_PROVIDER", "fake"),
        ("MOSAIC_MODEL", "fake-model"),
        ("MOSAIC_THINKING", "high"),
        ("MOSAIC_SYSTEM_PROMPT_FILE", system.to_str().unwrap()),
        ("MOSAIC_SESSION_DIR", sessions.to_str().unwrap()),
    ]
}

#[test]
fn opencode_qualifies_the_model_folds_the_system_prompt_and_resumes_after_success() {
    let stubs = Stubs::with("opencode", "opencode/real-plain.ndjson");
    let system = stubs.system_prompt("You are the reviewer.\n");
    let sessions = tempfile::tempdir().unwrap();
    let env = fake_model_env("Review the diff.", &system, sessions.path());
    adapter_answered("opencode", &stubs, &env, "opencode/real-plain.json");
    let start = [
        "run",
        "--format",
        "json",
        "--agent",
        "plan",
        "--model",
        "fake/fake-model",
        "--variant",
        "high",
    ];
    let prompt = "You are the reviewer.\n\n\nReview the diff.";
    let argv = stubs.argv("opencode").unwrap();
    assert_eq!(argv, [&start[..], &["--", prompt]].concat());
    adapter_answered("opencode", &stubs, &env, "opencode/real-plain.json");
    let resumed = ["--session", "ses_dcd54dea7ffeO0hEFHN837861X", "--", prompt];
    assert_eq!(
        stubs.argv("opencode").unwrap(),
        [&start[..], &resumed[..]].concat()
    );
}

#[test]
fn shell_runs_the_command_with_the_request_as_an_argument() {
    let stubs = Stubs::new();
    let out = adapter(
        "shell",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "it's \"quoted\"\nand multi-line"),
            ("MOOT_SHELL_COMMAND", "printf '%s|%s' \"$0\" \"$1\""),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "gitmoot|it's \"quoted\"\nand multi-line");
    let failing = adapter(
        "shell",
        &stubs,
        &[("MOSAIC_REQUEST", "x"), ("MOOT_SHELL_COMMAND", "exit 7")],
    );
    assert_eq!(failing.status.code(), Some(7));
    let unset = adapter("shell", &stubs, &[("MOSAIC_REQUEST", "x")]);
    assert_failed(
        &unset,
        2,
        "moot adapter (shell): MOOT_SHELL_COMMAND is not set",
    );
}

#[test]
fn mock_echoes_its_response_verbatim() {
    let stubs = Stubs::new();
    let response = "-n {\"gitmoot_result\": 1}\n\tand more";
    let out = adapter(
        "mock",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "ignored"),
            ("MOSAIC_MOCK_RESPONSE", response),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), response);
    let unset = adapter("mock", &stubs, &[("MOSAIC_REQUEST", "x")]);
    assert_failed(
        &unset,
        2,
        "moot adapter (mock): MOSAIC_MOCK_RESPONSE is not set",
    );
}

#[test]
fn pi_gets_its_system_prompt_and_thinking_and_resumes_after_success() {
    let stubs = Stubs::with("pi", "pi/real-plain.ndjson");
    let system = stubs.system_prompt("contracts");
    let sessions = tempfile::tempdir().unwrap();
    let env = fake_model_env("-starts with a dash", &system, sessions.path());
    adapter_answered("pi", &stubs, &env, "pi/real-plain.json");
    let argv = stubs.argv("pi").unwrap();
    assert_eq!(
        argv[..11],
        [
            "-p",
            "--mode",
            "json",
            "--model",
            "fake/fake-model",
            "--thinking",
            "high",
            "--system-prompt",
            system.to_str().unwrap(),
            "--no-skills",
            "--no-extensions"
        ]
    );
    // pi has no `--`: a prompt that starts with a dash is staged, never passed as a flag.
    assert!(argv[argv.len() - 2].starts_with('@'), "{argv:?}");
    assert!(!argv
        .iter()
        .any(|a| a.starts_with('-') && a.contains("dash")));
    adapter_answered("pi", &stubs, &env, "pi/real-plain.json");
    let argv = stubs.argv("pi").unwrap();
    let at = argv
        .iter()
        .position(|a| a == "--session")
        .expect("a resumed session");
    assert_eq!(argv[at + 1], "01a229c1-a427-759c-97f9-02dbd48c638c");
}

#[test]
fn kimi_reads_the_session_from_the_stream_and_resumes_it() {
    let stubs = Stubs::with("kimi", "kimi/real-code-plain-with-exit.ndjson");
    stubs
        .with_stderr("kimi", "kimi/real-code-plain-with-exit.stderr.txt")
        .kimi_session_store(KIMI_SESSION, "completed");
    let sessions = tempfile::tempdir().unwrap();
    let env = [
        ("MOSAIC_REQUEST", "Review the diff."),
        ("MOSAIC_MODEL", "fake"),
        ("MOSAIC_SESSION_DIR", sessions.path().to_str().unwrap()),
    ];
    let first = adapter_answered("kimi", &stubs, &env, "kimi/real-code-plain-with-exit.json");
    assert!(first.stderr.is_empty(), "{}", text(&first.stderr));
    assert_eq!(
        stubs.argv("kimi").unwrap(),
        [
            "--model",
            "fake",
            "-p",
            "Review the diff.",
            "--output-format",
            "stream-json"
        ]
    );
    adapter("kimi", &stubs, &env);
    let argv = stubs.argv("kimi").unwrap();
    assert_eq!(argv[2..4], ["-S", KIMI_SESSION]);
}

/// The session the captured Kimi Code run printed.
const KIMI_SESSION: &str = "session_304a3283-8993-44b9-a4ba-f9d97dfa927f";

/// Regression: Kimi Code exits 0 with the same stream for a length-cut answer, and the adapter
/// printed the cut answer as a success. Its session store records the cut; a store that cannot
/// vouch for the answer fails the run too (fail closed).
#[test]
fn kimi_fails_an_answer_its_session_store_records_as_cut() {
    for (finish, store) in [("truncated", true), ("completed", false)] {
        let stubs = Stubs::with("kimi", "kimi/real-code-plain-with-exit.ndjson");
        stubs.with_stderr("kimi", "kimi/real-code-plain-with-exit.stderr.txt");
        if store {
            stubs.kimi_session_store(KIMI_SESSION, finish);
        }
        let out = adapter("kimi", &stubs, &[("MOSAIC_REQUEST", "hi")]);
        assert_eq!(out.status.code(), Some(1), "{finish}");
        assert!(out.stdout.is_empty(), "a cut answer was printed");
        let stderr = text(&out.stderr);
        let why = if store {
            "unfinished (finishReason truncated"
        } else {
            "cannot verify"
        };
        assert!(
            stderr.starts_with("moot-parse-kimi: truncated: ") && stderr.contains(why),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

#[test]
fn kimi_failure_reports_the_cli_text_verbatim() {
    let stubs = Stubs::new();
    stubs
        .install("kimi", "kimi/real-code-error-with-exit.ndjson", 1)
        .with_stderr("kimi", "kimi/real-code-error-with-exit.stderr.txt");
    let sessions = tempfile::tempdir().unwrap();
    let out = adapter(
        "kimi",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "hi"),
            ("MOSAIC_SESSION_DIR", sessions.path().to_str().unwrap()),
        ],
    );
    assert_failed(
        &out,
        1,
        "moot-parse-kimi: retry_exhausted: error: failed to run prompt: provider.api_error: 500",
    );
    assert!(!text(&out.stderr).to_lowercase().contains("authentication"));
    // The one line names the file that keeps the CLI's whole stderr, which is not deleted.
    let stderr = text(&out.stderr);
    let kept = stderr
        .trim_end()
        .rsplit_once("(the CLI's full stderr: ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no kept stderr named: {stderr}"));
    assert!(
        kept.starts_with(sessions.path().to_str().unwrap()),
        "{kept}"
    );
    assert_eq!(
        fs::read(kept).unwrap(),
        fs::read(root().join("testdata/kimi/real-code-error-with-exit.stderr.txt")).unwrap()
    );
}

// ---- the session lifecycle (man/moot.7, THE SESSION LIFECYCLE)

#[test]
fn start_prints_the_reference_and_stores_it_only_after_success() {
    let stubs = Stubs::with("codex", "codex/real-plain.ndjson");
    let sessions = tempfile::tempdir().unwrap();
    let env = [("MOSAIC_SESSION_DIR", sessions.path().to_str().unwrap())];
    let out = adapter_verb("codex", &stubs, &["start"], &env);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let thread = "01a229c5-2d4b-7fa0-86a5-1f1d0e3c5bd6";
    let expected: serde_json::Value =
        serde_json::from_slice(&fs::read(root().join("testdata/codex/real-plain.json")).unwrap())
            .unwrap();
    let id = expected["run"]["session_id"].as_str().unwrap();
    assert_ne!(id, thread, "the capture's own thread id is what counts");
    assert_eq!(text(&out.stdout), format!("{id}\n"));
    assert_eq!(
        fs::read_to_string(sessions.path().join("codex.session")).unwrap(),
        format!("{id}\n")
    );
    // The startup prompt, never MOSAIC_REQUEST (none was given), on a fresh session.
    let argv = stubs.argv("codex").unwrap();
    assert!(
        argv.last().unwrap().starts_with("Initialize only"),
        "{argv:?}"
    );
    assert!(!argv.contains(&"resume".to_string()), "{argv:?}");

    // A start that fails prints and stores nothing.
    let fresh = tempfile::tempdir().unwrap();
    stubs.install("codex", "codex/real-error.ndjson", 1);
    let failed = adapter_verb(
        "codex",
        &stubs,
        &["start"],
        &[("MOSAIC_SESSION_DIR", fresh.path().to_str().unwrap())],
    );
    assert_failed(&failed, 1, "moot-parse-codex: ");
    assert_eq!(fs::read_dir(fresh.path()).unwrap().count(), 0);
}

#[test]
fn runtimes_that_keep_no_session_start_fresh_or_not_at_all() {
    let stubs = Stubs::with("omp", "omp/real-plain.ndjson");
    for runtime in ["omp", "mock"] {
        let out = adapter_verb(runtime, &stubs, &["start"], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let reference = text(&out.stdout);
        let suffix = reference.trim_end().strip_prefix("fresh:").unwrap();
        assert_eq!(suffix.len(), 16, "{reference:?}");
        assert!(suffix.bytes().all(|b| b.is_ascii_hexdigit()));
    }
    assert!(stubs.argv("omp").is_none(), "omp ran for a start");
    let shell = adapter_verb(
        "shell",
        &stubs,
        &["start"],
        &[("MOOT_SHELL_COMMAND", "echo hi")],
    );
    assert_failed(
        &shell,
        2,
        "moot adapter (shell): start: shell keeps no session",
    );
}

#[test]
fn health_runs_the_runtimes_own_check_without_a_request() {
    let stubs = Stubs::new();
    let shell = adapter_verb(
        "shell",
        &stubs,
        &["health"],
        &[("MOOT_SHELL_COMMAND", "printf '%s|%s' \"$0\" \"$1\"")],
    );
    assert_eq!(shell.status.code(), Some(0), "{}", text(&shell.stderr));
    assert_eq!(
        text(&shell.stdout),
        "gitmoot-health|Gitmoot health check. Reply OK only."
    );
    // mock needs no MOSAIC_MOCK_RESPONSE for it: it echoes its own check.
    let mock = adapter_verb("mock", &stubs, &["health"], &[]);
    assert_eq!(mock.status.code(), Some(0), "{}", text(&mock.stderr));
    assert!(!mock.stdout.is_empty());
    // A health answer needs no gitmoot_result, even where a delivery does (kimi-cli).
    stubs.install("kimi", "kimi/real-plain.ndjson", 0);
    let stream = fs::read_to_string(stubs.path("kimi.stdout")).unwrap();
    let no_result = stream.replace("gitmoot_result", "gitmoot_answer");
    fs::write(stubs.path("kimi.stdout"), no_result).unwrap();
    let kimi = adapter_verb("kimi-cli", &stubs, &["health"], &[]);
    assert_eq!(kimi.status.code(), Some(0), "{}", text(&kimi.stderr));
    assert!(!kimi.stdout.is_empty());
    assert!(stubs
        .argv("kimi")
        .unwrap()
        .contains(&"Gitmoot Kimi live check. Return OK only.".to_string()));
    let delivery = adapter("kimi-cli", &stubs, &[("MOSAIC_REQUEST", "x")]);
    assert_failed(&delivery, 1, "moot-parse-kimi: no_result: ");
}

#[test]
fn validate_checks_a_reference_and_runs_nothing() {
    let stubs = Stubs::new();
    let ok = adapter_verb("codex", &stubs, &["validate", "last"], &[]);
    assert_eq!(
        (ok.status.code(), ok.stdout.is_empty(), ok.stderr.is_empty()),
        (Some(0), true, true)
    );
    let bad = adapter_verb("claude", &stubs, &["validate", "abc"], &[]);
    assert_failed(
        &bad,
        2,
        "moot-render: --session (abc): claude takes a session UUID, last, fresh:<suffix> or nothing",
    );
    let missing = adapter_verb("pi", &stubs, &["validate"], &[]);
    assert_failed(
        &missing,
        2,
        "moot adapter (pi): validate takes one session reference",
    );
    let unknown = adapter_verb("pi", &stubs, &["frobnicate"], &[("MOSAIC_REQUEST", "x")]);
    assert_failed(&unknown, 2, "moot adapter (pi): unknown verb 'frobnicate'");
}

// ---- managed sessions (man/moot.7, MANAGED SESSIONS)

#[test]
fn a_pi_turn_without_its_marker_fails() {
    let stubs = Stubs::with("pi", "pi/real-plain.ndjson");
    let run = tempfile::tempdir().unwrap();
    let marker = run.path().join("turn.done");
    let env = [
        ("MOSAIC_REQUEST", "x"),
        ("MOSAIC_TURN_MARKER", marker.to_str().unwrap()),
    ];
    // pi's stub writes no marker: the turn failed, whatever pi printed and its status said.
    let out = adapter("pi", &stubs, &env);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("the turn ended without its marker"),
        "{stderr}"
    );
    // A marker left from before the turn proves nothing: refused before pi runs.
    fs::write(&marker, "").unwrap();
    fs::remove_file(stubs.path("pi.argv")).unwrap();
    let stale = adapter("pi", &stubs, &env);
    assert_failed(&stale, 2, "moot adapter (pi): MOSAIC_TURN_MARKER (");
    assert!(stubs.argv("pi").is_none());
}

/// The managed session's files reach the CLI in the sandbox as the contract says: the policy
/// and tools files readable, the unslop log writable, the tool socket connectable (a real UNIX
/// socket server); a file beside them that was not named stays out of reach.
#[test]
fn a_managed_sessions_files_reach_the_cli_in_the_sandbox() {
    let stubs = Stubs::new();
    let run = tempfile::tempdir().unwrap();
    let file = |name: &str| run.path().join(name);
    fs::write(file("policy.json"), "POLICY").unwrap();
    fs::write(file("tools.json"), "TOOLS").unwrap();
    fs::write(file("secret"), "SECRET").unwrap();
    let socket = file("tool.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let server = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let (mut stream, _) = listener.accept().unwrap();
        let mut asked = [0u8; 4];
        stream.read_exact(&mut asked).unwrap();
        stream.write_all(b"pong").unwrap();
        asked
    });
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let capture = root().join("testdata/omp/real-plain.ndjson");
    let omp = stubs.path("omp");
    fs::write(
        &omp,
        format!(
            "#!/bin/sh\n\
             cat \"$MOSAIC_POLICY_FILE\" \"$MOSAIC_TOOLS_FILE\" > {ws}/read.txt\n\
             echo '{{\"tell\":1}}' >> \"$MOSAIC_UNSLOP_LOG\"\n\
             cat {secret} > {ws}/secret.txt 2>/dev/null || echo denied > {ws}/secret.txt\n\
             python3 -c 'import os, socket; s = socket.socket(socket.AF_UNIX); \
             s.connect(os.environ[\"MOSAIC_TOOL_SOCKET\"]); s.sendall(b\"ping\"); \
             print(s.recv(4).decode())' > {ws}/socket.txt\n\
             cat {capture}\n",
            ws = ws.display(),
            secret = file("secret").display(),
            capture = capture.display(),
        ),
    )
    .unwrap();
    fs::set_permissions(&omp, fs::Permissions::from_mode(0o755)).unwrap();
    let grant = format!(
        "--rx {} --ro {}",
        stubs.dir.path().display(),
        capture.display()
    );
    let unslop = file("unslop.jsonl");
    adapter_answered(
        "omp",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "x"),
            ("MOSAIC_WORKSPACE", ws.to_str().unwrap()),
            ("MOOT_SANDBOX_FLAGS", &grant),
            ("MOSAIC_POLICY_FILE", file("policy.json").to_str().unwrap()),
            ("MOSAIC_TOOLS_FILE", file("tools.json").to_str().unwrap()),
            ("MOSAIC_UNSLOP_LOG", unslop.to_str().unwrap()),
            ("MOSAIC_TOOL_SOCKET", socket.to_str().unwrap()),
        ],
        "omp/real-plain.json",
    );
    assert_eq!(
        fs::read_to_string(ws.join("read.txt")).unwrap(),
        "POLICYTOOLS"
    );
    assert_eq!(fs::read_to_string(&unslop).unwrap(), "{\"tell\":1}\n");
    assert_eq!(fs::read_to_string(ws.join("socket.txt")).unwrap(), "pong\n");
    assert_eq!(&server.join().unwrap(), b"ping");
    assert_eq!(
        fs::read_to_string(ws.join("secret.txt")).unwrap(),
        "denied\n"
    );
}

/// A parser that dies while its answer drains to stdout never acknowledged it: the adapter
/// fails with its fixed line, whatever status the shell saw, 0 included.
#[test]
fn a_parser_that_dies_mid_answer_fails_the_turn() {
    use std::io::Read;
    let stubs = Stubs::new();
    // An answer far larger than a pipe holds, so the parser blocks on stdout.
    let big = "x".repeat(4 << 20);
    let capture: Vec<String> = fs::read_to_string(root().join("testdata/omp/real-plain.ndjson"))
        .unwrap()
        .lines()
        .map(|line| {
            let mut row: serde_json::Value = serde_json::from_str(line).unwrap();
            if row["type"] == "message_end" && row["message"]["role"] == "assistant" {
                row["message"]["content"] = serde_json::json!([{"type": "text", "text": big}]);
            }
            row.to_string()
        })
        .collect();
    fs::write(stubs.path("big.ndjson"), capture.join("\n") + "\n").unwrap();
    stubs.install("omp", "omp/real-plain.ndjson", 0);
    fs::copy(stubs.path("big.ndjson"), stubs.path("omp.stdout")).unwrap();
    let mut child = adapter_command("omp", &stubs, &[], &[("MOSAIC_REQUEST", "x")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let parser = wait_for_descendant(child.id(), "moot-parse-omp");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(parser),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    // The last line is the fixed one, and no shell crash text shows (moot-run, on the CLI's
    // side, may still say its stdout went away).
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.lines().last(),
        Some(
            "moot adapter (omp): the parser did not complete the turn (exit 137): its answer may \
             be cut short"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("Killed"), "{stderr}");

    // A parser that exits 0 without acknowledging (its status collides with success).
    stubs.install("omp", "omp/real-plain.ndjson", 0);
    let fake = stubs.path("moot-parse-omp");
    fs::write(
        &fake,
        "#!/bin/sh\ncat >/dev/null\necho 'half an ans'\nexit 0\n",
    )
    .unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let collided = adapter("omp", &stubs, &[("MOSAIC_REQUEST", "x")]);
    assert_eq!(collided.status.code(), Some(1));
    assert_eq!(
        text(&collided.stderr),
        "moot adapter (omp): the parser did not complete the turn (exit 0): its answer may be \
         cut short\n"
    );
}

/// The pid of the first process named `name` below `ancestor`, waiting up to 20 s for it.
fn wait_for_descendant(ancestor: u32, name: &str) -> i32 {
    for _ in 0..2000 {
        let procs: Vec<(i32, i32, String)> = fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| {
                let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
                let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                let (head, rest) = stat.rsplit_once(") ")?;
                let comm = head.split_once(" (")?.1.to_string();
                let ppid: i32 = rest.split(' ').nth(1)?.parse().ok()?;
                Some((pid, ppid, comm))
            })
            .collect();
        let below = |mut pid: i32| loop {
            match procs.iter().find(|(p, _, _)| *p == pid) {
                Some((_, parent, _)) if *parent == ancestor as i32 => return true,
                Some((_, parent, _)) if *parent > 1 => pid = *parent,
                _ => return false,
            }
        };
        if let Some((pid, _, _)) = procs
            .iter()
            .find(|(pid, _, comm)| comm == name && below(*pid))
        {
            return *pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("no {name} below {ancestor}");
}

/// The unslop log is granted writable, and a grant follows a link: a symbolic link planted in
/// its place (by an agent that could write beside it in an earlier turn) is refused before
/// anything runs, and its target is left alone.
#[test]
fn a_planted_link_in_place_of_a_writable_file_is_refused() {
    let stubs = Stubs::new();
    stubs.install("omp", "omp/real-plain.ndjson", 0);
    let run = tempfile::tempdir().unwrap();
    let target = run.path().join("authorized_keys");
    fs::write(&target, "keep").unwrap();
    let log = run.path().join("unslop.jsonl");
    std::os::unix::fs::symlink(&target, &log).unwrap();
    let out = adapter(
        "omp",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "x"),
            ("MOSAIC_UNSLOP_LOG", log.to_str().unwrap()),
        ],
    );
    assert_failed(&out, 2, "moot adapter (omp): MOSAIC_UNSLOP_LOG (");
    assert!(stubs.argv("omp").is_none(), "omp ran");
    assert_eq!(fs::read_to_string(&target).unwrap(), "keep");

    let real = run.path().join("real");
    fs::create_dir(&real).unwrap();
    let linked = run.path().join("linked");
    std::os::unix::fs::symlink(&real, &linked).unwrap();
    let marker = linked.join("turn.done");
    let out = adapter(
        "pi",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "x"),
            ("MOSAIC_TURN_MARKER", marker.to_str().unwrap()),
        ],
    );
    assert_failed(
        &out,
        2,
        "moot adapter (pi): MOSAIC_TURN_MARKER's directory (",
    );
}

/// pi's extension writes the turn marker from inside the seat, into a directory the adapter
/// made for it alone: the runner's own directory, where the marker goes once the turn is over,
/// is never granted (an agent could otherwise write anything beside it).
#[test]
fn the_turn_marker_is_written_apart_and_moved_to_the_runners_directory() {
    let stubs = Stubs::new();
    let run = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path();
    let capture = root().join("testdata/pi/real-plain.ndjson");
    let pi = stubs.path("pi");
    fs::write(
        &pi,
        format!(
            "#!/bin/sh\n\
             echo done > \"$MOSAIC_TURN_MARKER\"\n\
             echo planted > {run}/beside 2>/dev/null && echo wrote > {ws}/beside.txt || \
             echo denied > {ws}/beside.txt\n\
             cat {capture}\n",
            run = run.path().display(),
            ws = ws.display(),
            capture = capture.display(),
        ),
    )
    .unwrap();
    fs::set_permissions(&pi, fs::Permissions::from_mode(0o755)).unwrap();
    let grant = format!(
        "--rx {} --ro {}",
        stubs.dir.path().display(),
        capture.display()
    );
    let marker = run.path().join("turn.done");
    adapter_answered(
        "pi",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "x"),
            ("MOSAIC_WORKSPACE", ws.to_str().unwrap()),
            ("MOOT_SANDBOX_FLAGS", &grant),
            ("MOSAIC_TURN_MARKER", marker.to_str().unwrap()),
        ],
        "pi/real-plain.json",
    );
    assert_eq!(fs::read_to_string(&marker).unwrap(), "done\n");
    assert_eq!(
        fs::read_to_string(ws.join("beside.txt")).unwrap(),
        "denied\n"
    );
    assert!(!run.path().join("beside").exists());

    // (Second attack) the agent leaves a link as its marker: it is not moved to the runner's
    // path (where the runner would follow it), and the turn fails.
    fs::write(
        &pi,
        format!(
            "#!/bin/sh\nln -s /etc/passwd \"$MOSAIC_TURN_MARKER\"\ncat {}\n",
            capture.display()
        ),
    )
    .unwrap();
    let linked = run.path().join("linked.done");
    let out = adapter(
        "pi",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "x"),
            ("MOSAIC_WORKSPACE", ws.to_str().unwrap()),
            ("MOOT_SANDBOX_FLAGS", &grant),
            ("MOSAIC_TURN_MARKER", linked.to_str().unwrap()),
        ],
    );
    // (As a turn without its marker: failed, whatever pi printed.)
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("is not a regular file"), "{stderr}");
    assert!(fs::symlink_metadata(&linked).is_err(), "the link was moved");
}

/// A harness file (the unslop log, the turn marker) in reach of the agent or of another user
/// is refused before anything runs: a link anywhere in its path, a directory others can write,
/// a shared temporary directory, the workspace itself.
#[test]
fn harness_files_in_reach_of_the_agent_or_others_are_refused() {
    let stubs = Stubs::with("pi", "pi/real-plain.ndjson");
    let run = tempfile::tempdir().unwrap();
    let real = run.path().join("real");
    fs::create_dir_all(real.join("deeper")).unwrap();
    std::os::unix::fs::symlink(&real, run.path().join("linked")).unwrap();
    let open = run.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let ws = workspace.path().to_str().unwrap();
    let in_ws = format!("{ws}/turn.done");
    let linked_log = run.path().join("linked/deeper/unslop.jsonl");
    let open_marker = open.join("turn.done");
    let cases: [(&str, &str, &str); 4] = [
        (
            "MOSAIC_UNSLOP_LOG",
            linked_log.to_str().unwrap(),
            "has a symbolic link in its path",
        ),
        (
            "MOSAIC_TURN_MARKER",
            open_marker.to_str().unwrap(),
            "is writable by others",
        ),
        ("MOSAIC_TURN_MARKER", "/tmp/turn.done", "/tmp"),
        ("MOSAIC_TURN_MARKER", &in_ws, "inside MOSAIC_WORKSPACE"),
    ];
    for (var, path, why) in cases {
        let out = adapter(
            "pi",
            &stubs,
            &[
                ("MOSAIC_REQUEST", "x"),
                ("MOSAIC_WORKSPACE", ws),
                (var, path),
            ],
        );
        assert_failed(&out, 2, &format!("moot adapter (pi): {var}"));
        assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));
        assert!(stubs.argv("pi").is_none(), "pi ran with {var}={path}");
    }
    assert!(
        !real.join("deeper/unslop.jsonl").exists(),
        "the log was made through the link"
    );
    // A session's private state is the agent's: no harness file there either.
    let sessions = run.path().join("sessions");
    fs::create_dir_all(sessions.join("pi.state/home")).unwrap();
    let in_state = sessions.join("pi.state/home/turn.done");
    let out = adapter(
        "pi",
        &stubs,
        &[
            ("MOSAIC_REQUEST", "x"),
            ("MOSAIC_WORKSPACE", ws),
            ("MOSAIC_SESSION_DIR", sessions.to_str().unwrap()),
            ("MOSAIC_TURN_MARKER", in_state.to_str().unwrap()),
        ],
    );
    assert_failed(&out, 2, "moot adapter (pi): MOSAIC_TURN_MARKER");
    assert!(
        text(&out.stderr).contains("inside a private state"),
        "{}",
        text(&out.stderr)
    );
    assert!(stubs.argv("pi").is_none());
}
