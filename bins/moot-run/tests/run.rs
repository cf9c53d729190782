//! moot-run, run for real: real processes, process groups, signals, pipes and files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::borrow::BorrowMut;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use moot::outcome::ProcessOutcome;
use moot_testkit::fs::{mode, write_with_mode};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

const BIN: &str = env!("CARGO_BIN_EXE_moot-run");

use moot_testkit::{wait_for, HANG_GUARD};

fn moot_run(args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    command.args(args).stdin(Stdio::null());
    command
}

fn output(mut command: impl BorrowMut<Command>) -> Output {
    command.borrow_mut().output().expect("run moot-run")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts that moot-run's stderr holds `part`, showing all of it when not.
fn assert_stderr_has(out: &Output, part: &str) {
    assert!(stderr(out).contains(part), "{}", stderr(out));
}

/// `moot-run <flag> <path> <rest>...`: a flag that takes a path, then the rest of the line.
fn moot_run_at(flag: &str, path: &Path, rest: &[&str]) -> Command {
    let mut args = vec![flag, path.to_str().unwrap()];
    args.extend(rest);
    moot_run(&args)
}

/// A script named `agent` holding `text` with permission bits `mode`, in a fresh directory
/// (returned with it, and removed when that is dropped).
fn agent(text: &str, mode: u32) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("agent");
    write_with_mode(&script, text, mode);
    (dir, script)
}

fn status_file(path: &Path) -> ProcessOutcome {
    ProcessOutcome::read(path).expect("a status file moot-parse-* can read")
}

/// `moot-run ARGS -- sh -c SCRIPT`.
fn sh(args: &[&str], script: &str) -> Command {
    let mut command = moot_run(args);
    command.args(["--", "sh", "-c", script]);
    command
}

/// A file moot-run was told to write, in a fresh directory that lives as long as it does.
struct Written {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for Written {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Written {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// Runs `moot-run ARGS FLAG FILE -- sh -c SCRIPT` to its end, FILE a fresh path; returns the
/// output and the file.
fn sh_writing(args: &[&str], flag: &str, script: &str) -> (Output, Written) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("written");
    let mut command = moot_run(args);
    command.args([flag, path.to_str().unwrap()]);
    let out = output(command.args(["--", "sh", "-c", script]));
    (out, Written { _dir: dir, path })
}

/// moot-run with INT, QUIT, TERM and HUP at their default action, whatever the test runner
/// inherited (a background job of a script ignores INT and QUIT).
fn moot_run_default_signals(args: &[&str]) -> Command {
    let mut command = moot_run(args);
    moot_testkit::with_default_signals(&mut command);
    command
}

/// Spawns [`moot_run_default_signals`] with stdout piped.
fn spawn_with_default_signals(args: &[&str]) -> Child {
    moot_run_default_signals(args)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn moot-run")
}

/// What is left on a piped stderr of `child`, read to its end.
fn rest_of_stderr(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Waits for `child` to exit, failing the test if it hangs.
fn wait_bounded(child: &mut Child) -> std::process::ExitStatus {
    wait_for("moot-run's exit", || child.try_wait().expect("try_wait"))
}

/// Live (not zombie) processes whose process group is `pgid`, read from /proc.
fn live_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
        let Some(after_comm) = stat.rsplit_once(')').map(|(_, rest)| rest) else {
            continue;
        };
        let fields: Vec<&str> = after_comm.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            members.push(pid);
        }
    }
    members
}

/// Asserts that no live process is left in group `pgid` (SIGKILL is asynchronous, so it may take
/// a moment for the kernel to finish them).
fn assert_group_gone(pgid: u32) {
    wait_for(&format!("the end of group {pgid}'s processes"), || {
        live_members(pgid).is_empty().then_some(())
    });
}

fn assert_process_gone(pid: u32) {
    wait_for(&format!("the end of process {pid}"), || {
        let state = fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')')
                    .map(|(_, rest)| rest.trim().to_string())
            });
        state.is_none_or(|rest| rest.starts_with('Z')).then_some(())
    });
}

#[test]
fn stdout_passes_through_unchanged_and_the_transcript_is_verbatim_and_private() {
    let (out, transcript) = sh_writing(
        &[],
        "--transcript",
        r#"printf '{"type":"a"}\n'; printf 'no newline\0\377'; printf 'to stderr' >&2"#,
    );
    let expected = b"{\"type\":\"a\"}\nno newline\0\xff";
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, expected);
    assert_eq!(stderr(&out), "to stderr");
    assert_eq!(fs::read(&transcript).unwrap(), expected);
    let mode = mode(&transcript);
    assert_eq!(mode, 0o600);
}

#[test]
fn an_existing_transcript_is_truncated_and_narrowed_to_0600() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t");
    write_with_mode(&transcript, "old contents that are longer", 0o644);
    let out = output(moot_run_at(
        "--transcript",
        &transcript,
        &["--", "echo", "new"],
    ));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(fs::read_to_string(&transcript).unwrap(), "new\n");
    let mode = mode(&transcript);
    assert_eq!(mode, 0o600);
}

#[test]
fn stderr_file_takes_the_commands_stderr() {
    let (out, file) = sh_writing(&[], "--stderr-file", "echo out; echo err >&2");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(stderr(&out), "");
    assert_eq!(fs::read_to_string(&file).unwrap(), "err\n");
    assert_eq!(mode(&file), 0o600);
}

#[test]
fn deadline_ends_the_whole_group_with_124_within_the_grace() {
    let (out, status) = sh_writing(
        &["--deadline", "1"],
        "--status-file",
        "sleep 100 & sleep 100",
    );
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    let outcome = status_file(&status);
    assert_eq!(outcome.exit_code, 124);
    assert!(outcome.timed_out);
    assert_eq!(outcome.signal.as_deref(), Some("SIGTERM"));
    let elapsed = outcome.elapsed_ms.expect("elapsed_ms");
    assert!(elapsed >= 1000, "killed before the deadline: {elapsed} ms");
    // SIGTERM, not the grace's SIGKILL, is what ended it (the status says which).
    assert_group_gone(outcome.pid.expect("pid"));
}

#[test]
fn a_group_that_ignores_sigterm_is_killed_after_the_grace() {
    let (out, status) = sh_writing(
        &["--deadline", "0.5", "--grace", "0.5"],
        "--status-file",
        "trap '' TERM; sleep 100 & sleep 100",
    );
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    let outcome = status_file(&status);
    assert_eq!(outcome.signal.as_deref(), Some("SIGKILL"));
    assert!(outcome.timed_out);
    assert!(
        outcome.elapsed_ms.unwrap() >= 1000,
        "SIGKILL came before the grace"
    );
    assert_group_gone(outcome.pid.unwrap());
}

#[test]
fn output_printed_before_a_kill_is_in_the_transcript() {
    let (out, transcript) = sh_writing(
        &["--deadline", "1"],
        "--transcript",
        r#"printf '{"type":"session"}\n{"type":"message_upd'; sleep 100"#,
    );
    let partial = b"{\"type\":\"session\"}\n{\"type\":\"message_upd";
    assert_eq!(out.status.code(), Some(124));
    assert_eq!(out.stdout, partial);
    assert_eq!(fs::read(&transcript).unwrap(), partial);
}

#[test]
fn stdout_streams_while_the_command_runs_and_signals_reach_its_group() {
    for sig in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
        // The shell's trap names a signal without its SIG prefix: TERM, INT, HUP.
        let name = sig.as_str().trim_start_matches("SIG");
        let script =
            format!("trap 'echo got {name}; exit 7' {name}; echo $$; while :; do sleep 0.1; done");
        let mut child = spawn_with_default_signals(&["--", "sh", "-c", &script]);
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        // The first line arrives while the command is still running: nothing is held back.
        let mut first = String::new();
        stdout.read_line(&mut first).unwrap();
        let pgid: u32 = first.trim().parse().expect("the command's pid");
        kill(Pid::from_raw(child.id() as i32), sig).unwrap();
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).unwrap();
        let status = wait_bounded(&mut child);
        assert_eq!(rest, format!("got {name}\n"), "{name} was not forwarded");
        assert_eq!(status.code(), Some(7), "{name}: the command's own status");
        assert_group_gone(pgid);
    }
}

#[test]
fn a_forwarded_signal_the_command_ignores_is_followed_by_sigkill() {
    let mut child = spawn_with_default_signals(&[
        "--grace",
        "0.5",
        "--",
        "sh",
        "-c",
        "trap '' TERM; echo $$; sleep 100",
    ]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let status = wait_bounded(&mut child);
    assert_eq!(status.code(), Some(128 + 9));
    assert_group_gone(first.trim().parse().unwrap());
}

#[test]
fn what_the_command_leaves_in_its_group_is_killed_when_it_exits() {
    let (out, status) = sh_writing(&[], "--status-file", "sleep 100 & echo $!");
    assert_eq!(out.status.code(), Some(0));
    let grandchild: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_process_gone(grandchild);
    let outcome = status_file(&status);
    assert_eq!(outcome.exit_code, 0);
    assert!(!outcome.timed_out);
    assert_group_gone(outcome.pid.unwrap());
}

#[test]
fn the_command_dies_with_moot_run() {
    let mut child = spawn_with_default_signals(&["--", "sh", "-c", "echo $$; exec sleep 100"]);
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let command: u32 = first.trim().parse().unwrap();
    child.kill().unwrap(); // SIGKILL: moot-run gets no chance to clean up.
    wait_bounded(&mut child);
    assert_process_gone(command);
}

#[test]
fn the_command_has_its_own_group_null_stdin_and_no_blocked_or_ignored_signals() {
    let out = output(
        sh(
            &[],
            "echo $$; cut -d' ' -f5 /proc/$$/stat; readlink /proc/$$/fd/0; cat",
        )
        .stdin(Stdio::piped()),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(
        lines[0], lines[1],
        "the command leads its own process group"
    );
    assert_eq!(lines[2], "/dev/null");
    // Not through sh, which clears its own mask: the command itself must start with none of
    // moot-run's blocked signals, or a forwarded SIGTERM would never reach it.
    let mask = output(moot_run_default_signals(&[
        "--",
        "grep",
        "-E",
        "^Sig(Blk|Ign)",
        "/proc/self/status",
    ]));
    let text = String::from_utf8_lossy(&mask.stdout);
    let field = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).expect(name);
        u64::from_str_radix(line.rsplit('\t').next().unwrap(), 16).unwrap()
    };
    assert_eq!(field("SigBlk:"), 0, "{text}");
    // HUP, INT, PIPE (which moot-run itself ignores) and TERM are at their default action.
    let bit = |sig: Signal| 1u64 << (sig as i32 - 1);
    let defaults =
        bit(Signal::SIGHUP) | bit(Signal::SIGINT) | bit(Signal::SIGPIPE) | bit(Signal::SIGTERM);
    assert_eq!(field("SigIgn:") & defaults, 0, "{text}");
}

#[test]
fn the_commands_stdin_is_dev_null_even_when_ours_has_data() {
    let out = moot_testkit::run(
        BIN,
        &["--".into(), "cat".into()],
        b"this must not reach the command",
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"");
}

#[test]
fn argv_comes_from_stdin_when_none_is_given() {
    let out = moot_testkit::run(
        BIN,
        &[],
        b"sh\0-c\0printf '%s|' \"$@\"; cat; echo end\0zero\0-- -x\n@y\0\0",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"-- -x\n@y||end\n");
}

#[test]
fn argv_on_stdin_must_be_nul_terminated() {
    let cut = moot_testkit::run(BIN, &[], b"sh\0-c\0echo hi");
    assert_eq!(cut.status.code(), Some(125));
    assert_eq!(
        stderr(&cut),
        "moot-run: argv on stdin (last token unterminated): every token must end with a NUL \
         byte; was its producer cut off?\n"
    );
    assert_eq!(cut.stdout, b"");
    let empty = moot_testkit::run(BIN, &[], b"");
    assert_eq!(empty.status.code(), Some(125));
    assert_eq!(
        stderr(&empty),
        "moot-run: no command (stdin is empty): give one after --, or pipe NUL-terminated argv \
         on stdin\n"
    );
}

/// Waits until `pid` blocks `signal`: moot-run blocks the signals it reads from its signalfd
/// first thing, so a signal sent from then on is handled, not the default death of a process
/// that was not ready yet.
fn wait_until_blocked(pid: u32, signal: Signal) {
    let bit = 1u64 << (signal as i32 - 1);
    wait_for(&format!("{pid} blocking {signal}"), || {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let blocked = status
            .lines()
            .find_map(|line| line.strip_prefix("SigBlk:"))
            .map(|mask| u64::from_str_radix(mask.trim(), 16).unwrap())
            .unwrap();
        (blocked & bit != 0).then_some(())
    });
}

#[test]
fn a_signal_while_argv_is_awaited_on_stdin_stops_moot_run_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let stage = moot_testkit::scratch_dir(dir.path(), "stage");
    let mut child = moot_run_default_signals(&["--cleanup", stage.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A producer that never finishes: stdin stays open.
    let _producer = child.stdin.take().unwrap();
    wait_until_blocked(child.id(), Signal::SIGINT);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = wait_bounded(&mut child);
    let errors = rest_of_stderr(&mut child);
    assert_eq!(status.code(), Some(125));
    assert_eq!(
        errors,
        "moot-run: interrupted (SIGINT) while reading the command from stdin: nothing was run\n"
    );
    assert!(!stage.exists());
}

#[test]
fn a_missing_binary_exits_127_naming_it_and_the_path_searched() {
    let dir = tempfile::tempdir().unwrap();
    let status = dir.path().join("s.json");
    let out = output(
        moot_run_at("--status-file", &status, &["--", "no-such-agent-cli"])
            .env("PATH", "/nonexistent/a:/nonexistent/b"),
    );
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(
        stderr(&out),
        "moot-run: command not found (no-such-agent-cli): searched \
         PATH=/nonexistent/a:/nonexistent/b\n"
    );
    assert_eq!(
        fs::read_to_string(&status).unwrap(),
        "{\"exit_code\":127,\"signal\":null,\"timed_out\":false,\"elapsed_ms\":null,\"pid\":null}\n"
    );
}

#[test]
fn a_file_that_is_not_executable_exits_126() {
    let (dir, script) = agent("#!/bin/sh\necho hi\n", 0o644);
    let direct = output(moot_run(&["--", script.to_str().unwrap()]));
    assert_eq!(direct.status.code(), Some(126));
    assert_eq!(
        stderr(&direct),
        format!(
            "moot-run: command not executable ({}): not an executable regular file\n",
            script.display()
        )
    );
    let searched = output(moot_run(&["--", "agent"]).env("PATH", dir.path()));
    assert_eq!(searched.status.code(), Some(126));
}

#[test]
fn a_missing_interpreter_is_127_and_says_so() {
    let (_dir, script) = agent("#!/nonexistent/interpreter\n", 0o755);
    let out = output(moot_run(&["--", script.to_str().unwrap()]));
    assert_eq!(out.status.code(), Some(127));
    assert_stderr_has(&out, "its #! interpreter may be missing\n");
}

#[test]
fn the_status_file_records_the_exit_and_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let status = dir.path().join("s.json");
    let path = status.to_str().unwrap();
    let out = output(sh(&["--status-file", path], "exit 3"));
    assert_eq!(out.status.code(), Some(3));
    let outcome = status_file(&status);
    assert_eq!(
        (outcome.exit_code, outcome.signal, outcome.timed_out),
        (3, None, false)
    );
    assert!(outcome.pid.unwrap() > 0);
    assert!(outcome.elapsed_ms.is_some());

    let out = output(sh(&["--status-file", path], "kill -KILL $$"));
    assert_eq!(out.status.code(), Some(137));
    let outcome = status_file(&status);
    assert_eq!(outcome.exit_code, 137);
    assert_eq!(outcome.signal.as_deref(), Some("SIGKILL"));
    assert!(!outcome.timed_out);
    // No temporary file is left beside it.
    let names: Vec<_> = fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(names.len(), 1);
}

#[test]
fn the_status_file_exists_when_stdout_ends() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let status = dir.path().join(format!("s{round}.json"));
        let mut child = moot_run_at("--status-file", &status, &["--", "echo", "answer"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        // End of input is when a parser downstream reads the file: it must be complete now.
        let outcome = status_file(&status);
        assert_eq!(outcome.exit_code, 0, "round {round}");
        assert_eq!(stdout, "answer\n");
        wait_bounded(&mut child);
    }
}

#[test]
fn a_status_file_that_cannot_be_written_is_moot_runs_failure() {
    let out = output(moot_run(&[
        "--status-file",
        "/nonexistent/dir/s.json",
        "--",
        "true",
    ]));
    assert_eq!(out.status.code(), Some(125));
    let errors = stderr(&out);
    assert!(
        errors.starts_with("moot-run: cannot write --status-file (/nonexistent/dir/s.json): "),
        "{errors}"
    );
    assert_eq!(errors.lines().count(), 1);
}

/// Runs `command` with stdout and stderr on pipes, reading both to end of file on threads:
/// fails the test if either is still open [`HANG_GUARD`] after moot-run exits (a process that kept
/// the caller's output open would make a caller waiting for end of file hang).
fn output_reaching_eof(mut command: Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reader = |mut pipe: Box<dyn Read + Send>| {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            let _ = sender.send(bytes);
        });
        receiver
    };
    let stdout = reader(Box::new(child.stdout.take().unwrap()));
    let stderr = reader(Box::new(child.stderr.take().unwrap()));
    let status = wait_bounded(&mut child);
    let eof = |receiver: std::sync::mpsc::Receiver<Vec<u8>>, what: &str| {
        receiver.recv_timeout(HANG_GUARD).unwrap_or_else(|_| {
            panic!("moot-run's {what} was still open {HANG_GUARD:?} after it exited")
        })
    };
    Output {
        status,
        stdout: eof(stdout, "stdout"),
        stderr: eof(stderr, "stderr"),
    }
}

/// Live processes whose command line holds `marker`.
/// A number of seconds for `sleep` that names this test process: another `cargo test` running
/// the same test beside this one (two clones, two CI jobs on one machine) has other markers, so
/// neither counts the other's sleepers as its own survivors.
fn marker(base: &str) -> String {
    format!("{base}{}", std::process::id())
}

fn live_with_marker(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let zombie = fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|stat| {
                stat.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn nothing_the_command_started_outlives_moot_run_setsid_and_double_forks_included() {
    // 300 detached sleepers, one that sleeps forever holding the command's stderr, and a double
    // fork: all gone when moot-run returns, and the caller's stdout and stderr reach end of file.
    let marker = marker("4242.125");
    let script = format!(
        "for i in $(seq 300); do setsid sleep {marker} </dev/null >/dev/null 2>&1 & done; \
         setsid sh -c 'exec sleep infinity {marker}' </dev/null >/dev/null & \
         sh -c '(setsid sleep {marker} &) ; exit 0' </dev/null >/dev/null 2>&1; \
         echo started; exec sleep 100"
    );
    let out = output_reaching_eof(moot_run(&[
        "--deadline",
        "2",
        "--grace",
        "0.5",
        "--",
        "sh",
        "-c",
        &script,
    ]));
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    assert_eq!(out.stdout, b"started\n");
    let left = live_with_marker(&marker);
    assert!(
        left.is_empty(),
        "processes of the job outlived moot-run: {left:?}"
    );
}

/// A detached process whose main thread has exited (its leader shows as a zombie in `/proc`
/// while another thread lives on and starts children): killed with its children.
const THREAD_LEADER: &str = r#"
import ctypes, os, threading, time
if os.fork():
    os._exit(0)
os.setsid()
def spawn():
    for _ in range(3):
        if os.fork() == 0:
            os.setsid()
            os.execvp("sleep", ["sleep", "MARKER"])
    time.sleep(30)
threading.Thread(target=spawn).start()
time.sleep(0.2)
ctypes.CDLL(None).pthread_exit(None)
"#;

/// 55 chains that hop: each link calls setsid, forks and exits, 40 times, then sleeps. While
/// moot-run sweeps, children are re-parented to it in the middle of its reading `/proc`.
const HOPPING_CHAINS: &str = r#"
import os, time
for _ in range(55):
    if os.fork() == 0:
        os.setsid()
        for hop in range(40):
            if os.fork():
                os._exit(0)
            time.sleep(0.002)
        os.execvp("sleep", ["sleep", "MARKER"])
"#;

#[test]
fn a_process_whose_main_thread_exited_is_killed_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("leader.py");
    let marker = marker("4245.25");
    fs::write(&script, THREAD_LEADER.replace("MARKER", &marker)).unwrap();
    let command = format!(
        "python3 {} </dev/null >/dev/null 2>&1; sleep 0.5",
        script.display()
    );
    let out = output_reaching_eof(moot_run(&["--", "sh", "-c", &command]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let left = live_with_marker(&marker);
    assert!(left.is_empty(), "outlived moot-run: {left:?}");
}

#[test]
fn processes_that_hop_while_moot_run_sweeps_are_all_killed() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("chains.py");
    let marker = marker("4246.25");
    fs::write(&script, HOPPING_CHAINS.replace("MARKER", &marker)).unwrap();
    let command = format!("python3 {} </dev/null >/dev/null 2>&1", script.display());
    // Five runs: a sweep that trusted one reading of /proc missed a chain in about one run of
    // five.
    for _ in 0..5 {
        let out = output_reaching_eof(moot_run(&["--", "sh", "-c", &command]));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let left = live_with_marker(script.to_str().unwrap())
            .into_iter()
            .chain(live_with_marker(&marker))
            .collect::<Vec<_>>();
        assert!(left.is_empty(), "outlived moot-run: {left:?}");
    }
}

#[test]
fn a_command_that_exits_at_once_leaves_no_detached_process() {
    let marker = marker("4243.125");
    let script = format!(
        "for i in $(seq 50); do setsid sleep {marker} & done; setsid sh -c 'exec sleep infinity' & \
         echo done"
    );
    let out = output_reaching_eof(moot_run(&["--", "sh", "-c", &script]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"done\n");
    assert_eq!(stderr(&out), "");
    assert!(live_with_marker(&marker).is_empty());
}

/// A program the command starts, detached and with none of the command's descriptors, tries
/// every way into the command's stdout and stderr: reopening them through `/proc`, taking them
/// with pidfd_getfd, and ptrace; once while the command runs and once after it exited. Each
/// attempt's result goes to `report`.
fn forger(report: &Path) -> String {
    let python = format!(
        r#"
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
target = int(sys.argv[1])
report = open({report:?}, "a")
def attempt(round):
    for fd in (1, 2):
        try:
            with open("/proc/%d/fd/%d" % (target, fd), "w") as f:
                f.write('{{"forged":"FORGED-REOPEN"}}\n')
            report.write("%s reopen %d: wrote\n" % (round, fd))
        except OSError as e:
            report.write("%s reopen %d: %s\n" % (round, fd, e.strerror))
        try:
            pidfd = os.pidfd_open(target)
            got = libc.syscall({getfd}, pidfd, fd, 0)
            if got < 0:
                report.write("%s getfd %d: %s\n" % (round, fd, os.strerror(ctypes.get_errno())))
            else:
                os.write(got, b'{{"forged":"FORGED-GETFD"}}\n')
                report.write("%s getfd %d: wrote\n" % (round, fd))
        except OSError as e:
            report.write("%s getfd %d: %s\n" % (round, fd, e.strerror))
    seized = libc.syscall({ptrace}, 0x4206, target, 0, 0)
    report.write("%s ptrace: %s\n" % (round, "seized" if seized == 0 else os.strerror(ctypes.get_errno())))
    report.flush()
attempt("running")
while os.path.exists("/proc/%d/status" % target) and "zombie" not in open("/proc/%d/status" % target).read():
    time.sleep(0.01)
attempt("exited")
"#,
        report = report.display().to_string(),
        getfd = nix::libc::SYS_pidfd_getfd,
        ptrace = nix::libc::SYS_ptrace,
    );
    python
}

#[test]
fn no_process_of_the_job_can_write_into_the_commands_stdout_or_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    let forger_py = dir.path().join("forger.py");
    fs::write(&forger_py, forger(&report)).unwrap();
    // The command prints its real answer, starts the forger detached with none of its own
    // descriptors, waits until the first round is done, and exits.
    let script = format!(
        "echo real-answer; echo real-stderr >&2; \
         setsid python3 {forger} $$ </dev/null >/dev/null 2>&1 & \
         while [ \"$(cat {report} 2>/dev/null | grep -c running)\" -lt 5 ]; do sleep 0.01; done",
        forger = forger_py.display(),
        report = report.display()
    );
    let transcript = dir.path().join("run.ndjson");
    let out = output_reaching_eof(moot_run(&[
        "--transcript",
        transcript.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, b"real-answer\n");
    assert_eq!(stderr(&out), "real-stderr\n");
    assert_eq!(fs::read(&transcript).unwrap(), b"real-answer\n");
    // Every attempt of the first round ran and was refused by the kernel; the forger did not
    // live to make the second.
    let report = fs::read_to_string(&report).unwrap();
    let running: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("running"))
        .collect();
    assert_eq!(
        running,
        [
            "running reopen 1: No such device or address",
            "running getfd 1: Operation not permitted",
            "running reopen 2: No such device or address",
            "running getfd 2: Operation not permitted",
            "running ptrace: Operation not permitted",
        ],
        "{report}"
    );
    // A second round, if the forger got to it before moot-run killed it, was refused too.
    assert!(
        !report.contains("wrote") && !report.contains("seized"),
        "{report}"
    );
}

/// A flood of 2 GiB from a command that ignores the SIGTERM the limit sends, `--grace 120` so
/// that all of it goes through: `flag SIZE` bounds it, `kept_flag` names the file that keeps it.
/// Returns moot-run's exit status, its stderr, its peak memory in KiB (the high-water mark, read
/// while it runs: it only grows), the kept file and the status file's outcome.
fn flood(
    flag: &str,
    size: &str,
    kept_flag: &str,
    script: &str,
) -> (Option<i32>, String, u64, Vec<u8>, ProcessOutcome) {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept");
    let status = dir.path().join("status");
    let mut child = moot_run(&[
        flag,
        size,
        "--grace",
        "120",
        kept_flag,
        kept.to_str().unwrap(),
        "--status-file",
        status.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &format!("trap '' TERM; {script}"),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut peak_kib = 0u64;
    while child.try_wait().unwrap().is_none() {
        if let Ok(text) = fs::read_to_string(format!("/proc/{}/status", child.id())) {
            if let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            {
                peak_kib = peak_kib.max(kib);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let code = child.wait().unwrap().code();
    let mut errors = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut errors)
        .unwrap();
    (
        code,
        errors,
        peak_kib,
        fs::read(&kept).unwrap(),
        status_file(&status),
    )
}

#[test]
fn a_flood_past_the_output_limit_keeps_head_and_tail_in_bounded_memory() {
    let (code, errors, peak_kib, kept, outcome) = flood(
        "--max-output",
        "1M",
        "--transcript",
        "printf head; head -c 2147483648 /dev/zero; printf tail",
    );
    assert_eq!(code, Some(123), "{errors}");
    assert_eq!(kept.len(), 1 << 20);
    assert!(kept.starts_with(b"head") && kept.ends_with(b"tail"));
    let limit = outcome.output_limit.expect("the status names the limit");
    assert_eq!((limit.stream.as_str(), limit.limit), ("stdout", 1 << 20));
    assert_eq!(limit.dropped, (2u64 << 30) + 8 - (1 << 20));
    assert_eq!(
        errors,
        format!(
            "moot-run: the command's stdout passed --max-output (1048576 bytes): it was ended, \
             and {} bytes of its middle were dropped (its head and tail are kept)\n",
            limit.dropped
        )
    );
    assert!(
        peak_kib > 0 && peak_kib < 64 * 1024,
        "moot-run peaked at {peak_kib} KiB"
    );
}

#[test]
fn kept_stderr_has_its_own_limit() {
    let (code, errors, peak_kib, kept, outcome) = flood(
        "--max-stderr",
        "64K",
        "--stderr-file",
        "echo answer; head -c 2147483648 /dev/zero >&2",
    );
    assert_eq!(code, Some(123), "{errors}");
    assert_eq!(kept.len(), 64 << 10);
    let limit = outcome.output_limit.expect("the status names the limit");
    assert_eq!((limit.stream.as_str(), limit.limit), ("stderr", 64 << 10));
    assert_eq!(limit.dropped, (2u64 << 30) - (64 << 10));
    assert!(
        peak_kib > 0 && peak_kib < 64 * 1024,
        "moot-run peaked at {peak_kib} KiB"
    );
}

/// The command printed all it had and exited, but the reader downstream stopped reading: once
/// the copy has not moved for the grace period, moot-run says the output was not delivered
/// (exit 125) instead of ending as if it had been.
#[test]
fn output_a_reader_never_takes_is_a_failure_not_a_success() {
    let mut child = moot_run(&[
        "--grace",
        "0.5",
        "--",
        "sh",
        "-c",
        "head -c 150000 /dev/zero",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Not a byte read until moot-run has given up.
    let status = wait_bounded(&mut child);
    let mut errors = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut errors)
        .unwrap();
    assert_eq!(status.code(), Some(125), "{errors}");
    assert_eq!(
        errors,
        "moot-run: cannot deliver the command's stdout: no byte of it moved for 1.0 s after \
         every process of the job was killed (the reader downstream stopped reading, or a \
         process outside the job holds it open)\n"
    );
}

#[test]
fn a_closed_stdout_still_leaves_a_complete_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("t");
    let mut child = moot_run_at(
        "--transcript",
        &transcript,
        &["--", "head", "-c", "1048576", "/dev/zero"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    drop(child.stdout.take()); // The reader goes away at once.
    let status = wait_bounded(&mut child);
    // Regression: this exited 0, as if the output had been delivered.
    assert_eq!(
        status.code(),
        Some(125),
        "a lost stdout is moot-run's failure"
    );
    assert_eq!(fs::metadata(&transcript).unwrap().len(), 1 << 20);
    let err = rest_of_stderr(&mut child);
    assert_eq!(
        err,
        "moot-run: cannot write stdout; the transcript, if any, has every byte: Broken pipe \
         (os error 32)\n"
    );
}

/// The environment the preset tests start from: known names only.
fn preset_env(command: &mut Command, extra: &[(&str, &str)]) {
    command
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", "/home/agent")
        .env("LC_ALL", "C")
        .env("XDG_CONFIG_HOME", "/home/agent/.config")
        .env("OMP_PROFILE", "work")
        .env("ANTHROPIC_API_KEY", "sk-should-not-leak")
        .env("GITHUB_TOKEN", "ghp-should-not-leak")
        .env("FOO", "bar");
    for (name, value) in extra {
        command.env(name, value);
    }
}

fn env_lines(out: &Output) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn an_env_preset_keeps_only_the_allowlist_and_the_runtimes_names() {
    let mut command = moot_run(&["--env-preset", "omp", "--", "env"]);
    preset_env(&mut command, &[]);
    let out = output(&mut command);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert_eq!(
        env_lines(&out),
        [
            "HOME=/home/agent",
            "LC_ALL=C",
            "OMP_PROFILE=work",
            "PATH=/usr/bin:/bin",
            "XDG_CONFIG_HOME=/home/agent/.config",
        ]
    );
}

#[test]
fn keep_adds_names_and_prefixes() {
    let mut command = moot_run(&[
        "--env-preset",
        "claude",
        "--keep",
        "FOO",
        "--keep",
        "GITHUB_*",
        "--",
        "env",
    ]);
    preset_env(&mut command, &[]);
    let out = output(&mut command);
    assert_eq!(
        env_lines(&out),
        [
            "ANTHROPIC_API_KEY=sk-should-not-leak",
            "FOO=bar",
            "GITHUB_TOKEN=ghp-should-not-leak",
            "HOME=/home/agent",
            "LC_ALL=C",
            "PATH=/usr/bin:/bin",
            "XDG_CONFIG_HOME=/home/agent/.config",
        ]
    );
}

#[test]
fn the_omp_broker_pair_is_kept_or_dropped_together() {
    let mut both = moot_run(&["--env-preset", "omp", "--", "env"]);
    preset_env(
        &mut both,
        &[
            ("OMP_AUTH_BROKER_URL", "http://127.0.0.1:9"),
            ("OMP_AUTH_BROKER_TOKEN", "tok"),
        ],
    );
    let out = output(&mut both);
    let lines = env_lines(&out);
    assert!(lines.contains(&"OMP_AUTH_BROKER_URL=http://127.0.0.1:9".to_string()));
    assert!(lines.contains(&"OMP_AUTH_BROKER_TOKEN=tok".to_string()));
    assert_eq!(stderr(&out), "");

    let mut half = moot_run(&["--env-preset", "omp", "--", "env"]);
    preset_env(
        &mut half,
        &[("OMP_AUTH_BROKER_URL", "http://secret-host:9")],
    );
    let out = output(&mut half);
    assert_eq!(out.status.code(), Some(0));
    assert!(!env_lines(&out)
        .iter()
        .any(|l| l.starts_with("OMP_AUTH_BROKER")));
    assert_eq!(
        stderr(&out),
        "moot-run: OMP_AUTH_BROKER_URL set without OMP_AUTH_BROKER_TOKEN: dropped \
         (OMP_AUTH_BROKER_URL and OMP_AUTH_BROKER_TOKEN are kept or dropped together)\n"
    );
}

#[test]
fn without_a_preset_the_environment_is_inherited_unchanged() {
    let mut command = moot_run(&["--", "env"]);
    preset_env(&mut command, &[]);
    let lines = env_lines(&output(&mut command));
    assert!(lines.contains(&"ANTHROPIC_API_KEY=sk-should-not-leak".to_string()));
    assert!(lines.contains(&"FOO=bar".to_string()));
    assert_eq!(lines.len(), 8);
}

#[test]
fn usage_errors_exit_125_on_one_line() {
    for (args, message) in [
        (
            vec!["--deadline", "soon", "--", "true"],
            "moot-run: invalid value 'soon' for '--deadline <SECS>': expected a number of seconds \
             such as 600 or 12.5, got \"soon\" (see --help)\n",
        ),
        (
            vec!["--deadline", "1e1", "--", "true"],
            "moot-run: invalid value '1e1' for '--deadline <SECS>': expected a number of seconds \
             such as 600 or 12.5, got \"1e1\" (see --help)\n",
        ),
        (
            vec!["--deadline", "0", "--", "true"],
            "moot-run: invalid value '0' for '--deadline <SECS>': the deadline must be more \
             than 0 seconds (see --help)\n",
        ),
        (
            vec!["--keep", "FOO", "--", "true"],
            "moot-run: the following required arguments were not provided: --env-preset \
             <RUNTIME> (see --help)\n",
        ),
        (
            vec!["--keep", "*", "--env-preset", "omp", "--", "true"],
            "moot-run: invalid value '*' for '--keep <VAR>': a variable name, or a prefix \
             followed by * (a bare * would keep everything: leave out --env-preset instead) (see --help)\n",
        ),
    ] {
        let out = output(moot_run(&args));
        assert_eq!(out.status.code(), Some(125), "{args:?}");
        assert_eq!(stderr(&out), message, "{args:?}");
    }
    let unknown = output(moot_run(&["--env-preset", "gpt", "--", "true"]));
    assert_eq!(unknown.status.code(), Some(125));
    assert!(stderr(&unknown).starts_with("moot-run: invalid value 'gpt' for '--env-preset"));
    assert_eq!(stderr(&unknown).lines().count(), 1);
}

/// Runs moot-run with `--cleanup` on a fresh staged directory and returns whether it is gone.
fn cleaned_after(args: &[&str], signal: Option<Signal>) -> (bool, Option<i32>) {
    let dir = tempfile::tempdir().unwrap();
    let stage = moot_testkit::scratch_dir(dir.path(), "stage");
    let mut all = vec!["--cleanup", stage.to_str().unwrap()];
    all.extend_from_slice(args);
    let code = match signal {
        None => output(moot_run(&all)).status.code(),
        Some(sig) => {
            let mut child = spawn_with_default_signals(&all);
            let mut first = String::new();
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut first)
                .unwrap();
            kill(Pid::from_raw(child.id() as i32), sig).unwrap();
            wait_bounded(&mut child).code()
        }
    };
    (!stage.exists(), code)
}

#[test]
fn cleanup_removes_the_staged_directory_on_every_path() {
    let cases: [(&[&str], Option<Signal>, i32); 6] = [
        (&["--", "true"], None, 0),
        (&["--", "false"], None, 1),
        (&["--deadline", "0.3", "--", "sleep", "100"], None, 124),
        (&["--", "no-such-agent-cli"], None, 127),
        (
            &["--transcript", "/nonexistent/dir/t", "--", "true"],
            None,
            125,
        ),
        (
            &["--", "sh", "-c", "echo ready; exec sleep 100"],
            Some(Signal::SIGTERM),
            143,
        ),
    ];
    for (args, signal, expected) in cases {
        let (removed, code) = cleaned_after(args, signal);
        assert_eq!(code, Some(expected), "{args:?}");
        assert!(removed, "the staged directory survived {args:?}");
    }
}

#[test]
fn cleanup_of_a_directory_never_created_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let never = dir.path().join("stage");
    let out = output(moot_run_at("--cleanup", &never, &["--", "true"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).is_empty());
}

#[test]
fn cleanup_refuses_what_is_not_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs::write(&file, "keep me").unwrap();
    let out = output(moot_run_at("--cleanup", &file, &["--", "true"]));
    assert_eq!(out.status.code(), Some(125));
    assert_eq!(
        stderr(&out),
        format!(
            "moot-run: --cleanup ({}): not a directory (a file is never removed)\n",
            file.display()
        )
    );
    assert!(file.exists());
}

/// The operator's project, as `proj/sub` with files in both, and the working directory in sub.
fn project() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("proj");
    fs::create_dir_all(proj.join("sub")).unwrap();
    fs::write(proj.join("keep.txt"), "mine").unwrap();
    fs::write(proj.join("sub/also.txt"), "mine too").unwrap();
    (dir, proj)
}

fn assert_project_intact(proj: &Path) {
    assert_eq!(fs::read_to_string(proj.join("keep.txt")).unwrap(), "mine");
    assert_eq!(
        fs::read_to_string(proj.join("sub/also.txt")).unwrap(),
        "mine too"
    );
}

/// Regression: from `proj/sub`, `--cleanup ..` emptied `proj` before failing.
#[test]
fn cleanup_never_removes_what_moot_did_not_create() {
    let (dir, proj) = project();
    // Even a directory made to look like scratch is refused when it holds the working directory.
    let decoy = moot_testkit::scratch_dir(dir.path(), "decoy");
    fs::create_dir(decoy.join("cwd")).unwrap();
    let home = moot_testkit::scratch_dir(dir.path(), "home");
    let cases: [(&[&str], &Path, &str); 7] = [
        (
            &["--cleanup", ".."],
            &proj.join("sub"),
            "not an absolute path",
        ),
        (
            &["--cleanup", "."],
            &proj.join("sub"),
            "not an absolute path",
        ),
        (&["--cleanup", "/"], &proj, "refusing to remove /"),
        (
            &["--cleanup", &format!("{}/sub/..", proj.display())],
            &proj,
            "contains '.' or '..'",
        ),
        (&["--cleanup", proj.to_str().unwrap()], &proj, "not 0700"),
        (
            &["--cleanup", decoy.to_str().unwrap()],
            &decoy.join("cwd"),
            "current directory",
        ),
        (&["--cleanup", home.to_str().unwrap()], &proj, "$HOME"),
    ];
    for (flags, cwd, why) in cases {
        let mut args = flags.to_vec();
        args.extend(["--", "/bin/true"]);
        let out = output(moot_run(&args).current_dir(cwd).env("HOME", &home));
        assert_eq!(out.status.code(), Some(125), "{flags:?}");
        assert!(stderr(&out).contains(why), "{flags:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert_project_intact(&proj);
        assert!(decoy.join("nested/prompt.md").exists() && home.join("nested/prompt.md").exists());
    }
    let private = proj.join("sub");
    fs::set_permissions(&private, fs::Permissions::from_mode(0o700)).unwrap();
    let out = output(moot_run_at("--cleanup", &private, &["--", "true"]));
    assert_stderr_has(&out, "no .moot-scratch marker");
    assert_project_intact(&proj);
}

#[test]
fn a_usage_error_still_removes_the_staged_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let stage = moot_testkit::scratch_dir(dir.path(), "stage");
    let out = output(moot_run_at(
        "--cleanup",
        &stage,
        &["--deadline", "soon", "--", "true"],
    ));
    assert_eq!(out.status.code(), Some(125));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(!stage.exists(), "the staged prompt outlived a usage error");
}

#[test]
fn man_page_documents_every_flag() {
    moot_testkit::check_man_page(BIN, "moot-run.1");
}

/// Regression: `ln -s victim.conf run.ndjson; moot-run --transcript run.ndjson -- echo x`
/// overwrote victim.conf and made it 0600. A planted symlink, hard link or FIFO under the
/// transcript's or stderr file's name is refused before anything is written or run.
#[test]
fn planted_transcript_and_stderr_names_are_refused() {
    for flag in ["--transcript", "--stderr-file"] {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim.conf");
        write_with_mode(&victim, "operator's config", 0o644);
        let marker = dir.path().join("ran");
        let planted = dir.path().join("run.ndjson");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let hard = dir.path().join("hard");
        fs::hard_link(&victim, &hard).unwrap();
        for (name, why) in [
            (&planted, "is a symbolic link"),
            (&hard, "hard links"),
            (&fifo, "FIFO"),
        ] {
            let script = format!("echo x; echo e >&2; touch {}", marker.display());
            let mut command = moot_run(&[flag, name.to_str().unwrap(), "--", "sh", "-c", &script]);
            let mut child = command
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let status = wait_bounded(&mut child);
            let err = rest_of_stderr(&mut child);
            assert_eq!(status.code(), Some(125), "{flag} {name:?}: {err}");
            assert!(
                err.starts_with(&format!("moot-run: {flag} (")) && err.contains(why),
                "{err}"
            );
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(!marker.exists(), "the command ran");
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "operator's config");
        assert_eq!(mode(&victim), 0o644);
    }
}

/// A scratch directory whose `sub` is the operator's project, bind-mounted there (the device
/// number is the same: only the mount id tells). Unmounted on drop.
struct BoundScratch {
    _dir: tempfile::TempDir,
    scratch: std::path::PathBuf,
    project: std::path::PathBuf,
}

impl Drop for BoundScratch {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg(self.scratch.join("sub"))
            .status();
    }
}

/// Regression (found attacking the fix): a bind mount of the same filesystem inside a marked
/// scratch directory had its files removed; `check_tree` compared device numbers only.
#[test]
fn cleanup_removes_nothing_through_a_bind_mount() {
    if !nix::unistd::geteuid().is_root() {
        moot_testkit::skip(
            "cleanup_removes_nothing_through_a_bind_mount",
            "needs root to bind-mount",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    fs::create_dir(&project).unwrap();
    fs::write(project.join("important"), "keep").unwrap();
    let scratch = moot_testkit::scratch_dir(dir.path(), "scratch");
    fs::create_dir(scratch.join("sub")).unwrap();
    let bound = BoundScratch {
        _dir: dir,
        scratch: scratch.clone(),
        project: project.clone(),
    };
    let mounted = Command::new("mount")
        .args(["--bind"])
        .arg(&bound.project)
        .arg(bound.scratch.join("sub"))
        .status()
        .unwrap();
    assert!(mounted.success(), "mount --bind failed");
    let out = output(moot_run_at("--cleanup", &scratch, &["--", "true"]));
    assert_eq!(out.status.code(), Some(125));
    assert_stderr_has(&out, "is a mount point");
    assert_eq!(
        fs::read_to_string(project.join("important")).unwrap(),
        "keep"
    );
    assert!(
        scratch.join(moot::cleanup::MARKER).exists(),
        "removed part of it"
    );
}

/// Regression (found attacking the fix): as an ordinary user, a subdirectory it cannot empty
/// (0500) made removal stop half-way. Now nothing is removed.
#[test]
fn cleanup_of_a_tree_it_cannot_empty_removes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = moot_testkit::scratch_dir(dir.path(), "scratch");
    let as_nobody = nix::unistd::geteuid().is_root();
    if as_nobody {
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        for path in [
            &scratch,
            &scratch.join("nested"),
            &scratch.join(moot::cleanup::MARKER),
        ] {
            std::os::unix::fs::chown(path, Some(65534), Some(65534)).unwrap();
        }
    }
    fs::set_permissions(scratch.join("nested"), fs::Permissions::from_mode(0o500)).unwrap();
    let mut command = moot_run_at("--cleanup", &scratch, &["--", "true"]);
    // As nobody, a copy nobody can run: the clone may be in a directory only we can enter.
    let copies = as_nobody.then(|| moot_testkit::fs::copies_anyone_can_run(&[Path::new(BIN)]));
    if let Some(copies) = &copies {
        let args: Vec<_> = command.get_args().map(ToOwned::to_owned).collect();
        command = Command::new(copies.path().join("moot-run"));
        command
            .args(args)
            .stdin(Stdio::null())
            .uid(65534)
            .gid(65534);
    }
    let out = output(command);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert_stderr_has(&out, "not a directory you can empty");
    assert!(
        scratch.join(moot::cleanup::MARKER).exists(),
        "removed part of it"
    );
    assert!(scratch.join("nested/prompt.md").exists());
    fs::set_permissions(scratch.join("nested"), fs::Permissions::from_mode(0o700)).unwrap();
}

/// Regression (found attacking the fix): moot-run checked `--cleanup` before it had read the
/// argv, so a producer still staging (directory made, marker not yet written) was refused at
/// random. The check now waits for the producer to finish.
#[test]
fn cleanup_is_checked_once_the_producer_is_done() {
    let dir = tempfile::tempdir().unwrap();
    let stage = dir.path().join("stage");
    let script = format!(
        "mkdir -m 700 {s}; sleep 0.5; : > {s}/.moot-scratch; printf 'true\\0'",
        s = stage.display()
    );
    let mut producer = Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = Command::new(BIN)
        .args(["--cleanup", stage.to_str().unwrap()])
        .stdin(producer.stdout.take().unwrap())
        .output()
        .unwrap();
    producer.wait().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stage.exists());
}

/// Regression (found attacking the fix): an agent that could rename the directory holding the
/// harness's files swapped it for a link to a directory of its choosing, and moot-run wrote its
/// status there and reported the staged prompt "already removed". Now each of those is a
/// failure (125), and nothing is written through the swapped name.
#[test]
fn a_stage_swapped_during_the_run_is_detected_and_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let stage = moot_testkit::scratch_dir(dir.path(), "stage");
    let prompt_dir = moot_testkit::scratch_dir(&stage, "p");
    let victim = dir.path().join("victim");
    fs::create_dir(&victim).unwrap();
    let hidden = dir.path().join("hidden");
    let swap = format!(
        "echo out; mv {stage} {hidden} && ln -s {victim} {stage}",
        stage = stage.display(),
        hidden = hidden.display(),
        victim = victim.display()
    );
    let out = output(sh(
        &[
            "--transcript",
            stage.join("run.ndjson").to_str().unwrap(),
            "--status-file",
            stage.join("status").to_str().unwrap(),
            "--cleanup",
            prompt_dir.to_str().unwrap(),
        ],
        &swap,
    ));
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    let errors = stderr(&out);
    assert!(
        errors.contains("--transcript") && errors.contains("moved or replaced"),
        "{errors}"
    );
    assert!(errors.contains("has disappeared"), "{errors}");
    assert!(
        errors.contains("--status-file") && errors.contains("not written"),
        "{errors}"
    );
    assert_eq!(
        fs::read_dir(&victim).unwrap().count(),
        0,
        "written into the victim"
    );
}

/// `git ARGS` in `dir` as the operator would run it after the job: unconfined, with a fixed
/// identity and none of this machine's global configuration.
fn operator_git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=op", "-c", "user.email=op@example.com"])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run git")
}

/// `moot-run --status-file STATUS --protect REPO -- sh -c SCRIPT`, run in REPO: a job in its
/// worktree.
fn job_in(repo: &Path, status: &Path, script: &str) -> Command {
    let mut command = sh(
        &[
            "--status-file",
            status.to_str().unwrap(),
            "--protect",
            repo.to_str().unwrap(),
        ],
        script,
    );
    command.current_dir(repo);
    command
}

/// A git repository with one commit, in a fresh directory.
fn repository() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = fs::canonicalize(dir.path()).unwrap().join("ws");
    fs::create_dir(&repo).unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["commit", "-q", "--allow-empty", "-m", "base"],
    ] {
        assert!(operator_git(&repo, args).status.success());
    }
    (dir, repo)
}

/// The attack of a job granted its worktree writable: git configuration that runs code
/// (`core.fsmonitor`, `core.hooksPath`, an `include.path`, a hook, a `.git` file pointing at a
/// git directory of its own, a nested repository) for the operator's next git command. moot-run
/// puts it all back and fails the run; the operator's `git status` and `git commit` then run
/// nothing the job wrote.
#[test]
fn nothing_the_job_writes_in_git_runs_when_the_operator_runs_git() {
    let (dir, repo) = repository();
    let pwned = dir.path().join("PWNED");
    let payload = format!("touch {}; false", pwned.display());
    let config_before = fs::read(repo.join(".git/config")).unwrap();
    let status = dir.path().join("status");
    let attack = format!(
        r#"set -e
        printf '[core]\n\tfsmonitor = "{payload}"\n\thooksPath = {hooks}\n[include]\n\tpath = {evil}/config\n' >> .git/config
        mkdir -p {hooks} {evil}
        printf '#!/bin/sh\n{payload}\n' > .git/hooks/pre-commit
        chmod +x .git/hooks/pre-commit
        mkdir -p nested && git -C nested init -q && printf '[core]\n\tfsmonitor = "{payload}"\n' >> nested/.git/config
        printf '[submodule "nested"]\n\tpath = nested\n' > .gitmodules
        echo work > file.txt"#,
        hooks = dir.path().join("hooks").display(),
        evil = dir.path().join("evil").display(),
    );
    let mut command = job_in(&repo, &status, &attack);
    let out = output(&mut command);
    assert_eq!(out.status.code(), Some(122), "{}", stderr(&out));
    assert_stderr_has(&out, "protected path");
    let outcome = status_file(&status);
    let tampered = outcome.tampered.expect("the status names the tampering");
    assert!(tampered.restored, "{tampered:?}");
    assert!(
        tampered.paths.iter().any(|p| p.ends_with(".git/config")),
        "{tampered:?}"
    );
    assert_eq!(fs::read(repo.join(".git/config")).unwrap(), config_before);
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    assert!(!repo.join("nested/.git").exists() && !repo.join(".gitmodules").exists());
    assert_eq!(
        fs::read_to_string(repo.join("file.txt")).unwrap(),
        "work\n",
        "the work is kept"
    );
    for args in [
        &["status"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "after"],
    ] {
        let git = operator_git(&repo, args);
        assert!(git.status.success(), "git {args:?}: {}", stderr(&git));
    }
    assert!(!pwned.exists(), "the operator's git ran the job's code");
}

/// What a job legitimately does in git (add, commit on its branch, make a branch) changes only
/// git's data: the run is not failed, and the commits are there.
#[test]
fn a_job_that_commits_on_its_branch_is_not_tampering() {
    let (dir, repo) = repository();
    let status = dir.path().join("status");
    let work = "set -e
        git checkout -q -b job
        echo one > a.txt && git add a.txt
        git -c user.name=agent -c user.email=a@example.com commit -q -m one
        echo two >> a.txt
        git -c user.name=agent -c user.email=a@example.com commit -q -am two";
    let mut command = job_in(&repo, &status, work);
    let out = output(command.env("GIT_CONFIG_GLOBAL", "/dev/null"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(status_file(&status).tampered, None);
    let log = operator_git(&repo, &["log", "--format=%s", "job"]);
    assert_eq!(String::from_utf8_lossy(&log.stdout), "two\none\nbase\n");
}

#[test]
fn a_protected_directory_that_is_not_one_is_refused_before_the_run() {
    let (dir, _repo) = repository();
    let ran = dir.path().join("ran");
    let out = output(sh(
        &["--protect", dir.path().join("absent").to_str().unwrap()],
        &format!("touch {}", ran.display()),
    ));
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert_stderr_has(&out, "--protect");
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(!ran.exists(), "the command ran unprotected");
}

/// (Independent attack) the job breaks `.git/HEAD` and makes the worktree itself a bare
/// repository (`HEAD`, `config` with `core.worktree = .` and an fsmonitor, `hooks/`, links to
/// the real objects and refs): git's discovery then reads the worktree root. moot-run makes
/// `.git` a git directory again, so the operator's git reads it and not the planted one.
#[test]
fn a_bare_repository_planted_at_the_worktree_root_is_never_read() {
    let (dir, repo) = repository();
    let pwned = dir.path().join("PWNED");
    let status = dir.path().join("status");
    let attack = format!(
        r#"set -e
        cp .git/HEAD HEAD; ln -s .git/objects objects; ln -s .git/refs refs; ln -s .git/logs logs
        mkdir -p info hooks
        printf '/HEAD\n/config\n/objects\n/refs\n/logs\n/info\n/hooks\n' > info/exclude
        printf '#!/bin/sh\ntouch {pwned}\n' > hooks/pre-commit; chmod +x hooks/pre-commit
        printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = "touch {pwned}; false"\n' > config
        echo garbage > .git/HEAD"#,
        pwned = pwned.display(),
    );
    let mut command = job_in(&repo, &status, &attack);
    let out = output(&mut command);
    assert_eq!(out.status.code(), Some(122), "{}", stderr(&out));
    let tampered = status_file(&status)
        .tampered
        .expect("the broken .git is named");
    assert!(tampered.restored, "{tampered:?}");
    for args in [
        &["status"][..],
        &["add", "-A"],
        &["commit", "-q", "-m", "after"],
    ] {
        let git = operator_git(&repo, args);
        assert!(git.status.success(), "git {args:?}: {}", stderr(&git));
    }
    assert!(
        !pwned.exists(),
        "the operator's git read the planted repository"
    );
}

/// `--cwd DIR`: the command runs in DIR, while what moot-run names itself (the program found
/// from here, the transcript) is still named from where moot-run runs. A DIR that is not a
/// directory is moot-run's own failure (125, one line), the command never starts, and the
/// `--cleanup` directories are still removed.
#[test]
fn cwd_runs_the_command_in_dir_and_nothing_else_moves() {
    let here = tempfile::tempdir().unwrap();
    let worktree = here.path().join("worktree");
    fs::create_dir(&worktree).unwrap();
    write_with_mode(here.path().join("agent"), "#!/bin/sh\npwd\n", 0o755);
    let out = output(
        moot_run(&[
            "--cwd",
            "worktree",
            "--transcript",
            "run.log",
            "--",
            "./agent",
        ])
        .current_dir(here.path()),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let worktree = fs::canonicalize(&worktree).unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("{}\n", worktree.display())
    );
    assert!(
        here.path().join("run.log").is_file(),
        "the transcript moved"
    );

    fs::write(here.path().join("file"), "").unwrap();
    for (dir, why) in [
        ("file", "--cwd (file): not a directory"),
        (
            "absent",
            "--cwd (absent): No such file or directory (os error 2)",
        ),
    ] {
        let stage = here.path().join("stage");
        fs::create_dir(&stage).unwrap();
        fs::set_permissions(&stage, fs::Permissions::from_mode(0o700)).unwrap();
        fs::write(stage.join(".moot-scratch"), "").unwrap();
        let out = output(
            moot_run(&[
                "--cwd",
                dir,
                "--cleanup",
                stage.to_str().unwrap(),
                "--",
                "./agent",
            ])
            .current_dir(here.path()),
        );
        assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
        assert_eq!(stderr(&out), format!("moot-run: {why}\n"));
        assert!(out.stdout.is_empty(), "the command ran");
        assert!(!stage.exists(), "--cleanup was not honoured");
    }
}
