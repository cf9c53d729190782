//! The README's read-only seat pipeline, as written there, with the real omp: moot-render,
//! moot-broker, moot-run, moot-sandbox --profile omp and moot-parse-omp, against the fake
//! upstream and a fake model. The sandbox lets omp reach the proxy's port and the model's, and
//! nothing else: without `--connect {port}` omp cannot reach its broker, and the verdict says so.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::*;

/// The README's read-only seat pipeline: from its `moot-render omp --readonly-seat` line to its
/// `moot-parse-omp` line.
fn readme_pipeline() -> String {
    let readme = std::fs::read_to_string(moot_e2e::root().join("README.md")).unwrap();
    let start = readme
        .find("moot-render omp --readonly-seat")
        .expect("README.md shows the read-only seat pipeline");
    let rest = &readme[start..];
    let end = rest.find("moot-parse-omp").unwrap();
    let line_end = rest[end..].find('\n').unwrap();
    rest[..end + line_end].to_string()
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
    std::fs::write(worktree.join("job.md"), "Say hi.").unwrap();
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
        .current_dir(&worktree)
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir.path())
        .env("TMPDIR", dir.path())
        .env("stage", &stage)
        .env("worktree", &worktree)
        .env("models", &models)
        .env("OMP_AUTH_BROKER_URL", upstream)
        .env("OMP_AUTH_BROKER_TOKEN_FILE", token_file(dir.path()))
        .output()
        .unwrap();
    (output, stage, dir)
}

fn envelope(output: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "not one envelope ({e}): {stdout} / {}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
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

/// moot-run's deadline around moot-broker: TERM reaches moot-broker and its command (one
/// process group), and moot-broker removes the seat and closes the proxy within moot-run's
/// grace.
#[test]
fn a_deadline_around_the_broker_leaves_nothing() {
    let upstream = upstream("kimi-code", false);
    let dir = tempfile::tempdir().unwrap();
    let seat = dir.path().join("seat");
    let moot_run = moot_e2e::tool("moot-run");
    let started = std::time::Instant::now();
    let output = Command::new(moot_run)
        .args(["--deadline", "2", "--grace", "5", "--"])
        .arg(BIN)
        .args(["--upstream", &upstream.origin, "--token-file"])
        .arg(token_file(dir.path()))
        .args(["--model", "kimi-code/k3", "--seat-dir"])
        .arg(&seat)
        .args(["--", "sh", "-c", "echo {port}; exec sleep 60"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(124),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(6),
        "the grace's SIGKILL ended it"
    );
    let port: u16 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    assert!(!seat.exists(), "the seat outlived the deadline");
    assert!(port_closed(port), "the proxy outlived the deadline");
}

/// The README's pipeline with a prompt too big for argv (moot-render stages it), where
/// moot-broker never starts its command: refused, a usage error, or the upstream unreachable.
/// Each time the stage moot-render wrote is gone, as moot-run would have removed it.
#[test]
fn a_broker_that_never_starts_its_command_leaves_no_staged_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("worktree");
    std::fs::create_dir_all(&worktree).unwrap();
    let prompt = "Review every line of this.\n".repeat(20_000);
    std::fs::write(worktree.join("job.md"), prompt).unwrap();
    let token = token_file(dir.path());
    // Nothing listens on port 9: the upstream is unreachable unless a refusal comes first.
    for case in ["refused", "usage", "unreachable"] {
        let mut text = readme_pipeline();
        let mut env = vec![];
        match case {
            "refused" => env.push(("OMP_AUTH_BROKER_TOKEN", "x")),
            "usage" => text = text.replace("--seat-dir", "--no-such-flag"),
            _ => {}
        }
        let stage = dir.path().join(case);
        std::fs::create_dir(&stage).unwrap();
        let output = Command::new("sh")
            .args(["-c", &text])
            .current_dir(&worktree)
            .env_clear()
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", moot_e2e::tool_dir().display()),
            )
            .env("HOME", dir.path())
            .env("TMPDIR", dir.path())
            .env("stage", &stage)
            .env("worktree", &worktree)
            .env("OMP_AUTH_BROKER_URL", "http://127.0.0.1:9")
            .env("OMP_AUTH_BROKER_TOKEN_FILE", &token)
            .envs(env)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("moot-render: staged"),
            "{case}: the prompt was not staged: {stderr}"
        );
        let broker: Vec<&str> = stderr
            .lines()
            .filter(|line| line.starts_with("moot-broker: "))
            .collect();
        assert_eq!(broker.len(), 1, "{case}: {stderr}");
        let envelope = envelope(&output);
        assert_eq!(envelope["run"]["ok"], false, "{case}: {envelope}");
        assert!(
            !stage.join("p").exists(),
            "{case}: the staged prompt was left: {stderr}"
        );
    }
}
