//! Codex's argv:
//!
//! ```text
//! codex exec [--sandbox <mode>] [--add-dir <git dir>] [--add-dir <writable>]… --json \
//!     [resume] [--model <M>] [-c model_reasoning_effort=<E>] \
//!     -c 'projects={"<root>"={trust_level="untrusted"}}' --ignore-rules [--last | <id>] -- <prompt>
//! ```
//!
//! The repository under review configures nothing: its root (the worktree's, else the working
//! directory) is declared untrusted whatever the operator's config says, so its
//! `.codex/config.toml` (MCP servers, instructions, sandbox defaults) is not read, and
//! `--ignore-rules` leaves out its execpolicy `.rules` (checked against 0.171.0: man/moot.7, THE
//! REPOSITORY UNDER REVIEW). Only the inline-table form overrides a trusted entry.
//!
//! The policy picks codex's own sandbox. Under workspace-write in a linked git worktree, the
//! worktree's git directory (`<main>/.git/worktrees/<name>`, read from the `.git` file) is also
//! granted, so routine git operations that write metadata (an index refresh from `git status`,
//! `git add`) work inside the sandbox. Codex's sandboxes read everywhere, so readable grants need
//! no flag.

use std::path::Path;

use crate::model::{Argv, Built, Declared, Delivery, Host, Job, Policy, Refusal};
use crate::session::{is_fresh, is_uuid, SessionUse, LAST};
use crate::worktree::Kind;

/// Builds one codex delivery.
pub fn build(job: &Job, host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    let session = session(&job.session)?;
    let mut warnings = Vec::new();
    let (sandbox, declared) = sandbox(job, host, &mut warnings);
    let mut argv = Argv::new(&["codex", "exec"]);
    argv.push(&sandbox.iter().map(String::as_str).collect::<Vec<_>>())
        .push(&["--json"]);
    if session != SessionUse::Start {
        argv.push(&["resume"]);
    }
    let effort = job
        .effort
        .as_ref()
        .map(|e| format!("model_reasoning_effort={e}"));
    let root = host
        .worktree
        .as_ref()
        .map_or(host.cwd.as_path(), |w| w.root.as_path());
    let untrusted = format!(
        "projects={{{}={{trust_level=\"untrusted\"}}}}",
        toml_string(&root.to_string_lossy())
    );
    argv.opt("--model", job.model.as_ref().map(|m| m.value.as_str()))
        .opt("-c", effort.as_deref())
        .push(&["-c", &untrusted, "--ignore-rules"]);
    match &session {
        SessionUse::Start => {}
        SessionUse::Last => {
            argv.push(&["--last"]);
        }
        SessionUse::Resume(id) => {
            argv.push(&[id]);
        }
    }
    argv.push(&["--", &delivery.token]);
    let mut built = Built::new(argv.into_vec(), declared);
    built.warnings = warnings;
    Ok(built)
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    let mut quoted = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// The sandbox flags for the policy. Any grant beyond the worktree widens workspace-write.
fn sandbox(job: &Job, host: &Host, warnings: &mut Vec<String>) -> (Vec<String>, Declared) {
    if job.seat {
        // codex's bubblewrap cannot start under Landlock (no user namespace, no mount), and
        // without it codex runs no command at all: in a seat the kernel is the sandbox.
        let bypass = "--dangerously-bypass-approvals-and-sandbox".to_string();
        return (vec![bypass], Declared::Widened);
    }
    let mode = |mode: &str| vec!["--sandbox".to_string(), mode.to_string()];
    match job.policy {
        Policy::Auto => {
            withhold(job, "auto", warnings);
            (Vec::new(), Declared::Widened)
        }
        Policy::ReadOnly => {
            withhold(job, "read-only", warnings);
            (mode("read-only"), Declared::Applied)
        }
        Policy::DangerFullAccess => (mode("danger-full-access"), Declared::Applied),
        Policy::WorkspaceWrite => {
            let grants: Vec<String> = git_dir_grant(host, warnings)
                .into_iter()
                .chain(job.writable.iter().cloned())
                .collect();
            let mut flags = mode("workspace-write");
            for grant in &grants {
                flags.extend(["--add-dir".to_string(), grant.clone()]);
            }
            let declared = if grants.is_empty() {
                Declared::Applied
            } else {
                Declared::Widened
            };
            (flags, declared)
        }
    }
}

/// Writable grants codex cannot take under this policy: said, never silently dropped.
fn withhold(job: &Job, policy: &str, warnings: &mut Vec<String>) {
    for dir in &job.writable {
        warnings.push(format!(
            "--add-dir ({dir}): codex grants writable directories only under --policy \
             workspace-write; not granted under {policy}"
        ));
    }
}

fn git_dir_grant(host: &Host, warnings: &mut Vec<String>) -> Option<String> {
    let worktree = host.worktree.as_ref()?;
    let dot_git = worktree.root.join(".git");
    match &worktree.kind {
        Kind::Primary => None,
        Kind::Linked { git_dir } if Path::is_dir(git_dir) => Some(git_dir.display().to_string()),
        Kind::Linked { git_dir } => {
            warnings.push(format!(
                "{} names {}, which is not a directory; the worktree's git directory is not \
                 granted, so git commands that write metadata will fail in codex's sandbox",
                dot_git.display(),
                git_dir.display()
            ));
            None
        }
        Kind::Unreadable { why } => {
            warnings.push(format!(
                "{} cannot be read ({why}); the worktree's git directory is not granted, so git \
                 commands that write metadata will fail in codex's sandbox",
                dot_git.display()
            ));
            None
        }
    }
}

/// A UUID, a thread name, `last`; empty or `fresh:` starts a new thread.
fn session(reference: &str) -> Result<SessionUse, Refusal> {
    if reference.is_empty() || is_fresh(reference) {
        return Ok(SessionUse::Start);
    }
    if reference == LAST {
        return Ok(SessionUse::Last);
    }
    let thread_name = !reference.starts_with('-') && !reference.chars().any(char::is_control);
    if is_uuid(reference) || thread_name {
        return Ok(SessionUse::Resume(reference.to_string()));
    }
    Err(Refusal::new(
        "--session",
        "codex takes a session UUID, a thread name (not starting with '-', no control \
         characters), last, fresh:<suffix> or nothing",
    )
    .value(reference))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::testing::{argv, host, model, refusal, session};
    use crate::worktree::Worktree;

    /// The repository-under-review flags for the test host (its working directory is /).
    const UNTRUSTED_ROOT: &str = r#"projects={"/"={trust_level="untrusted"}}"#;

    fn run(job: &Job) -> Vec<String> {
        argv(build, job, &Delivery::inline("review"))
    }

    #[test]
    fn start() {
        assert_eq!(
            run(&Job::default()),
            [
                "codex",
                "exec",
                "--json",
                "-c",
                UNTRUSTED_ROOT,
                "--ignore-rules",
                "--",
                "review"
            ]
        );
        let job = Job {
            model: model("gpt-5.5-codex"),
            effort: Some("high".into()),
            policy: Policy::ReadOnly,
            ..Job::default()
        };
        assert_eq!(
            run(&job),
            [
                "codex",
                "exec",
                "--sandbox",
                "read-only",
                "--json",
                "--model",
                "gpt-5.5-codex",
                "-c",
                "model_reasoning_effort=high",
                "-c",
                UNTRUSTED_ROOT,
                "--ignore-rules",
                "--",
                "review"
            ]
        );
    }

    #[test]
    fn resume_by_id_thread_name_or_last() {
        for (reference, tail) in [
            (
                "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc",
                "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc",
            ),
            ("nightly review", "nightly review"),
            ("last", "--last"),
        ] {
            let job = Job {
                session: reference.into(),
                model: model("m"),
                ..Job::default()
            };
            assert_eq!(
                run(&job),
                [
                    "codex",
                    "exec",
                    "--json",
                    "resume",
                    "--model",
                    "m",
                    "-c",
                    UNTRUSTED_ROOT,
                    "--ignore-rules",
                    tail,
                    "--",
                    "review"
                ]
            );
        }
        for reference in ["-x", "a\nb"] {
            let job = session(reference);
            assert!(refusal(build, &job).starts_with("--session ("));
        }
        let fresh = session("fresh:job:1");
        assert_eq!(run(&fresh), run(&Job::default()));
    }

    #[test]
    fn sandbox_per_policy() {
        for (policy, flags, declared) in [
            (
                Policy::ReadOnly,
                &["--sandbox", "read-only"][..],
                Declared::Applied,
            ),
            (
                Policy::WorkspaceWrite,
                &["--sandbox", "workspace-write"][..],
                Declared::Applied,
            ),
            (
                Policy::DangerFullAccess,
                &["--sandbox", "danger-full-access"][..],
                Declared::Applied,
            ),
            (Policy::Auto, &[][..], Declared::Widened),
        ] {
            let job = Job {
                policy,
                ..Job::default()
            };
            let built = build(&job, &host(), &Delivery::inline("x")).unwrap();
            let expected: Vec<&str> = ["codex", "exec"]
                .iter()
                .chain(flags)
                .chain(&["--json", "-c", UNTRUSTED_ROOT, "--ignore-rules", "--", "x"])
                .copied()
                .collect();
            assert_eq!(built.argv, expected);
            assert_eq!(built.declared, declared, "{policy:?}");
            assert!(built.warnings.is_empty());
        }
    }

    fn linked_host(tmp: &Path) -> Host {
        let git_dir = tmp.join("main/.git/worktrees/wt");
        std::fs::create_dir_all(&git_dir).unwrap();
        Host {
            worktree: Some(Worktree {
                root: tmp.join("wt"),
                kind: Kind::Linked { git_dir },
            }),
            ..host()
        }
    }

    #[test]
    fn a_linked_worktree_gets_its_git_dir_under_workspace_write_only() {
        let tmp = tempfile::tempdir().unwrap();
        let h = linked_host(tmp.path());
        let git_dir = tmp
            .path()
            .join("main/.git/worktrees/wt")
            .display()
            .to_string();
        let untrusted_wt = format!(
            r#"projects={{"{}"={{trust_level="untrusted"}}}}"#,
            tmp.path().join("wt").display()
        );
        let job = Job {
            policy: Policy::WorkspaceWrite,
            writable: vec!["/out".into()],
            ..Job::default()
        };
        let built = build(&job, &h, &Delivery::inline("x")).unwrap();
        assert_eq!(
            built.argv,
            [
                "codex",
                "exec",
                "--sandbox",
                "workspace-write",
                "--add-dir",
                &git_dir,
                "--add-dir",
                "/out",
                "--json",
                "-c",
                &untrusted_wt,
                "--ignore-rules",
                "--",
                "x"
            ]
        );
        assert_eq!(built.declared, Declared::Widened);

        let read_only = Job {
            policy: Policy::ReadOnly,
            writable: vec!["/out".into()],
            ..Job::default()
        };
        let built = build(&read_only, &h, &Delivery::inline("x")).unwrap();
        assert_eq!(
            built.argv,
            [
                "codex",
                "exec",
                "--sandbox",
                "read-only",
                "--json",
                "-c",
                &untrusted_wt,
                "--ignore-rules",
                "--",
                "x"
            ]
        );
        assert_eq!(
            built.warnings,
            [
                "--add-dir (/out): codex grants writable directories only under --policy \
              workspace-write; not granted under read-only"
            ]
        );
    }

    #[test]
    fn a_primary_checkout_gets_no_extra_grant() {
        let h = Host {
            worktree: Some(Worktree {
                root: "/repo".into(),
                kind: Kind::Primary,
            }),
            ..host()
        };
        let job = Job {
            policy: Policy::WorkspaceWrite,
            ..Job::default()
        };
        let built = build(&job, &h, &Delivery::inline("x")).unwrap();
        assert_eq!(
            built.argv,
            [
                "codex",
                "exec",
                "--sandbox",
                "workspace-write",
                "--json",
                "-c",
                r#"projects={"/repo"={trust_level="untrusted"}}"#,
                "--ignore-rules",
                "--",
                "x"
            ]
        );
        assert_eq!(built.declared, Declared::Applied);
    }

    #[test]
    fn an_unusable_git_file_is_said_not_granted() {
        let h = Host {
            worktree: Some(Worktree {
                root: "/repo".into(),
                kind: Kind::Linked {
                    git_dir: "/gone/.git/worktrees/wt".into(),
                },
            }),
            ..host()
        };
        let job = Job {
            policy: Policy::WorkspaceWrite,
            ..Job::default()
        };
        let built = build(&job, &h, &Delivery::inline("x")).unwrap();
        assert!(!built.argv.contains(&"--add-dir".to_string()));
        assert_eq!(
            built.warnings,
            ["/repo/.git names /gone/.git/worktrees/wt, which is not a directory; the worktree's \
              git directory is not granted, so git commands that write metadata will fail in \
              codex's sandbox"]
        );
    }

    #[test]
    fn a_root_with_quotes_or_backslashes_stays_one_toml_string() {
        assert_eq!(toml_string(r#"/a "b"\c"#), r#""/a \"b\"\\c""#);
        assert_eq!(toml_string("/a\nb"), r#""/a\u000Ab""#);
    }
}
