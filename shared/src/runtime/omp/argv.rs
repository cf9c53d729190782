//! omp's v1 command shape (man/moot-render.1), flag for flag and in order:
//!
//! ```text
//! omp -p --mode=json --approval-mode=<policy> --no-session \
//!     --no-extensions --no-skills --no-rules \
//!     [--add-dir <path>]… [--model <M>] [--thinking <level>] [--max-time <s>] \
//!     [--plan-yolo [--plan-yolo-into <M>]] [@<staged>/prompt.md] -- '<single prompt token>'
//! ```
//!
//! One addition, only when a system prompt file is given (the adapter.sh contract's
//! `MOSAIC_SYSTEM_PROMPT_FILE`): `--append-system-prompt <file>` after `--max-time`. omp 18.2.3
//! appends the file's contents to its own coding prompt (checked against the real CLI), which
//! keeps the coding agent's instructions where `--system-prompt` would replace them.
//!
//! The repository under review loads nothing that omp 18.2.3 can switch off: its extensions,
//! hooks, commands, skills and rules (`.omp/`, and the other tools' directories omp reads). What
//! no flag stops (custom tools in `.omp/tools`, project MCP servers) is refused by moot-render
//! while present (the record's `repo_code`; man/moot.7, THE REPOSITORY UNDER REVIEW).
//!
//! Every run is a fresh in-memory session: never `--resume`, `--continue` or `--fork` (a resumed
//! run re-roots itself in the previous session's cwd and edits the wrong worktree).

use crate::model::{Argv, Built, Declared, Delivery, Host, Job, Policy, Refusal};
use crate::session::{is_fresh, is_uuid, LAST};

/// Builds one omp delivery.
pub fn build(job: &Job, _host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    check_session(&job.session)?;
    let plan = plan(job)?;
    let (mode, declared) = approval_mode(job);
    let mut argv = Argv::new(&["omp", "-p", "--mode=json"]);
    argv.push(&[
        &format!("--approval-mode={mode}"),
        "--no-session",
        "--no-extensions",
        "--no-skills",
        "--no-rules",
    ])
    .each("--add-dir", job.writable.iter().chain(&job.readable))
    .opt("--model", job.model.as_ref().map(|m| m.value.as_str()))
    .opt("--thinking", job.effort.as_deref())
    .opt(
        "--max-time",
        max_time(job.deadline_ms).map(|s| s.to_string()).as_deref(),
    )
    .opt("--append-system-prompt", job.system_prompt.as_deref());
    if let Some(target) = &plan {
        argv.push(&["--plan-yolo"])
            .opt("--plan-yolo-into", target.as_deref());
    }
    if let Some(staged) = &delivery.staged {
        argv.push(&[&format!("@{}", staged.file)]);
    }
    argv.push(&["--", &delivery.token]);
    let mut built = Built::new(argv.into_vec(), declared);
    if mode == "write" {
        built.warnings.push(
            "omp's --approval-mode=write refuses bash without an interactive UI: the shell is \
             unavailable to this run; confine it with moot-sandbox and pass --seat for a shell"
                .to_string(),
        );
    }
    built.plan_mode = plan.map(|target| {
        format!(
            "plan-into:{}",
            target.as_deref().unwrap_or("<runtime-default>")
        )
    });
    Ok(built)
}

/// The approval mode is always passed: without it omp inherits the host's configured mode,
/// which differs between machines. A seat (a kernel-confined run, the read-only seat included)
/// runs yolo, declared widened, so headless shell and test tools work; Landlock is then the
/// boundary. Outside a seat, workspace-write's `write` mode refuses bash headless (omp 18.2.3:
/// "requires approval but no interactive UI available"): the shell is unavailable, and the
/// rendering says so in a warning.
fn approval_mode(job: &Job) -> (&'static str, Declared) {
    if job.seat {
        return ("yolo", Declared::Widened);
    }
    match job.policy {
        // Measured headless: read tools work, bash and write are refused, the run ends cleanly.
        Policy::ReadOnly => ("always-ask", Declared::Applied),
        Policy::WorkspaceWrite => ("write", Declared::Applied),
        Policy::DangerFullAccess => ("yolo", Declared::Applied),
        Policy::Auto => ("yolo", Declared::Widened),
    }
}

/// `--max-time`: 90% of the time left, in whole seconds, so omp ends the run itself and still
/// writes a complete envelope before moot-run's deadline kills the group mid-stream.
fn max_time(deadline_ms: Option<u64>) -> Option<u64> {
    let seconds = u128::from(deadline_ms?) * 9 / 10_000;
    u64::try_from(seconds).ok().filter(|s| *s >= 1)
}

/// The session reference is checked, then ignored: every omp run is fresh.
fn check_session(reference: &str) -> Result<(), Refusal> {
    if reference.is_empty() || is_uuid(reference) || is_fresh(reference) {
        return Ok(());
    }
    let why = if reference == LAST {
        "omp never resumes (a resumed run edits the previous worktree), so it has no last; use a \
         session UUID, fresh:<suffix> or nothing"
    } else {
        "omp takes a session UUID, fresh:<suffix> or nothing"
    };
    Err(Refusal::new("--session", why).value(reference))
}

/// The plan request resolved to its execution target: `None` without a plan, `Some(None)` when
/// no model is resolvable (omp then picks its own default role). An explicit --plan-into wins,
/// else the job's effective model carries through, so the model that planned also implements.
fn plan(job: &Job) -> Result<Option<Option<String>>, Refusal> {
    let Some(plan) = &job.plan else {
        return Ok(None);
    };
    if let Some(into) = &plan.into {
        check_target("--plan-into", into, "")?;
    }
    let target = match (&plan.into, &job.model) {
        (Some(into), _) => Some((into, "--plan-into")),
        (None, Some(model)) => Some((&model.value, model.source.as_str())),
        (None, None) => None,
    };
    if let Some((target, source)) = target {
        // The resolved target goes in the same argv slot, so it is held to the same rule
        // whatever it came from (a model of "--add-dir=/" must not become a flag).
        check_target("plan target", target, &format!("resolved from {source}; "))?;
    }
    Ok(Some(target.map(|(t, _)| t.clone())))
}

fn check_target(input: &str, target: &str, origin: &str) -> Result<(), Refusal> {
    match crate::model::selector_problem(target) {
        None => Ok(()),
        Some(why) => Err(Refusal::new(
            input,
            format!("{origin}a plan target must be one non-flag model selector: {why}"),
        )
        .value(target)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::testing::{argv, attached, model, refusal, session};
    use crate::model::{Plan, Selector};

    fn run(job: &Job) -> Vec<String> {
        argv(build, job, &Delivery::inline("review this PR"))
    }

    #[test]
    fn system_prompt_is_appended_after_max_time() {
        let job = Job {
            deadline_ms: Some(10_000),
            system_prompt: Some("/bundle/prompt.md".into()),
            ..Job::default()
        };
        assert_eq!(
            run(&job),
            [
                "omp",
                "-p",
                "--mode=json",
                "--approval-mode=yolo",
                "--no-session",
                "--no-extensions",
                "--no-skills",
                "--no-rules",
                "--max-time",
                "9",
                "--append-system-prompt",
                "/bundle/prompt.md",
                "--",
                "review this PR"
            ]
        );
    }

    #[test]
    fn minimal() {
        assert_eq!(
            run(&Job::default()),
            [
                "omp",
                "-p",
                "--mode=json",
                "--approval-mode=yolo",
                "--no-session",
                "--no-extensions",
                "--no-skills",
                "--no-rules",
                "--",
                "review this PR"
            ]
        );
    }

    #[test]
    fn grants_model_effort_in_order() {
        let job = Job {
            writable: vec!["/work/out".into(), "/work/cache".into()],
            readable: vec!["/inputs".into()],
            model: model("anthropic/claude-opus-4"),
            effort: Some("high".into()),
            deadline_ms: Some(600_000),
            ..Job::default()
        };
        assert_eq!(
            run(&job),
            [
                "omp",
                "-p",
                "--mode=json",
                "--approval-mode=yolo",
                "--no-session",
                "--no-extensions",
                "--no-skills",
                "--no-rules",
                "--add-dir",
                "/work/out",
                "--add-dir",
                "/work/cache",
                "--add-dir",
                "/inputs",
                "--model",
                "anthropic/claude-opus-4",
                "--thinking",
                "high",
                "--max-time",
                "540",
                "--",
                "review this PR"
            ]
        );
    }

    #[test]
    fn policy_table() {
        let cases = [
            (
                Policy::ReadOnly,
                false,
                "--approval-mode=always-ask",
                Declared::Applied,
            ),
            (
                Policy::WorkspaceWrite,
                false,
                "--approval-mode=write",
                Declared::Applied,
            ),
            (
                Policy::DangerFullAccess,
                false,
                "--approval-mode=yolo",
                Declared::Applied,
            ),
            (
                Policy::Auto,
                false,
                "--approval-mode=yolo",
                Declared::Widened,
            ),
            (
                Policy::ReadOnly,
                true,
                "--approval-mode=yolo",
                Declared::Widened,
            ),
            (
                Policy::WorkspaceWrite,
                true,
                "--approval-mode=yolo",
                Declared::Widened,
            ),
        ];
        for (policy, seat, flag, declared) in cases {
            let job = Job {
                policy,
                readonly_seat: seat && policy == Policy::ReadOnly,
                seat,
                ..Job::default()
            };
            let built = build(
                &job,
                &crate::model::job::testing::host(),
                &Delivery::inline("x"),
            )
            .unwrap();
            assert_eq!(
                built.argv,
                [
                    "omp",
                    "-p",
                    "--mode=json",
                    flag,
                    "--no-session",
                    "--no-extensions",
                    "--no-skills",
                    "--no-rules",
                    "--",
                    "x"
                ],
                "{policy:?} seat={seat}"
            );
            assert_eq!(built.declared, declared);
        }
    }

    #[test]
    fn max_time_is_floor_of_ninety_percent_and_omitted_under_a_second() {
        assert_eq!(max_time(None), None);
        assert_eq!(max_time(Some(600_000)), Some(540));
        assert_eq!(max_time(Some(1_112)), Some(1));
        assert_eq!(max_time(Some(1_111)), None);
        assert_eq!(max_time(Some(0)), None);
        assert_eq!(max_time(Some(10_999)), Some(9));
        assert_eq!(max_time(Some(u64::MAX)), Some(16_602_069_666_338_596));
        let job = Job {
            deadline_ms: Some(1_000),
            ..Job::default()
        };
        assert!(!run(&job).contains(&"--max-time".to_string()));
    }

    fn plan_job(model_value: Option<&str>, into: Option<&str>) -> Job {
        Job {
            policy: Policy::WorkspaceWrite,
            model: model_value.and_then(model),
            effort: Some("high".into()),
            plan: Some(Plan {
                into: into.map(String::from),
            }),
            ..Job::default()
        }
    }

    #[test]
    fn plan_matrix() {
        let head = [
            "omp",
            "-p",
            "--mode=json",
            "--approval-mode=write",
            "--no-session",
            "--no-extensions",
            "--no-skills",
            "--no-rules",
        ];
        // (model, --plan-into, the flags between --no-session and --, evidence)
        type Case<'a> = (Option<&'a str>, Option<&'a str>, &'a [&'a str], &'a str);
        let cases: [Case; 4] = [
            (
                None,
                None,
                &["--thinking", "high", "--plan-yolo"],
                "plan-into:<runtime-default>",
            ),
            (
                Some("openai/gpt-5.5"),
                None,
                &[
                    "--model",
                    "openai/gpt-5.5",
                    "--thinking",
                    "high",
                    "--plan-yolo",
                    "--plan-yolo-into",
                    "openai/gpt-5.5",
                ],
                "plan-into:openai/gpt-5.5",
            ),
            (
                Some("openai/gpt-5.5"),
                Some("anthropic/claude-haiku-4"),
                &[
                    "--model",
                    "openai/gpt-5.5",
                    "--thinking",
                    "high",
                    "--plan-yolo",
                    "--plan-yolo-into",
                    "anthropic/claude-haiku-4",
                ],
                "plan-into:anthropic/claude-haiku-4",
            ),
            (
                None,
                Some("@smol"),
                &[
                    "--thinking",
                    "high",
                    "--plan-yolo",
                    "--plan-yolo-into",
                    "@smol",
                ],
                "plan-into:@smol",
            ),
        ];
        for (model_value, into, middle, evidence) in cases {
            let built = build(
                &plan_job(model_value, into),
                &crate::model::job::testing::host(),
                &Delivery::inline("work"),
            )
            .unwrap();
            let expected: Vec<&str> = head
                .iter()
                .chain(middle)
                .chain(&["--", "work"])
                .copied()
                .collect();
            assert_eq!(built.argv, expected, "{model_value:?} {into:?}");
            assert_eq!(built.plan_mode.as_deref(), Some(evidence));
        }
        let no_plan = build(
            &Job::default(),
            &crate::model::job::testing::host(),
            &Delivery::inline("w"),
        )
        .unwrap();
        assert_eq!(no_plan.plan_mode, None);
    }

    #[test]
    fn plan_flags_precede_the_attachment_which_precedes_the_separator() {
        let mut job = plan_job(Some("m/x"), None);
        job.deadline_ms = Some(100_000);
        let got = argv(build, &job, &attached());
        assert_eq!(
            got[8..],
            [
                "--model",
                "m/x",
                "--thinking",
                "high",
                "--max-time",
                "90",
                "--plan-yolo",
                "--plan-yolo-into",
                "m/x",
                "@/tmp/moot-stage-x/prompt.md",
                "--",
                crate::model::job::ATTACH_POINTER,
            ]
        );
    }

    #[test]
    fn hostile_plan_targets_are_refused() {
        let flag_like = "a model selector cannot start with '-', where it would read as a flag";
        let control = "a model selector cannot contain control characters";
        let space = "a model selector cannot contain whitespace";
        for (into, shown, why) in [
            ("a b", "a b", space),
            ("a\u{a0}b", "a\u{a0}b", space),
            ("-x", "-x", flag_like),
            ("--add-dir=/", "--add-dir=/", flag_like),
            ("a\nb", "a\\nb", control),
            ("a\tb", "a\\tb", control),
            ("a\u{7}b", "a\\u{7}b", control),
            ("a\0b", "a\\u{0}b", control),
        ] {
            assert_eq!(
                refusal(build, &plan_job(None, Some(into))),
                format!(
                    "--plan-into ({shown}): a plan target must be one non-flag model selector: {why}"
                ),
                "{into:?}"
            );
        }
        // The resolved target is checked too: a hostile model must not reach the plan slot.
        let mut job = plan_job(None, None);
        job.model = Some(Selector {
            value: "--add-dir=/".into(),
            source: "MOOT_OMP_DEFAULT_MODEL".into(),
        });
        assert_eq!(
            refusal(build, &job),
            "plan target (--add-dir=/): resolved from MOOT_OMP_DEFAULT_MODEL; a plan target must \
             be one non-flag model selector: a model selector cannot start with '-', where it \
             would read as a flag"
        );
    }

    #[test]
    fn sessions_are_checked_and_never_used() {
        let expected = run(&Job::default());
        for reference in [
            "",
            "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc",
            "fresh:job:0123456789abcdef",
        ] {
            let job = session(reference);
            assert_eq!(run(&job), expected, "{reference}");
        }
        let last = session("last");
        assert_eq!(
            refusal(build, &last),
            "--session (last): omp never resumes (a resumed run edits the previous worktree), so \
             it has no last; use a session UUID, fresh:<suffix> or nothing"
        );
        let garbage = session("abc");
        assert_eq!(
            refusal(build, &garbage),
            "--session (abc): omp takes a session UUID, fresh:<suffix> or nothing"
        );
    }

    #[test]
    fn the_prompt_is_one_token_after_one_separator_whatever_it_holds() {
        for prompt in [
            "@file.md",
            "--force now",
            "-p",
            "a=b",
            "line1\nline2",
            "$(rm -rf /); `x` 'q' \"d\"",
            "--",
        ] {
            let got = argv(build, &Job::default(), &Delivery::inline(prompt));
            assert_eq!(got.last().map(String::as_str), Some(prompt));
            assert_eq!(
                got.iter().filter(|a| *a == "--").count(),
                1 + usize::from(prompt == "--")
            );
            assert_eq!(got[got.len() - 2], "--");
        }
    }

    #[test]
    fn never_resume_continue_or_fork_in_any_shape() {
        let forbidden = [
            "--resume",
            "--continue",
            "--fork",
            "--session-dir",
            "--yolo",
            "--auto-approve",
            "--profile",
            "-c",
            "-r",
        ];
        for policy in [
            Policy::ReadOnly,
            Policy::WorkspaceWrite,
            Policy::DangerFullAccess,
            Policy::Auto,
        ] {
            for plan in [
                None,
                Some(Plan::default()),
                Some(Plan {
                    into: Some("m".into()),
                }),
            ] {
                for delivery in [Delivery::inline("x"), attached()] {
                    let job = Job {
                        policy,
                        plan: plan.clone().filter(|_| policy.grants_write()),
                        model: model("a/b"),
                        session: "fresh:x".into(),
                        writable: vec!["/w".into()],
                        deadline_ms: Some(5_000),
                        ..Job::default()
                    };
                    let got = argv(build, &job, &delivery);
                    for word in &got[..got.len() - 1] {
                        let flag = word.split('=').next().unwrap_or_default();
                        assert!(!forbidden.contains(&flag), "{word} in {got:?}");
                    }
                    assert_eq!(got.iter().filter(|a| *a == "--no-session").count(), 1);
                    let plan_flags = got.iter().filter(|a| a.starts_with("--plan-yolo")).count();
                    assert_eq!(plan_flags > 0, job.plan.is_some());
                }
            }
        }
    }
}
