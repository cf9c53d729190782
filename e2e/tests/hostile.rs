//! The tools against an agent that reads `/proc`: secrets that `moot-run --env-preset` keeps
//! from the agent must not be readable from inside moot-sandbox through any moot process, in
//! either order of the two tools, as root and as an ordinary user.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use moot_e2e::tool;
use tempfile::TempDir;

const CANARY: &str = "canary-secret-7f3a9c";

/// Inside the sandbox: starts `tail` with the canary (a process of the agent's own, which it may
/// read: proof that the scan sees what is there), waits until it has executed, then lists the name of every process whose
/// environment shows the canary.
const SCAN: &str = "AWS_SECRET_ACCESS_KEY=canary-of-the-agent tail -f /dev/null & \
    until [ \"$(cat /proc/$!/comm 2>/dev/null)\" = tail ]; do sleep 0.01; done; \
    for p in /proc/[0-9]*; do \
    if tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -q '^AWS_SECRET_ACCESS_KEY=canary'; then \
    cat $p/comm; fi; done; kill $!";

/// The tools as `uid` can run them. As ourselves, the built ones; as another user, copies in a
/// directory of /tmp anyone may enter: the clone may be in a home or a `mktemp -d` that other
/// users cannot enter, and a test must not depend on where it was cloned.
struct Tools {
    copies: Option<TempDir>,
}

impl Tools {
    fn for_user(uid: Option<u32>) -> Self {
        let copies = uid.map(|_| {
            let built = ["moot-parse-omp", "moot-run", "moot-sandbox"].map(tool);
            moot_testkit::fs::copies_anyone_can_run(&built.each_ref().map(PathBuf::as_path))
        });
        Tools { copies }
    }

    fn path(&self, name: &str) -> PathBuf {
        match &self.copies {
            Some(dir) => dir.path().join(name),
            None => tool(name),
        }
    }
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A command as `uid` (None: as we are), with the canary in its environment, started in `/`
/// (the test's own directory may be closed to `uid`).
fn with_canary(program: &Path, args: &[&str], uid: Option<u32>) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .env("AWS_SECRET_ACCESS_KEY", CANARY)
        .current_dir("/")
        .stdin(Stdio::null());
    if let Some(uid) = uid {
        command.uid(uid).gid(uid);
    }
    command
}

/// Long-lived processes holding the canary while the agent looks, outside the sandbox: a
/// parser waiting for its stream (a moot tool), and `sleep`, a dumpable process of the same
/// user standing for the orchestrator's shell.
fn bystanders(tools: &Tools, uid: Option<u32>) -> Vec<Child> {
    let parse = tools.path("moot-parse-omp");
    let parser = with_canary(&parse, &[], uid)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_exec(&parser, &parse);
    let sleep = with_canary(Path::new("/bin/sleep"), &["60"], uid)
        .spawn()
        .unwrap();
    wait_for_exec(&sleep, Path::new("/bin/sleep"));
    vec![parser, sleep]
}

/// Waits until `child` runs `program` (not the forked test any more), so the scan looks at the
/// bystander and not at a copy of the test that has not executed it yet.
fn wait_for_exec(child: &Child, program: &Path) {
    let program = std::fs::canonicalize(program).unwrap();
    let exe = format!("/proc/{}/exe", child.id());
    let what = format!("{} executing {}", child.id(), program.display());
    moot_testkit::wait_for(&what, || {
        (std::fs::read_link(&exe).ok().as_ref() == Some(&program)).then_some(())
    });
}

fn scan(order: &str, uid: Option<u32>) -> String {
    let tools = Tools::for_user(uid);
    let sandbox = tools.path("moot-sandbox");
    let run = tools.path("moot-run");
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
    let mut others = bystanders(&tools, uid);
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

/// The CI job README.md prints, as a file the tests run.
fn example_job() -> PathBuf {
    moot_e2e::root().join("examples/ci-job.sh")
}

/// README.md prints examples/ci-job.sh whole, in a code block of its own: what a reader copies
/// is what the tests run.
#[test]
fn the_readme_prints_the_example_job_as_it_is() {
    let readme = std::fs::read_to_string(moot_e2e::root().join("README.md")).unwrap();
    let script = std::fs::read_to_string(example_job()).unwrap();
    assert!(
        readme.contains(&format!("```sh\n{script}```\n")),
        "README.md's copy of examples/ci-job.sh differs from the file"
    );
}

/// An `omp` that attacks the harness's files before it prints a real capture: it overwrites
/// the transcript and the status file, the staged prompt and its directory, and plants a
/// symlink where the status file goes, writing what happened into the worktree.
const HOSTILE_OMP: &str = r#"#!/bin/sh
# The environment is curated (--env-preset): find the stage from the staged prompt's @path.
for arg; do case $arg in @*/p/prompt.md) stage=${arg#@}; stage=${stage%/p/prompt.md} ;; esac; done
worktree=$(pwd)
try() { if eval "$2" 2>/dev/null; then echo "$1: done"; else echo "$1: denied"; fi; }
{
    try "read prompt" 'test -s "$stage/p/prompt.md" && cat "$stage/p/prompt.md" >/dev/null'
    try "overwrite transcript" 'printf forged > "$stage/run.ndjson"'
    try "overwrite status" 'printf "{}" > "$stage/status"'
    try "overwrite prompt" 'printf forged > "$stage/p/prompt.md"'
    try "remove stage" 'rm -rf "$stage/p" && ! test -e "$stage/p"'
    try "plant status link" 'ln -s /etc/hostname "$stage/status.planted" && mv "$stage/status.planted" "$stage/status"'
} > "$worktree/attempts"
cat "${0%/*}/capture.ndjson"
"#;

/// What one run of the example job left: its output, and the directories it ran with.
struct ExampleRun {
    live: std::process::Output,
    worktree: tempfile::TempDir,
    stage: tempfile::TempDir,
    _stubs: tempfile::TempDir,
    _elsewhere: tempfile::TempDir,
    _home: tempfile::TempDir,
}

/// The example CI job with `omp_script` as omp (beside it, `capture.ndjson`: a real plain
/// run), from a directory that is not the worktree, its files kept in a private `stage`.
fn run_example_job(omp_script: &str) -> ExampleRun {
    let stubs = tempfile::tempdir().unwrap();
    let omp = stubs.path().join("omp");
    std::fs::write(&omp, omp_script).unwrap();
    set_mode(&omp, 0o755);
    let capture = moot_e2e::root().join("testdata/omp/real-plain.ndjson");
    std::fs::copy(&capture, stubs.path().join("capture.ndjson")).unwrap();
    let worktree = tempfile::tempdir().unwrap();
    let stage = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    // Large enough to be staged, so the stage directory is there to attack.
    let job = elsewhere.path().join("job.md");
    std::fs::write(&job, "Do the job. ".repeat(10_000)).unwrap();
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        stubs.path().display(),
        moot_e2e::tool_dir().display()
    );
    let home = tempfile::tempdir().unwrap();
    let key = home.path().join("provider.key");
    std::fs::write(&key, "sk-hostile-test-key-0123456789").unwrap();
    set_mode(&key, 0o600);
    let live = Command::new("sh")
        .arg(example_job())
        .arg(worktree.path())
        .arg(&job)
        .current_dir(elsewhere.path())
        .env("HOME", home.path())
        .env("PATH", path)
        // The credential proxy's provider (the stub calls none).
        .env("MOOT_PROVIDER_URL", "http://127.0.0.1:9/v1")
        .env("MOOT_PROVIDER_KEY_FILE", &key)
        .env("MOOT_JOB_DIR", stage.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    ExampleRun {
        live,
        worktree,
        stage,
        _stubs: stubs,
        _elsewhere: elsewhere,
        _home: home,
    }
}

/// A denial in the CLI's own words fails the job, whatever its case: node's and bun's
/// `EACCES: permission denied` as the shell's `Permission denied`.
#[test]
fn the_example_job_fails_on_a_denial_in_the_cli_s_own_words() {
    let denied = r#"{"type":"tool_execution_end","toolCallId":"t1","toolName":"write","isError":true,"result":{"content":[{"type":"text","text":"EACCES: permission denied, open '/etc/moot-probe'"}]}}"#;
    let run = run_example_job(&format!(
        "#!/bin/sh\nprintf '%s\\n' '{denied}'\ncat \"${{0%/*}}/capture.ndjson\"\n"
    ));
    let stderr = String::from_utf8_lossy(&run.live.stderr);
    assert_eq!(run.live.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("ci-job: the sandbox denied the agent a write or a read outside"),
        "{stderr}"
    );
    assert!(
        run.live.stdout.is_empty(),
        "a denied job printed its answer"
    );
}

/// The example CI job, run from a directory that is not the worktree: omp is started in the
/// worktree (the stub writes there what it tried, from its working directory), a sandboxed
/// agent that tries to overwrite the transcript, the status file or the staged prompt is
/// denied, and replaying the transcript reproduces the live verdict byte for byte.
#[test]
fn the_example_job_keeps_the_harness_files_out_of_the_agents_reach() {
    let ExampleRun {
        live,
        worktree,
        stage,
        ..
    } = run_example_job(HOSTILE_OMP);
    let stage_s = stage.path().to_str().unwrap();
    let capture = moot_e2e::root().join("testdata/omp/real-plain.ndjson");
    let attempts = std::fs::read_to_string(worktree.path().join("attempts")).unwrap_or_else(|e| {
        panic!(
            "omp did not run in the worktree ({e}): {}",
            String::from_utf8_lossy(&live.stderr)
        )
    });
    assert_eq!(
        attempts,
        "read prompt: done\n\
         overwrite transcript: denied\n\
         overwrite status: denied\n\
         overwrite prompt: denied\n\
         remove stage: denied\n\
         plant status link: denied\n",
        "{}",
        String::from_utf8_lossy(&live.stderr)
    );
    assert_eq!(
        live.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&live.stderr)
    );
    assert_eq!(
        String::from_utf8(live.stdout).unwrap(),
        "I looked at the task and everything is in order.\n\n{\"gitmoot_result\":{\"decision\":\
         \"approved\",\"summary\":\"done\",\"findings\":[],\"changes_made\":[],\"tests_run\":[],\
         \"needs\":[],\"delegations\":[]}}\n",
        "the job prints the answer"
    );
    assert_eq!(
        std::fs::read(stage.path().join("run.ndjson")).unwrap(),
        std::fs::read(&capture).unwrap(),
        "the transcript is the CLI's stdout, byte for byte"
    );
    assert!(
        !stage.path().join("p").exists(),
        "the staged prompt was left behind"
    );
    let verdict = std::fs::read(stage.path().join("verdict.json")).unwrap();
    let envelope: serde_json::Value = serde_json::from_slice(&verdict).unwrap();
    assert_eq!(envelope["run"]["process"]["exit_code"], 0, "{envelope}");
    let replay = Command::new(tool("moot-parse-omp"))
        .args(["--status-file", &format!("{stage_s}/status")])
        .stdin(std::fs::File::open(stage.path().join("run.ndjson")).unwrap())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(replay.stdout).unwrap(),
        String::from_utf8(verdict).unwrap(),
        "the replay differs from the live verdict"
    );
}

/// An agent that floods the CLI's stdout after a complete, successful run: moot-run keeps the
/// head and tail within `--max-output`, and the parser fails the run as `output_limit`, naming
/// the limit, though the head it read is a whole successful run.
#[test]
fn a_flood_past_the_output_limit_fails_the_verdict_whatever_the_head_says() {
    let stage = tempfile::tempdir().unwrap();
    let status = stage.path().join("status");
    let capture = moot_e2e::root().join("testdata/omp/real-plain.ndjson");
    let script = format!(
        "{} --max-output 1M --status-file {} -- sh -c 'cat {}; head -c 100000000 /dev/zero' | \
         {} --status-file {}",
        tool("moot-run").display(),
        status.display(),
        capture.display(),
        tool("moot-parse-omp").display(),
        status.display()
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["run"]["ok"], false, "{envelope}");
    assert_eq!(envelope["run"]["error"]["class"], "output_limit");
    assert_eq!(envelope["run"]["process"]["exit_code"], 123);
    let message = envelope["run"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("stdout passed its limit of 1048576 bytes"),
        "{message}"
    );
}
