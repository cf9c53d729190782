//! The harness every moot-render integration test uses: the built binary, run in a fresh
//! working directory with its own TMPDIR, a clean environment and real stdin.

// Each test file uses a different part of the harness.
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_moot-render");

/// One sandbox for one test: `<tmp>/work` is the working directory, `<tmp>/tmp` is $TMPDIR.
pub struct Env {
    pub root: tempfile::TempDir,
    pub vars: Vec<(OsString, OsString)>,
}

/// What the binary did.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Env {
    pub fn new() -> Self {
        let root = tempfile::tempdir().expect("temp dir");
        fs::create_dir(root.path().join("work")).expect("work dir");
        fs::create_dir(root.path().join("tmp")).expect("tmp dir");
        Env {
            root,
            vars: Vec::new(),
        }
    }

    pub fn work(&self) -> PathBuf {
        self.root.path().join("work")
    }

    pub fn tmpdir(&self) -> PathBuf {
        self.root.path().join("tmp")
    }

    /// Adds an environment variable for every run.
    pub fn var(mut self, name: &str, value: impl AsRef<OsStr>) -> Self {
        self.vars.push((name.into(), value.as_ref().to_os_string()));
        self
    }

    pub fn run(&self, args: &[&str]) -> Outcome {
        self.run_with(args, None)
    }

    /// Runs the binary with `args` (any bytes) and `stdin` (or /dev/null).
    pub fn run_with<A: AsRef<OsStr>>(&self, args: &[A], stdin: Option<&[u8]>) -> Outcome {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(self.work())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.path())
            .env("TMPDIR", self.tmpdir())
            .envs(self.vars.iter().map(|(k, v)| (k, v)));
        run(command, stdin)
    }

    /// Paths directly under $TMPDIR: anything moot-render staged there.
    pub fn staged_under_tmpdir(&self) -> Vec<PathBuf> {
        entries(&self.tmpdir())
    }
}

/// Runs `command` with `stdin` fed from a thread (so a large stdin cannot deadlock against the
/// child's output).
pub fn run(mut command: Command, stdin: Option<&[u8]>) -> Outcome {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("spawn moot-render");
    let feeder = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            // The child may refuse before reading everything: a broken pipe is expected then.
            let _ = pipe.write_all(&bytes);
        })
    });
    let output = child.wait_with_output().expect("wait");
    if let Some(feeder) = feeder {
        feeder.join().expect("stdin feeder");
    }
    Outcome {
        code: output.status.code().expect("exit code, not a signal"),
        stdout: output.stdout,
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

pub fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| rd.map(|e| e.expect("entry").path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

pub fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path)
        .expect("stat")
        .permissions()
        .mode()
        & 0o7777
}

impl Outcome {
    /// The argv printed in the nul format, each element checked to be NUL-terminated.
    pub fn argv(&self) -> Vec<String> {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        assert_eq!(self.stdout.last(), Some(&0), "nul output ends with NUL");
        self.stdout[..self.stdout.len() - 1]
            .split(|b| *b == 0)
            .map(|arg| String::from_utf8(arg.to_vec()).expect("UTF-8 argv"))
            .collect()
    }

    pub fn json(&self) -> serde_json::Value {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        let text = std::str::from_utf8(&self.stdout).expect("UTF-8");
        assert!(
            text.ends_with('\n') && text.matches('\n').count() == 1,
            "one line: {text}"
        );
        serde_json::from_str(text).expect("valid JSON")
    }

    pub fn stdout_text(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("UTF-8 stdout")
    }

    /// Asserts a refusal: exit 2, nothing on stdout, exactly this one line on stderr.
    pub fn refused(&self, line: &str) {
        assert_eq!(
            (self.code, self.stdout_text().as_str(), self.stderr.as_str()),
            (2, "", format!("moot-render: {line}\n").as_str())
        );
    }
}

/// A prompt of exactly `len` bytes that is valid UTF-8 and full of what a shell or a parser
/// could trip on: multi-byte characters, newlines, quotes, leading dashes.
pub fn prompt_of(len: usize) -> String {
    let pattern = "-x 'é' \"q\" @f $(id) a=b\n";
    let mut prompt = String::with_capacity(len);
    while prompt.len() + pattern.len() <= len {
        prompt.push_str(pattern);
    }
    while prompt.len() < len {
        prompt.push('z');
    }
    assert_eq!(prompt.len(), len);
    prompt
}

/// The effective uid of this test process (the same user the binary runs as).
pub fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}
