//! moot-parse-omp as a command: --text, huge lines, draining stdin, usage errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use moot_testkit::{
    args, case, run, run_plain_in, spawn_piped, text_answer, text_failure, text_failure_starts_with,
};

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-omp");

#[test]
fn text_mode_prints_only_the_answer() {
    assert_eq!(
        text_answer(BIN, "omp", "real-plain", &[]),
        "I looked at the task and everything is in order.\n\n{\"gitmoot_result\":{\"decision\":\"approved\",\"summary\":\"done\",\"findings\":[],\"changes_made\":[],\"tests_run\":[],\"needs\":[],\"delegations\":[]}}\n"
    );
}

#[test]
fn text_mode_does_not_require_a_result() {
    assert_eq!(
        text_answer(BIN, "omp", "result-missing", &[]),
        "Looks good to me, nothing to flag.\n"
    );
}

#[test]
fn text_mode_failure_prints_nothing_and_one_line() {
    assert_eq!(
        text_failure(BIN, "omp", "real-toolloop-maxtime", &[]),
        "moot-parse-omp: truncated: TRUNCATED: omp's final assistant message stopped on \"toolUse\" instead of \"stop\", so its text is not a finished answer\n"
    );
}

#[test]
fn multi_line_provider_errors_stay_on_one_stderr_line() {
    text_failure_starts_with(
        BIN,
        "omp",
        "real-error",
        "moot-parse-omp: retry_exhausted: omp gave up retrying",
    );
}

/// omp's agent_end re-serialises the transcript: multi-MiB lines are real and must parse.
#[test]
fn multi_mebibyte_lines_parse() {
    let blob = "x".repeat(3 * 1024 * 1024);
    let mut stream = String::from_utf8(case("omp", "success-minimal")).unwrap();
    let tool = format!(
        "{{\"type\":\"tool_execution_end\",\"toolCallId\":\"c\",\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{blob}\"}}]}}}}\n"
    );
    let end = format!(
        "{{\"type\":\"agent_end\",\"messages\":[{{\"role\":\"toolResult\",\"content\":[{{\"type\":\"text\",\"text\":\"{blob}\"}}]}}],\"isTerminal\":true}}\n"
    );
    stream.insert_str(stream.find("{\"type\":\"message_end\"").unwrap(), &tool);
    stream.push_str(&end);
    let out = run(BIN, &[], stream.as_bytes());
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["run"]["ok"], true, "{envelope}");
    assert_eq!(envelope["run"]["bytes"], stream.len() as u64);
}

#[test]
fn a_line_over_the_ceiling_fails_closed_and_the_rest_is_still_read() {
    let mut stream = vec![b'{'; 3000];
    stream.push(b'\n');
    stream.extend_from_slice(&case("omp", "success-minimal"));
    let out = run(BIN, &args(&["--max-line-bytes", "1000"]), &stream);
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["run"]["error"]["class"], "malformed_stream");
    assert_eq!(
        envelope["run"]["error"]["message"],
        "line 1: the line is 3000 bytes, over the ceiling of 1000 bytes (--max-line-bytes)"
    );
    assert_eq!(
        envelope["run"]["session_id"],
        "01a229c0-91fa-75fa-8206-38514f5ba04a"
    );
    assert_eq!(envelope["run"]["bytes"], stream.len() as u64);
}

/// The writer upstream must never block or see EPIPE: stdin is read to its end even after the
/// verdict is settled.
#[test]
fn stdin_is_drained_to_eof() {
    let mut child = spawn_piped(BIN);
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        stdin.write_all(b"{\"type\":\"session\",\"id\":7}\n")?;
        let filler = b"{\"type\":\"message_update\",\"delta\":\"0123456789abcdef\"}\n".repeat(4096);
        for _ in 0..64 {
            stdin.write_all(&filler)?;
        }
        Ok::<_, std::io::Error>(())
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().expect("every byte was accepted");
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["run"]["error"]["class"], "malformed_stream");
    assert_eq!(envelope["run"]["lines"], 1 + 64 * 4096);
}

#[test]
fn a_closed_stdout_is_an_output_failure() {
    let mut child = spawn_piped(BIN);
    drop(child.stdout.take());
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&case("omp", "no-agent-end"))
        .unwrap();
    let status = child.wait().unwrap();
    // Regression: the verdict's own status (1) came out as if it had been delivered.
    assert_eq!(status.code(), Some(2));
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = run(BIN, &args(&["--frobnicate"]), b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("--frobnicate"));
}

#[test]
fn exit_code_and_status_file_are_exclusive() {
    let out = run(
        BIN,
        &args(&["--exit-code", "0", "--status-file", "s.json"]),
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn version_and_help() {
    moot_testkit::check_help_and_version(BIN, "moot-parse-omp", "cat run.ndjson | moot-parse-omp");
}

#[test]
fn session_file_is_written_only_on_success() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("session");
    let flag = args(&["--text", "--session-file", file.to_str().unwrap()]);
    let failed = run(BIN, &flag, &case("omp", "real-error"));
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        !file.exists(),
        "a failed run must not persist its session id"
    );
    let ok = run(BIN, &flag, &case("omp", "real-plain"));
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "01a229c0-91fa-75fa-8206-38514f5ba04a\n"
    );
}

/// A parser reading a pipe widens it to 1 MiB, so a writer streaming gigabytes wakes it 16 times
/// less often than the kernel's 64 KiB would (BENCHMARKS.md). The test holds a second handle on
/// the read end to ask the pipe its size once the parser is done.
#[test]
fn widens_the_pipe_it_reads() {
    use nix::fcntl::{fcntl, FcntlArg};
    use std::os::fd::AsRawFd;

    // Close-on-exec, or the parser would inherit the write end and never see the end of input.
    let (read_end, write_end) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).unwrap();
    let kept = read_end.try_clone().unwrap();
    let default_size = fcntl(kept.as_raw_fd(), FcntlArg::F_GETPIPE_SZ).unwrap();
    assert_eq!(default_size, 64 * 1024);
    let child = Command::new(BIN)
        .stdin(Stdio::from(read_end))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::File::from(write_end)
        .write_all(&case("omp", "success-minimal"))
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let size = fcntl(kept.as_raw_fd(), FcntlArg::F_GETPIPE_SZ).unwrap();
    assert_eq!(size, 1024 * 1024);
}

/// The adapter's scratch directory, as a pipeline leaves it: moot-run's status file inside.
fn scratch_with_status() -> (tempfile::TempDir, std::path::PathBuf) {
    let parent = tempfile::tempdir().unwrap();
    let scratch = moot_testkit::scratch_dir(parent.path(), "work");
    std::fs::create_dir_all(scratch.join("out")).unwrap();
    std::fs::write(
        scratch.join("out/status"),
        std::fs::read(moot_testkit::testdata().join("omp/status-clean.status")).unwrap(),
    )
    .unwrap();
    (parent, scratch)
}

#[test]
fn cleanup_removes_the_scratch_directory_after_reading_the_status_file() {
    let (_parent, scratch) = scratch_with_status();
    let status = scratch.join("out/status");
    let flags = [
        "--text",
        "--status-file",
        status.to_str().unwrap(),
        "--cleanup",
        scratch.to_str().unwrap(),
    ];
    let out = run(BIN, &args(&flags), &case("omp", "real-plain"));
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.starts_with(b"I looked at the task"));
    assert!(!scratch.exists(), "the scratch directory is still there");
}

/// Regression: `moot-parse-omp --cleanup .` emptied the working directory.
#[test]
fn cleanup_refuses_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keep.txt"), "mine").unwrap();
    let out = run_plain_in(BIN, "omp", &["--cleanup", "."], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an absolute path"));
    assert!(dir.path().join("keep.txt").exists());
}

#[test]
fn cleanup_of_a_directory_that_does_not_exist_is_fine() {
    let parent = tempfile::tempdir().unwrap();
    let gone = parent.path().join("never-made");
    let flags = ["--cleanup", gone.to_str().unwrap()];
    let out = run(BIN, &args(&flags), &case("omp", "real-plain"));
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty());
}

/// The verdict is still printed; the status says the scratch is left behind; a symlink is
/// never followed into what it names.
#[test]
fn cleanup_refuses_a_symlink_after_printing_the_verdict() {
    let (parent, scratch) = scratch_with_status();
    let link = parent.path().join("link");
    std::os::unix::fs::symlink(&scratch, &link).unwrap();
    let out = run(
        BIN,
        &args(&["--cleanup", link.to_str().unwrap()]),
        &case("omp", "real-plain"),
    );
    assert_eq!(out.status.code(), Some(2));
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["run"]["ok"], true);
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "moot-parse-omp: --cleanup ({}): is a symbolic link: a link, and what it points to, \
             is never removed\n",
            link.display()
        )
    );
    assert!(scratch.join("out/status").exists());
}

#[test]
fn a_usage_error_is_one_line() {
    moot_testkit::check_usage_error(BIN, "moot-parse-omp", 2);
}

/// Regression: `--status-file /dev/zero` grew past 600 MB and a FIFO hung forever. The status
/// file may be agent-writable: anything but a small regular file is a `process` failure.
#[test]
fn a_status_file_that_is_not_a_small_regular_file_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let big = dir.path().join("big");
    std::fs::write(&big, vec![b' '; 9000]).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(
        moot_testkit::testdata().join("omp/status-clean.status"),
        &link,
    )
    .unwrap();
    for (path, why) in [
        (
            std::path::Path::new("/dev/zero"),
            "is a device, not a regular file",
        ),
        (&fifo, "is a FIFO, not a regular file"),
        (&big, "is larger than 8192 bytes"),
        (&link, "is a symbolic link"),
    ] {
        let flags = ["--status-file", path.to_str().unwrap()];
        let out = run(BIN, &args(&flags), &case("omp", "real-plain"));
        assert_eq!(out.status.code(), Some(1), "{path:?}");
        let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(envelope["run"]["error"]["class"], "process");
        let message = envelope["run"]["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{message}");
        assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
    }
}

/// A complete run whose moot-run status says its stdout passed `--max-output`: what the parser
/// read is a head and a tail, never the CLI's whole stream, so it fails as `output_limit`.
#[test]
fn a_status_that_records_an_output_past_its_limit_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let status = dir.path().join("status");
    std::fs::write(
        &status,
        r#"{"exit_code":123,"signal":null,"timed_out":false,"elapsed_ms":9,"pid":7,"output_limit":{"stream":"stdout","limit":1048576,"dropped":5}}"#,
    )
    .unwrap();
    let flags = ["--status-file", status.to_str().unwrap()];
    let out = run(BIN, &args(&flags), &case("omp", "real-plain"));
    assert_eq!(out.status.code(), Some(1));
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["run"]["ok"], false);
    assert_eq!(envelope["run"]["error"]["class"], "output_limit");
    assert_eq!(envelope["run"]["process"]["output_limit"]["dropped"], 5);
    let message = envelope["run"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("stdout passed its limit of 1048576 bytes"),
        "{message}"
    );
}

/// A complete, clean run whose moot-run status says the job changed the protected set
/// (`--protect`): whatever the answer says, the run fails as `tampered`.
#[test]
fn a_status_that_records_tampering_fails_a_clean_run() {
    let dir = tempfile::tempdir().unwrap();
    let status = dir.path().join("status");
    std::fs::write(
        &status,
        r#"{"exit_code":122,"signal":null,"timed_out":false,"elapsed_ms":9,"pid":7,"tampered":{"count":2,"paths":["/w/.git/config","/w/.git/hooks/pre-commit"],"restored":true}}"#,
    )
    .unwrap();
    let flags = ["--status-file", status.to_str().unwrap()];
    let out = run(BIN, &args(&flags), &case("omp", "real-plain"));
    assert_eq!(out.status.code(), Some(1));
    let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["run"]["ok"], false);
    assert_eq!(envelope["run"]["error"]["class"], "tampered");
    let message = envelope["run"]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("/w/.git/config") && message.contains("put back"),
        "{message}"
    );
}
