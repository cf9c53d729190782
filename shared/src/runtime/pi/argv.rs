//! pi's argv:
//!
//! ```text
//! pi -p --mode json [--model <M>] [--thinking <level>] [--session <uuid> | --continue] \
//!     [--system-prompt <file>] --no-skills --no-extensions --no-prompt-templates --no-themes \
//!     --offline [-e <extension>]… [--tools read,grep,find,ls] [@<staged>/prompt.md] <prompt>
//! ```
//!
//! The repository under review loads nothing: not its `.pi/extensions`, prompt templates or
//! themes, and `--offline` keeps pi from installing the `packages` its `.pi/settings.json` lists
//! (with the `npmCommand` it names: a command run at start-up). Explicit `-e` extensions, the
//! managed session's bundle, still load (checked against 0.73.1: man/moot.7, THE REPOSITORY
//! UNDER REVIEW).
//!
//! pi has no `--`; the prompt is the last argument and never starts with '-' or '@' (such
//! prompts are staged and attached, see the prompt rules in `meta.rs`). `--system-prompt` is
//! given a path only when it is a readable regular file: pi uses the path text itself as the
//! system prompt when it cannot read the file. Skills stay off (`--no-skills`): a session's
//! skills arrive in its system prompt.

use crate::model::{Argv, Built, Declared, Delivery, Host, Job, Policy, Refusal};
use crate::session::SessionUse;

/// pi's built-in tools (pi 0.73.1 `--help`). Its `--tools` allowlist covers extension tools
/// as well, so a limit also hides the tools an `--extension` registers.
pub const TOOLS: &[&str] = &["read", "bash", "edit", "write", "grep", "find", "ls"];

/// pi's read-only tool set (its own "read-only mode").
const READ_ONLY_TOOLS: &[&str] = &["read", "grep", "find", "ls"];

/// Builds one pi delivery.
pub fn build(job: &Job, _host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    let session = session(&job.session)?;
    let mut argv = Argv::new(&["pi", "-p", "--mode", "json"]);
    argv.opt("--model", job.model.as_ref().map(|m| m.value.as_str()))
        .opt("--thinking", job.effort.as_deref());
    match &session {
        SessionUse::Start => {}
        SessionUse::Resume(id) => {
            argv.push(&["--session", id]);
        }
        SessionUse::Last => {
            argv.push(&["--continue"]);
        }
    }
    argv.opt("--system-prompt", job.system_prompt.as_deref())
        .push(&[
            "--no-skills",
            "--no-extensions",
            "--no-prompt-templates",
            "--no-themes",
            "--offline",
        ])
        .each("-e", &job.extensions);
    let declared = match job.policy {
        Policy::ReadOnly => Declared::Applied,
        Policy::DangerFullAccess => Declared::Applied,
        Policy::WorkspaceWrite | Policy::Auto => Declared::Widened,
    };
    if let Some(tools) = tool_limit(job) {
        argv.push(&["--tools", &tools.join(",")]);
    }
    if let Some(staged) = &delivery.staged {
        argv.push(&[&format!("@{}", staged.file)]);
    }
    argv.push(&[&delivery.token]);
    Ok(Built::new(argv.into_vec(), declared))
}

/// The tools pi may use: the job's limit, narrowed to the read-only set under read-only.
fn tool_limit(job: &Job) -> Option<Vec<&str>> {
    let read_only = job.policy == Policy::ReadOnly;
    match &job.tools {
        Some(tools) => Some(
            tools
                .iter()
                .map(String::as_str)
                .filter(|tool| !read_only || READ_ONLY_TOOLS.contains(tool))
                .collect(),
        ),
        None => read_only.then(|| READ_ONLY_TOOLS.to_vec()),
    }
}

fn session(reference: &str) -> Result<SessionUse, Refusal> {
    SessionUse::uuid_or_last(reference).ok_or_else(|| {
        Refusal::new(
            "--session",
            "pi takes a session UUID, last, fresh:<suffix> or nothing",
        )
        .value(reference)
    })
}

#[cfg(test)]
mod tests {
    const NO_SKILLS: &str = "--no-skills";
    const NO_EXTENSIONS: &str = "--no-extensions";
    const NO_TEMPLATES: &str = "--no-prompt-templates";
    const NO_THEMES: &str = "--no-themes";
    const OFFLINE: &str = "--offline";
    use super::*;
    use crate::model::job::testing::{argv, attached, host, model, refusal, session};

    #[test]
    fn print_mode_without_skills() {
        assert_eq!(
            argv(build, &Job::default(), &Delivery::inline("review")),
            [
                "pi",
                "-p",
                "--mode",
                "json",
                NO_SKILLS,
                NO_EXTENSIONS,
                NO_TEMPLATES,
                NO_THEMES,
                OFFLINE,
                "review"
            ]
        );
    }

    #[test]
    fn everything_in_order() {
        let job = Job {
            model: model("anthropic/claude-sonnet"),
            effort: Some("xhigh".into()),
            session: "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc".into(),
            system_prompt: Some("/bundle/prompt.md".into()),
            extensions: vec!["/gate.ts".into(), "/unslop.ts".into()],
            policy: Policy::ReadOnly,
            ..Job::default()
        };
        let built = build(&job, &host(), &attached()).unwrap();
        assert_eq!(
            built.argv,
            [
                "pi",
                "-p",
                "--mode",
                "json",
                "--model",
                "anthropic/claude-sonnet",
                "--thinking",
                "xhigh",
                "--session",
                "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc",
                "--system-prompt",
                "/bundle/prompt.md",
                NO_SKILLS,
                NO_EXTENSIONS,
                NO_TEMPLATES,
                NO_THEMES,
                OFFLINE,
                "-e",
                "/gate.ts",
                "-e",
                "/unslop.ts",
                "--tools",
                "read,grep,find,ls",
                "@/tmp/moot-stage-x/prompt.md",
                crate::model::job::ATTACH_POINTER
            ]
        );
        assert_eq!(built.declared, Declared::Applied);
    }

    #[test]
    fn policies_and_sessions() {
        for (policy, declared) in [
            (Policy::WorkspaceWrite, Declared::Widened),
            (Policy::Auto, Declared::Widened),
            (Policy::DangerFullAccess, Declared::Applied),
        ] {
            let job = Job {
                policy,
                session: "last".into(),
                ..Job::default()
            };
            let built = build(&job, &host(), &Delivery::inline("x")).unwrap();
            assert_eq!(
                built.argv,
                [
                    "pi",
                    "-p",
                    "--mode",
                    "json",
                    "--continue",
                    NO_SKILLS,
                    NO_EXTENSIONS,
                    NO_TEMPLATES,
                    NO_THEMES,
                    OFFLINE,
                    "x"
                ]
            );
            assert_eq!(built.declared, declared);
        }
        let bad = session("abc");
        assert_eq!(
            refusal(build, &bad),
            "--session (abc): pi takes a session UUID, last, fresh:<suffix> or nothing"
        );
    }
}
