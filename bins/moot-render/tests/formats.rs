#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The three output formats, the prompt sources, defaults from the environment, warnings, the
//! registry listing, --help, --version and the man page, through the built binary.

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::{Env, Outcome};
use serde::Deserialize;
use serde_json::json;

/// What omp's write mode costs, said on stderr whenever a job renders it outside a seat.
const OMP_WRITE_WARNING: &str = "moot-render: warning: omp's --approval-mode=write refuses bash \
without an interactive UI: the shell is unavailable to this run; confine it with moot-sandbox \
and pass --seat for a shell\n";

const OMP_JOB: &[&str] = &[
    "omp",
    "--policy",
    "workspace-write",
    "--action",
    "implement",
    "--model",
    "anthropic/claude-sonnet",
    "--effort",
    "High",
    "--deadline",
    "600",
];

fn with_prompt<'a>(head: &[&'a str], tail: &[&'a str]) -> Vec<&'a str> {
    head.iter().chain(tail).copied().collect()
}

/// Runs [`OMP_JOB`] with `tail` (the format flags and the prompt) after it.
fn run_omp_job(env: &Env, tail: &[&str]) -> Outcome {
    env.run(&with_prompt(OMP_JOB, tail))
}

/// The `argv` of a `--format json` rendering, as strings.
fn json_argv(json: &serde_json::Value) -> Vec<&str> {
    json["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

#[test]
fn nul_is_the_default_and_terminates_every_element() {
    let env = Env::new();
    let out = run_omp_job(&env, &["--", "Fix the bug\nin 'parser'"]);
    let expected: Vec<u8> = [
        "omp",
        "-p",
        "--mode=json",
        "--approval-mode=write",
        "--no-session",
        "--no-extensions",
        "--no-skills",
        "--no-rules",
        "--model",
        "anthropic/claude-sonnet",
        "--thinking",
        "high",
        "--max-time",
        "540",
        "--",
        "Fix the bug\nin 'parser'",
    ]
    .iter()
    .flat_map(|arg| arg.bytes().chain([0]))
    .collect();
    assert_eq!(out.stdout, expected);
    assert_eq!(out.stderr, OMP_WRITE_WARNING);
    let explicit = run_omp_job(&env, &["--format", "nul", "--", "Fix the bug\nin 'parser'"]);
    assert_eq!(explicit.stdout, out.stdout);
}

#[test]
fn sh_is_one_quoted_line() {
    let env = Env::new();
    let out = run_omp_job(&env, &["--format", "sh", "--", "it's a\ntest"]);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stdout_text(),
        "omp -p --mode=json --approval-mode=write --no-session --no-extensions --no-skills --no-rules \
         --model anthropic/claude-sonnet \
         --thinking high --max-time 540 -- $'it\\'s a\\ntest'\n"
    );
    // The line means the same argv to a shell that reads it back.
    let echoed = Command::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\0' {}", out.stdout_text().trim_end()))
        .output()
        .unwrap();
    let nul = run_omp_job(&env, &["--", "it's a\ntest"]);
    assert_eq!(echoed.stdout, nul.stdout);
}

#[test]
fn json_carries_argv_policy_plan_and_warnings() {
    let env = Env::new();
    let out = run_omp_job(
        &env,
        &[
            "--plan",
            "--effort",
            "ludicrous",
            "--format",
            "json",
            "--",
            "Plan it",
        ],
    );
    assert_eq!(
        out.json(),
        json!({
            "runtime": "omp",
            "argv": ["omp", "-p", "--mode=json", "--approval-mode=write", "--no-session", "--no-extensions", "--no-skills", "--no-rules",
                     "--model", "anthropic/claude-sonnet", "--max-time", "540", "--plan-yolo",
                     "--plan-yolo-into", "anthropic/claude-sonnet", "--", "Plan it"],
            "staged": [],
            "stage_dir": null,
            "preview": true,
            "policy": {"value": "workspace-write", "declared": "applied", "enforced_by": "cli"},
            "plan_mode": "plan-into:anthropic/claude-sonnet",
            "session_id": null,
            "warnings": ["--effort (ludicrous): not one of omp's levels (off, minimal, low, \
                          medium, high, xhigh, max, auto); dropped, omp keeps its own default",
                         OMP_WRITE_WARNING
                             .trim_start_matches("moot-render: warning: ")
                             .trim_end()]
        })
    );
    // Warnings go to stderr in every format.
    assert_eq!(
        out.stderr,
        format!(
            "moot-render: warning: --effort (ludicrous): not one of omp's levels (off, minimal, \
             low, medium, high, xhigh, max, auto); dropped, omp keeps its own default\n\
             {OMP_WRITE_WARNING}"
        )
    );
    for format in ["nul", "sh"] {
        let other = run_omp_job(
            &env,
            &["--effort", "ludicrous", "--format", format, "--", "x"],
        );
        assert_eq!(other.code, 0);
        assert_eq!(other.stderr, out.stderr);
    }
}

#[test]
fn a_readonly_seat_is_declared_widened() {
    let out = Env::new().run(&["omp", "--readonly-seat", "--format", "json", "--", "Review"]);
    let json = out.json();
    assert_eq!(
        json["policy"],
        json!({"value": "read-only", "declared": "widened", "enforced_by": "moot-sandbox"})
    );
    assert_eq!(json["argv"][3], "--approval-mode=yolo");
}

/// In a seat each CLI's own confinement is off, declared widened and enforced by moot-sandbox;
/// outside one the policy maps to the CLI's own flags.
#[test]
fn a_seat_turns_each_clis_own_confinement_off() {
    let env = Env::new();
    for (runtime, extra, flag) in [
        ("omp", &[][..], "--approval-mode=yolo"),
        (
            "codex",
            &[][..],
            "--dangerously-bypass-approvals-and-sandbox",
        ),
        (
            "claude",
            &["--effort", "low"][..],
            "--dangerously-skip-permissions",
        ),
    ] {
        let mut args = vec![
            runtime,
            "--seat",
            "--policy",
            "workspace-write",
            "--format",
            "json",
        ];
        args.extend(extra);
        args.extend(["--", "Fix it"]);
        let out = env.run(&args);
        let json = out.json();
        assert_eq!(
            json["policy"],
            json!({"value": "workspace-write", "declared": "widened", "enforced_by": "moot-sandbox"}),
            "{runtime}"
        );
        let argv = json_argv(&json);
        assert!(argv.contains(&flag), "{runtime}: {argv:?}");
        assert!(
            !argv.contains(&"--sandbox") && !argv.contains(&"--permission-mode"),
            "{argv:?}"
        );
        assert_eq!(out.stderr, "", "{runtime}");
    }
}

#[test]
fn every_prompt_source_gives_the_same_argv() {
    let env = Env::new();
    let prompt = "-p @file --force\n\"quoted\" 'single' $(id) `x` a=b é";
    let file = env.work().join("job.md");
    fs::write(&file, prompt).unwrap();
    let from_arg = env.run(&["omp", "--", prompt]);
    let from_file = env.run(&["omp", "--prompt-file", "job.md"]);
    let from_stdin = env.run_with(&["omp", "-"], Some(prompt.as_bytes()));
    let from_dash_file = env.run_with(&["omp", "--prompt-file", "-"], Some(prompt.as_bytes()));
    let argv = from_arg.argv();
    assert_eq!(argv[argv.len() - 2..], ["--", prompt]);
    assert_eq!(from_file.argv(), argv);
    assert_eq!(from_stdin.argv(), argv);
    assert_eq!(from_dash_file.argv(), argv);
}

#[test]
fn a_prompt_that_is_just_separators_is_still_one_token() {
    let out = Env::new().run(&["omp", "--", "--"]);
    let argv = out.argv();
    assert_eq!(argv[argv.len() - 2..], ["--", "--"]);
}

#[test]
fn claude_reports_the_session_it_starts() {
    let env = Env::new();
    let json = env
        .run(&["claude", "--format", "json", "--", "Initialize"])
        .json();
    let id = json["session_id"].as_str().unwrap().to_string();
    let argv = json_argv(&json);
    assert_eq!(
        argv,
        [
            "claude",
            "--strict-mcp-config",
            "--setting-sources",
            "user",
            "--session-id",
            &id,
            "-p",
            "--output-format",
            "json",
            "--",
            "Initialize"
        ]
    );
    assert_eq!(id.len(), 36);
    assert_eq!(&id[14..15], "4", "a version-4 UUID: {id}");
    let out = env.run(&["claude", "--stream", "--", "Initialize"]);
    let argv = out.argv();
    let id = &argv[5];
    assert_eq!(
        out.stderr,
        format!("moot-render: claude session id {id}: store it only if the run succeeds\n")
    );
    assert_eq!(
        argv[6..],
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--",
            "Initialize"
        ]
    );
    let other = env.run(&["claude", "--", "Initialize"]).argv();
    assert_ne!(&other[5], id, "every start gets its own session id");
}

#[test]
fn runtime_defaults_come_from_the_environment_after_the_flags() {
    let env = Env::new()
        .var("MOOT_CODEX_DEFAULT_MODEL", "gpt-5.5-codex")
        .var("MOOT_CODEX_DEFAULT_EFFORT", "high");
    // codex is told the repository under review (its working directory) is untrusted.
    let untrusted = format!(
        r#"projects={{"{}"={{trust_level="untrusted"}}}}"#,
        std::fs::canonicalize(env.work()).unwrap().display()
    );
    assert_eq!(
        env.run(&["codex", "--", "review"]).argv(),
        [
            "codex",
            "exec",
            "--json",
            "--model",
            "gpt-5.5-codex",
            "-c",
            "model_reasoning_effort=high",
            "-c",
            &untrusted,
            "--ignore-rules",
            "--",
            "review"
        ]
    );
    assert_eq!(
        env.run(&["codex", "--model", "o3", "--effort", "low", "--", "review"])
            .argv(),
        [
            "codex",
            "exec",
            "--json",
            "--model",
            "o3",
            "-c",
            "model_reasoning_effort=low",
            "-c",
            &untrusted,
            "--ignore-rules",
            "--",
            "review"
        ]
    );
    // An empty flag (an unset shell variable) falls through to the default.
    assert_eq!(
        env.run(&["codex", "--model", "", "--", "review"]).argv()[4],
        "gpt-5.5-codex"
    );
    // Another runtime's default is not this one's.
    assert_eq!(
        env.run(&["kimi", "--", "review"]).argv(),
        ["kimi", "-p", "review", "--output-format", "stream-json"]
    );
}

#[test]
fn an_environment_that_is_not_utf8_is_no_obstacle() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new()
        .var("LC_WEIRD", std::ffi::OsStr::from_bytes(b"\xff\xfe"))
        .var("MOOT_OMP_DEFAULT_MODEL", "a/b");
    let argv = env.run(&["omp", "--", "x"]).argv();
    assert_eq!(argv[8..10], ["--model", "a/b"]);
    assert_eq!(env.run(&["--list"]).code, 0);
}

#[test]
fn every_runtime_renders() {
    let env = Env::new();
    let untrusted = format!(
        r#"projects={{"{}"={{trust_level="untrusted"}}}}"#,
        std::fs::canonicalize(env.work()).unwrap().display()
    );
    let untrusted = untrusted.as_str();
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["omp"],
            &[
                "omp",
                "-p",
                "--mode=json",
                "--approval-mode=yolo",
                "--no-session",
                "--no-extensions",
                "--no-skills",
                "--no-rules",
                "--",
                "go",
            ],
        ),
        (
            &["kimi"],
            &["kimi", "-p", "go", "--output-format", "stream-json"],
        ),
        (
            &["kimi-cli"],
            &[
                "kimi",
                "--print",
                "-p",
                "go",
                "--output-format",
                "stream-json",
            ],
        ),
        (
            &["codex", "--session", "last"],
            &[
                "codex",
                "exec",
                "--json",
                "resume",
                "-c",
                untrusted,
                "--ignore-rules",
                "--last",
                "--",
                "go",
            ],
        ),
        (
            &["claude", "--session", "last"],
            &[
                "claude",
                "--strict-mcp-config",
                "--setting-sources",
                "user",
                "--continue",
                "-p",
                "--output-format",
                "json",
                "--",
                "go",
            ],
        ),
        (
            &["pi"],
            &[
                "pi",
                "-p",
                "--mode",
                "json",
                "--no-skills",
                "--no-extensions",
                "--no-prompt-templates",
                "--no-themes",
                "--offline",
                "go",
            ],
        ),
        (
            &["shell", "--session", "cat"],
            &["sh", "-c", "cat", "gitmoot", "go"],
        ),
        (&["mock"], &["printf", "%s", "go"]),
    ];
    for (args, expected) in cases {
        let argv = env.run(&with_prompt(args, &["--", "go"])).argv();
        assert_eq!(argv, *expected, "{args:?}");
    }
}

#[test]
fn health_checks_use_the_runtime_prompt() {
    let env = Env::new();
    assert_eq!(
        env.run(&["shell", "--session", "bot", "--health"]).argv(),
        [
            "sh",
            "-c",
            "bot",
            "gitmoot-health",
            "Gitmoot health check. Reply OK only."
        ]
    );
    assert_eq!(
        env.run(&["omp", "--health"]).argv().last().unwrap(),
        "Gitmoot omp live check. Return OK only."
    );
}

#[test]
fn the_mock_argv_echoes_the_prompt_when_run() {
    let env = Env::new();
    let prompt = "-n %s\\n 'x'\nsecond line";
    let argv = env.run(&["mock", "--", prompt]).argv();
    let echoed = Command::new(&argv[0]).args(&argv[1..]).output().unwrap();
    assert_eq!(echoed.stdout, prompt.as_bytes());
}

/// One `--list --json` entry, typed: the JSON must decode into it exactly.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Entry {
    name: String,
    executable: String,
    installed: bool,
    path: Option<String>,
    description: String,
    parser: Option<String>,
    capabilities: Vec<Capability>,
    matrix: Matrix,
    sessions: String,
    default_model: Option<String>,
    default_effort: Option<String>,
    default_model_env: String,
    default_effort_env: String,
    effort_levels: Option<Vec<String>>,
    plan_mode: bool,
    readonly_seat: bool,
    system_prompt_file: bool,
    extensions: bool,
    tools: Vec<String>,
    managed_bundle: bool,
    prompt_staging: Staging,
    prompt_ceiling: Option<u64>,
    usage_source: String,
    repo_code: Vec<String>,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Capability {
    Review,
    Implement,
    Ask,
    Produce,
}

#[derive(Debug, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Staging {
    Attach,
    Instruct,
    Refuse,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Matrix {
    streaming: bool,
    tool_events: bool,
    approval: bool,
    diff_reporting: bool,
    multi_turn: bool,
    model_switching: bool,
    mcp: bool,
    cancellation: bool,
    usage: bool,
}

/// A PATH holding a fake `omp` executable and nothing else of the CLIs.
fn path_with_fake_omp(env: &Env) -> std::ffi::OsString {
    let bin = env.root.path().join("bin");
    fs::create_dir(&bin).unwrap();
    let omp = bin.join("omp");
    fs::write(&omp, "#!/bin/sh\nexit 0\n").unwrap();
    fs::set_permissions(&omp, fs::Permissions::from_mode(0o755)).unwrap();
    let mut path = bin.into_os_string();
    path.push(":/usr/bin:/bin");
    path
}

#[test]
fn list_json_is_the_whole_registry() {
    let env = Env::new();
    let path = path_with_fake_omp(&env);
    let env = env
        .var("PATH", &path)
        .var("MOOT_OMP_DEFAULT_MODEL", "anthropic/claude-opus-4")
        .var("MOOT_CLAUDE_DEFAULT_EFFORT", "max");
    let out = env.run(&["--list", "--json"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    let entries: Vec<Entry> = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let registered: Vec<&str> = moot::registry::all().iter().map(|m| m.name).collect();
    assert_eq!(names, registered);
    let entry = |name: &str| entries.iter().find(|e| e.name == name).unwrap();
    let omp = entry("omp");
    assert_eq!(omp.parser.as_deref(), Some("moot-parse-omp"));
    assert_eq!(entry("kimi-cli").parser.as_deref(), Some("moot-parse-kimi"));
    assert_eq!(entry("shell").parser, None);
    assert!(entry("pi").tools.contains(&"bash".to_string()));
    assert!(entry("claude").managed_bundle && entry("codex").tools.is_empty());
    assert!(omp.installed);
    assert_eq!(
        omp.path.as_deref(),
        Some(env.root.path().join("bin/omp").to_str().unwrap())
    );
    assert_eq!(
        omp.capabilities,
        [Capability::Review, Capability::Implement, Capability::Ask]
    );
    assert!(!omp.matrix.multi_turn && omp.matrix.cancellation);
    assert_eq!(
        omp.default_model.as_deref(),
        Some("anthropic/claude-opus-4")
    );
    assert_eq!(omp.default_model_env, "MOOT_OMP_DEFAULT_MODEL");
    assert_eq!(omp.prompt_staging, Staging::Attach);
    assert_eq!(omp.prompt_ceiling, Some(5_242_880));
    assert!(omp.plan_mode);
    let claude = entry("claude");
    assert!(!claude.installed && claude.path.is_none());
    assert_eq!(claude.default_effort.as_deref(), Some("max"));
    assert_eq!(claude.capabilities.len(), 4);
    assert_eq!(entry("kimi").prompt_staging, Staging::Instruct);
    assert!(!entry("pi").matrix.mcp, "pi has no MCP");
    assert!(
        entries.iter().all(|e| !e.matrix.approval),
        "no runtime approves headless"
    );
    assert!(entries
        .iter()
        .filter(|e| e.name != "omp")
        .all(|e| !e.plan_mode));

    let one: Vec<Entry> =
        serde_json::from_slice(&env.run(&["--list", "--json", "pi"]).stdout).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].name, "pi");
}

/// Kimi Code and the legacy kimi-cli are both `kimi`: `--list` tells which one PATH has by how
/// it was installed (an npm tree, a Python venv), and counts a `kimi` it cannot place for both.
#[test]
fn list_tells_kimi_code_from_kimi_cli_by_how_it_was_installed() {
    let installs = tempfile::tempdir().unwrap();
    let npm = installs.path().join("npm/node_modules");
    fs::create_dir_all(npm.join("@moonshot-ai/kimi-code/dist")).unwrap();
    fs::create_dir_all(npm.join(".bin")).unwrap();
    let script = npm.join("@moonshot-ai/kimi-code/dist/cli.js");
    fs::write(&script, "#!/usr/bin/env node\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(
        "../@moonshot-ai/kimi-code/dist/cli.js",
        npm.join(".bin/kimi"),
    )
    .unwrap();
    let venv = installs.path().join("venv");
    fs::create_dir_all(venv.join("bin")).unwrap();
    fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    let unknown = installs.path().join("plain");
    fs::create_dir_all(&unknown).unwrap();
    for kimi in [venv.join("bin/kimi"), unknown.join("kimi")] {
        fs::write(&kimi, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&kimi, fs::Permissions::from_mode(0o755)).unwrap();
    }
    for (bin, kimi_code, kimi_cli) in [
        (npm.join(".bin"), true, false),
        (venv.join("bin"), false, true),
        (unknown, true, true),
    ] {
        let env = Env::new().var("PATH", bin.to_str().unwrap());
        let out = env.run(&["--list", "--json"]);
        assert_eq!((out.code, out.stderr.as_str()), (0, ""));
        let entries: Vec<Entry> = serde_json::from_slice(&out.stdout).unwrap();
        let installed = |name: &str| entries.iter().find(|e| e.name == name).unwrap().installed;
        assert_eq!(
            (installed("kimi"), installed("kimi-cli")),
            (kimi_code, kimi_cli),
            "{}",
            bin.display()
        );
    }
}

#[test]
fn list_json_is_read_by_jq() {
    let jq = std::path::Path::new("/usr/bin/jq");
    if !jq.exists() {
        moot_testkit::skip(
            "jq",
            "/usr/bin/jq is not installed; serde already checked the JSON",
        );
        return;
    }
    let env = Env::new();
    let listed = env.run(&["--list", "--json"]);
    let mut command = Command::new(jq);
    let runtimes = moot::registry::all().len();
    command.args([
        "-e".to_string(),
        format!(
            "length == {runtimes} and .[0].name == \"omp\" and (.[0].capabilities | index(\"produce\") | not)"
        ),
    ]);
    let out = common::run(command, Some(&listed.stdout));
    assert_eq!(
        (out.code, String::from_utf8_lossy(&out.stdout).trim()),
        (0, "true")
    );
}

#[test]
fn list_text_is_a_table() {
    let env = Env::new();
    let path = path_with_fake_omp(&env);
    let env = env.var("PATH", path);
    let out = env.run(&["--list"]);
    assert_eq!(out.code, 0);
    let text = out.stdout_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + moot::registry::all().len());
    assert_eq!(
        lines[0],
        "RUNTIME   INSTALLED  CAPABILITIES                  DEFAULT MODEL  DEFAULT EFFORT  SESSIONS"
    );
    assert!(lines[1].starts_with("omp       yes        review,implement,ask          -"));
    assert!(lines[5].starts_with("claude    no         review,implement,ask,produce  -"));
}

#[test]
fn help_and_version() {
    let env = Env::new();
    let help = env.run(&["--help"]);
    assert_eq!(help.code, 0);
    let text = help.stdout_text();
    assert!(
        text.contains("Usage: moot-render [OPTIONS] RUNTIME [-- PROMPT | --prompt-file FILE | -]")
    );
    assert!(text.contains("Examples:\n  moot-render omp --policy workspace-write"));
    let version = env.run(&["--version"]);
    assert_eq!(
        (version.code, version.stdout_text()),
        (0, format!("moot-render {}\n", env!("CARGO_PKG_VERSION")))
    );
}

#[test]
fn the_man_page_documents_every_long_flag() {
    moot_testkit::check_man_page(common::BIN, "moot-render.1");
    // Written as roff's \-\-flag, every one, and the page has every section a page needs.
    let page = fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../man/moot-render.1"
    ))
    .unwrap();
    let help = Env::new().run(&["--help"]).stdout_text();
    for flag in help
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("--"))
        .filter_map(|rest| rest.split([' ', ',', '=']).next())
    {
        let roff = format!("\\-\\-{}", flag.replace('-', "\\-"));
        assert!(page.contains(&roff), "man/moot-render.1 lacks {roff}");
    }
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "ENVIRONMENT",
        "EXIT STATUS",
        "EXAMPLES",
    ] {
        assert!(
            page.contains(&format!(".SH {section}\n"))
                || page.contains(&format!(".SH \"{section}\"\n")),
            "{section}"
        );
    }
}
