//! moot-broker in the README's read-only seat pipeline, where no CLI runs: a deadline around it,
//! and a broker that never starts its command. The pipeline with the real omp is in
//! real_cli.rs.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod support;

use std::process::Command;

use support::*;

/// moot-run's deadline around moot-broker: TERM reaches moot-broker and its command (one
/// process group), and moot-broker removes the seat and closes the proxy within moot-run's
/// grace.
#[test]
fn a_deadline_around_the_broker_leaves_nothing() {
    let upstream = upstream("kimi-code", false);
    let dir = tempfile::tempdir().unwrap();
    let seat = dir.path().join("seat");
    let moot_run = moot_e2e::tool("moot-run");
    let status = dir.path().join("status.json");
    // A grace no busy machine comes near: the status says whether the deadline's TERM ended
    // moot-broker or the grace's SIGKILL did.
    let output = Command::new(moot_run)
        .args(["--deadline", "2", "--grace", "60", "--status-file"])
        .arg(&status)
        .arg("--")
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
    let status: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&status).unwrap()).unwrap();
    assert_eq!(status["timed_out"], true, "{status}");
    assert_ne!(
        status["signal"], "SIGKILL",
        "the grace's SIGKILL ended it: {status}"
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
            .env("job", worktree.join("job.md"))
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
