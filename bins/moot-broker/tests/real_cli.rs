//! The real omp (installed by scripts/realcli/install.sh) as a seat of the built moot-broker,
//! against the fake upstream and a fake model on loopback, alone and in the README's read-only
//! seat pipeline as written there (moot-render, moot-broker, moot-run, moot-sandbox --profile
//! omp, moot-parse-omp). The sandbox lets omp reach the proxy's port and the model's, and
//! nothing else: without `--connect {port}` omp cannot reach its broker, and the verdict says
//! so. A missing omp fails under MOOT_NO_SKIP. Not part of `cargo test` (`test = false` in
//! Cargo.toml): `make test-realcli` runs it.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use support::*;

fn path_with(bin: &Path) -> OsString {
    let mut path = OsString::from(bin);
    path.push(":/usr/bin:/bin");
    path
}

/// moot-broker running omp for provider `fake` against `model`, omp's stdout piped.
fn broker_with_omp(
    bin: &Path,
    upstream: &str,
    dir: &Path,
    model: &FakeModel,
    extra_env: &[(&str, &str)],
) -> (Child, PathBuf) {
    let seat = dir.join("seat");
    let models = dir.join("models.yml");
    std::fs::write(&models, model.models_yml("fake")).unwrap();
    let child = Command::new(BIN)
        .args(["--upstream", upstream, "--token-file"])
        .arg(token_file(dir))
        .args(["--model", "fake/fake-model", "--models-file"])
        .arg(&models)
        .arg("--seat-dir")
        .arg(&seat)
        .args([
            "--",
            "omp",
            "-p",
            "--mode=json",
            "--no-session",
            "--model",
            "fake/fake-model",
            "--",
            "Say hi.",
        ])
        .env_clear()
        .env("PATH", path_with(bin))
        .env("TMPDIR", dir)
        .envs(extra_env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .current_dir(dir)
        .spawn()
        .unwrap();
    (child, seat)
}

/// Every process below `pid` (children first found through /proc/<pid>/task/*/children).
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut queue = vec![pid];
    while let Some(parent) = queue.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}

/// Every file under `dir`, read whole (what exists of it at this moment).
fn files_under(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => files_under(&path, out),
            Ok(t) if t.is_file() => {
                if let Ok(bytes) = std::fs::read(&path) {
                    out.push((path, bytes));
                }
            }
            _ => {}
        }
    }
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Watches the running job until it ends: every descendant's environ and cmdline, and every
/// file of the seat, must hold none of `secrets`. Returns how many processes were looked at.
fn watch_for_secrets(child: &mut Child, seat: &Path, secrets: &[&str]) -> usize {
    let mut looked = 0;
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < HANG_GUARD, "omp did not end");
        // moot-broker itself too: the seat can read its ancestors' /proc as well.
        for pid in descendants(child.id()).into_iter().chain([child.id()]) {
            for file in ["environ", "cmdline"] {
                let Ok(bytes) = std::fs::read(format!("/proc/{pid}/{file}")) else {
                    continue;
                };
                looked += 1;
                for secret in secrets {
                    assert!(
                        !contains(&bytes, secret),
                        "/proc/{pid}/{file} holds {secret}"
                    );
                }
            }
        }
        let mut files = Vec::new();
        files_under(seat, &mut files);
        for (path, bytes) in files {
            for secret in secrets {
                assert!(
                    !contains(&bytes, secret),
                    "{} holds {secret}",
                    path.display()
                );
            }
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    looked
}

fn finish(mut child: Child) -> (std::process::ExitStatus, String, String) {
    wait_all(&mut child)
}

#[test]
fn only_the_providers_key_reaches_the_model_and_no_secret_reaches_the_seat() {
    let Some(bin) = omp_bin("only_the_providers_key_reaches_the_model") else {
        return;
    };
    let upstream = upstream("fake", false);
    let model = FakeModel::start(false);
    let dir = tempfile::tempdir().unwrap();
    // An inherited broker URL would bypass the proxy: moot-broker must drop it.
    let (mut child, seat) = broker_with_omp(
        &bin,
        &upstream.origin,
        dir.path(),
        &model,
        &[("OMP_AUTH_BROKER_URL", "http://127.0.0.1:1")],
    );
    let looked = watch_for_secrets(&mut child, &seat, &[UPSTREAM_TOKEN, FOREIGN_KEY]);
    let (status, stdout, stderr) = finish(child);
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(looked > 0, "omp was never seen running");
    assert!(stdout.contains("gitmoot_result"), "{stdout}");
    let keys = model.keys();
    assert!(!keys.is_empty(), "the model was never called");
    assert!(
        keys.iter().all(|k| *k == format!("Bearer {OWN_KEY}")),
        "{keys:?}"
    );
    assert!(!seat.exists(), "the seat outlived the job");
    for seen in upstream.seen() {
        assert!(
            seen.method == "GET" && seen.target.starts_with("/v1/snapshot"),
            "{seen:?}"
        );
    }
}

#[test]
fn a_model_401_reaches_upstream_only_as_a_refresh_of_the_allowed_id() {
    let Some(bin) = omp_bin("a_model_401_reaches_upstream_only_as_a_refresh") else {
        return;
    };
    let upstream = upstream("fake", false);
    let model = FakeModel::start(true);
    let dir = tempfile::tempdir().unwrap();
    let (child, seat) = broker_with_omp(&bin, &upstream.origin, dir.path(), &model, &[]);
    let (status, _stdout, stderr) = finish(child);
    assert!(
        !status.success(),
        "omp succeeded against a model answering 401: {stderr}"
    );
    assert!(!model.keys().is_empty());
    assert!(!seat.exists());
    let seen = upstream.seen();
    let refreshes = seen
        .iter()
        .filter(|s| s.target.ends_with("/refresh"))
        .count();
    assert!(refreshes >= 1, "omp never asked for a refresh: {seen:?}");
    for seen in &seen {
        let allowed = (seen.method == "GET" && seen.target.starts_with("/v1/snapshot"))
            || (seen.method == "POST" && seen.target == format!("/v1/credential/{OWN_ID}/refresh"));
        assert!(allowed, "{} {} reached upstream", seen.method, seen.target);
    }
}

/// An upstream with no stream route that ignores `wait`, with omp up for several seconds: the
/// proxy serves omp its own stream, and asks upstream at most about once per 2 s.
#[test]
fn a_naive_upstream_is_asked_at_a_bounded_rate_while_omp_runs() {
    let Some(bin) = omp_bin("a_naive_upstream_is_asked_at_a_bounded_rate_while_omp_runs") else {
        return;
    };
    let upstream = upstream("fake", true);
    let model = FakeModel::start_slow(false, Duration::from_secs(5));
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (child, _seat) = broker_with_omp(&bin, &upstream.origin, dir.path(), &model, &[]);
    let (status, _stdout, stderr) = finish(child);
    let seconds = started.elapsed().as_secs_f64();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(seconds >= 5.0);
    let asked = upstream.seen().len();
    assert!(
        asked as f64 <= seconds / 2.0 + 2.0,
        "{asked} upstream requests in {seconds:.1} s: {:?}",
        upstream.seen()
    );
}

/// Runs the pipeline (`edit` applied to its text) in a fresh worktree; its output, the stage.
fn run_pipeline(
    omp: &Path,
    upstream: &str,
    model: &FakeModel,
    edit: impl Fn(String) -> String,
) -> (Output, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("worktree");
    let stage = dir.path().join("stage");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&stage).unwrap();
    // The job runs beside the worktree, not in it: moot-run --cwd puts omp there.
    std::fs::write(dir.path().join("job.md"), "Say hi.").unwrap();
    let models = dir.path().join("models.yml");
    std::fs::write(&models, model.models_yml("fake")).unwrap();
    let text = edit(
        readme_pipeline()
            .replace("kimi-code/k3", "fake/fake-model")
            .replace(
                "--seat-dir \"$stage/seat\"",
                "--seat-dir \"$stage/seat\" --models-file \"$models\"",
            ),
    );
    let tools = moot_e2e::tool_dir();
    let path = format!("{}:{}:/usr/bin:/bin", tools.display(), omp.display());
    let output = Command::new("sh")
        .args(["-c", &text])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir.path())
        .env("TMPDIR", dir.path())
        .env("stage", &stage)
        .env("worktree", &worktree)
        .env("job", dir.path().join("job.md"))
        .env("models", &models)
        .env("OMP_AUTH_BROKER_URL", upstream)
        .env("OMP_AUTH_BROKER_TOKEN_FILE", token_file(dir.path()))
        .output()
        .unwrap();
    (output, stage, dir)
}

#[test]
fn the_readme_pipeline_runs_a_confined_read_only_seat() {
    let Some(omp) = omp_bin("the_readme_pipeline_runs_a_confined_read_only_seat") else {
        return;
    };
    let upstream = upstream("fake", false);
    let model = FakeModel::start(false);
    let (output, stage, _dir) = run_pipeline(&omp, &upstream.origin, &model, |text| text);
    let envelope = envelope(&output);
    assert_eq!(
        envelope["run"]["ok"],
        true,
        "{envelope} / {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(model
        .keys()
        .iter()
        .all(|k| *k == format!("Bearer {OWN_KEY}")));
    assert!(!model.keys().is_empty());
    assert!(!stage.join("seat").exists(), "the seat outlived the job");
}

#[test]
fn an_unreachable_proxy_fails_omp_and_the_verdict_says_so() {
    let Some(omp) = omp_bin("an_unreachable_proxy_fails_omp_and_the_verdict_says_so") else {
        return;
    };
    let upstream = upstream("fake", false);
    let model = FakeModel::start(false);
    // The sandbox no longer lets omp connect to the proxy's port.
    let (output, stage, _dir) = run_pipeline(&omp, &upstream.origin, &model, |text| {
        assert!(text.contains(" --connect {port}"), "{text}");
        text.replace(" --connect {port}", "")
    });
    let envelope = envelope(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(envelope["run"]["ok"], false, "{envelope}");
    assert_eq!(envelope["run"]["process"]["exit_code"], 1, "{envelope}");
    // omp names its broker, and moot-broker the missing grant.
    assert!(stderr.to_lowercase().contains("broker"), "{stderr}");
    assert!(
        stderr.contains("moot-broker: the command failed without ever reaching the proxy"),
        "{stderr}"
    );
    assert!(
        model.keys().is_empty(),
        "omp reached the model without its broker"
    );
    assert!(!stage.join("seat").exists());
}
