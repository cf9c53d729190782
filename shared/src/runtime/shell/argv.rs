//! The shell runtime's argv: `sh -c '<command>' gitmoot '<prompt>'`, so the command sees
//! `$0 = gitmoot` and the prompt as `$1`; the health check runs the same command as
//! `gitmoot-health` with a fixed prompt. The command is the session reference.

use crate::model::{Argv, Built, Declared, Delivery, Host, Job, Policy, Refusal};
use crate::session::is_fresh;

/// Builds one shell delivery.
pub fn build(job: &Job, _host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    let command = &job.session;
    if command.is_empty() {
        return Err(Refusal::new(
            "--session",
            "shell runs the command given as --session; give one",
        ));
    }
    if is_fresh(command) {
        return Err(Refusal::new(
            "--session",
            "shell cannot start a fresh session; give the command to run",
        )
        .value(command));
    }
    let name = if job.health {
        "gitmoot-health"
    } else {
        "gitmoot"
    };
    let argv = Argv::new(&["sh", "-c", command, name, &delivery.token]);
    // Nothing constrains an arbitrary command but full access itself.
    let declared = match job.policy {
        Policy::DangerFullAccess => Declared::Applied,
        Policy::ReadOnly | Policy::WorkspaceWrite | Policy::Auto => Declared::Widened,
    };
    Ok(Built::new(argv.into_vec(), declared))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::testing::{argv, refusal, session};

    #[test]
    fn delivery_and_health() {
        let job = session("my-bot --json");
        assert_eq!(
            argv(build, &job, &Delivery::inline("-x 'y'")),
            ["sh", "-c", "my-bot --json", "gitmoot", "-x 'y'"]
        );
        let health = Job {
            health: true,
            ..job
        };
        assert_eq!(
            argv(
                build,
                &health,
                &Delivery::inline("Gitmoot health check. Reply OK only.")
            ),
            [
                "sh",
                "-c",
                "my-bot --json",
                "gitmoot-health",
                "Gitmoot health check. Reply OK only."
            ]
        );
    }

    #[test]
    fn a_command_is_required() {
        assert_eq!(
            refusal(build, &Job::default()),
            "--session: shell runs the command given as --session; give one"
        );
        let fresh = session("fresh:x");
        assert_eq!(
            refusal(build, &fresh),
            "--session (fresh:x): shell cannot start a fresh session; give the command to run"
        );
    }
}
