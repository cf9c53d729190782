//! opencode's argv:
//!
//! ```text
//! opencode run --format json [--auto] [--agent plan] [--model <provider/model>] \
//!     [--variant <E>] [--session <ses_id> | --continue] -- <prompt>
//! ```
//!
//! opencode's permissions come from its configuration (files, `OPENCODE_PERMISSION`), which an
//! argv cannot carry; on the command line there is the agent and `--auto`. Headless, `opencode
//! run` answers every permission it would ask for itself: `--auto` approves it, and without
//! `--auto` it rejects it and the run stops. So no run can wait on a prompt, whatever the
//! policy. The policies map to what the argv can say:
//!
//! - a seat: `--auto`, and the kernel (moot-sandbox) enforces the policy; declared widened;
//! - read-only: the `plan` agent, whose edit tools are denied. Its shell still runs anything, so
//!   outside a seat this is declared widened;
//! - workspace-write: the default `build` agent, which edits inside the project and asks (so is
//!   refused) for paths outside it; its shell is not confined either: widened;
//! - danger-full-access: `--auto`, applied;
//! - auto: opencode's defaults, widened.
//!
//! opencode joins its message words with spaces and wraps a word that holds a space in double
//! quotes (escaping its own quotes), so the model sees such a prompt quoted; the text inside is
//! intact. A prompt that its argument parser reads as a number (`42`, `1e3`, `0x1F`) makes
//! opencode 1.18.33 crash, so it is refused.

use std::path::Path;

use crate::model::{Argv, Built, Declared, Delivery, Host, Job, Policy, Refusal};
use crate::session::{is_fresh, SessionUse, LAST};

/// Builds one opencode delivery.
pub fn build(job: &Job, host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    let session = session(&job.session)?;
    if reads_as_number(&delivery.token) {
        return Err(Refusal::new(
            "prompt",
            "opencode reads a prompt that is a single number as a number and crashes; add a word",
        ));
    }
    if let Some(model) = &job.model {
        if !model.value.contains('/') {
            return Err(Refusal::new(
                model.source.clone(),
                "opencode takes a model as provider/model",
            )
            .value(&model.value));
        }
    }
    let approves = job.seat || job.policy == Policy::DangerFullAccess;
    if delivery.staged.is_some() && !approves {
        return Err(Refusal::new(
            "prompt",
            "opencode can read a staged prompt (over 100 KiB) only where its permission prompts \
             are approved: outside the project it asks, and headless it rejects; use --seat or \
             --policy danger-full-access",
        ));
    }
    let mut argv = Argv::new(&["opencode", "run", "--format", "json"]);
    if approves {
        argv.push(&["--auto"]);
    }
    if job.policy == Policy::ReadOnly {
        argv.push(&["--agent", "plan"]);
    }
    argv.opt("--model", job.model.as_ref().map(|m| m.value.as_str()))
        .opt("--variant", job.effort.as_deref());
    match &session {
        SessionUse::Start => {}
        SessionUse::Last => {
            argv.push(&["--continue"]);
        }
        SessionUse::Resume(id) => {
            argv.push(&["--session", id]);
        }
    }
    argv.push(&["--", &delivery.token]);
    let declared = if job.policy == Policy::DangerFullAccess && !job.seat {
        Declared::Applied
    } else {
        Declared::Widened
    };
    let mut built = Built::new(argv.into_vec(), declared);
    if !approves {
        built.warnings = unreachable_grants(job, host);
    }
    Ok(built)
}

/// Grants opencode cannot take: it has no flag for a directory outside its project, and asks
/// (so, headless, refuses) for any path there. Said, never silently dropped.
fn unreachable_grants(job: &Job, host: &Host) -> Vec<String> {
    let project = host.worktree.as_ref().map(|w| w.root.as_path());
    job.writable
        .iter()
        .chain(&job.readable)
        .filter(|dir| {
            let dir = Path::new(dir.as_str());
            !dir.starts_with(&host.cwd) && project.is_none_or(|root| !dir.starts_with(root))
        })
        .map(|dir| {
            format!(
                "--add-dir ({dir}): opencode has no flag to grant a directory outside its \
                 project and rejects access there headless; use --seat, or --policy \
                 danger-full-access"
            )
        })
        .collect()
}

/// True when opencode's argument parser (yargs) turns the word into a number: hexadecimal (any
/// case), or a decimal without a leading zero before a digit, optionally signed with `-` and
/// with a lower-case exponent. (It leaves an integer beyond 2^53 a string; refusing one too is
/// harmless.)
fn reads_as_number(word: &str) -> bool {
    if let Some(hex) = word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let bytes = word.as_bytes();
    if bytes.len() > 1 && bytes[0] == b'0' && bytes[1] != b'.' {
        return false;
    }
    let unsigned = word.strip_prefix('-').unwrap_or(word);
    let (mantissa, exponent) = match unsigned.find('e') {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => digits(fraction),
        Some((whole, fraction)) => digits(whole) && (fraction.is_empty() || digits(fraction)),
        None => digits(mantissa),
    };
    let exponent_ok = exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)));
    mantissa_ok && exponent_ok
}

/// An opencode session id (`ses_` and letters or digits), `last`; empty or `fresh:` starts a
/// new session.
fn session(reference: &str) -> Result<SessionUse, Refusal> {
    if reference.is_empty() || is_fresh(reference) {
        return Ok(SessionUse::Start);
    }
    if reference == LAST {
        return Ok(SessionUse::Last);
    }
    let id = reference
        .strip_prefix("ses_")
        .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric()));
    if id {
        return Ok(SessionUse::Resume(reference.to_string()));
    }
    Err(Refusal::new(
        "--session",
        "opencode takes a session id (ses_ and letters or digits), last, fresh:<suffix> or \
         nothing",
    )
    .value(reference))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::testing::{argv, host, model, refusal};
    use crate::model::Staged;
    use crate::worktree::{Kind, Worktree};

    const ID: &str = "ses_dcd60d2cdffe8tVvX6e2b01G2G";

    fn run(job: &Job) -> Vec<String> {
        argv(build, job, &Delivery::inline("review this"))
    }

    #[test]
    fn start() {
        assert_eq!(
            run(&Job::default()),
            ["opencode", "run", "--format", "json", "--", "review this"]
        );
        let job = Job {
            model: model("anthropic/claude-sonnet-4-5"),
            effort: Some("high".into()),
            ..Job::default()
        };
        assert_eq!(
            run(&job),
            [
                "opencode",
                "run",
                "--format",
                "json",
                "--model",
                "anthropic/claude-sonnet-4-5",
                "--variant",
                "high",
                "--",
                "review this"
            ]
        );
    }

    #[test]
    fn resume_by_id_or_last() {
        for (reference, tail) in [(ID, &["--session", ID][..]), ("last", &["--continue"][..])] {
            let job = Job {
                session: reference.into(),
                ..Job::default()
            };
            let expected: Vec<&str> = ["opencode", "run", "--format", "json"]
                .iter()
                .chain(tail)
                .chain(&["--", "review this"])
                .copied()
                .collect();
            assert_eq!(run(&job), expected);
        }
        let fresh = Job {
            session: "fresh:job:1".into(),
            ..Job::default()
        };
        assert_eq!(run(&fresh), run(&Job::default()));
        for reference in [
            "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc",
            "ses_",
            "ses_a-b",
            "-s",
        ] {
            let job = Job {
                session: reference.into(),
                ..Job::default()
            };
            assert_eq!(
                refusal(build, &job),
                format!(
                    "--session ({reference}): opencode takes a session id (ses_ and letters or \
                     digits), last, fresh:<suffix> or nothing"
                )
            );
        }
    }

    #[test]
    fn policies_map_to_the_agent_and_auto_approval() {
        for (policy, seat, flags, declared) in [
            (Policy::Auto, false, &[][..], Declared::Widened),
            (
                Policy::ReadOnly,
                false,
                &["--agent", "plan"][..],
                Declared::Widened,
            ),
            (Policy::WorkspaceWrite, false, &[][..], Declared::Widened),
            (
                Policy::DangerFullAccess,
                false,
                &["--auto"][..],
                Declared::Applied,
            ),
            (Policy::Auto, true, &["--auto"][..], Declared::Widened),
            (
                Policy::ReadOnly,
                true,
                &["--auto", "--agent", "plan"][..],
                Declared::Widened,
            ),
            (
                Policy::WorkspaceWrite,
                true,
                &["--auto"][..],
                Declared::Widened,
            ),
            (
                Policy::DangerFullAccess,
                true,
                &["--auto"][..],
                Declared::Widened,
            ),
        ] {
            let job = Job {
                policy,
                seat,
                ..Job::default()
            };
            let built = build(&job, &host(), &Delivery::inline("x y")).unwrap();
            let expected: Vec<&str> = ["opencode", "run", "--format", "json"]
                .iter()
                .chain(flags)
                .chain(&["--", "x y"])
                .copied()
                .collect();
            assert_eq!(built.argv, expected, "{policy:?} seat={seat}");
            assert_eq!(built.declared, declared, "{policy:?} seat={seat}");
        }
    }

    #[test]
    fn grants_outside_the_project_are_said_unreachable_outside_a_seat() {
        let h = Host {
            cwd: "/repo/sub".into(),
            worktree: Some(Worktree {
                root: "/repo".into(),
                kind: Kind::Primary,
            }),
            ..host()
        };
        let job = Job {
            policy: Policy::WorkspaceWrite,
            writable: vec!["/repo".into(), "/out".into()],
            readable: vec!["/repo/sub/docs".into()],
            ..Job::default()
        };
        let built = build(&job, &h, &Delivery::inline("x y")).unwrap();
        assert_eq!(
            built.warnings,
            [
                "--add-dir (/out): opencode has no flag to grant a directory outside its project \
              and rejects access there headless; use --seat, or --policy danger-full-access"
            ]
        );
        let seat = Job { seat: true, ..job };
        assert!(build(&seat, &h, &Delivery::inline("x y"))
            .unwrap()
            .warnings
            .is_empty());
    }

    #[test]
    fn a_staged_prompt_needs_approved_permissions() {
        let staged = Delivery::instructed(Staged {
            dir: "/tmp/moot-stage-x".into(),
            file: "/tmp/moot-stage-x/prompt.md".into(),
        });
        let refused = build(&Job::default(), &host(), &staged).unwrap_err();
        assert!(refused
            .to_string()
            .starts_with("prompt: opencode can read a staged prompt"));
        let seat = Job {
            seat: true,
            ..Job::default()
        };
        let built = build(&seat, &host(), &staged).unwrap();
        assert_eq!(built.argv.last(), Some(&staged.token));
        assert!(built.argv.contains(&"--auto".to_string()));
    }

    #[test]
    fn models_name_their_provider() {
        let job = Job {
            model: model("fake-model"),
            ..Job::default()
        };
        assert_eq!(
            refusal(build, &job),
            "--model (fake-model): opencode takes a model as provider/model"
        );
    }

    /// Words opencode 1.18.33 crashed on and words it took, run on the real binary, and the
    /// exponent's case as its parser reads it.
    #[test]
    fn numbers_are_refused_as_prompts() {
        for number in [
            "42", "-5", "1.5", "1e3", ".5", "-0", "0x1F", "0X1f", "1.", "1e-3",
        ] {
            assert!(reads_as_number(number), "{number}");
        }
        for word in [
            "007", "5 ", "+5", "Infinity", "NaN", "0x", "1e", "-", ".", "hello", "1a", "1E3",
        ] {
            assert!(!reads_as_number(word), "{word}");
        }
        let error = build(&Job::default(), &host(), &Delivery::inline("42")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "prompt: opencode reads a prompt that is a single number as a number and crashes; \
             add a word"
        );
    }
}
