//! The tools against an agent that reads `/proc`: secrets that `moot-run --env-preset` keeps
//! from the agent must not be readable from inside moot-sandbox through any moot process, in
//! either order of the two tools, as root and as an ordinary user.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

mod common;
use common::tool;

const CANARY: &str = "canary-secret-7f3a9c";

/// Inside the sandbox: starts `tail` with the canary (a process of the agent's own, which it may
/// read: proof that the scan sees what is there), then lists the name of every process whose
/// environment shows the canary.
const SCAN: &str = "AWS_SECRET_ACCESS_KEY=canary-of-the-agent tail -f /dev/null & \
    sleep 0.2; for p in /proc/[0-9]*; do \
    if tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -q '^AWS_SECRET_ACCESS_KEY=canary'; then \
    cat $p/comm; fi; done; kill $!";

/// A command as `uid` (None: as we are), with the canary in its environment.
fn with_canary(program: &Path, args: &[&str], uid: Option<u32>) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .env("AWS_SECRET_ACCESS_KEY", CANARY)
        .stdin(Stdio::null());
    if let Some(uid) = uid {
        command.uid(uid).gid(uid);
    }
    command
}

/// Long-lived processes holding the canary while the agent looks, outside the sandbox: a
/// parser waiting for its stream (a moot tool), and `sleep`, a dumpable process of the same
/// user standing for the orchestrator's shell.
fn bystanders(uid: Option<u32>) -> Vec<Child> {
    let parser = with_canary(&tool("moot-parse-omp"), &[], uid)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let sleep = with_canary(Path::new("/bin/sleep"), &["60"], uid)
        .spawn()
        .unwrap();
    vec![parser, sleep]
}

fn scan(order: &str, uid: Option<u32>) -> String {
    let sandbox = tool("moot-sandbox");
    let run = tool("moot-run");
    let (sandbox, run) = (sandbox.to_str().unwrap(), run.to_str().unwrap());
    let args: Vec<&str> = match order {
        "sandbox-then-run" => vec!["--", run, "--env-preset", "omp", "--", "sh", "-c", SCAN],
        _ => vec!["--env-preset", "omp", "--", sandbox, "--", "sh", "-c", SCAN],
    };
    let first = if order == "sandbox-then-run" {
        sandbox
    } else {
        run
    };
    let mut others = bystanders(uid);
    // Let the bystanders start (exec) before the agent looks.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let out = with_canary(Path::new(first), &args, uid).output().unwrap();
    for child in &mut others {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn secrets_kept_from_the_agent_are_not_readable_through_proc() {
    let mut users = vec![None];
    if nix::unistd::geteuid().is_root() {
        users.push(Some(65534));
    } else {
        // Not a skip: this user is the ordinary user; the root half needs root (CI is root).
        eprintln!("NOTE: not root, so only the ordinary-user half of this test runs");
    }
    for uid in users {
        for order in ["sandbox-then-run", "run-then-sandbox"] {
            let seen = scan(order, uid);
            assert_eq!(
                seen, "tail\n",
                "{order} as {uid:?}: processes whose environment the agent read: {seen:?}"
            );
        }
    }
}
