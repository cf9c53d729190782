//! moot-doctor as a user runs it: the built tool with its built siblings (moot-render,
//! moot-run, moot-sandbox, moot-parse-*), against stub CLIs that imitate codex and Claude Code
//! (a correct one, one whose terminal event is renamed, one that exits 0 after an error row).
//! The pinned real CLIs are certified in real_cli.rs (`make test-realcli`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{doctor, stderr};

/// A codex answer with a valid gitmoot_result, as `codex exec --json` prints it.
const ANSWER_ROW: &str = r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Done.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"done\",\"findings\":[],\"changes_made\":[],\"tests_run\":[],\"needs\":[],\"delegations\":[]}}"}}"#;

/// An executable script `dir/codex` that prints `version` for `--version` and otherwise `rows`
/// (then exits `status`), imitating codex without a model.
fn stub(dir: &Path, version: &str, rows: &[&str], status: u8) -> PathBuf {
    stub_cli(dir, "codex", &format!("codex-cli {version}"), rows, status)
}

/// An executable script `dir/executable` that prints `version_line` for `--version` and
/// otherwise `rows` (then exits `status`): a CLI without a model.
fn stub_cli(
    dir: &Path,
    executable: &str,
    version_line: &str,
    rows: &[&str],
    status: u8,
) -> PathBuf {
    let path = dir.join(executable);
    let body = rows.join("\n");
    fs::write(
        &path,
        format!(
            "#!/bin/sh\ncase \"$1\" in --version) echo '{version_line}'; exit 0;; esac\n\
             cat <<'ROWS'\n{body}\nROWS\nexit {status}\n"
        ),
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The rows of a successful codex turn, its terminal event spelled `terminal`.
fn codex_turn(terminal: &str) -> Vec<String> {
    vec![
        r#"{"type":"thread.started","thread_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}"#.into(),
        r#"{"type":"turn.started"}"#.into(),
        ANSWER_ROW.into(),
        format!(
            r#"{{"type":"{terminal}","usage":{{"input_tokens":10,"cached_input_tokens":0,"output_tokens":5}}}}"#
        ),
    ]
}

fn rows(turn: &[String]) -> Vec<&str> {
    turn.iter().map(String::as_str).collect()
}

/// A codex stub that reads right (codex 0.171.0, a successful turn) and also runs `shell` just
/// before the first `before` in its script.
fn right_stub_running(dir: &Path, before: &str, shell: &str) -> PathBuf {
    let program = stub(dir, codex_pinned(), &rows(&codex_turn("turn.completed")), 0);
    let script = fs::read_to_string(&program).unwrap();
    assert!(script.contains(before), "{before:?} is not in the stub");
    fs::write(
        &program,
        script.replacen(before, &format!("{shell}{before}"), 1),
    )
    .unwrap();
    program
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let program = stub(dir.path(), codex_pinned(), &[], 0);
    let program = program.to_str().unwrap();
    for args in [
        vec!["nosuch"],
        vec!["shell"],
        vec!["--program", program],
        vec!["--program", program, "codex", "pi"],
        vec!["--scenario", "nosuch", "codex"],
        vec!["--bogus"],
        vec!["--port", "1", "codex"],
        vec!["--serve", "codex"],
        vec!["--legacy-result", "codex"],
        vec!["--serve", "--retry-then", "nosuch"],
        vec!["--deadline", "soon", "codex"],
        vec![
            "--fake-home",
            "h",
            "--origin",
            "http://127.0.0.1:1",
            "codex",
            "pi",
        ],
        vec!["--fake-home", "h", "codex"],
        vec!["--fake-home", "h", "--origin", "127.0.0.1:1", "codex"],
        vec![
            "--fake-home",
            "h",
            "--origin",
            "http://127.0.0.1:1/v1",
            "codex",
        ],
        vec![
            "--fake-home",
            "h",
            "--origin",
            "http://127.0.0.1:1",
            "shell",
        ],
        vec![
            "--fake-home",
            "h",
            "--origin",
            "http://127.0.0.1:1",
            "--serve",
        ],
        vec!["--origin", "http://127.0.0.1:1", "codex"],
        vec!["--key-file", "k", "codex"],
        vec!["--trust", "/", "codex"],
        vec!["--tls-cert", "c", "--tls-key", "k", "codex"],
        vec!["--serve", "--tls-cert", "c"],
    ] {
        let out = doctor().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let text = stderr(&out);
        assert_eq!(text.lines().count(), 1, "{args:?}: {text}");
        assert!(text.starts_with("moot-doctor: "), "{args:?}: {text}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `--fake-home` writes what a certification's HOME holds, with the origin and key given, and
/// prints sh that sets the CLI's variables and the pipeline's facts.
#[test]
fn fake_home_writes_the_runtime_s_configuration_and_prints_sh() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("provider.key");
    fs::write(&key, "e2e-key-0123\n").unwrap();
    let run = |runtime: &str, home: &Path| {
        let out = doctor()
            .arg("--fake-home")
            .arg(home)
            .args(["--origin", "http://127.0.0.1:4321", "--key-file"])
            .arg(&key)
            .arg(runtime)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{runtime}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    // omp keeps the key in its configuration.
    let omp_home = dir.path().join("omp");
    run("omp", &omp_home);
    let models = fs::read_to_string(omp_home.join(".omp/agent/models.yml")).unwrap();
    assert!(
        models.contains("baseUrl: http://127.0.0.1:4321/v1"),
        "{models}"
    );
    assert!(models.contains("apiKey: e2e-key-0123"), "{models}");
    // codex takes it from a variable, which the pipeline must keep: sh sets both.
    let codex_home = dir.path().join("codex");
    let printed = run("codex", &codex_home);
    let config = fs::read_to_string(codex_home.join(".codex/config.toml")).unwrap();
    assert!(
        config.contains("base_url = \"http://127.0.0.1:4321/v1\""),
        "{config}"
    );
    let evaluated = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"eval "$1"; printf '%s|' "$CODEX_HOME" "$FAKE_PROVIDER_API_KEY" "$moot_keep" "$moot_key_env" "$moot_stderr_file""#)
        .arg("sh")
        .arg(&printed)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&evaluated.stdout),
        format!(
            "{}|e2e-key-0123|FAKE_PROVIDER_API_KEY|FAKE_PROVIDER_API_KEY||",
            fs::canonicalize(&codex_home)
                .unwrap()
                .join(".codex")
                .display()
        ),
        "{printed}"
    );
    // omp's key is in its configuration: no variable holds it.
    assert!(run("omp", &omp_home).contains("\nmoot_key_env=''\n"));
    // codex trusts the project --trust names, and only then.
    assert!(!config.contains("trust_level"), "{config}");
    let trusting = |project: &Path| {
        fs::create_dir(project).unwrap();
        doctor()
            .arg("--fake-home")
            .arg(&codex_home)
            .args(["--origin", "http://127.0.0.1:4321", "--trust"])
            .arg(project)
            .arg("codex")
            .output()
            .unwrap()
    };
    let project = dir.path().join("project");
    let out = trusting(&project);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let config = fs::read_to_string(codex_home.join(".codex/config.toml")).unwrap();
    assert!(
        config.ends_with(&format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            fs::canonicalize(&project).unwrap().display()
        )),
        "{config}"
    );
    // A project whose name TOML would need escaped is refused.
    let out = trusting(&dir.path().join("a\"b"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("has a quote"), "{}", stderr(&out));
    // Kimi Code's pipeline reads its stderr and its session store; kimi-cli's text mode asks
    // for the result.
    assert!(run("kimi-cli", &dir.path().join("kimi-cli"))
        .contains("\nmoot_text_flags=--require-result\n"));
    let kimi = run("kimi", &dir.path().join("kimi"));
    assert!(kimi.contains("\nmoot_stderr_file=1\n"), "{kimi}");
    assert!(
        kimi.contains("\nmoot_session_store=.kimi-code/sessions\n"),
        "{kimi}"
    );
    // A key the configuration files would need escaped is refused, not written.
    fs::write(&key, "x\",\"baseUrl\":\"http://elsewhere/v1\n").unwrap();
    let out = doctor()
        .arg("--fake-home")
        .arg(dir.path().join("pi"))
        .args(["--origin", "http://127.0.0.1:4321", "--key-file"])
        .arg(&key)
        .arg("pi")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--key-file: the key has '\"'"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("pi").exists());
}

/// `--environment` reports what confines a job here, and `--strict` fails where Landlock cannot
/// enforce: under a stand-in for a container profile that answers Landlock's calls with ENOSYS
/// (a real seccomp filter), the report names the filter and the error.
#[test]
fn the_environment_is_reported_and_strict_fails_where_landlock_cannot_enforce() {
    let out = doctor().args(["--environment", "--json"]).output().unwrap();
    let here: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    if here["landlock"] != "available" {
        return moot_testkit::skip(
            "the_environment_is_reported_and_strict_fails_where_landlock_cannot_enforce",
            "this kernel has no Landlock",
        );
    }
    assert_eq!(out.status.code(), Some(0), "{here}");
    assert_eq!(here["enforces"], true, "{here}");
    assert!(here["landlock_abi"].as_i64().unwrap() >= 1, "{here}");
    let table = doctor().arg("--environment").output().unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.starts_with("| environment | found |\n|---|---|\n| Landlock | "),
        "{text}"
    );
    for row in [
        "| seccomp | ",
        "| no_new_privs | ",
        "| container | ",
        "| user namespaces | ",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }

    let mut command = doctor();
    command.args(["--environment", "--json", "--strict"]);
    let out = moot_testkit::seccomp::refusing_landlock(&mut command, nix::libc::ENOSYS)
        .output()
        .unwrap();
    let filtered: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{filtered}");
    assert_eq!(filtered["landlock"], "refused_by_seccomp", "{filtered}");
    assert_eq!(filtered["landlock_errno"], "ENOSYS");
    assert_eq!(filtered["enforces"], false);
    assert_eq!(filtered["seccomp"], "filter");
    assert_eq!(filtered["no_new_privs"], true);
    let text = stderr(&out);
    assert_eq!(
        text,
        "moot-doctor: this environment cannot confine a job: Landlock is refused by seccomp (ENOSYS)\n"
    );
    // Without --strict it is reported, and the exit status is left to the runs.
    let mut command = doctor();
    command.arg("--environment");
    let out = moot_testkit::seccomp::refusing_landlock(&mut command, nix::libc::EPERM)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("| Landlock | refused by seccomp: EPERM |")
    );
    assert!(stderr(&out).ends_with("(reported only; --strict fails it)\n"));
}

/// A CLI that is not installed: named, its row shows no version to judge, and with nothing on
/// PATH the refusal names each executable once (Kimi Code and kimi-cli share `kimi`).
#[test]
fn a_cli_that_is_not_installed_is_named_as_such() {
    let empty = tempfile::tempdir().unwrap();
    let out = doctor()
        .env("PATH", empty.path())
        .args(["codex", "--scenario", "plain"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| codex | - | - |"), "{table}");
    assert!(!table.contains("unknown"), "{table}");

    let out = doctor().env("PATH", empty.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert!(text.starts_with("moot-doctor: none of "), "{text}");
    assert_eq!(text.matches("kimi,").count(), 1, "{text}");
}

#[test]
fn help_shows_examples_and_version_prints() {
    let out = doctor().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    // --serve's scenarios are listed, from the fake model's one list, and in the man page.
    let man = fs::read_to_string(moot_e2e::root().join("man/moot-doctor.1")).unwrap();
    for name in moot_net::fake_model::scenario::Scenario::NAMES {
        assert!(help.contains(&format!(" {name}")), "--help lacks {name}");
        assert!(
            man.contains(&format!(".B {name}\n")) || man.contains(&format!(".BI \"{name} ")),
            "moot-doctor.1 lacks {name}"
        );
    }
    // One set of scenario names: a certified scenario named like a fake model's runs that one,
    // the others are runs the end-to-end suite knows by the same name; all are in --help and in
    // the man page.
    let fake = moot_net::fake_model::scenario::Scenario::NAMES;
    let e2e = fs::read_to_string(moot_e2e::root().join("scripts/realcli/e2e.sh")).unwrap();
    let e2e_names = e2e
        .lines()
        .find_map(|line| line.strip_prefix("SCENARIOS=${ONLY:-"))
        .unwrap()
        .trim_end_matches('}');
    for scenario in moot_net::doctor::scenario::SCENARIOS {
        let name = scenario.name;
        assert!(
            name == scenario.fake || !fake.contains(&name),
            "{name} names another scenario of the fake model's than the one it runs"
        );
        assert!(
            fake.contains(&name) || e2e_names.split(' ').any(|n| n == name),
            "{name} is neither the fake model's nor the end-to-end suite's"
        );
        assert!(help.contains(name), "--help lacks {name}");
        assert!(
            man.contains(&format!(".TP\n.B {name}\n")),
            "moot-doctor.1 lacks {name}"
        );
    }
    for want in ["Examples:", "--program", "--keep", "--serve", "Exit status"] {
        assert!(help.contains(want), "--help lacks {want}");
    }
    let out = doctor().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .starts_with("moot-doctor "));
}

#[test]
fn a_cli_that_reads_right_passes_and_one_that_drifted_fails_naming_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let run = |rows: &[&str], status: u8| {
        let sub = tempfile::tempdir_in(dir.path()).unwrap();
        let program = stub(sub.path(), codex_pinned(), rows, status);
        doctor()
            .arg("--program")
            .arg(&program)
            .args(["codex", "--scenario", "plain"])
            .output()
            .unwrap()
    };
    // The control: the same stub with codex's real event names passes.
    let good = run(&rows(&codex_turn("turn.completed")), 0);
    assert_eq!(good.status.code(), Some(0), "{}", stderr(&good));
    assert!(String::from_utf8_lossy(&good.stdout)
        .contains("| codex | 0.171.0 | yes | plain | ok | ok | pass |"));

    // A release that renamed the terminal event.
    let renamed = run(&rows(&codex_turn("turn.done")), 0);
    assert_eq!(renamed.status.code(), Some(1), "{}", stderr(&renamed));
    let text = stderr(&renamed);
    assert!(
        text.lines()
            .any(|l| l.starts_with("moot-doctor: codex plain: expected ok, observed fail:")),
        "{text}"
    );

    // A release that exits 0 after an error row.
    let lying = run(
        &[
            r#"{"type":"thread.started","thread_id":"0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}"#,
            r#"{"type":"turn.started"}"#,
            r#"{"type":"error","message":"stream disconnected before completion"}"#,
            r#"{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}"#,
        ],
        0,
    );
    assert_eq!(lying.status.code(), Some(1), "{}", stderr(&lying));
    assert!(
        stderr(&lying).contains("moot-doctor: codex plain: expected ok, observed fail:"),
        "{}",
        stderr(&lying)
    );
}

/// Drift in a second dialect: Claude Code's own captured stream passes; the same stream with
/// its result row renamed, or a captured error stream that exits 0, fails naming the scenario.
#[test]
fn a_claude_release_that_drifted_fails_naming_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let capture = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/claude")
            .join(name);
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let run = |stream: &str| {
        let sub = tempfile::tempdir_in(dir.path()).unwrap();
        let rows: Vec<&str> = stream.lines().collect();
        let program = stub_cli(sub.path(), "claude", "2.1.332 (Claude Code)", &rows, 0);
        doctor()
            .arg("--program")
            .arg(&program)
            .args(["claude", "--scenario", "plain"])
            .output()
            .unwrap()
    };
    let plain = capture("real-plain.ndjson");
    let good = run(&plain);
    assert_eq!(good.status.code(), Some(0), "{}", stderr(&good));
    assert!(String::from_utf8_lossy(&good.stdout)
        .contains("| claude | 2.1.332 | yes | plain | ok | ok | pass |"));

    let renamed = plain.replace(r#""type":"result""#, r#""type":"final""#);
    assert_ne!(renamed, plain, "the capture has no result row to rename");
    for (drift, stream) in [
        ("renamed", renamed),
        ("lying", capture("real-error.ndjson")),
    ] {
        let out = run(&stream);
        assert_eq!(out.status.code(), Some(1), "{drift}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("moot-doctor: claude plain: expected ok, observed "),
            "{drift}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn json_is_one_document_with_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let program = stub(
        dir.path(),
        "0.172.1",
        &rows(&codex_turn("turn.completed")),
        0,
    );
    let out = doctor()
        .arg("--program")
        .arg(&program)
        .args([
            "codex",
            "--json",
            "--scenario",
            "plain",
            "--scenario",
            "resume",
        ])
        .output()
        .unwrap();
    // The stub never talks to the model: its second turn cannot carry the first.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false);
    let runtimes = report["runtimes"].as_array().unwrap();
    assert_eq!(runtimes.len(), 1);
    let rt = &runtimes[0];
    assert_eq!(rt["runtime"], "codex");
    assert_eq!(rt["version"], "0.172.1");
    assert_eq!(rt["pinned"], codex_pinned());
    assert_eq!(rt["known_good"], ">=0.171.0 <0.172.0");
    assert_eq!(rt["in_range"], false);
    assert!(rt["problem"].is_null());
    // codex's stream names no version.
    assert!(rt["stream_version"].is_null());
    assert!(rt["seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(rt["program"], program.to_str().unwrap());
    let scenarios = rt["scenarios"].as_array().unwrap();
    let names: Vec<&str> = scenarios
        .iter()
        .map(|s| s["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["plain", "resume"]);
    assert_eq!(scenarios[0]["expected"], "ok");
    assert_eq!(scenarios[0]["observed"], "ok");
    assert_eq!(scenarios[0]["result"], "pass");
    assert_eq!(scenarios[1]["result"], "FAIL");
    assert_eq!(
        scenarios[1]["observed"],
        "ok but the second turn did not carry the first"
    );
    for s in scenarios {
        assert_eq!(
            s.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["scenario", "expected", "observed", "result", "why", "seconds"]
        );
    }
    // A scenario that failed on an envelope that passed says no more than its verdict.
    assert!(scenarios[1]["why"].is_null());
    // Not on a terminal: one line per CLI on stderr as it ends, for a log.
    assert!(
        stderr(&out).contains("moot-doctor: codex 0.172.1: 1 pass, 1 FAIL, 0 n/a ("),
        "{}",
        stderr(&out)
    );
}

/// On a terminal each row comes as its scenario ends: the plain row is on the screen while the
/// resume scenario's second turn still runs (the stub holds it until the test has read the row).
#[test]
fn on_a_terminal_each_row_comes_as_its_scenario_ends() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("go");
    let program = right_stub_running(
        dir.path(),
        "cat <<'ROWS'",
        &format!(
            "case \"$*\" in *resume*) while [ ! -e {} ]; do sleep 0.05; done;; esac\n",
            gate.display()
        ),
    );
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut child = doctor()
        .arg("--program")
        .arg(&program)
        .args(["codex", "--scenario", "plain", "--scenario", "resume"])
        .args(["--deadline", "30"])
        .stdout(std::process::Stdio::from(pty.slave))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut screen = fs::File::from(pty.master);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let row_shown = |seen: &[u8]| {
        String::from_utf8_lossy(seen)
            .lines()
            .any(|l| l.contains("| plain |") && l.trim_end().ends_with('|'))
    };
    // Until the plain row is whole, or the doctor is done (the read fails once it exits).
    while !row_shown(&seen) {
        match screen.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    let before = String::from_utf8_lossy(&seen).into_owned();
    fs::write(&gate, "").unwrap();
    while let Ok(n) = screen.read(&mut buf) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    child.wait().unwrap();
    // The environment's table first, then the runtimes'.
    assert!(before.starts_with("| environment | found |"), "{before}");
    assert!(before.contains("\n| runtime | version |"), "{before}");
    assert!(row_shown(before.as_bytes()), "{before}");
    assert!(
        !before.contains("| resume |"),
        "the rows came together, at the end: {before}"
    );
    let all = String::from_utf8_lossy(&seen);
    assert!(all.contains("| resume |"), "{all}");
    assert!(all.contains("codex: "), "the wall time closes it: {all}");
}

/// A CLI that cannot start (here: it cannot open its state) fails every scenario as
/// `no_output`, and the row says why in the CLI's own words, in the table and in `--json`.
#[test]
fn a_cli_that_cannot_start_is_named_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("codex");
    fs::write(
        &program,
        "#!/bin/sh\ncase \"$1\" in --version) echo 'codex-cli 0.171.0'; exit 0;; esac\n\
         echo 'codex: cannot open state directory /state: Permission denied' >&2\nexit 1\n",
    )
    .unwrap();
    fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
    let run = |json: bool| {
        let mut command = doctor();
        command
            .arg("--program")
            .arg(&program)
            .args(["codex", "--scenario", "plain"]);
        if json {
            command.arg("--json");
        }
        command.output().unwrap()
    };
    let said = "its stderr ends: codex: cannot open state directory /state: Permission denied";
    let out = run(true);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let plain = &report["runtimes"][0]["scenarios"][0];
    assert_eq!(plain["observed"], "fail:no_output");
    assert_eq!(plain["result"], "FAIL");
    let why = plain["why"].as_str().unwrap();
    assert!(
        why.starts_with("the CLI printed nothing on stdout") && why.ends_with(said),
        "{why}"
    );
    let table = String::from_utf8(run(false).stdout).unwrap();
    let row = table.lines().find(|l| l.contains("| plain |")).unwrap();
    assert!(
        row.contains("| fail:no_output: the CLI printed nothing"),
        "{row}"
    );
    assert!(row.contains(said), "{row}");
}

#[test]
fn a_version_out_of_range_is_reported_and_fails_only_with_strict() {
    let dir = tempfile::tempdir().unwrap();
    let program = stub(
        dir.path(),
        "0.180.0",
        &rows(&codex_turn("turn.completed")),
        0,
    );
    let run = |strict: bool| {
        let mut command = doctor();
        command
            .arg("--program")
            .arg(&program)
            .args(["codex", "--scenario", "plain"]);
        if strict {
            command.arg("--strict");
        }
        command.output().unwrap()
    };
    let lenient = run(false);
    assert_eq!(lenient.status.code(), Some(0), "{}", stderr(&lenient));
    assert!(
        String::from_utf8_lossy(&lenient.stdout).contains("| 0.180.0 | no (>=0.171.0 <0.172.0) |")
    );
    assert!(stderr(&lenient).contains("outside the known-good range"));
    let strict = run(true);
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
}

/// What a CLI leaves in its workspace is removed with the rest of the doctor's temporary
/// directory, even a tree deeper than the doctor's open-file limit (`remove_dir_all` holds a
/// descriptor per level and gives up there).
#[test]
fn a_deep_tree_the_cli_left_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let temp = tempfile::tempdir().unwrap();
    let program = right_stub_running(
        dir.path(),
        "cat <<'ROWS'",
        "i=0; (while [ $i -lt 400 ]; do mkdir d && cd d || exit; i=$((i+1)); done)\n",
    );
    let mut command = doctor();
    command
        .env("TMPDIR", temp.path())
        .arg("--program")
        .arg(&program)
        .args(["codex", "--scenario", "plain", "--scenario", "fatal"]);
    moot_testkit::fs::limit_open_files(&mut command, 256);
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The stub answers the fatal scenario too, so that one differs; the plain one, run in the
    // first workspace, passes.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stdout.contains("| plain | ok | ok | pass |"), "{stdout}");
    assert!(!stderr(&out).contains("cannot remove"), "{}", stderr(&out));
    let left: Vec<_> = fs::read_dir(temp.path()).unwrap().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// The version probe runs the CLI confined like its scenarios: a CLI that writes outside its
/// grants when asked its version is refused, and its version is still read.
#[test]
fn the_version_probe_runs_in_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    // Outside every grant of codex's profile (not /tmp, not the private HOME).
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let canary = outside.path().join("written-by-the-version-probe");
    let program = right_stub_running(
        dir.path(),
        "echo 'codex-cli",
        &format!("echo escaped >'{}' 2>/dev/null; ", canary.display()),
    );
    let out = doctor()
        .arg("--program")
        .arg(&program)
        .args(["codex", "--scenario", "plain"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("| 0.171.0 | yes |"));
    assert!(!canary.exists(), "the probe wrote {}", canary.display());
}

#[test]
fn keep_leaves_every_transcript_envelope_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let turn = codex_turn("turn.completed");
    let program = stub(dir.path(), codex_pinned(), &rows(&turn), 0);
    let keep = dir.path().join("evidence");
    let out = doctor()
        .arg("--program")
        .arg(&program)
        .args([
            "codex",
            "--scenario",
            "plain",
            "--scenario",
            "fatal",
            "--keep",
        ])
        .arg(&keep)
        .output()
        .unwrap();
    // The stub answers the fatal scenario too: that one differs.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let kept = keep.join("codex");
    for scenario in ["plain", "fatal"] {
        let transcript = fs::read_to_string(kept.join(format!("{scenario}.ndjson"))).unwrap();
        assert_eq!(transcript, format!("{}\n", turn.join("\n")), "{scenario}");
        let envelope: Value =
            serde_json::from_slice(&fs::read(kept.join(format!("{scenario}.json"))).unwrap())
                .unwrap();
        assert_eq!(envelope["run"]["ok"], true, "{scenario}");
        let stderr = fs::read_to_string(kept.join(format!("{scenario}.stderr"))).unwrap();
        assert!(stderr.contains("==> the parser <=="), "{stderr}");
    }
    assert!(fs::read_to_string(kept.join("version.txt"))
        .unwrap()
        .contains(codex_pinned()));
}

/// The codex version moot is tested against (its install file), which a stub codex reports.
fn codex_pinned() -> &'static str {
    let meta = moot::registry::find("codex").unwrap();
    meta.doctor.unwrap().pinned()
}

/// `moot-doctor --serve ARGS...`, and the address it printed once it listened.
fn serve(args: &[&std::ffi::OsStr]) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut server = doctor()
        .arg("--serve")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut origin = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut origin)
        .unwrap();
    let address = origin.trim().strip_prefix("http://").unwrap_or_default();
    assert!(address.starts_with("127.0.0.1:"), "{origin}");
    (server, address.to_string())
}

/// One chat completions call to the server at `address`: the whole HTTP answer.
fn chat(address: &str) -> String {
    use std::io::{Read, Write};
    let body = r#"{"model":"fake-model","messages":[{"role":"user","content":"hi"}]}"#;
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn serve_prints_the_origin_once_it_listens_and_answers_there() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario");
    fs::write(&scenario, "plain\n").unwrap();
    let (mut server, address) = serve(&["--scenario-file".as_ref(), scenario.as_os_str()]);
    let answer = chat(&address);
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("gitmoot_result"), "{answer}");
    assert!(answer.contains(r#"\"decision\":\"approved\""#), "{answer}");
}

#[test]
fn serve_fails_as_many_calls_as_asked_then_recovers_into_the_scenario_asked() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario");
    fs::write(&scenario, "retry\n").unwrap();
    let flags = [
        "--retry-fails",
        "2",
        "--retry-then",
        "length",
        "--legacy-result",
    ];
    let mut args: Vec<&std::ffi::OsStr> = flags.iter().map(|f| f.as_ref()).collect();
    args.extend(["--scenario-file".as_ref(), scenario.as_os_str()]);
    let (mut server, address) = serve(&args);
    let answers: Vec<String> = (0..3).map(|_| chat(&address)).collect();
    fs::write(&scenario, "plain\n").unwrap();
    let plain = chat(&address);
    server.kill().unwrap();
    server.wait().unwrap();
    for answer in &answers[..2] {
        assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    }
    assert!(answers[2].starts_with("HTTP/1.1 200"), "{}", answers[2]);
    assert!(
        answers[2].contains(r#""finish_reason":"length""#),
        "{}",
        answers[2]
    );
    assert!(plain.contains(r#"{\"status\":\"ok\""#), "{plain}");
}
