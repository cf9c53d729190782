//! The mock runtime's argv: `printf %s '<prompt>'`, which prints the prompt byte for byte (no
//! escapes are interpreted in an argument, and a leading '-' is not an option). It runs no tools,
//! so every policy holds.

use crate::model::{Argv, Built, Declared, Delivery, Host, Job, Refusal};
use crate::session::is_fresh;

/// Builds one mock delivery.
pub fn build(job: &Job, _host: &Host, delivery: &Delivery) -> Result<Built, Refusal> {
    if !job.session.is_empty() && !is_fresh(&job.session) {
        return Err(Refusal::new(
            "--session",
            "mock has no sessions; give fresh:<suffix> or nothing",
        )
        .value(&job.session));
    }
    let argv = Argv::new(&["printf", "%s", &delivery.token]);
    Ok(Built::new(argv.into_vec(), Declared::Applied))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::job::testing::{argv, refusal, session};

    #[test]
    fn echoes_the_prompt() {
        assert_eq!(
            argv(build, &Job::default(), &Delivery::inline("-n %d\\n")),
            ["printf", "%s", "-n %d\\n"]
        );
        let last = session("last");
        assert_eq!(
            refusal(build, &last),
            "--session (last): mock has no sessions; give fresh:<suffix> or nothing"
        );
    }
}
