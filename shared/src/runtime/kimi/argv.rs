//! Kimi's argv:
//!
//! ```text
//! kimi [--add-dir <writable>]… [--add-dir <readable>]… [--model <M>] [--add-dir <stage dir>] \
//!      [-S <session>] [--print] -p <prompt> --output-format stream-json
//! ```
//!
//! `--print` only for the legacy kimi-cli. Print mode approves tools by itself, so no policy can
//! be applied (danger-full-access is what it runs). A prompt of 100 KiB or more is staged: the
//! directory is granted with `--add-dir` so kimi's workspace-scoped read tool can open it, and
//! `-p` carries an instruction to read that file as the whole task.

use crate::model::{Argv, Built, Declared, Delivery, Host, Job, Policy, Refusal};
use crate::session::{is_fresh, is_uuid, SessionUse};

/// Kimi Code.
pub fn build(job: &Job, host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    build_flavour(Flavour::Code, job, host, delivery)
}

/// The legacy kimi-cli.
pub fn build_legacy(job: &Job, host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    build_flavour(Flavour::Legacy, job, host, delivery)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Code,
    Legacy,
}

fn build_flavour(
    flavour: Flavour,
    job: &Job,
    _host: &Host,
    delivery: &Delivery,
) -> Result<Built, Refusal> {
    let session = session(flavour, &job.session)?;
    let mut argv = Argv::new(&["kimi"]);
    argv.each("--add-dir", job.writable.iter().chain(&job.readable))
        .opt("--model", job.model.as_ref().map(|m| m.value.as_str()))
        .opt(
            "--add-dir",
            delivery.staged.as_ref().map(|s| s.dir.as_str()),
        );
    if let SessionUse::Resume(id) = &session {
        argv.push(&["-S", id]);
    }
    if flavour == Flavour::Legacy {
        argv.push(&["--print"]);
    }
    argv.push(&["-p", &delivery.token, "--output-format", "stream-json"]);
    let declared = match job.policy {
        Policy::DangerFullAccess => Declared::Applied,
        Policy::ReadOnly | Policy::WorkspaceWrite | Policy::Auto => Declared::Widened,
    };
    Ok(Built::new(argv.into_vec(), declared))
}

/// Kimi Code names sessions `session_<uuid>`; the legacy CLI uses a bare UUID.
fn session(flavour: Flavour, reference: &str) -> Result<SessionUse, Refusal> {
    if reference.is_empty() || is_fresh(reference) {
        return Ok(SessionUse::Start);
    }
    let (valid, grammar) = match flavour {
        Flavour::Code => (
            reference.strip_prefix("session_").is_some_and(is_uuid),
            "kimi takes session_<uuid>, fresh:<suffix> or nothing",
        ),
        Flavour::Legacy => (
            is_uuid(reference),
            "kimi-cli takes a session UUID, fresh:<suffix> or nothing",
        ),
    };
    if valid {
        Ok(SessionUse::Resume(reference.to_string()))
    } else {
        Err(Refusal::new("--session", grammar).value(reference))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::testing::{argv, model, refusal, session};
    use crate::model::Staged;

    const ID: &str = "session_0f8c1c3e-9a4b-4c1d-8e2f-123456789abc";

    #[test]
    fn start() {
        assert_eq!(
            argv(build, &Job::default(), &Delivery::inline("review")),
            ["kimi", "-p", "review", "--output-format", "stream-json"]
        );
        let job = Job {
            model: model("opus"),
            ..Job::default()
        };
        assert_eq!(
            argv(build, &job, &Delivery::inline("review")),
            [
                "kimi",
                "--model",
                "opus",
                "-p",
                "review",
                "--output-format",
                "stream-json"
            ]
        );
    }

    #[test]
    fn grants_writable_then_readable_then_the_stage_dir() {
        let job = Job {
            writable: vec!["/w".into()],
            readable: vec!["/r1".into(), "/r2".into()],
            model: model("k2"),
            session: ID.into(),
            ..Job::default()
        };
        let delivery = Delivery {
            token: "read the file".into(),
            staged: Some(Staged {
                dir: "/tmp/s".into(),
                file: "/tmp/s/prompt.md".into(),
            }),
        };
        assert_eq!(
            argv(build, &job, &delivery),
            [
                "kimi",
                "--add-dir",
                "/w",
                "--add-dir",
                "/r1",
                "--add-dir",
                "/r2",
                "--model",
                "k2",
                "--add-dir",
                "/tmp/s",
                "-S",
                ID,
                "-p",
                "read the file",
                "--output-format",
                "stream-json"
            ]
        );
    }

    #[test]
    fn resume_only_with_a_valid_session() {
        for fresh in ["", "fresh:job:1"] {
            let job = session(fresh);
            assert!(!argv(build, &job, &Delivery::inline("x")).contains(&"-S".to_string()));
        }
        for bad in [
            "last",
            "session_",
            "session_abc",
            "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc",
        ] {
            let job = session(bad);
            assert_eq!(
                refusal(build, &job),
                format!("--session ({bad}): kimi takes session_<uuid>, fresh:<suffix> or nothing")
            );
        }
    }

    #[test]
    fn legacy_prints_and_takes_bare_uuids() {
        let job = session("0f8c1c3e-9a4b-4c1d-8e2f-123456789abc");
        assert_eq!(
            argv(build_legacy, &job, &Delivery::inline("initialize")),
            [
                "kimi",
                "-S",
                "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc",
                "--print",
                "-p",
                "initialize",
                "--output-format",
                "stream-json"
            ]
        );
        let job = session(ID);
        assert_eq!(
            refusal(build_legacy, &job),
            format!("--session ({ID}): kimi-cli takes a session UUID, fresh:<suffix> or nothing")
        );
    }

    #[test]
    fn print_mode_widens_every_policy_but_full_access() {
        for (policy, declared) in [
            (Policy::ReadOnly, Declared::Widened),
            (Policy::WorkspaceWrite, Declared::Widened),
            (Policy::Auto, Declared::Widened),
            (Policy::DangerFullAccess, Declared::Applied),
        ] {
            let job = Job {
                policy,
                ..Job::default()
            };
            let built = build(
                &job,
                &crate::model::job::testing::host(),
                &Delivery::inline("x"),
            )
            .unwrap();
            assert_eq!(built.declared, declared);
            assert_eq!(
                built.argv,
                ["kimi", "-p", "x", "--output-format", "stream-json"]
            );
        }
    }
}
