#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Every refusal: exit 2, one exact line on stderr, nothing on stdout, nothing staged.

mod common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use common::{euid, Env};

/// Runs and checks the refusal, and that $TMPDIR is still empty.
fn refused(env: &Env, args: &[&str], line: &str) {
    env.run(args).refused(line);
    assert_eq!(
        env.staged_under_tmpdir(),
        Vec::<std::path::PathBuf>::new(),
        "{args:?}"
    );
}

/// [`refused`] for each `(args, line)` case in turn, on the same `env`.
fn refused_each(env: &Env, cases: &[(&[&str], &str)]) {
    for (args, line) in cases {
        refused(env, args, line);
    }
}

const UUID: &str = "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc";

#[test]
fn unknown_runtime() {
    let names: Vec<&str> = moot::registry::all().iter().map(|m| m.name).collect();
    let expected = format!(
        "runtime (gemini): unknown runtime; use one of {}",
        names.join(", ")
    );
    refused(&Env::new(), &["gemini", "--", "x"], &expected);
    refused(&Env::new(), &["--list", "gemini"], &expected);
}

#[test]
fn actions_the_runtime_does_not_advertise() {
    refused(
        &Env::new(),
        &[
            "omp",
            "--action",
            "produce",
            "--policy",
            "workspace-write",
            "--",
            "x",
        ],
        "--action (produce): omp does not advertise it (capabilities: review, implement, ask)",
    );
    refused(
        &Env::new(),
        &[
            "shell",
            "--session",
            "cat",
            "--action",
            "produce",
            "--",
            "x",
        ],
        "--action (produce): shell does not advertise it (capabilities: review, implement, ask)",
    );
}

#[test]
fn implement_on_a_seat_that_cannot_write() {
    let env = Env::new();
    for policy in ["read-only", "auto"] {
        for runtime in ["omp", "claude", "codex"] {
            refused(
                &env,
                &[
                    runtime,
                    "--action",
                    "implement",
                    "--policy",
                    policy,
                    "--",
                    "x",
                ],
                &format!(
                    "--action (implement): the policy {policy} grants no writes; use --policy \
                     workspace-write or danger-full-access"
                ),
            );
        }
    }
    refused(
        &env,
        &["omp", "--readonly-seat", "--action", "implement", "--", "x"],
        "--action (implement): a read-only seat grants no writes; use --policy workspace-write \
         or danger-full-access",
    );
}

#[test]
fn read_only_seats() {
    let env = Env::new();
    refused_each(
        &env,
        &[
            (
                &["codex", "--readonly-seat", "--", "x"],
                "--readonly-seat: codex has no read-only-seat delivery; only omp does",
            ),
            (
                &[
                    "omp",
                    "--readonly-seat",
                    "--policy",
                    "danger-full-access",
                    "--",
                    "x",
                ],
                "--policy (danger-full-access): a read-only seat cannot carry a write-granting \
                 policy; drop --readonly-seat or the policy",
            ),
        ],
    );
}

#[test]
fn plan_requests() {
    let env = Env::new();
    for runtime in ["kimi", "codex", "claude", "pi"] {
        refused(
            &env,
            &[runtime, "--plan", "--policy", "workspace-write", "--", "x"],
            &format!("--plan: plan mode is omp's alone; {runtime} would run it as an ordinary job"),
        );
    }
    refused_each(
        &env,
        &[
            (
                &["omp", "--plan", "--policy", "read-only", "--", "x"],
                "--plan: a plan ends in an implementation phase, so it needs a write-granting \
                 policy, and the policy read-only grants no writes; use --policy workspace-write \
                 or danger-full-access",
            ),
            (
                &["omp", "--plan", "--", "x"],
                "--plan: a plan ends in an implementation phase, so it needs a write-granting \
                 policy, and the policy auto grants no writes; use --policy workspace-write or \
                 danger-full-access",
            ),
            (
                &["omp", "--plan", "--readonly-seat", "--", "x"],
                "--plan: a plan ends in an implementation phase, so it needs a write-granting \
                 policy, and a read-only seat grants no writes; use --policy workspace-write or \
                 danger-full-access",
            ),
            (
                &["omp", "--plan-into", "anthropic/claude-haiku-4", "--", "x"],
                "--plan-into (anthropic/claude-haiku-4): it names the model that executes a plan, \
                 so it requires --plan",
            ),
        ],
    );
}

#[test]
fn malformed_plan_targets() {
    let env = Env::new();
    let plan = ["omp", "--plan", "--policy", "workspace-write"];
    for (target, shown, why) in [
        ("a b", "a b", "a model selector cannot contain whitespace"),
        (
            "-x",
            "-x",
            "a model selector cannot start with '-', where it would read as a flag",
        ),
        (
            "m\nx",
            "m\\nx",
            "a model selector cannot contain control characters",
        ),
        (
            "m\u{7}",
            "m\\u{7}",
            "a model selector cannot contain control characters",
        ),
    ] {
        let flag = format!("--plan-into={target}");
        let args: Vec<&str> = plan
            .iter()
            .copied()
            .chain([flag.as_str(), "--", "x"])
            .collect();
        refused(
            &env,
            &args,
            &format!(
                "--plan-into ({shown}): a plan target must be one non-flag model selector: {why}"
            ),
        );
    }
    // A model that could not be a plan target is refused before it reaches any slot.
    let args: Vec<&str> = plan
        .iter()
        .copied()
        .chain(["--model=--add-dir=/", "--", "x"])
        .collect();
    refused(
        &env,
        &args,
        "--model (--add-dir=/): a model selector cannot start with '-', where it would read as a flag",
    );
    let env = env.var("MOOT_OMP_DEFAULT_MODEL", "two words");
    let args: Vec<&str> = plan.iter().copied().chain(["--", "x"]).collect();
    refused(
        &env,
        &args,
        "MOOT_OMP_DEFAULT_MODEL (two words): a model selector cannot contain whitespace",
    );
}

#[test]
fn session_grammars() {
    let env = Env::new();
    let cases: &[(&str, &str, &str)] = &[
        ("omp", "last", "--session (last): omp never resumes (a resumed run edits the previous worktree), so it has no last; use a session UUID, fresh:<suffix> or nothing"),
        ("omp", "session_x", "--session (session_x): omp takes a session UUID, fresh:<suffix> or nothing"),
        ("kimi", "last", "--session (last): kimi takes session_<uuid>, fresh:<suffix> or nothing"),
        ("kimi", UUID, "--session (0f8c1c3e-9a4b-4c1d-8e2f-123456789abc): kimi takes session_<uuid>, fresh:<suffix> or nothing"),
        ("kimi-cli", "session_0f8c1c3e-9a4b-4c1d-8e2f-123456789abc", "--session (session_0f8c1c3e-9a4b-4c1d-8e2f-123456789abc): kimi-cli takes a session UUID, fresh:<suffix> or nothing"),
        ("claude", "my-thread", "--session (my-thread): claude takes a session UUID, last, fresh:<suffix> or nothing"),
        ("codex", "-x", "--session (-x): codex takes a session UUID, a thread name (not starting with '-', no control characters), last, fresh:<suffix> or nothing"),
        ("pi", "abc", "--session (abc): pi takes a session UUID, last, fresh:<suffix> or nothing"),
        ("mock", "last", "--session (last): mock has no sessions; give fresh:<suffix> or nothing"),
    ];
    for (runtime, reference, line) in cases {
        let flag = format!("--session={reference}");
        refused(&env, &[runtime, &flag, "--", "x"], line);
    }
    refused(
        &env,
        &["shell", "--", "x"],
        "--session: shell runs the command given as --session; give one",
    );
}

#[test]
fn effort_outside_claude_levels() {
    refused(
        &Env::new(),
        &["claude", "--effort", "auto", "--", "x"],
        "--effort (auto): claude takes one of low, medium, high, xhigh, max",
    );
    refused(
        &Env::new().var("MOOT_CLAUDE_DEFAULT_EFFORT", "turbo"),
        &["claude", "--", "x"],
        "MOOT_CLAUDE_DEFAULT_EFFORT (turbo): claude takes one of low, medium, high, xhigh, max",
    );
}

#[test]
fn files_that_must_exist() {
    let env = Env::new();
    refused_each(
        &env,
        &[
            (
                &["pi", "--system-prompt-file", "missing.md", "--", "x"],
                "--system-prompt-file (missing.md): not a readable regular file (No such file or \
                 directory (os error 2))",
            ),
            (
                &["claude", "--system-prompt-file", ".", "--", "x"],
                "--system-prompt-file (.): not a readable regular file (not a regular file)",
            ),
            (
                &["pi", "--extension", "gate.ts", "--", "x"],
                "--extension (gate.ts): not a readable regular file (No such file or directory (os \
                 error 2))",
            ),
        ],
    );
    // A FIFO is refused without being opened (opening it would wait for a writer).
    nix::unistd::mkfifo(&env.work().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    refused(
        &env,
        &["claude", "--system-prompt-file", "fifo", "--", "x"],
        "--system-prompt-file (fifo): not a readable regular file (not a regular file)",
    );
    // Nor does a prompt file that is a FIFO or a device hang or flood moot-render.
    refused_each(
        &env,
        &[
            (
                &["omp", "--prompt-file", "fifo"],
                "--prompt-file (fifo): cannot read it: not a regular file; to read a pipe, give \
                 --prompt-file - and pipe it on stdin",
            ),
            (
                &["omp", "--prompt-file", "/dev/zero"],
                "--prompt-file (/dev/zero): cannot read it: not a regular file; to read a pipe, \
                 give --prompt-file - and pipe it on stdin",
            ),
        ],
    );
    fs::write(env.work().join("prompt.md"), "be terse").unwrap();
    refused_each(
        &env,
        &[
            (
                &["codex", "--system-prompt-file", "prompt.md", "--", "x"],
                "--system-prompt-file (prompt.md): codex has no such input",
            ),
            (
                &["omp", "--add-dir", "nowhere", "--", "x"],
                "--add-dir (nowhere): not a directory",
            ),
            (
                &["omp", "--add-dir", "", "--", "x"],
                "--add-dir (): an empty path (is the variable that names it set?)",
            ),
            (
                &["claude", "--add-dir", ".", "--add-dir", " ", "--", "x"],
                "--add-dir ( ): an empty path (is the variable that names it set?)",
            ),
            (
                &["omp", "--prompt-file", "job.md"],
                "--prompt-file (job.md): cannot read it: No such file or directory (os error 2)",
            ),
        ],
    );
    // The same files, present, are taken (as absolute paths).
    let out = env.run(&["pi", "--system-prompt-file", "prompt.md", "--", "x"]);
    let system = env.work().join("prompt.md");
    assert!(out
        .argv()
        .windows(2)
        .any(|w| w == ["--system-prompt", system.to_str().unwrap()]));
}

#[test]
fn prompts_a_runtime_cannot_take() {
    let env = Env::new();
    refused(
        &env,
        &["codex", "--", "-"],
        "prompt: codex gives the prompt \"-\" a meaning of its own (it reads stdin); reword it",
    );
    for runtime in ["shell", "mock"] {
        let big = "y".repeat(102_400);
        env.run_with(&[runtime, "-"], Some(big.as_bytes()))
            .refused(&format!(
            "prompt: 102400 bytes: {runtime} takes the prompt only as one argument, and prompts \
             of 102400 bytes or more never go on argv; shorten it, or use a runtime that stages \
             large prompts (moot-render --list shows each one's oversize rule)"
        ));
        assert!(env.staged_under_tmpdir().is_empty());
    }
}

#[test]
fn prompt_text_problems_never_quote_the_prompt() {
    let env = Env::new();
    refused(&env, &["omp", "--", ""], "prompt: empty; give the task");
    refused(
        &env,
        &["omp", "--", " \n\t "],
        "prompt: blank (only whitespace); give the task",
    );
    env.run_with(
        &[
            OsStr::new("omp"),
            OsStr::new("--"),
            OsStr::from_bytes(b"secret \xff"),
        ],
        None,
    )
    .refused("prompt: not valid UTF-8 (first bad byte at offset 7); re-encode it as UTF-8");
    fs::write(env.work().join("nul.md"), b"secret\0more").unwrap();
    refused(
        &env,
        &["omp", "--prompt-file", "nul.md"],
        "prompt: contains a NUL byte at offset 6; remove it",
    );
    env.run_with(&["kimi", "-"], Some(b"\xc3\x28 secret"))
        .refused("prompt: not valid UTF-8 (first bad byte at offset 0); re-encode it as UTF-8");
}

#[test]
fn prompt_source_mistakes() {
    let env = Env::new();
    let usage = "give exactly one prompt: after --, or --prompt-file FILE, or - for stdin";
    refused_each(
        &env,
        &[
            (&["omp"], &format!("prompt: none given; {usage}")),
            (
                &["omp", "-", "--", "x"],
                &format!("prompt: more than one given; {usage}"),
            ),
            (
                &["omp", "--", "review", "this"],
                "prompt: 2 arguments after --; quote the prompt as one argument",
            ),
            // A prompt given without `--` is not echoed back.
            (
                &["omp", "review my secret plan"],
                &format!("unexpected argument after RUNTIME: a prompt goes after -- ({usage})"),
            ),
            (
                &["omp", "--health", "--", "x"],
                "--health: it delivers omp's own check prompt; give no prompt",
            ),
        ],
    );
}

#[test]
fn claude_full_access_as_root() {
    let env = Env::new();
    let args = ["claude", "--policy", "danger-full-access", "--", "x"];
    if euid() == 0 {
        refused(
            &env,
            &args,
            "--policy (danger-full-access): claude refuses bypassPermissions when run as root; \
             run the job as an unprivileged user",
        );
    } else {
        let argv = env.run(&args).argv();
        assert_eq!(argv[1..3], ["--permission-mode", "bypassPermissions"]);
    }
}

#[test]
fn usage_errors_are_one_line_too() {
    let env = Env::new();
    refused_each(
        &env,
        &[
            (
                &["omp", "--policy", "yolo", "--", "x"],
                "invalid value 'yolo' for '--policy <POLICY>'; [possible values: read-only, \
                 workspace-write, danger-full-access, auto] (see --help)",
            ),
            (
                &["omp", "--deadline", "10m", "--", "x"],
                "invalid value '10m' for '--deadline <SECS>': expected a number of seconds such as \
                 600 or 12.5, got \"10m\" (see --help)",
            ),
            (
                &["omp", "--deadline", "-5", "--", "x"],
                "invalid value '-5' for '--deadline <SECS>': expected a number of seconds such as \
                 600 or 12.5, got \"-5\" (see --help)",
            ),
    // A value that looks like a flag is taken as the value, and refused for what it is.
            (
                &["omp", "--model", "--policy", "read-only", "--", "x"],
                "--model (--policy): a model selector cannot start with '-', where it would read \
                 as a flag",
            ),
            (
                &["--list", "--policy", "auto"],
                "the argument '--list' cannot be used with '--policy <POLICY>' (see --help)",
            ),
            (
                &["--json"],
                "the following required arguments were not provided: --list, <RUNTIME> (see \
                 --help)",
            ),
        ],
    );
}

#[test]
fn stage_dirs_that_are_refused() {
    let env = Env::new();
    let big = common::prompt_of(102_400);
    let stage_refused = |args: &[&str], line: &str| {
        let mut full = vec!["omp"];
        full.extend_from_slice(args);
        full.push("-");
        env.run_with(&full, Some(big.as_bytes())).refused(line);
        assert!(env.staged_under_tmpdir().is_empty());
    };
    stage_refused(
        &["--stage-dir", "rel/dir"],
        "--stage-dir (rel/dir): must be an absolute path",
    );

    let loose = env.root.path().join("loose");
    fs::create_dir(&loose).unwrap();
    fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
    let loose_s = loose.to_str().unwrap();
    stage_refused(
        &["--stage-dir", loose_s],
        &format!(
            "--stage-dir ({loose_s}): has mode 0755, which lets other users reach the prompt; \
             chmod 700 it or use a fresh directory"
        ),
    );
    assert!(common::entries(&loose).is_empty());

    // Owned by someone else: root can make such a directory; anyone else can point at "/".
    let foreign = if euid() == 0 {
        let dir = env.root.path().join("foreign");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        (dir.to_str().unwrap().to_string(), 65534)
    } else {
        ("/".to_string(), 0)
    };
    stage_refused(
        &["--stage-dir", &foreign.0],
        &format!(
            "--stage-dir ({}): is owned by uid {}, not by you (uid {}); use a directory of your own",
            foreign.0,
            foreign.1,
            euid()
        ),
    );

    // Inside the job's git worktree (found from the working directory), or a writable grant.
    fs::create_dir(env.work().join(".git")).unwrap();
    let inside = env.work().join("stage");
    let inside_s = inside.to_str().unwrap();
    stage_refused(
        &["--stage-dir", inside_s],
        &format!(
            "--stage-dir ({inside_s}): inside the job's git worktree {}, where an implement \
             job's git add could pick the prompt up; stage it outside (e.g. --stage-dir \
             \"$(mktemp -d)\")",
            env.work().display()
        ),
    );
    assert!(!inside.exists());
    let grant = env.root.path().join("grant");
    fs::create_dir(&grant).unwrap();
    let in_grant = grant.join("stage");
    stage_refused(
        &[
            "--add-dir",
            grant.to_str().unwrap(),
            "--stage-dir",
            in_grant.to_str().unwrap(),
        ],
        &format!(
            "--stage-dir ({}): inside the writable grant {}, where the agent could change or \
             commit the prompt; stage it outside",
            in_grant.display(),
            grant.display()
        ),
    );
}

#[test]
fn a_tmpdir_inside_the_worktree_is_refused() {
    let env = Env::new();
    fs::create_dir(env.work().join(".git")).unwrap();
    let tmp_in_tree = env.work().join("tmp");
    fs::create_dir(&tmp_in_tree).unwrap();
    let env = env.var("TMPDIR", &tmp_in_tree);
    let big = common::prompt_of(102_400);
    env.run_with(&["kimi", "-"], Some(big.as_bytes()))
        .refused(&format!(
        "TMPDIR ({}): inside the job's git worktree {}, where an implement job's git add could \
         pick the prompt up; stage it outside (e.g. --stage-dir \"$(mktemp -d)\")",
        tmp_in_tree.display(),
        env.work().display()
    ));
    assert!(common::entries(&tmp_in_tree).is_empty());
}

/// The tool limit takes the runtime's own tool names and refuses any other (a CLI that ignores
/// an unknown name would run with more tools than allowed).
#[test]
fn tool_limits_take_only_the_runtimes_tool_names() {
    let env = Env::new();
    refused_each(
        &env,
        &[
            (
                &["pi", "--tools", "read,rm", "--", "x"],
                "--tools (rm): not one of pi's tools (read, bash, edit, write, grep, find, ls)",
            ),
            (
                &["claude", "--tools", "bash", "--", "x"],
                "--tools (bash): not one of claude's tools (Agent, AskUserQuestion, Bash, Edit, \
                 EnterPlanMode, ExitPlanMode, Glob, Grep, JavaScript, NotebookEdit, REPL, Read, \
                 SendUserMessage, Skill, Task, TaskCreate, TaskGet, TaskList, TaskStop, \
                 TaskUpdate, TodoWrite, ToolSearch, WebFetch, WebSearch, Write)",
            ),
            (
                &["codex", "--tools", "read", "--", "x"],
                "--tools (read): codex has no tool limit",
            ),
        ],
    );
    let pi = env.run(&["pi", "--tools", "read, bash", "--", "x"]).argv();
    assert!(
        pi.windows(2).any(|w| w == ["--tools", "read,bash"]),
        "{pi:?}"
    );
    // Under read-only the limit is narrowed to pi's read-only tools.
    let read_only = env
        .run(&[
            "pi",
            "--policy",
            "read-only",
            "--tools",
            "read,bash",
            "--",
            "x",
        ])
        .argv();
    assert!(
        read_only.windows(2).any(|w| w == ["--tools", "read"]),
        "{read_only:?}"
    );
    let claude = env
        .run(&["claude", "--tools", "Read,Grep", "--", "x"])
        .argv();
    assert!(
        claude.windows(2).any(|w| w == ["--tools", "Read,Grep"]),
        "{claude:?}"
    );
}

/// A managed claude session needs its bundle (gate hook and MCP servers) and an effort, and
/// loads nothing else.
#[test]
fn a_managed_session_needs_its_whole_bundle() {
    let env = Env::new();
    fs::write(env.work().join("settings.json"), "{}").unwrap();
    fs::write(env.work().join("mcp.json"), r#"{"mcpServers":{}}"#).unwrap();
    let bundle = ["--settings", "settings.json", "--mcp-config", "mcp.json"];
    let mut no_effort = vec!["claude", "--managed"];
    no_effort.extend(bundle);
    no_effort.extend(["--", "x"]);
    refused_each(
        &env,
        &[
            (
                &["claude", "--managed", "--effort", "high", "--", "x"],
                "--managed: a managed session loads its bundle's hook and MCP servers; give \
                 --settings and --mcp-config",
            ),
            (
                &[
                    "claude",
                    "--managed",
                    "--effort",
                    "high",
                    "--settings",
                    "settings.json",
                    "--",
                    "x",
                ],
                "--managed: a managed session loads its bundle's hook and MCP servers; give \
                 --mcp-config",
            ),
            (
                &no_effort,
                "--managed: a managed claude session needs an effort; give --effort or \
                 MOOT_CLAUDE_DEFAULT_EFFORT",
            ),
            (
                &[
                    "claude",
                    "--managed",
                    "--effort",
                    "high",
                    "--settings",
                    "missing.json",
                    "--mcp-config",
                    "mcp.json",
                    "--",
                    "x",
                ],
                "--settings (missing.json): not a readable regular file (No such file or directory \
                 (os error 2))",
            ),
            (
                &["pi", "--managed", "--", "x"],
                "--managed: pi takes no managed-session bundle",
            ),
            (
                &["pi", "--settings", "settings.json", "--", "x"],
                "--settings (settings.json): pi has no such input",
            ),
        ],
    );

    let mut managed = vec![
        "claude",
        "--seat",
        "--policy",
        "workspace-write",
        "--managed",
    ];
    managed.extend(["--effort", "high", "--stream"]);
    managed.extend(bundle);
    managed.extend(["--", "x"]);
    let argv = env.run(&managed).argv();
    let settings = env.work().join("settings.json");
    let mcp = env.work().join("mcp.json");
    for pair in [
        ["--settings", settings.to_str().unwrap()],
        ["--mcp-config", mcp.to_str().unwrap()],
        ["--permission-mode", "acceptEdits"],
    ] {
        assert!(argv.windows(2).any(|w| w == pair), "{pair:?} in {argv:?}");
    }
    for flag in [
        "--strict-mcp-config",
        "--disable-slash-commands",
        "--restricted",
    ] {
        assert!(argv.iter().any(|a| a == flag), "{flag} in {argv:?}");
    }
    // --restricted refuses bypassPermissions: the bundle's gate hook decides instead.
    assert!(
        !argv.iter().any(|a| a == "--dangerously-skip-permissions"),
        "{argv:?}"
    );
}

/// A session reference is checked against the runtime's grammar without running anything.
#[test]
fn check_session_validates_a_reference_alone() {
    let env = Env::new();
    for (runtime, reference) in [
        ("codex", "last"),
        ("claude", UUID),
        ("kimi", "session_0f8c1c3e-9a4b-4c1d-8e2f-123456789abc"),
        ("omp", "fresh:abc"),
        ("shell", "echo hi"),
    ] {
        let out = env.run(&[runtime, "--check-session", reference]);
        assert_eq!(
            (out.code, out.stdout.as_slice(), out.stderr.as_str()),
            (0, &b""[..], ""),
            "{runtime} {reference}"
        );
    }
    refused_each(
        &env,
        &[
            (
                &["claude", "--check-session", "abc"],
                "--session (abc): claude takes a session UUID, last, fresh:<suffix> or nothing",
            ),
            (
                &["omp", "--check-session", "last"],
                "--session (last): omp never resumes (a resumed run edits the previous worktree), \
                 so it has no last; use a session UUID, fresh:<suffix> or nothing",
            ),
        ],
    );
    let mixed = env.run(&["codex", "--check-session", "last", "--", "x"]);
    assert_eq!(mixed.code, 2, "{}", mixed.stderr);
}

/// `--cwd DIR`: the repository under review is looked for in DIR, where the CLI will run, not
/// where moot-render runs; relative paths are still taken from where moot-render runs; a DIR
/// that is not a directory is refused.
#[test]
fn cwd_is_where_the_repository_under_review_is_looked_for() {
    let env = Env::new();
    let worktree = env.work().join("worktree");
    fs::create_dir_all(worktree.join(".omp/tools")).unwrap();
    fs::write(worktree.join("job.md"), "review").unwrap();
    // From its own directory, moot-render sees no planted tool: the CLI's directory decides.
    let elsewhere = env.run(&["omp", "--prompt-file", "worktree/job.md"]);
    assert_eq!(elsewhere.code, 0, "{}", elsewhere.stderr);
    let planted = worktree.join(".omp/tools");
    refused(
        &env,
        &[
            "omp",
            "--cwd",
            "worktree",
            "--prompt-file",
            "worktree/job.md",
        ],
        &format!(
            "the working tree: {} is there, and omp runs the code it names at start-up whatever \
             its flags say: remove it from the tree, or run another runtime",
            planted.display()
        ),
    );
    fs::remove_dir_all(worktree.join(".omp")).unwrap();
    let taken = env.run(&[
        "omp",
        "--cwd",
        "worktree",
        "--prompt-file",
        "worktree/job.md",
    ]);
    assert_eq!(taken.code, 0, "{}", taken.stderr);
    fs::write(env.work().join("file"), "").unwrap();
    refused(
        &env,
        &["omp", "--cwd", "file", "--", "x"],
        "--cwd (file): not a directory",
    );
}
