//! moot-sandbox against the real kernel: every denial is proven by a real process failing, as
//! root too (Landlock confines root). A test that needs a newer Landlock ABI than the kernel has
//! says so on stderr and skips, or fails under MOOT_NO_SKIP (set by .ci/run).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::Read;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{SocketAddr, UnixListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use moot_testkit::fs::write_with_mode;

const BIN: &str = env!("CARGO_BIN_EXE_moot-sandbox");

fn sandbox(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run moot-sandbox")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The kernel's Landlock ABI, from `--check` (0 without Landlock).
fn kernel_abi() -> i64 {
    static ABI: OnceLock<i64> = OnceLock::new();
    *ABI.get_or_init(|| moot_testkit::landlock_abi(Path::new(BIN)))
}

/// False, with a loud note, when the kernel's ABI is older than `needed`.
fn kernel_has(needed: i64, test: &str) -> bool {
    moot_testkit::landlock_abi_at_least(Path::new(BIN), needed, test)
}

/// A fresh directory tree: `ws` (to grant), `outside` (never granted), a secret beside them.
struct Tree {
    _root: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    secret: PathBuf,
}

impl Tree {
    /// Runs `sh -c TEMPLATE` in the sandbox under `flags`, with `{ws}`, `{out}` and `{secret}` in
    /// `template` replaced by this tree's paths.
    fn sh(&self, flags: &[&str], template: &str) -> Output {
        let script = template
            .replace("{ws}", path(&self.ws))
            .replace("{out}", path(&self.outside))
            .replace("{secret}", path(&self.secret));
        let mut args = flags.to_vec();
        args.extend(["--", "sh", "-c", &script]);
        sandbox(&args)
    }
}

fn tree() -> Tree {
    let root = tempfile::tempdir().unwrap();
    let ws = root.path().join("ws");
    let outside = root.path().join("outside");
    fs::create_dir(&ws).unwrap();
    fs::create_dir(&outside).unwrap();
    let secret = outside.join("secret");
    fs::write(&secret, "top secret\n").unwrap();
    Tree {
        _root: root,
        ws,
        outside,
        secret,
    }
}

/// A fresh [`tree`] when the kernel has Landlock ABI `needed`; `None`, noted as a skip, when not.
fn landlock_tree(needed: i64, test: &str) -> Option<Tree> {
    kernel_has(needed, test).then(tree)
}

#[test]
fn check_reports_the_kernel_and_a_real_probe() {
    if !kernel_has(1, "check_reports_the_kernel_and_a_real_probe") {
        return;
    }
    let out = sandbox(&["--check"]);
    let check: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(check["landlock"], "available");
    assert_eq!(check["target_abi"], 7);
    assert_eq!(check["probe"]["passed"], true, "{check}");
    assert_eq!(check["probe"]["no_new_privs"], true);
    assert_eq!(check["probe"]["ruleset"], "fully_enforced");
    assert_eq!(check["probe"]["allowed_write"]["succeeded"], true);
    assert_eq!(check["probe"]["denied_write"]["succeeded"], false);
    assert_eq!(check["probe"]["denied_write"]["errno"], "EACCES");
    let enforceable = check["enforceable"].as_array().unwrap();
    assert!(enforceable.contains(&"fs.write_file".into()));
    if kernel_abi() >= 7 {
        assert_eq!(out.status.code(), Some(0), "{check}");
        assert_eq!(check["not_enforceable"], serde_json::json!([]));
        assert_eq!(enforceable.len(), 20, "{check}");
    } else {
        assert_eq!(out.status.code(), Some(3));
        assert!(!check["not_enforceable"].as_array().unwrap().is_empty());
    }
    assert_eq!(stderr(&out), "");
}

/// In a container whose seccomp profile leaves Landlock's calls out (Docker's default answers
/// EPERM, Podman's ENOSYS), moot-sandbox refuses the command with exit 3 and one line that names
/// the profile, not the kernel; `--check` says so too. The profile is a real seccomp filter.
#[test]
fn a_seccomp_profile_without_landlock_is_named_and_nothing_runs() {
    if !kernel_has(
        1,
        "a_seccomp_profile_without_landlock_is_named_and_nothing_runs",
    ) {
        return;
    }
    let tree = tree();
    let ran = tree.ws.join("ran");
    for (errno, name) in [(nix::libc::EPERM, "EPERM"), (nix::libc::ENOSYS, "ENOSYS")] {
        let mut command = Command::new(BIN);
        command.args(["--rw", path(&tree.ws), "--", "touch", path(&ran)]);
        let out = moot_testkit::seccomp::refusing_landlock(&mut command, errno)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = stderr(&out);
        assert_eq!(out.status.code(), Some(3), "{name}: {text}");
        assert_eq!(text.lines().count(), 1, "{name}: {text}");
        assert!(
            text.starts_with("moot-sandbox: cannot enforce (a seccomp filter answers Landlock's system calls with ")
                && text.contains(name)
                && text.contains("the container's seccomp profile must allow landlock_create_ruleset"),
            "{name}: {text}"
        );
        assert!(!text.contains("CONFIG_SECURITY_LANDLOCK"), "{text}");
        assert!(!ran.exists(), "{name}: the command ran");

        let mut command = Command::new(BIN);
        command.arg("--check");
        let out = moot_testkit::seccomp::refusing_landlock(&mut command, errno)
            .output()
            .unwrap();
        let check: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(out.status.code(), Some(3), "{name}: {check}");
        assert_eq!(check["landlock"], "refused_by_seccomp", "{name}: {check}");
        assert_eq!(check["probe"]["passed"], false);
    }
}

/// Landlock checks opens, not writes: a descriptor the caller left open on a file outside the
/// grants would be a way out, so the command inherits only its stdio.
#[test]
fn a_descriptor_inherited_from_the_caller_is_closed() {
    let Some(t) = landlock_tree(1, "a_descriptor_inherited_from_the_caller_is_closed") else {
        return;
    };
    let log = fs::File::options().append(true).open(&t.secret).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&log);
    let script = "echo escaped >&7; ls /proc/self/fd";
    let mut command = Command::new(BIN);
    command
        .args(["--rw", path(&t.ws), "--", "sh", "-c", script])
        .stdin(Stdio::null());
    // SAFETY: dup2(2) in the forked child before exec; no allocation.
    unsafe {
        command.pre_exec(move || {
            nix::unistd::dup2(fd, 7)?;
            Ok(())
        });
    }
    let out = command.output().unwrap();
    assert_eq!(fs::read_to_string(&t.secret).unwrap(), "top secret\n");
    assert!(
        stderr(&out).contains("Bad file descriptor"),
        "{}",
        stderr(&out)
    );
    assert!(
        !stdout(&out).split_whitespace().any(|fd| fd == "7"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn writes_succeed_inside_rw_and_fail_with_eacces_outside() {
    let Some(t) = landlock_tree(1, "writes_succeed_inside_rw_and_fail_with_eacces_outside") else {
        return;
    };
    let out = t.sh(
        &["--rw", path(&t.ws)],
        "echo in > {ws}/made; echo out > {out}/made; rm {secret}; echo tail >> {secret}",
    );
    assert_eq!(fs::read_to_string(t.ws.join("made")).unwrap(), "in\n");
    assert!(
        !t.outside.join("made").exists(),
        "a write outside --rw landed"
    );
    assert_eq!(fs::read_to_string(&t.secret).unwrap(), "top secret\n");
    let errors = stderr(&out);
    assert_eq!(
        errors.matches("Permission denied").count(),
        3,
        "every denial is EACCES: {errors}"
    );
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn ro_paths_can_be_read_but_not_written_truncated_or_executed() {
    let Some(t) = landlock_tree(
        3,
        "ro_paths_can_be_read_but_not_written_truncated_or_executed",
    ) else {
        return;
    };
    let tool = t.outside.join("tool");
    fs::copy("/bin/true", &tool).unwrap();
    let script = format!(
        // Not `: >`: a redirection failing on a special builtin would end the script.
        "cat {secret}; true > {secret}; echo x > {out}/new; {tool}",
        secret = path(&t.secret),
        out = path(&t.outside),
        tool = path(&tool)
    );
    let out = sandbox(&["--ro", path(&t.outside), "--", "sh", "-c", &script]);
    assert_eq!(stdout(&out), "top secret\n");
    assert_eq!(
        fs::read_to_string(&t.secret).unwrap(),
        "top secret\n",
        "truncated"
    );
    assert!(!t.outside.join("new").exists());
    assert_eq!(
        stderr(&out).matches("Permission denied").count(),
        3,
        "{}",
        stderr(&out)
    );
    assert_eq!(
        out.status.code(),
        Some(126),
        "the last command could not be executed"
    );
}

#[test]
fn reads_outside_every_rule_fail() {
    let Some(t) = landlock_tree(1, "reads_outside_every_rule_fail") else {
        return;
    };
    let denied = sandbox(&["--rw", path(&t.ws), "--", "cat", path(&t.secret)]);
    assert_eq!(denied.status.code(), Some(1));
    assert_eq!(stdout(&denied), "");
    assert_eq!(
        stderr(&denied),
        format!("cat: {}: Permission denied\n", t.secret.display())
    );
    let listing = sandbox(&["--", "ls", path(&t.outside)]);
    assert_ne!(listing.status.code(), Some(0));
    assert!(stderr(&listing).contains("Permission denied"));
    let allowed = sandbox(&["--ro", path(&t.outside), "--", "cat", path(&t.secret)]);
    assert_eq!(allowed.status.code(), Some(0));
    assert_eq!(stdout(&allowed), "top secret\n");
}

#[test]
fn executing_outside_rx_fails() {
    let Some(t) = landlock_tree(1, "executing_outside_rx_fails") else {
        return;
    };
    let bin = t.ws.join("bin");
    fs::create_dir(&bin).unwrap();
    let tool = bin.join("tool");
    fs::copy("/bin/true", &tool).unwrap();
    let run = |grant: &str| sandbox(&[grant, path(&bin), "--", "sh", "-c", path(&tool)]);
    let denied = run("--ro");
    assert_eq!(denied.status.code(), Some(126));
    assert!(
        stderr(&denied).contains("Permission denied"),
        "{}",
        stderr(&denied)
    );
    assert_eq!(run("--rx").status.code(), Some(0));
    assert_eq!(run("--rw").status.code(), Some(0));
}

#[test]
fn a_command_the_sandbox_cannot_execute_exits_126_with_a_hint() {
    if !kernel_has(
        1,
        "a_command_the_sandbox_cannot_execute_exits_126_with_a_hint",
    ) {
        return;
    }
    let out = sandbox(&["--no-defaults", "--", "/usr/bin/true"]);
    assert_eq!(out.status.code(), Some(126));
    assert_eq!(
        stderr(&out),
        "moot-sandbox: cannot run (/usr/bin/true): the sandbox denies executing /usr/bin/true \
         (the program itself): grant it with --rx /usr/bin, or let --profile RUNTIME derive what \
         the CLI needs\n"
    );
    // The binary granted, its dynamic loader not: only the kernel knows, after the exec.
    let out = sandbox(&["--no-defaults", "--rx", "/usr/bin", "--", "/usr/bin/true"]);
    assert_eq!(out.status.code(), Some(126));
    assert_eq!(
        stderr(&out),
        "moot-sandbox: cannot run (/usr/bin/true): Permission denied (os error 13): the sandbox \
         may deny the binary, its #! interpreter or its shared libraries; grant them with --rx\n"
    );
}

#[test]
fn no_defaults_grants_nothing_but_what_is_named() {
    if !kernel_has(1, "no_defaults_grants_nothing_but_what_is_named") {
        return;
    }
    let out = sandbox(&[
        "--no-defaults",
        "--rx",
        "/usr",
        "--rx-try",
        "/lib",
        "--rx-try",
        "/lib64",
        "--",
        "/usr/bin/cat",
        "/etc/hostname",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "/usr/bin/cat: /etc/hostname: Permission denied\n"
    );
    let with_defaults = sandbox(&["--", "cat", "/etc/hostname"]);
    assert_eq!(
        with_defaults.status.code(),
        Some(0),
        "{}",
        stderr(&with_defaults)
    );
}

#[test]
fn the_command_runs_with_no_new_privs() {
    if !kernel_has(1, "the_command_runs_with_no_new_privs") {
        return;
    }
    let out = sandbox(&["--", "grep", "NoNewPrivs", "/proc/self/status"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "NoNewPrivs:\t1\n");
}

#[test]
fn devices_are_usable_by_default_and_tmp_is_not_granted() {
    if !kernel_has(1, "devices_are_usable_by_default_and_tmp_is_not_granted") {
        return;
    }
    let out = sandbox(&[
        "--",
        "sh",
        "-c",
        "echo x > /dev/null && head -c 4 /dev/urandom | wc -c && : > /tmp/moot-sandbox-probe",
    ]);
    assert_eq!(stdout(&out).trim(), "4");
    assert!(
        stderr(&out).contains("Permission denied"),
        "{}",
        stderr(&out)
    );
    assert!(!Path::new("/tmp/moot-sandbox-probe").exists());
}

#[test]
fn atomic_replace_and_rename_across_writable_roots_work() {
    let Some(t) = landlock_tree(2, "atomic_replace_and_rename_across_writable_roots_work") else {
        return;
    };
    let other = t.ws.parent().unwrap().join("other");
    fs::create_dir(&other).unwrap();
    let script = format!(
        "cd {ws} && echo v1 > f && mkdir d && echo v2 > d/tmp && mv d/tmp f && mv f {other}/f",
        ws = path(&t.ws),
        other = path(&other)
    );
    let out = sandbox(&[
        "--rw",
        path(&t.ws),
        "--rw",
        path(&other),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(other.join("f")).unwrap(), "v2\n");
    let denied = t.sh(&["--rw", path(&t.ws)], "mv {ws}/d {out}/d");
    assert_ne!(denied.status.code(), Some(0));
    assert!(t.ws.join("d").exists());
}

/// Runs bash's /dev/tcp connect to 127.0.0.1:`port` under `flags`; returns whether it connected.
fn connects(port: u16, flags: &[&str]) -> (bool, String) {
    let script = format!("exec 3<>/dev/tcp/127.0.0.1/{port}");
    let mut args = flags.to_vec();
    args.extend_from_slice(&["--", "bash", "-c", &script]);
    let out = sandbox(&args);
    (out.status.code() == Some(0), stderr(&out))
}

#[test]
fn tcp_connect_is_denied_unless_its_port_is_allowed() {
    if !kernel_has(4, "tcp_connect_is_denied_unless_its_port_is_allowed") {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let other = if port == 1 { 2 } else { port - 1 }.to_string();
    let allowed = port.to_string();
    assert!(connects(port, &[]).0, "TCP is not restricted by default");
    let (ok, errors) = connects(port, &["--no-net"]);
    assert!(!ok);
    assert!(errors.contains("Permission denied"), "{errors}");
    assert!(connects(port, &["--connect", &allowed]).0);
    assert!(connects(port, &["--no-net", "--connect", &allowed]).0);
    assert!(!connects(port, &["--connect", &other]).0);
    assert!(
        !connects(port, &["--bind", &allowed]).0,
        "bind does not allow connect"
    );
}

/// Node, as the real CLI: omp and most agent CLIs run on node or bun.
fn node() -> Option<PathBuf> {
    let node = std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|dir| Path::new(dir).join("node"))
        .find(|candidate| candidate.is_file());
    found_or_skip(
        node,
        "node",
        "node is not installed; these tests run a real node under the sandbox",
    )
}

/// `found`, or `None` with a loud note that `tool` is missing and `why` the test needs it.
fn found_or_skip<T>(found: Option<T>, tool: &str, why: &str) -> Option<T> {
    if found.is_none() {
        moot_testkit::skip(tool, why);
    }
    found
}

#[test]
fn tcp_bind_is_denied_unless_its_port_is_allowed() {
    if !kernel_has(4, "tcp_bind_is_denied_unless_its_port_is_allowed") || node().is_none() {
        return;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let script = format!(
        "require('net').createServer().listen({port}, '127.0.0.1', () => {{ \
         console.log('bound'); process.exit(0) }}).on('error', e => {{ \
         console.log(e.code); process.exit(1) }})"
    );
    let bind = |flags: &[&str]| {
        let mut args = flags.to_vec();
        args.extend_from_slice(&["--", "node", "-e", &script]);
        stdout(&sandbox(&args))
    };
    assert_eq!(bind(&["--no-net"]), "EACCES\n");
    assert_eq!(bind(&["--connect", &port]), "EACCES\n");
    assert_eq!(bind(&["--bind", &port]), "bound\n");
}

#[test]
fn a_signal_to_a_process_outside_the_sandbox_is_denied() {
    if !kernel_has(6, "a_signal_to_a_process_outside_the_sandbox_is_denied") {
        return;
    }
    let mut outsider = Command::new("sleep").arg("100").spawn().unwrap();
    let pid = outsider.id().to_string();
    let denied = sandbox(&["--", "kill", "-TERM", &pid]);
    assert_ne!(denied.status.code(), Some(0));
    assert!(
        stderr(&denied).contains("Operation not permitted"),
        "{}",
        stderr(&denied)
    );
    assert!(
        outsider.try_wait().unwrap().is_none(),
        "the signal got through"
    );
    // Inside the sandbox, signals still work: the shell signals its own child.
    let inside = sandbox(&[
        "--",
        "sh",
        "-c",
        "sleep 100 & kill -TERM $! && wait $!; echo $?",
    ]);
    assert_eq!(stdout(&inside), "143\n");
    let unscoped = sandbox(&["--no-scope", "--", "kill", "-TERM", &pid]);
    assert_eq!(unscoped.status.code(), Some(0), "{}", stderr(&unscoped));
    moot_testkit::wait_for("the outsider's end after the unscoped kill", || {
        outsider.try_wait().unwrap()
    });
}

/// A python3 (it speaks abstract UNIX sockets; node 20 does not): its executable and the tree to
/// grant it (a pyenv install lives outside the default paths).
fn python3() -> Option<(String, String)> {
    let found = Command::new("python3")
        .args([
            "-c",
            "import sys; print(sys.executable); print(sys.base_prefix)",
        ])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| {
            let text = String::from_utf8(out.stdout).ok()?;
            let mut lines = text.lines().map(str::to_string);
            Some((lines.next()?, lines.next()?))
        });
    found_or_skip(
        found,
        "python3",
        "python3 is not installed; it connects to the abstract socket",
    )
}

#[test]
fn an_abstract_unix_socket_outside_the_sandbox_is_unreachable() {
    if !kernel_has(
        6,
        "an_abstract_unix_socket_outside_the_sandbox_is_unreachable",
    ) {
        return;
    }
    let Some((python, prefix)) = python3() else {
        return;
    };
    let name = format!("moot-sandbox-test-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _listener = UnixListener::bind_addr(&addr).unwrap();
    let script = format!(
        "import socket\n\
         s = socket.socket(socket.AF_UNIX)\n\
         try:\n    s.connect('\\0{name}'); print('connected')\n\
         except OSError as e:\n    print(e.strerror)"
    );
    let scoped = sandbox(&["--rx", &prefix, "--", &python, "-c", &script]);
    assert_eq!(
        stdout(&scoped),
        "Operation not permitted\n",
        "{}",
        stderr(&scoped)
    );
    let unscoped = sandbox(&["--rx", &prefix, "--no-scope", "--", &python, "-c", &script]);
    assert_eq!(stdout(&unscoped), "connected\n", "{}", stderr(&unscoped));
}

#[test]
fn a_real_cli_runs_and_writes_only_inside_its_workspace() {
    if !kernel_has(1, "a_real_cli_runs_and_writes_only_inside_its_workspace") {
        return;
    }
    let Some(node) = node() else { return };
    let t = tree();
    let script = format!(
        "const fs = require('fs'); \
         fs.writeFileSync('answer.md', 'done'); \
         fs.mkdirSync('src/nested', {{ recursive: true }}); \
         fs.renameSync('answer.md', 'src/nested/answer.md'); \
         for (const p of ['{out}/escape', '{home}/.moot-escape', '/tmp/moot-escape']) {{ \
           try {{ fs.writeFileSync(p, 'x'); console.log('WROTE ' + p) }} \
           catch (e) {{ console.log(e.code) }} }} \
         try {{ fs.readFileSync('{secret}') ; console.log('READ') }} \
         catch (e) {{ console.log(e.code) }} \
         require('child_process').execFileSync('sh', ['-c', 'echo child >> src/log']);",
        out = path(&t.outside),
        home = std::env::var("HOME").unwrap_or_else(|_| "/root".into()),
        secret = path(&t.secret)
    );
    let out = Command::new(BIN)
        .args(["--rw", path(&t.ws), "--", path(&node), "-e", &script])
        .current_dir(&t.ws)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "EACCES\nEACCES\nEACCES\nEACCES\n");
    assert_eq!(
        fs::read_to_string(t.ws.join("src/nested/answer.md")).unwrap(),
        "done"
    );
    assert_eq!(fs::read_to_string(t.ws.join("src/log")).unwrap(), "child\n");
    let mut left: Vec<_> = fs::read_dir(&t.outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["secret"]);
}

#[test]
fn missing_paths_are_errors_unless_optional_and_paths_must_be_absolute() {
    let missing = sandbox(&["--ro", "/nonexistent/moot", "--", "true"]);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        stderr(&missing),
        "moot-sandbox: --ro (/nonexistent/moot): no such file or directory: create it, or use \
         --ro-try for a path that may be absent\n"
    );
    let relative = sandbox(&["--rw", "work", "--", "true"]);
    assert_eq!(relative.status.code(), Some(2));
    assert_eq!(
        stderr(&relative),
        "moot-sandbox: --rw (work): not an absolute path: write it from / (\"$PWD/work\")\n"
    );
    if kernel_has(
        1,
        "missing_paths_are_errors_unless_optional (the optional half)",
    ) {
        let optional = sandbox(&["--rw-try", "/nonexistent/moot", "--", "true"]);
        assert_eq!(optional.status.code(), Some(0), "{}", stderr(&optional));
    }
}

#[test]
fn missing_and_unexecutable_commands_exit_127_and_126() {
    let missing = Command::new(BIN)
        .args(["--", "no-such-agent-cli"])
        .env("PATH", "/nonexistent/a:/nonexistent/b")
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(127));
    assert_eq!(
        stderr(&missing),
        "moot-sandbox: command not found (no-such-agent-cli): searched \
         PATH=/nonexistent/a:/nonexistent/b\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("agent");
    write_with_mode(&script, "#!/bin/sh\n", 0o644);
    let unexecutable = sandbox(&["--", path(&script)]);
    assert_eq!(unexecutable.status.code(), Some(126));
    assert_eq!(
        stderr(&unexecutable),
        format!(
            "moot-sandbox: command not executable ({}): not an executable regular file\n",
            script.display()
        )
    );
}

#[test]
fn usage_errors_exit_2_on_one_line() {
    for (args, message) in [
        (
            vec!["--connect", "70000", "--", "true"],
            "moot-sandbox: invalid value '70000' for '--connect <PORT>': 70000 is not in \
             0..=65535 (see --help)\n",
        ),
        (
            vec!["--ro", "/"],
            "moot-sandbox: the following required arguments were not provided: <COMMAND>... (see --help)\n",
        ),
        (
            vec!["--check", "--", "true"],
            "moot-sandbox: the argument '--check' cannot be used with '[COMMAND]...' (see --help)\n",
        ),
    ] {
        let out = sandbox(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), message, "{args:?}");
    }
}

#[test]
fn best_effort_on_a_kernel_that_enforces_everything_says_nothing() {
    if !kernel_has(
        7,
        "best_effort_on_a_kernel_that_enforces_everything_says_nothing",
    ) {
        return;
    }
    let out = sandbox(&["--best-effort", "--no-net", "--", "true"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stderr(&out), "");
}

#[test]
fn the_sandbox_outlives_exec_into_every_descendant() {
    let Some(t) = landlock_tree(1, "the_sandbox_outlives_exec_into_every_descendant") else {
        return;
    };
    let out = t.sh(
        &[],
        "sh -c 'sh -c \"echo deep > {out}/deep\"'; cat {secret}",
    );
    assert!(!t.outside.join("deep").exists());
    assert_eq!(stdout(&out), "");
    let mut errors = String::new();
    out.stderr.as_slice().read_to_string(&mut errors).unwrap();
    assert_eq!(errors.matches("Permission denied").count(), 2, "{errors}");
}

#[test]
fn man_page_documents_every_flag() {
    moot_testkit::check_man_page(BIN, "moot-sandbox.1");
}

/// Regression: `--check` into a closed pipe exited 3, which means "the kernel cannot enforce".
#[test]
fn check_into_a_closed_pipe_is_an_output_failure_not_a_kernel_one() {
    let (read_end, write_end) = nix::unistd::pipe().unwrap();
    drop(read_end);
    let out = Command::new(BIN)
        .arg("--check")
        .stdout(std::process::Stdio::from(write_end))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "moot-sandbox: cannot write the --check report to stdout: Broken pipe (os error 32)\n"
    );
}

/// True when the tests run as root (CI does); the root-only tests skip loudly otherwise.
fn is_root(test: &str) -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        moot_testkit::skip(test, "needs root: it checks what root can no longer do");
    }
    root
}

/// Both: root, on a kernel with Landlock ABI `needed` or later (each skip said once).
fn root_with_landlock(needed: i64, test: &str) -> bool {
    is_root(test) && kernel_has(needed, test)
}

/// The capability sets a command sees, from its own /proc/self/status.
fn caps_inside(extra: &[&str]) -> String {
    let mut args = extra.to_vec();
    args.extend(["--", "sh", "-c", "grep ^Cap /proc/self/status"]);
    let out = sandbox(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

/// Regression: root inside the sandbox kept every capability. Now all five sets are empty
/// unless --keep-caps.
#[test]
fn root_runs_with_no_capability_unless_it_keeps_them() {
    if !root_with_landlock(1, "root_runs_with_no_capability_unless_it_keeps_them") {
        return;
    }
    let dropped = caps_inside(&[]);
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(
            dropped.contains(&format!("{set}:\t0000000000000000")),
            "{set} not empty: {dropped}"
        );
    }
    let kept = caps_inside(&["--keep-caps"]);
    assert!(!kept.contains("CapEff:\t0000000000000000"), "{kept}");
}

/// Regression: root chmodded a file it was never granted (0600 -> 0666). Without capabilities
/// root cannot touch another user's file; with --user it cannot touch root's either (Landlock
/// does not mediate chmod of one's own files: man page, Not covered).
#[test]
fn root_cannot_chmod_chown_or_utime_files_it_was_never_granted() {
    if !root_with_landlock(
        1,
        "root_cannot_chmod_chown_or_utime_files_it_was_never_granted",
    ) {
        return;
    }
    let t = tree();
    fs::set_permissions(t._root.path(), fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&t.outside, fs::Permissions::from_mode(0o755)).unwrap();
    fs::set_permissions(&t.secret, fs::Permissions::from_mode(0o600)).unwrap();
    let theirs = t.outside.join("theirs");
    write_with_mode(&theirs, "another user's\n", 0o600);
    std::os::unix::fs::chown(&theirs, Some(4242), Some(4242)).unwrap();
    let attempt = |file: &Path, flags: &[&str]| {
        let script = format!(
            "chmod 666 {f}; chown 0:0 {f}; touch -d 2001-01-01 {f}; stat -c '%a %u %Y' {f}",
            f = path(file)
        );
        let mut args = flags.to_vec();
        args.extend(["--ro", path(&t.outside), "--", "sh", "-c", &script]);
        let out = sandbox(&args);
        (stdout(&out), stderr(&out))
    };
    let mtime = |file: &Path| {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(file).unwrap().mtime()
    };
    let before = mtime(&theirs);
    let (seen, errors) = attempt(&theirs, &[]);
    assert_eq!(seen, format!("600 4242 {before}\n"), "{errors}");
    assert_eq!(
        errors.lines().count(),
        3,
        "each attempt is refused: {errors}"
    );

    let before = mtime(&t.secret);
    let (seen, errors) = attempt(&t.secret, &["--user", "nobody"]);
    assert_eq!(seen, format!("600 0 {before}\n"), "{errors}");
    assert_eq!(
        errors.lines().count(),
        3,
        "each attempt is refused: {errors}"
    );
}

/// Regression: `mknod rw/kmsg c 1 11; head rw/kmsg` read the kernel log. --rw no longer grants
/// making devices; with --allow-devices Landlock lets it through but the dropped CAP_MKNOD
/// does not; only --keep-caps with --allow-devices makes one.
#[test]
fn device_nodes_cannot_be_made_in_a_writable_directory() {
    if !root_with_landlock(1, "device_nodes_cannot_be_made_in_a_writable_directory") {
        return;
    }
    let t = tree();
    let node = t.ws.join("kmsg");
    let script = format!("mknod {} c 1 11 && head -c 1 {0} >/dev/null", path(&node));
    for (flags, denial) in [
        (&[][..], "Permission denied"),
        (&["--allow-devices"][..], "Operation not permitted"),
    ] {
        let mut args = flags.to_vec();
        args.extend(["--rw", path(&t.ws), "--", "sh", "-c", &script]);
        let out = sandbox(&args);
        assert_ne!(out.status.code(), Some(0), "{flags:?}");
        assert!(stderr(&out).contains(denial), "{flags:?}: {}", stderr(&out));
        assert!(!node.exists(), "{flags:?}: a device node was made");
    }
    let out = sandbox(&[
        "--keep-caps",
        "--allow-devices",
        "--rw",
        path(&t.ws),
        "--",
        "mknod",
        path(&node),
        "c",
        "1",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(node.exists());
}

/// Regression: root read other processes' /proc/<pid>/environ and opened raw sockets.
#[test]
fn root_cannot_read_other_users_processes_or_open_raw_sockets() {
    if !root_with_landlock(
        1,
        "root_cannot_read_other_users_processes_or_open_raw_sockets",
    ) {
        return;
    }
    let Some((python, prefix)) = python3() else {
        return;
    };
    let mut other = Command::new("sleep")
        .arg("60")
        .env("MOOT_CANARY", "canary-of-another-user")
        .uid(4242)
        .gid(4242)
        .spawn()
        .unwrap();
    let script = format!(
        "import socket\n\
         try:\n    open('/proc/{pid}/environ','rb').read(); print('environ read')\n\
         except OSError as e:\n    print(e.strerror)\n\
         try:\n    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print('raw')\n\
         except OSError as e:\n    print(e.strerror)",
        pid = other.id()
    );
    let out = sandbox(&["--rx", &prefix, "--", &python, "-c", &script]);
    let kept = sandbox(&["--keep-caps", "--rx", &prefix, "--", &python, "-c", &script]);
    other.kill().unwrap();
    other.wait().unwrap();
    assert_eq!(
        stdout(&out),
        "Permission denied\nOperation not permitted\n",
        "{}",
        stderr(&out)
    );
    assert_eq!(
        stdout(&kept),
        "environ read\nraw\n",
        "the test proves nothing"
    );
}

#[test]
fn user_runs_the_command_as_that_user_with_no_groups() {
    if !root_with_landlock(1, "user_runs_the_command_as_that_user_with_no_groups") {
        return;
    }
    let out = sandbox(&[
        "--user",
        "65534:65534",
        "--",
        "grep",
        "-E",
        "^(Uid|Gid|Groups):",
        "/proc/self/status",
    ]);
    assert_eq!(
        stdout(&out),
        "Uid:\t65534\t65534\t65534\t65534\nGid:\t65534\t65534\t65534\t65534\nGroups:\t \n",
        "{}",
        stderr(&out)
    );
    let bad = sandbox(&["--user", "no-such-user-xyz", "--", "id"]);
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        stderr(&bad),
        "moot-sandbox: --user (no-such-user-xyz): no user named no-such-user-xyz\n"
    );
}

/// The other way into a process besides ptrace (which moot-run's seccomp filter denies):
/// `/proc/<pid>/mem` opened for writing. `/proc` is granted read-only, so a process in the
/// sandbox can read a sibling's memory but never write it (the CLI's, say, to change its
/// stream before it prints it).
#[test]
fn another_process_memory_is_never_writable_in_the_sandbox() {
    if !kernel_has(1, "another_process_memory_is_never_writable_in_the_sandbox") {
        return;
    }
    let Some((python, prefix)) = python3() else {
        return;
    };
    let opens = |flags: &[&str]| {
        let mut args = vec!["--rx", &prefix];
        args.extend(flags);
        args.extend([
            "--",
            &python,
            "-c",
            "import os, subprocess\n\
             child = subprocess.Popen(['sleep', '5'])\n\
             for mode in (os.O_RDONLY, os.O_RDWR):\n\
             \x20   try:\n\
             \x20       os.close(os.open('/proc/%d/mem' % child.pid, mode)); print('opened')\n\
             \x20   except OSError as e:\n\
             \x20       print(e.strerror)\n\
             child.kill()",
        ]);
        let out = sandbox(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    assert_eq!(opens(&[]), "opened\nPermission denied\n");
    // The same process with /proc writable: the grant is what stops it.
    assert_eq!(opens(&["--rw", "/proc"]), "opened\nopened\n");
}

/// A `--user` seat has a process limit by default (RLIMIT_NPROC, 4096) and `--max-procs` sets
/// it: past it a fork fails, so a fork bomb stops there.
#[test]
fn a_user_seat_has_a_process_limit() {
    if !root_with_landlock(1, "a_user_seat_has_a_process_limit") {
        return;
    }
    let limit = |flags: &[&str]| {
        let mut args = flags.to_vec();
        args.extend([
            "--",
            "awk",
            "/^Max processes/ { print $3, $4 }",
            "/proc/self/limits",
        ]);
        let out = sandbox(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().to_string()
    };
    assert_eq!(limit(&["--user", "65534:65534"]), "4096 4096");
    assert_eq!(
        limit(&["--user", "65534:65534", "--max-procs", "64"]),
        "64 64"
    );
    // 40 sleepers: under a limit of 16 the shell cannot fork past it; under 100 it can.
    let sleepers = |max: &str| {
        sandbox(&[
            "--user",
            "65534:65534",
            "--max-procs",
            max,
            "--",
            "sh",
            "-c",
            "for i in $(seq 40); do sleep 2 & done; echo started",
        ])
    };
    let under = sleepers("16");
    assert!(!under.status.success());
    assert!(stderr(&under).contains("Cannot fork"), "{}", stderr(&under));
    let over = sleepers("100");
    assert_eq!(stdout(&over), "started\n", "{}", stderr(&over));
}

/// The man page's "Not covered" section names everything `--check` reports as not covered.
#[test]
fn check_and_the_man_page_say_what_is_not_covered() {
    let check: serde_json::Value = serde_json::from_slice(&sandbox(&["--check"]).stdout).unwrap();
    let page =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../man/moot-sandbox.1"))
            .unwrap()
            .replace("\\-", "-")
            .replace("\\(", "(");
    let section = page
        .split(".SS Not covered")
        .nth(1)
        .and_then(|rest| rest.split("\n.S").next())
        .expect("a Not covered section");
    let listed = check["not_covered"].as_array().unwrap();
    for what in [
        "chmod",
        "chown",
        "utime",
        "xattr",
        "unix_socket_pathname",
        "udp",
    ] {
        assert!(
            listed.iter().any(|item| item["what"] == what),
            "{what} not in --check"
        );
    }
    for item in listed {
        let what = item["what"].as_str().unwrap();
        assert!(
            section.contains(what),
            "man page's Not covered lacks {what}"
        );
        assert!(!item["why"].as_str().unwrap().is_empty());
    }
}

/// An npm-style install: `node_modules/.bin/tool` links to a script run by `#!/usr/bin/env
/// fakebun`, and fakebun lives in another package of the same tree (as omp and bun do).
fn npm_install(root: &Path) -> (PathBuf, String) {
    let modules = root.join("inst/node_modules");
    let script = modules.join("pkg/dist/cli.js");
    let interp = modules.join("fakebun/bin/fakebun");
    for (file, text) in [
        (&script, "#!/usr/bin/env fakebun\n"),
        (
            &interp,
            "#!/bin/sh\nhead -c 1 \"$1\" >/dev/null && echo ran\n",
        ),
    ] {
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        write_with_mode(file, text, 0o755);
    }
    fs::create_dir_all(modules.join(".bin")).unwrap();
    std::os::unix::fs::symlink("../pkg/dist/cli.js", modules.join(".bin/tool")).unwrap();
    std::os::unix::fs::symlink("../fakebun/bin/fakebun", modules.join(".bin/fakebun")).unwrap();
    let path = format!("{}:/usr/bin:/bin", modules.join(".bin").display());
    (modules, path)
}

/// `moot-sandbox FLAGS -- tool` for the install [`npm_install`] made, found on `path`, with
/// `home` as HOME; the caller adds what else the case needs.
fn sandboxed_tool<S: AsRef<std::ffi::OsStr>>(
    path: &str,
    home: &Path,
    flags: impl IntoIterator<Item = S>,
) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(flags)
        .args(["--", "tool"])
        .env("PATH", path)
        .env("HOME", home)
        .stdin(Stdio::null());
    command
}

/// The CLI runs under --profile with no hand-written grant; without it, the denial names the
/// file the sandbox refused to execute and the grant that would allow it.
#[test]
fn a_profile_derives_the_install_tree_and_a_denial_names_the_missing_grant() {
    if !kernel_has(
        1,
        "a_profile_derives_the_install_tree_and_a_denial_names_the_missing_grant",
    ) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root_path = fs::canonicalize(root.path()).unwrap();
    let (modules, path) = npm_install(&root_path);
    let home = root_path.join("home");
    fs::create_dir(&home).unwrap();
    let run = |flags: &[&str]| sandboxed_tool(&path, &home, flags).output().unwrap();
    let state = root_path.join("state");
    let state_flag = state.to_str().unwrap();
    let profiled = run(&["--profile", "pi", "--state", state_flag]);
    assert_eq!(stdout(&profiled), "ran\n", "{}", stderr(&profiled));
    assert!(
        state.join("home/.pi").is_dir(),
        "pi's state directory was not made in its private state"
    );
    assert!(
        !home.join(".pi").exists(),
        "the operator's home was written"
    );

    // A CLI that writes state has it private or does not run.
    let stateless = run(&["--profile", "pi"]);
    assert_eq!(stateless.status.code(), Some(2));
    assert!(
        stderr(&stateless).contains("give --state DIR"),
        "{}",
        stderr(&stateless)
    );

    let bare = run(&[]);
    assert_eq!(bare.status.code(), Some(126));
    assert_eq!(
        stderr(&bare),
        format!(
            "moot-sandbox: cannot run ({bin}/tool): the sandbox denies executing {interp} (the #! \
             interpreter of {script}): grant it with --rx {dir}, or let --profile RUNTIME derive \
             what the CLI needs\n",
            bin = modules.join(".bin").display(),
            interp = modules.join("fakebun/bin/fakebun").display(),
            script = modules.join("pkg/dist/cli.js").display(),
            dir = modules.join("fakebun/bin").display(),
        )
    );

    let printed = run(&["--profile", "pi", "--state", state_flag, "--print-profile"]);
    assert_eq!(printed.status.code(), Some(0));
    assert!(stdout(&printed).contains(&format!(
        "--rx {}\t# pi's program is in this npm package tree\n",
        modules.display()
    )));
    assert!(
        stdout(&printed).contains("--connect 443\t"),
        "{}",
        stdout(&printed)
    );
}

/// `--print-profile` without a command derives the profile for the runtime's executable as PATH
/// finds it: the same grants as naming it after `--`. An unknown runtime is a usage error.
#[test]
fn print_profile_without_a_command_derives_it_for_the_runtimes_executable() {
    let root = tempfile::tempdir().unwrap();
    let root_path = fs::canonicalize(root.path()).unwrap();
    let (modules, path) = npm_install(&root_path);
    std::os::unix::fs::symlink("../pkg/dist/cli.js", modules.join(".bin/pi")).unwrap();
    let state = root_path.join("state");
    let print = |runtime: &str, command: &[&str]| {
        Command::new(BIN)
            .args(["--profile", runtime, "--state"])
            .arg(&state)
            .arg("--print-profile")
            .args(command)
            .env("PATH", &path)
            .env("HOME", root_path.join("home"))
            .output()
            .unwrap()
    };
    let bare = print("pi", &[]);
    assert_eq!(bare.status.code(), Some(0), "{}", stderr(&bare));
    assert!(stdout(&bare).contains(&format!(
        "--rx {}\t# pi's program is in this npm package tree\n",
        modules.display()
    )));
    assert_eq!(stdout(&bare), stdout(&print("pi", &["--", "pi"])));

    let unknown = print("gemini", &[]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).starts_with("moot-sandbox: --profile (gemini): no such runtime; one of "),
        "{}",
        stderr(&unknown)
    );
}

/// The CLI's state is private: its HOME is the state's, the operator's provider config is copied
/// in (and the port comes from the operator's copy), and nothing it writes reaches the
/// operator's config, which the operator's next, unconfined run of the CLI would load.
#[test]
fn a_profile_keeps_the_clis_state_private_and_the_operators_config_unwritten() {
    if !kernel_has(
        4,
        "a_profile_keeps_the_clis_state_private_and_the_operators_config_unwritten",
    ) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root_path = fs::canonicalize(root.path()).unwrap();
    let (modules, path) = npm_install(&root_path);
    let home = root_path.join("home");
    let agent_dir = home.join(".pi/agent");
    fs::create_dir_all(&agent_dir).unwrap();
    fs::write(
        agent_dir.join("models.json"),
        r#"{"providers":{"fake":{"baseUrl":"http://127.0.0.1:18123/v1"}}}"#,
    )
    .unwrap();
    fs::write(agent_dir.join("auth.json"), "{}").unwrap();
    // The CLI: where its HOME is, what config it finds, and a plant in each agent directory.
    write_with_mode(
        modules.join("fakebun/bin/fakebun"),
        format!(
            "#!/bin/sh\necho \"$HOME\"\ncat \"$HOME/.pi/agent/models.json\"; echo\n\
             mkdir -p \"$HOME/.pi/agent/extensions\" && echo x > \"$HOME/.pi/agent/extensions/p.ts\" \
             && echo planted-own\n\
             mkdir -p {op}/extensions 2>/dev/null; echo x > {op}/extensions/p.ts 2>/dev/null \
             || echo denied-operator\n\
             echo '\"http://any-host:6379\"' >> \"$HOME/.pi/agent/models.json\"\n",
            op = agent_dir.display()
        ),
        0o755,
    );
    let state = root_path.join("state");
    let run = |extra: &[&str]| {
        let state = state.to_str().unwrap();
        let flags = ["--profile", "pi", "--state", state]
            .into_iter()
            .chain(extra.iter().copied());
        sandboxed_tool(&path, &home, flags)
            .env("PI_CODING_AGENT_DIR", &agent_dir)
            .output()
            .unwrap()
    };
    for _ in 0..2 {
        let out = run(&[]);
        assert_eq!(
            stdout(&out),
            format!(
                "{}\n{}\nplanted-own\ndenied-operator\n",
                state.join("home").display(),
                fs::read_to_string(agent_dir.join("models.json")).unwrap()
            ),
            "{}",
            stderr(&out)
        );
        assert!(!agent_dir.join("extensions").exists());
        // The next run's grant is the operator's port, whatever the job wrote in its copy.
        let printed = stdout(&run(&["--print-profile"]));
        assert!(printed.contains("--connect 18123\t"), "{printed}");
        assert!(!printed.contains("6379"), "{printed}");
        assert!(
            printed.contains("# unsets PI_CODING_AGENT_DIR"),
            "{printed}"
        );
        for line in printed.lines().filter(|l| l.starts_with("--rw ")) {
            assert!(
                line.starts_with(&format!("--rw {}\t", state.display())),
                "{printed}"
            );
        }
    }
    assert_eq!(
        fs::read(state.join("home/.pi/agent/auth.json")).unwrap(),
        b"{}"
    );

    // A state that is, holds or lies in the operator's home, lies in any CLI's own directories
    // or in another writable grant (a workspace the repository fills), however spelled, or
    // whose parent is reached through a link, is refused before anything is made.
    let ws = root_path.join("ws");
    let codex_home = root_path.join("codex-home");
    let other = root_path.join("other");
    for made in [&ws, &codex_home, &other] {
        fs::create_dir(made).unwrap();
    }
    let wslink = root_path.join("wslink");
    std::os::unix::fs::symlink(&ws, &wslink).unwrap();
    std::os::unix::fs::symlink(&other, root_path.join("otherlink")).unwrap();
    let in_home = "is, holds or lies in the home";
    let in_grant = "inside or holds the writable grant";
    for (state, grant, says) in [
        (home.clone(), None, in_home),
        (root_path.clone(), None, in_home),
        (home.join("jobs"), None, in_home),
        (codex_home.join("seat"), None, "overlaps codex's"),
        (ws.join(".state"), Some(&ws), in_grant),
        (ws.join(".state"), Some(&wslink), in_grant),
        (
            root_path.join("otherlink/st"),
            None,
            "has a link or '..' in its path",
        ),
    ] {
        let mut flags = vec![
            "--profile".as_ref(),
            "pi".as_ref(),
            "--state".as_ref(),
            state.as_os_str(),
        ];
        if let Some(grant) = grant {
            flags.extend(["--rw".as_ref(), grant.as_os_str()]);
        }
        let out = sandboxed_tool(&path, &home, flags)
            .env("PI_CODING_AGENT_DIR", &agent_dir)
            .env("CODEX_HOME", &codex_home)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
        for made in [
            home.join("jobs"),
            codex_home.join("seat"),
            ws.join(".state"),
            other.join("st"),
        ] {
            assert!(!made.exists(), "{}", made.display());
        }
    }
}

/// A root CI container's seat as another user: the private state is that user's (made by root
/// where the user cannot write, then given to it), the operator's root-only config is copied in
/// for it, and a state of root's is refused for it.
#[test]
fn a_user_seats_private_state_is_that_users_with_the_operators_config_copied_in() {
    if !root_with_landlock(
        1,
        "a_user_seats_private_state_is_that_users_with_the_operators_config_copied_in",
    ) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root_path = fs::canonicalize(root.path()).unwrap();
    // Only enterable by others, as a CI job's stage directory would be.
    fs::set_permissions(&root_path, fs::Permissions::from_mode(0o711)).unwrap();
    let (modules, path) = npm_install(&root_path);
    let home = root_path.join("home");
    fs::create_dir_all(home.join(".pi/agent")).unwrap();
    fs::set_permissions(&home, fs::Permissions::from_mode(0o700)).unwrap();
    write_with_mode(home.join(".pi/agent/models.json"), "{}", 0o600);
    write_with_mode(
        modules.join("fakebun/bin/fakebun"),
        "#!/bin/sh\nid -u\ncat \"$HOME/.pi/agent/models.json\"; echo\n\
         touch \"$HOME/.pi/written\" && echo wrote\n",
        0o755,
    );
    let run = |state: &Path| {
        let flags = ["--user", "65534:65534", "--profile", "pi", "--state"];
        let flags = flags
            .iter()
            .map(std::ffi::OsStr::new)
            .chain([state.as_os_str()]);
        sandboxed_tool(&path, &home, flags).output().unwrap()
    };
    let state = root_path.join("state");
    let out = run(&state);
    assert_eq!(stdout(&out), "65534\n{}\nwrote\n", "{}", stderr(&out));
    for made in [&state, &state.join("home/.pi/agent/models.json")] {
        assert_eq!(
            fs::metadata(made).unwrap().uid(),
            65534,
            "{}",
            made.display()
        );
    }
    assert_eq!(
        fs::metadata(state.join("home/.pi/agent/models.json"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let again = run(&state);
    assert_eq!(stdout(&again), "65534\n{}\nwrote\n", "{}", stderr(&again));

    let roots = root_path.join("roots");
    fs::create_dir(&roots).unwrap();
    fs::set_permissions(&roots, fs::Permissions::from_mode(0o700)).unwrap();
    let refused = run(&roots);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("belongs to uid 0, not to the seat's user"),
        "{}",
        stderr(&refused)
    );
}

/// `cd ~ && npm install <cli>`: the install's root is the home. The profile grants the package
/// tree and the root's own package.json, never the home: the CLI runs, and `~/.ssh` stays out of
/// reach.
#[test]
fn an_npm_install_in_the_home_does_not_grant_the_home() {
    if !kernel_has(1, "an_npm_install_in_the_home_does_not_grant_the_home") {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root_path = fs::canonicalize(root.path()).unwrap();
    let (modules, path) = npm_install(&root_path);
    let home = modules.parent().unwrap().to_path_buf();
    fs::write(home.join("package.json"), "{}").unwrap();
    fs::create_dir(home.join(".ssh")).unwrap();
    fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    write_with_mode(
        modules.join("fakebun/bin/fakebun"),
        format!(
            "#!/bin/sh\nhead -c 1 \"$1\" >/dev/null && head -c 1 {home}/package.json >/dev/null \
             && echo ran\ncat {home}/.ssh/id_ed25519 2>/dev/null || echo denied\n",
            home = home.display()
        ),
        0o755,
    );
    let state = root_path.join("state");
    // (Independent attack) the home reached through a link is still the home.
    let linked = root_path.join("homelink");
    std::os::unix::fs::symlink(&home, &linked).unwrap();
    for given in [&home, &linked] {
        let run = |flags: &[&str]| sandboxed_tool(&path, given, flags).output().unwrap();
        let state = ["--profile", "pi", "--state", state.to_str().unwrap()];
        let profiled = run(&state);
        assert_eq!(stdout(&profiled), "ran\ndenied\n", "{}", stderr(&profiled));
        let printed = stdout(&run(&[&state[..], &["--print-profile"]].concat()));
        // Listed, never read: only its package.json is.
        assert!(printed.contains("--ls "), "{printed}");
        assert!(printed.contains("/package.json\t"), "{printed}");
        for line in printed.lines() {
            let granted = line.split('\t').next().unwrap();
            assert!(
                granted.starts_with("--ls ")
                    || !(granted.ends_with(&format!(" {}", home.display()))
                        || granted.ends_with(&format!(" {}", linked.display()))),
                "the home is granted: {line}"
            );
        }
    }
}

/// A shell shim that `exec`s the real CLI from another tree (a wrapper on PATH, as asdf, mise,
/// nvm and volta installs look): the profile follows it; without a grant for the real CLI, the
/// refusal names the file the shim executes. A version manager's shim, which picks the program
/// as it runs, is refused with the command that names the real program.
#[test]
fn a_profile_follows_a_shell_shim_and_refuses_a_version_managers() {
    if !kernel_has(
        1,
        "a_profile_follows_a_shell_shim_and_refuses_a_version_managers",
    ) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root_path = fs::canonicalize(root.path()).unwrap();
    let (modules, _) = npm_install(&root_path);
    let shims = root_path.join("shims");
    fs::create_dir(&shims).unwrap();
    let shim = shims.join("tool");
    write_with_mode(
        &shim,
        format!(
            "#!/bin/sh\n# a wrapper\nexec \"{}\" \"$@\"\n",
            modules.join(".bin/tool").display()
        ),
        0o755,
    );
    // The CLI's interpreter is on PATH, the CLI itself only behind the shim.
    let path = format!(
        "{}:{}:/usr/bin:/bin",
        shims.display(),
        modules.join("fakebun/bin").display()
    );
    let home = root_path.join("home");
    fs::create_dir(&home).unwrap();
    let state = root_path.join("state");
    let run = |flags: &[&str]| sandboxed_tool(&path, &home, flags).output().unwrap();
    let profile = ["--profile", "pi", "--state", state.to_str().unwrap()];

    let profiled = run(&profile);
    assert_eq!(stdout(&profiled), "ran\n", "{}", stderr(&profiled));
    let printed = stdout(&run(&[&profile[..], &["--print-profile"]].concat()));
    assert!(
        printed.contains(&format!(
            "--rx {}\t# pi's shim {}: what it executes is in this npm package tree\n",
            modules.display(),
            shim.display()
        )),
        "{printed}"
    );

    let bare = run(&[]);
    assert_eq!(bare.status.code(), Some(126));
    assert_eq!(
        stderr(&bare),
        format!(
            "moot-sandbox: cannot run ({shim}): the sandbox denies executing {script} (what the \
             shim {shim} executes): grant it with --rx {dir}, or let --profile RUNTIME derive \
             what the CLI needs\n",
            shim = shim.display(),
            script = modules.join("pkg/dist/cli.js").display(),
            dir = modules.join("pkg/dist").display(),
        )
    );

    // pyenv's shims are scripts that exec pyenv; mise's are links to mise.
    let manager = root_path.join("manager");
    fs::create_dir(&manager).unwrap();
    for name in ["pyenv", "mise"] {
        write_with_mode(manager.join(name), "#!/bin/sh\necho ran\n", 0o755);
    }
    let cases = [("pyenv", "pyenv which"), ("mise", "mise which")];
    for (manager_name, which) in cases {
        fs::remove_file(&shim).unwrap();
        if manager_name == "pyenv" {
            write_with_mode(
                &shim,
                format!(
                    "#!/usr/bin/env bash\nprogram=\"${{0##*/}}\"\nexec \"{}\" exec \"$program\" \
                     \"$@\"\n",
                    manager.join("pyenv").display()
                ),
                0o755,
            );
        } else {
            std::os::unix::fs::symlink(manager.join("mise"), &shim).unwrap();
        }
        let refused = run(&profile);
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        let message = stderr(&refused);
        assert!(
            message.starts_with("moot-sandbox: ")
                && message.contains(&format!("({}) is a {manager_name} shim: ", shim.display()))
                && message.ends_with(&format!(
                    "put the real program first on PATH: PATH=\"$(dirname \"$({which} tool)\")\":$PATH\n"
                ))
                && message.lines().count() == 1,
            "{message}"
        );
    }
}

/// A root CI job's seat as another user, in a worktree below a directory only root may enter
/// (a 0700 home or `mktemp -d`): refused before anything runs, naming the directory and the
/// fix, rather than failing later as the CLI's own EACCES. Once the directory is enterable the
/// seat runs; a worktree the user cannot write is named too, and so is a working directory.
#[test]
fn a_seat_user_that_cannot_reach_its_grants_is_refused_naming_the_directory() {
    if !root_with_landlock(
        1,
        "a_seat_user_that_cannot_reach_its_grants_is_refused_naming_the_directory",
    ) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let parent = fs::canonicalize(root.path()).unwrap();
    let worktree = parent.join("wt");
    fs::create_dir(&worktree).unwrap();
    fs::set_permissions(&worktree, fs::Permissions::from_mode(0o777)).unwrap();
    fs::set_permissions(&parent, fs::Permissions::from_mode(0o700)).unwrap();
    let wt = worktree.to_str().unwrap();
    let touch = format!("touch {wt}/made && echo made");
    let seat = |cwd: &Path, extra: &[&str]| {
        let mut args = vec!["--user", "65534:65534"];
        args.extend(extra);
        args.extend(["--", "sh", "-c", &touch]);
        Command::new(BIN)
            .args(&args)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let refused = seat(Path::new("/"), &["--rw", wt]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert_eq!(
        stderr(&refused),
        format!(
            "moot-sandbox: --user (65534:65534): cannot reach {wt} (--rw): the seat's user may \
             not enter {dir} (owner 0, group 0, mode 0700); make it enterable (chmod o+x {dir}) \
             or move what the seat needs out from under it\n",
            dir = parent.display()
        )
    );
    assert!(!worktree.join("made").exists());
    // A working directory is entered already: it must only let the user in itself.
    let from_inside = seat(&parent, &["--rw", "/tmp"]);
    assert_eq!(from_inside.status.code(), Some(2));
    assert!(
        stderr(&from_inside).contains(&format!(
            "cannot reach {} (the working directory): the seat's user lacks search/execute",
            parent.display()
        )),
        "{}",
        stderr(&from_inside)
    );

    fs::set_permissions(&parent, fs::Permissions::from_mode(0o711)).unwrap();
    let ran = seat(&worktree, &["--rw", wt]);
    assert_eq!(stdout(&ran), "made\n", "{}", stderr(&ran));

    fs::set_permissions(&worktree, fs::Permissions::from_mode(0o755)).unwrap();
    let unwritable = seat(Path::new("/"), &["--rw", wt]);
    assert_eq!(unwritable.status.code(), Some(2));
    assert!(
        stderr(&unwritable).contains("the seat's user lacks read, write, search/execute on it"),
        "{}",
        stderr(&unwritable)
    );
}

/// Behind a credential proxy, a configuration that names the provider or holds the key a little
/// differently from what moot-broker was given (`localhost` for `127.0.0.1`, a rotated key) gets
/// one warning line each, naming the file looked in, instead of showing only as the CLI's own
/// "connection refused" or 401. The configuration that matches gets none.
#[test]
fn a_proxy_the_configuration_does_not_match_is_named_before_the_run() {
    if !kernel_has(
        4,
        "a_proxy_the_configuration_does_not_match_is_named_before_the_run",
    ) {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let root_path = fs::canonicalize(root.path()).unwrap();
    let (_, path) = npm_install(&root_path);
    let home = root_path.join("home");
    let models = home.join(".pi/agent/models.json");
    fs::create_dir_all(models.parent().unwrap()).unwrap();
    let key = "sk-the-providers-key-0123456789abcdef";
    let proxy = moot::seat_proxy::SeatProxy::exported(
        4242,
        "moot-job-token-0123456789abcdef",
        "http://127.0.0.1:18080/v1",
        key.as_bytes(),
    );
    let state = root_path.join("state");
    let run = |config: &str| {
        fs::write(&models, config).unwrap();
        let _ = fs::remove_dir_all(&state);
        let flags = ["--profile", "pi", "--state", state.to_str().unwrap()];
        let mut command = sandboxed_tool(&path, &home, flags);
        command.envs(proxy.iter().map(|(k, v)| (k, v)));
        let out = command.output().unwrap();
        assert_eq!(stdout(&out), "ran\n", "{}", stderr(&out));
        stderr(&out)
    };
    let matching = r#"{"providers":{"p":{"baseUrl":"http://127.0.0.1:18080/v1","apiKey":"KEY"}}}"#;
    assert_eq!(run(&matching.replace("KEY", key)), "");
    let near_miss = matching
        .replace("127.0.0.1", "localhost")
        .replace("KEY", "sk-a-rotated-key-fedcba9876543210");
    let warned = run(&near_miss);
    let lines: Vec<&str> = warned.lines().collect();
    assert_eq!(lines.len(), 2, "{warned}");
    assert!(
        lines[0].starts_with("moot-sandbox: warning: --profile pi: the provider's key")
            && lines[0].contains(&models.display().to_string()),
        "{warned}"
    );
    assert!(
        lines[1].starts_with(
            "moot-sandbox: warning: --profile pi: the provider URL moot-broker forwards to \
             (http://127.0.0.1:18080/v1)"
        ),
        "{warned}"
    );
}
