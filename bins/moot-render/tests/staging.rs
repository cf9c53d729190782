#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Staged prompts through the real binary: the thresholds to the byte, modes, locations,
//! contents, and that no argument of the printed argv carries the prompt.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{entries, mode, prompt_of, Env, BIN};

const POINTER: &str = "The attached file prompt.md is the complete task: its full contents are \
already included in this message. Carry it out exactly and answer as it instructs. Do not ask \
for the file's contents and do not treat its name as the task.";

/// The one fresh staging directory under $TMPDIR, checked: name, mode, and nothing but a
/// private prompt.md holding exactly `prompt`.
fn the_staged_dir(env: &Env, prompt: &[u8]) -> PathBuf {
    let staged = env.staged_under_tmpdir();
    assert_eq!(staged.len(), 1, "{staged:?}");
    let dir = staged[0].clone();
    let name = dir.file_name().unwrap().to_str().unwrap();
    let suffix = name
        .strip_prefix("moot-stage-")
        .expect("moot-stage- prefix");
    assert!(
        suffix.len() == 12 && suffix.bytes().all(|b| b.is_ascii_hexdigit()),
        "{name}"
    );
    assert_private(&dir, prompt);
    assert!(
        dir.join(moot::cleanup::MARKER).exists(),
        "a directory moot-render made is marked"
    );
    dir
}

/// A private directory holding exactly `prompt` as prompt.md, and, when moot-render made the
/// directory, the empty marker that lets `--cleanup` remove it.
fn assert_private(dir: &Path, prompt: &[u8]) {
    let file = dir.join("prompt.md");
    let marker = dir.join(moot::cleanup::MARKER);
    let mut found = entries(dir);
    if found.first() == Some(&marker) {
        assert_eq!(mode(&marker), 0o600);
        assert!(fs::read(&marker).unwrap().is_empty());
        found.remove(0);
    }
    assert_eq!(found, std::slice::from_ref(&file));
    assert_eq!(mode(dir), 0o700);
    assert_eq!(mode(&file), 0o600);
    assert!(
        fs::read(&file).unwrap() == prompt,
        "staged bytes differ from the prompt"
    );
}

#[test]
fn at_102399_bytes_the_prompt_stays_on_argv() {
    let env = Env::new();
    let prompt = prompt_of(102_399);
    let out = env.run(&["omp", "--", &prompt]);
    let argv = out.argv();
    assert_eq!(argv[argv.len() - 2..], ["--", prompt.as_str()]);
    assert_eq!(out.stderr, "");
    assert!(env.staged_under_tmpdir().is_empty());
}

#[test]
fn at_102400_bytes_omp_gets_an_attachment_and_a_pointer() {
    let env = Env::new();
    let prompt = prompt_of(102_400);
    let out = env.run(&["omp", "--model", "a/b", "--", &prompt]);
    let argv = out.argv();
    let dir = the_staged_dir(&env, prompt.as_bytes());
    let file = dir.join("prompt.md");
    let at_file = format!("@{}", file.display());
    assert_eq!(
        argv,
        [
            "omp",
            "-p",
            "--mode=json",
            "--approval-mode=yolo",
            "--no-session",
            "--no-extensions",
            "--no-skills",
            "--no-rules",
            "--model",
            "a/b",
            &at_file,
            "--",
            POINTER
        ]
    );
    assert_eq!(
        out.stderr,
        format!(
            "moot-render: staged {} (stage dir {})\n",
            file.display(),
            dir.display()
        )
    );
}

#[test]
fn at_5242880_bytes_omp_still_stages() {
    let env = Env::new();
    let prompt = prompt_of(5_242_880);
    fs::write(env.work().join("job.md"), &prompt).unwrap();
    let argv = env.run(&["omp", "--prompt-file", "job.md"]).argv();
    let dir = the_staged_dir(&env, prompt.as_bytes());
    let file = dir.join("prompt.md").display().to_string();
    assert_eq!(argv[8], format!("@{file}"));
}

/// Regression: `--format json|sh` staged a 0600 prompt under /tmp that nothing removed. A
/// preview writes nothing and says where the prompt would go.
#[test]
fn previews_stage_nothing_and_say_where_the_prompt_would_go() {
    let env = Env::new();
    let prompt = prompt_of(102_400);
    fs::write(env.work().join("job.md"), &prompt).unwrap();
    let out = env.run(&["omp", "--format", "json", "--prompt-file", "job.md"]);
    assert_eq!(out.stderr, "", "json carries the paths itself");
    let json = out.json();
    assert_eq!(json["preview"], true);
    let dir = json["stage_dir"].as_str().unwrap().to_string();
    assert!(dir.starts_with(env.tmpdir().to_str().unwrap()), "{dir}");
    assert_eq!(
        json["staged"],
        serde_json::json!([format!("{dir}/prompt.md")])
    );
    assert!(
        env.staged_under_tmpdir().is_empty(),
        "the json preview staged"
    );

    let out = env.run(&["omp", "--format", "sh", "--prompt-file", "job.md"]);
    assert!(
        out.stderr
            .starts_with("moot-render: would stage (a preview writes nothing) "),
        "{}",
        out.stderr
    );
    assert!(
        env.staged_under_tmpdir().is_empty(),
        "the sh preview staged"
    );

    let given = env.root.path().join("given");
    env.run(&[
        "omp",
        "--format",
        "sh",
        "--stage-dir",
        given.to_str().unwrap(),
        "--prompt-file",
        "job.md",
    ]);
    assert!(!given.exists(), "a preview created the --stage-dir");
}

#[test]
fn above_5242880_bytes_omp_refuses_and_stages_nothing() {
    let env = Env::new();
    let prompt = prompt_of(5_242_881);
    env.run_with(&["omp", "-"], Some(prompt.as_bytes()))
        .refused(
        "prompt: 5242881 bytes is above omp's 5242880-byte @file attachment ceiling, where omp \
         would answer a placeholder instead of the task; shorten the prompt",
    );
    assert!(env.staged_under_tmpdir().is_empty());
}

#[test]
fn kimi_grants_the_directory_and_is_told_to_read_the_file() {
    for len in [102_400, 5_242_881] {
        let env = Env::new();
        let prompt = prompt_of(len);
        let out = env.run_with(&["kimi", "--model", "k2", "-"], Some(prompt.as_bytes()));
        let argv = out.argv();
        let dir = the_staged_dir(&env, prompt.as_bytes());
        let file = dir.join("prompt.md");
        let instruction = format!(
            "Your complete task is in the file {}: the whole task, its context and the required \
             output format. Read the entire file with your file-read tool first, then do exactly \
             what it says and answer as it instructs. Do not ask for its contents and do not \
             treat the path as the task.",
            file.display()
        );
        assert_eq!(
            argv,
            [
                "kimi",
                "--model",
                "k2",
                "--add-dir",
                dir.to_str().unwrap(),
                "-p",
                &instruction,
                "--output-format",
                "stream-json"
            ]
        );
    }
}

#[test]
fn pi_stages_a_prompt_it_would_read_as_a_flag_or_a_file() {
    for prompt in ["-x fix it", "@notes fix it"] {
        let env = Env::new();
        let argv = env.run(&["pi", "--", prompt]).argv();
        let dir = the_staged_dir(&env, prompt.as_bytes());
        assert_eq!(
            argv,
            [
                "pi",
                "-p",
                "--mode",
                "json",
                "--no-skills",
                "--no-extensions",
                "--no-prompt-templates",
                "--no-themes",
                "--offline",
                &format!("@{}", dir.join("prompt.md").display()),
                POINTER
            ]
        );
    }
}

#[test]
fn a_given_stage_dir_is_created_private_or_reused() {
    let env = Env::new();
    let prompt = prompt_of(102_400);
    let dir = env.root.path().join("stage");
    let dir_s = dir.to_str().unwrap();
    let out = env.run_with(&["omp", "--stage-dir", dir_s, "-"], Some(prompt.as_bytes()));
    assert_private(&dir, prompt.as_bytes());
    assert!(dir.join(moot::cleanup::MARKER).exists());
    assert!(
        out.stderr.ends_with(&format!("(stage dir {dir_s})\n")),
        "{}",
        out.stderr
    );
    assert!(env.staged_under_tmpdir().is_empty(), "nothing under TMPDIR");

    // A private directory of one's own, without a prompt.md yet, is used as it is.
    let reused = env.root.path().join("reused");
    fs::create_dir(&reused).unwrap();
    fs::set_permissions(&reused, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    env.run_with(
        &["kimi", "--stage-dir", reused.to_str().unwrap(), "-"],
        Some(prompt.as_bytes()),
    )
    .argv();
    assert_private(&reused, prompt.as_bytes());
    assert!(
        !reused.join(moot::cleanup::MARKER).exists(),
        "a directory of the caller's is never marked removable"
    );
}

#[test]
fn the_umask_changes_no_mode() {
    let env = Env::new();
    let prompt = prompt_of(102_400);
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("umask 277; exec {BIN} omp -"))
        .current_dir(env.work())
        .env("TMPDIR", env.tmpdir());
    let out = common::run(command, Some(prompt.as_bytes()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    the_staged_dir(&env, prompt.as_bytes());
}

#[test]
fn a_stage_dir_that_cannot_be_made_is_a_failure_not_a_refusal() {
    let env = Env::new();
    let prompt = prompt_of(102_400);
    let out = env.run_with(
        &["omp", "--stage-dir", "/proc/moot-render-test", "-"],
        Some(prompt.as_bytes()),
    );
    assert_eq!(
        (out.code, out.stdout_text(), out.stderr),
        (
            1,
            String::new(),
            "moot-render: stage dir (/proc/moot-render-test): cannot create it: No such file or \
             directory (os error 2)\n"
                .to_string()
        )
    );
}

/// The acceptance command: `moot-render omp … -- "$(head -c 200000 /dev/urandom | base64)"`.
/// That argument is about 270 KB, above Linux's 128 KiB limit on one argument, so the kernel
/// refuses to start any program with it (the shell reports E2BIG, status 126) — which is why
/// a prompt that size must never be on argv. The same prompt through stdin, and the largest
/// that fits through `--`, render with no argument over 1 KiB.
#[test]
fn a_200000_byte_random_base64_prompt_never_reaches_argv() {
    let env = Env::new();
    let literal = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{BIN} omp --policy read-only -- \"$(head -c 200000 /dev/urandom | base64)\""
        ))
        .current_dir(env.work())
        .env("TMPDIR", env.tmpdir())
        .output()
        .unwrap();
    assert_eq!(literal.status.code(), Some(126));
    assert!(String::from_utf8_lossy(&literal.stderr).contains("Argument list too long"));

    let base64 = Command::new("sh")
        .arg("-c")
        .arg("head -c 200000 /dev/urandom | base64")
        .output()
        .unwrap()
        .stdout;
    let prompt = String::from_utf8(base64).unwrap();
    let prompt = prompt.strip_suffix('\n').unwrap();
    assert!(prompt.len() > 260_000);
    let out = env.run_with(
        &["omp", "--policy", "read-only", "-"],
        Some(prompt.as_bytes()),
    );
    let argv = out.argv();
    assert!(argv.iter().all(|arg| arg.len() <= 1024), "{argv:?}");
    the_staged_dir(&env, prompt.as_bytes());

    let env = Env::new();
    let fits = Command::new("sh")
        .arg("-c")
        .arg("head -c 90000 /dev/urandom | base64 -w0")
        .output()
        .unwrap()
        .stdout;
    let fits = String::from_utf8(fits).unwrap();
    assert_eq!(fits.len(), 120_000);
    let argv = env.run(&["omp", "--", &fits]).argv();
    assert!(argv.iter().all(|arg| arg.len() <= 1024), "{argv:?}");
    the_staged_dir(&env, fits.as_bytes());
}

#[test]
fn a_reader_that_goes_away_leaves_nothing_staged() {
    let env = Env::new();
    let prompt = prompt_of(102_400);
    fs::write(env.work().join("job.md"), &prompt).unwrap();
    // stdout is a pipe whose read end is already closed: printing the argv fails with EPIPE.
    let (read_end, write_end) = nix::unistd::pipe().unwrap();
    drop(read_end);
    let out = Command::new(BIN)
        .args(["omp", "--prompt-file", "job.md"])
        .current_dir(env.work())
        .env("TMPDIR", env.tmpdir())
        .stdout(std::process::Stdio::from(write_end))
        .output()
        .unwrap();
    // Regression: this exited 0. Nobody got the argv: exit 1, as the man page says.
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).as_ref()
        ),
        (
            Some(1),
            "moot-render: cannot write the rendering: Broken pipe (os error 32)\n"
        )
    );
    assert!(env.staged_under_tmpdir().is_empty());
}

/// A root CI job's seat runs as another user (moot-sandbox --user), which could not read a
/// prompt of root's: --stage-user gives it the prompt (0600, its own) in a directory it may
/// enter and list but not write (0750, its group's, still the caller's, still removable by
/// --cleanup), and no other user may enter. A directory of the caller's is never changed.
#[test]
fn a_staged_prompt_is_given_to_the_seats_user() {
    if !nix::unistd::geteuid().is_root() {
        moot_testkit::skip(
            "a_staged_prompt_is_given_to_the_seats_user",
            "needs root: only root gives a file away",
        );
        return;
    }
    let env = Env::new();
    std::fs::set_permissions(
        env.root.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o711),
    )
    .unwrap();
    let prompt = prompt_of(102_400);
    let dir = env.root.path().join("stage");
    let dir_s = dir.to_str().unwrap();
    env.run_with(
        &[
            "omp",
            "--stage-dir",
            dir_s,
            "--stage-user",
            "65534:65534",
            "-",
        ],
        Some(prompt.as_bytes()),
    )
    .argv();
    let file = dir.join("prompt.md");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(fs::metadata(&file).unwrap().uid(), 65534);
    assert_eq!(mode(&file), 0o600);
    assert_eq!(fs::metadata(&dir).unwrap().uid(), 0);
    assert_eq!(fs::metadata(&dir).unwrap().gid(), 65534);
    assert_eq!(mode(&dir), 0o750);
    // The seat's user reads and lists it (kimi-cli's --add-dir must be readable); it cannot
    // write the directory, and another user cannot enter it.
    let as_user = |id: u32, script: &str| {
        use std::os::unix::process::CommandExt;
        let out = Command::new("sh")
            .args(["-c", script, "sh", dir_s])
            .uid(id)
            .gid(id)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let attempt = "head -c 3 \"$1/prompt.md\" 2>/dev/null; echo; ls \"$1\" 2>/dev/null; \
                   touch \"$1/x\" 2>/dev/null || echo no-write";
    assert_eq!(
        as_user(65534, attempt),
        format!("{}\nprompt.md\nno-write\n", &prompt[..3])
    );
    assert_eq!(as_user(4242, attempt), "\nno-write\n");
    // --cleanup (moot-run, a parser) removes it as moot's own scratch.
    let removable = moot::cleanup::check(std::slice::from_ref(&dir)).unwrap();
    moot::cleanup::remove(&removable[0]).unwrap();
    assert!(!dir.exists());

    let reused = env.root.path().join("reused");
    fs::create_dir(&reused).unwrap();
    fs::set_permissions(&reused, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let out = env.run_with(
        &[
            "omp",
            "--stage-dir",
            reused.to_str().unwrap(),
            "--stage-user",
            "nobody",
            "-",
        ],
        Some(prompt.as_bytes()),
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--stage-user"), "{}", out.stderr);
    assert_eq!(mode(&reused), 0o700);
    assert!(entries(&reused).is_empty());
}
