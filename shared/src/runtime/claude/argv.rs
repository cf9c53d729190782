//! Claude Code's argv:
//!
//! ```text
//! claude [--permission-mode <mode>] [--add-dir <writable>]… [--add-dir <readable>]… \
//!     [--model <M>] [--effort <E>] [--system-prompt-file <F>] [--settings <F>] \
//!     [--mcp-config <F>] --strict-mcp-config --setting-sources user \
//!     (--session-id <new uuid> | --resume <uuid> | --continue) \
//!     -p --output-format json | stream-json --verbose --include-partial-messages -- <prompt>
//! ```
//!
//! The repository under review configures nothing: `--setting-sources user` leaves out its
//! `.claude/settings.json` and `settings.local.json` (hooks, `env` with a provider URL,
//! `apiKeyHelper`, skills, commands, agents, CLAUDE.md), and `--strict-mcp-config` its
//! `.mcp.json` servers (checked against 2.1.332: man/moot.7, THE REPOSITORY UNDER REVIEW).
//!
//! A start names its session up front with a fresh `--session-id`; the id is reported so the
//! caller stores it only once the run succeeded (a failed first turn leaves no session to
//! resume).

use crate::model::{Argv, Built, Declared, Delivery, Host, Job, Policy, Refusal};
use crate::session::SessionUse;

/// Claude Code's built-in tools, as its `--tools` names them (2.1.332).
pub const TOOLS: &[&str] = &[
    "Agent",
    "AskUserQuestion",
    "Bash",
    "Edit",
    "EnterPlanMode",
    "ExitPlanMode",
    "Glob",
    "Grep",
    "JavaScript",
    "NotebookEdit",
    "REPL",
    "Read",
    "SendUserMessage",
    "Skill",
    "Task",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskStop",
    "TaskUpdate",
    "TodoWrite",
    "ToolSearch",
    "WebFetch",
    "WebSearch",
    "Write",
];

/// Builds one claude delivery.
pub fn build(job: &Job, host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    let session = session(&job.session)?;
    // A managed session's permissions are decided by its bundle's gate hook, and --restricted
    // refuses bypassPermissions: it keeps the policy's permission mode even in a seat.
    let skip_permissions = job.seat && !job.managed;
    let (mode, declared) = if skip_permissions {
        (None, Declared::Widened)
    } else {
        permission_mode(job.policy, host.euid)?
    };
    let mut argv = Argv::new(&["claude"]);
    if skip_permissions {
        // In a seat the kernel enforces the policy. As root claude skips its permission
        // prompts only when told it runs in a sandbox (IS_SANDBOX=1, which moot-sandbox
        // --profile claude sets); without the profile it refuses, failing closed.
        argv.push(&["--dangerously-skip-permissions"]);
    }
    argv.opt("--permission-mode", mode)
        .each("--add-dir", job.writable.iter().chain(&job.readable))
        .opt(
            "--add-dir",
            delivery.staged.as_ref().map(|s| s.dir.as_str()),
        )
        .opt("--model", job.model.as_ref().map(|m| m.value.as_str()))
        .opt("--effort", job.effort.as_deref())
        .opt("--system-prompt-file", job.system_prompt.as_deref())
        .opt("--settings", job.settings.as_deref())
        .opt("--mcp-config", job.mcp_config.as_deref());
    // Only the bundle's MCP servers, if any, and only the operator's settings: nothing the
    // repository carries.
    argv.push(&["--strict-mcp-config", "--setting-sources", "user"]);
    if job.managed {
        argv.push(&["--disable-slash-commands", "--restricted"]);
    }
    let tools = job.tools.as_ref().map(|tools| tools.join(","));
    argv.opt("--tools", tools.as_deref());
    let minted = match &session {
        SessionUse::Start => {
            argv.push(&["--session-id", &host.fresh_uuid]);
            Some(host.fresh_uuid.clone())
        }
        SessionUse::Resume(id) => {
            argv.push(&["--resume", id]);
            None
        }
        SessionUse::Last => {
            argv.push(&["--continue"]);
            None
        }
    };
    if job.stream {
        argv.push(&[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
        ]);
    } else {
        argv.push(&["-p", "--output-format", "json"]);
    }
    argv.push(&["--", &delivery.token]);
    let mut built = Built::new(argv.into_vec(), declared);
    built.session_id = minted;
    Ok(built)
}

fn permission_mode(policy: Policy, euid: u32) -> Result<(Option<&'static str>, Declared), Refusal> {
    match policy {
        Policy::ReadOnly => Ok((Some("plan"), Declared::Applied)),
        Policy::WorkspaceWrite => Ok((Some("acceptEdits"), Declared::Applied)),
        Policy::DangerFullAccess if euid == 0 => Err(Refusal::new(
            "--policy",
            "claude refuses bypassPermissions when run as root; run the job as an unprivileged \
             user",
        )
        .value(policy.name())),
        Policy::DangerFullAccess => Ok((Some("bypassPermissions"), Declared::Applied)),
        Policy::Auto => Ok((None, Declared::Widened)),
    }
}

fn session(reference: &str) -> Result<SessionUse, Refusal> {
    SessionUse::uuid_or_last(reference).ok_or_else(|| {
        Refusal::new(
            "--session",
            "claude takes a session UUID, last, fresh:<suffix> or nothing",
        )
        .value(reference)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::testing::{argv, host, model, refusal, session};

    const NEW: &str = "0f8c1c3e-9a4b-4c1d-8e2f-123456789abc";
    const OLD: &str = "11111111-2222-4333-8444-555555555555";

    #[test]
    fn a_start_mints_its_session_id() {
        let built = build(&Job::default(), &host(), &Delivery::inline("initialize")).unwrap();
        assert_eq!(
            built.argv,
            [
                "claude",
                "--strict-mcp-config",
                "--setting-sources",
                "user",
                "--session-id",
                NEW,
                "-p",
                "--output-format",
                "json",
                "--",
                "initialize"
            ]
        );
        assert_eq!(built.session_id.as_deref(), Some(NEW));
        assert_eq!(built.declared, Declared::Widened);
    }

    #[test]
    fn resume_or_continue() {
        let resume = Job {
            session: OLD.into(),
            model: model("sonnet"),
            ..Job::default()
        };
        let built = build(&resume, &host(), &Delivery::inline("again")).unwrap();
        assert_eq!(
            built.argv,
            [
                "claude",
                "--model",
                "sonnet",
                "--strict-mcp-config",
                "--setting-sources",
                "user",
                "--resume",
                OLD,
                "-p",
                "--output-format",
                "json",
                "--",
                "again"
            ]
        );
        assert_eq!(built.session_id, None);
        let last = session("last");
        assert_eq!(
            argv(build, &last, &Delivery::inline("again")),
            [
                "claude",
                "--strict-mcp-config",
                "--setting-sources",
                "user",
                "--continue",
                "-p",
                "--output-format",
                "json",
                "--",
                "again"
            ]
        );
        let bad = session("thread-name");
        assert_eq!(
            refusal(build, &bad),
            "--session (thread-name): claude takes a session UUID, last, fresh:<suffix> or nothing"
        );
    }

    #[test]
    fn everything_in_order_with_the_stream() {
        let job = Job {
            policy: Policy::WorkspaceWrite,
            writable: vec!["/w".into()],
            readable: vec!["/r".into()],
            model: model("opus"),
            effort: Some("xhigh".into()),
            system_prompt: Some("/bundle/prompt.md".into()),
            session: OLD.into(),
            stream: true,
            ..Job::default()
        };
        assert_eq!(
            argv(build, &job, &Delivery::inline("-- @x")),
            [
                "claude",
                "--permission-mode",
                "acceptEdits",
                "--add-dir",
                "/w",
                "--add-dir",
                "/r",
                "--model",
                "opus",
                "--effort",
                "xhigh",
                "--system-prompt-file",
                "/bundle/prompt.md",
                "--strict-mcp-config",
                "--setting-sources",
                "user",
                "--resume",
                OLD,
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
                "--",
                "-- @x"
            ]
        );
    }

    #[test]
    fn permission_modes() {
        for (policy, mode) in [
            (Policy::ReadOnly, "plan"),
            (Policy::WorkspaceWrite, "acceptEdits"),
            (Policy::DangerFullAccess, "bypassPermissions"),
        ] {
            let job = Job {
                policy,
                session: "last".into(),
                ..Job::default()
            };
            let built = build(&job, &host(), &Delivery::inline("x")).unwrap();
            assert_eq!(built.argv[..3], ["claude", "--permission-mode", mode]);
            assert_eq!(
                built.argv[3..7],
                [
                    "--strict-mcp-config",
                    "--setting-sources",
                    "user",
                    "--continue"
                ]
            );
            assert_eq!(built.declared, Declared::Applied);
        }
        let root = Host { euid: 0, ..host() };
        let job = Job {
            policy: Policy::DangerFullAccess,
            ..Job::default()
        };
        assert_eq!(
            build(&job, &root, &Delivery::inline("x"))
                .unwrap_err()
                .to_string(),
            "--policy (danger-full-access): claude refuses bypassPermissions when run as root; \
             run the job as an unprivileged user"
        );
    }
}
