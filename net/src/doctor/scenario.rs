//! The scenarios moot-doctor runs, what each expects by default, and how an observed envelope
//! is read into a verdict in the same notation (`ok`, `fail:<class>`).

use serde_json::Value;

use moot::envelope::ErrorClass;
use moot::model::{Certify, Meta};

/// One scenario: what the fake model does, and what moot must conclude.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    pub name: &'static str,
    /// The fake model's scenario line (net/src/fake_model/scenario.rs lists them).
    pub fake: &'static str,
    /// The verdict moot must reach on a CLI that reports the scenario the common way.
    pub expect: &'static str,
    /// What is checked beyond the verdict.
    pub check: Check,
    pub about: &'static str,
}

/// What a scenario checks beyond the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// Only the verdict.
    Verdict,
    /// The tool call wrote `created_by_agent.txt` in the workspace.
    WroteFile,
    /// A second run, given the first run's session, carried the first run's prompt.
    Resumes,
    /// The model failed a call (HTTP 429) before the answer: the CLI retried.
    Recovers,
    /// The workspace carried the runtime's `plants` (files it could load code from): the tool
    /// call wrote its file, and no planted code left a marker.
    LoadsNothing,
}

/// The file the fake model's `toolwrite` scenario has the agent create.
pub const WRITTEN_FILE: &str = "created_by_agent.txt";

/// Where the `repoplant` scenario's planted code would leave its markers, in the workspace (the one
/// place the seat lets it write).
pub const PLANT_MARKS: &str = ".repo-marks";

/// A word only the first turn of the resume scenario carries.
pub const RESUME_MARKER: &str = "ZEBRA-41";

/// Every scenario, in the order the doctor runs and prints them. A name the fake model also
/// has means its scenario (checked); the others (`repoplant`, `resume`) are runs built on one,
/// named as the end-to-end suite (scripts/realcli/e2e.sh) names them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "plain",
        fake: "plain",
        expect: "ok",
        check: Check::Verdict,
        about: "a plain answer ending in a valid gitmoot_result",
    },
    Scenario {
        name: "toolwrite",
        fake: "toolwrite",
        expect: "ok",
        check: Check::WroteFile,
        about: "a shell tool call that writes a file in the workspace",
    },
    Scenario {
        name: "fatal",
        fake: "fatal",
        expect: "fail:model_error",
        check: Check::Verdict,
        about: "a provider error no client retries (HTTP 400)",
    },
    Scenario {
        name: "length",
        fake: "length",
        expect: "fail:truncated",
        check: Check::Verdict,
        about: "an answer cut by the output-token limit",
    },
    Scenario {
        name: "drop",
        fake: "drop",
        expect: "fail:truncated",
        check: Check::Verdict,
        about: "a provider stream that stops mid-answer, without its terminator",
    },
    Scenario {
        name: "empty",
        fake: "empty",
        expect: "fail:empty_answer",
        check: Check::Verdict,
        about: "a turn that ends normally with no text",
    },
    Scenario {
        name: "retry",
        fake: "retry",
        expect: "ok",
        check: Check::Recovers,
        about: "one HTTP 429 with retry-after, then the plain answer",
    },
    Scenario {
        name: "repoplant",
        fake: "toolwrite",
        expect: "ok",
        check: Check::LoadsNothing,
        about: "the workspace carries files the CLI could load code from (hooks, extensions, \
                plugins, MCP servers, a provider URL): a tool call works and none of it runs",
    },
    Scenario {
        name: "resume",
        fake: "plain",
        expect: "ok",
        check: Check::Resumes,
        about: "a second run resumes the first run's session",
    },
];

/// The scenario called `name`.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// What `certify`'s CLI must make of `scenario`: its own verdict where it differs, else the
/// default; `n/a` for a resume the runtime never does (its record is not `multi_turn`).
pub fn expected(meta: &Meta, certify: &Certify, scenario: &Scenario) -> &'static str {
    if scenario.check == Check::Resumes && !meta.matrix.multi_turn {
        return NOT_APPLICABLE;
    }
    certify
        .differs
        .iter()
        .find(|(name, _)| *name == scenario.name)
        .map_or(scenario.expect, |(_, verdict)| verdict)
}

/// The expectation of a scenario that does not apply to a runtime.
pub const NOT_APPLICABLE: &str = "n/a";

/// Whether `observed` is one of the verdicts `expected` allows (`fail:a|b` allows either).
pub fn matches(expected: &str, observed: &str) -> bool {
    match (
        expected.strip_prefix("fail:"),
        observed.strip_prefix("fail:"),
    ) {
        (Some(classes), Some(class)) => classes.split('|').any(|c| c == class),
        (None, None) => expected == observed,
        _ => false,
    }
}

/// Whether `verdict` is written in the doctor's notation with known classes.
pub fn well_formed(verdict: &str) -> bool {
    match verdict.strip_prefix("fail:") {
        None => verdict == "ok",
        Some(classes) => classes
            .split('|')
            .all(|c| ErrorClass::ALL.iter().any(|known| known.name() == c)),
    }
}

/// What a run's envelope says, in the doctor's notation, with what a successful run must also
/// show: a valid gitmoot_result, a session id and, where the runtime reports usage, a usage
/// floor. `exit` is the parser's exit status, which must agree with `run.ok`.
pub fn observe(envelope: &Value, exit: Option<i32>, reports_usage: bool) -> String {
    let run = &envelope["run"];
    let ok = run["ok"].as_bool().unwrap_or(false);
    if !ok {
        let class = run["error"]["class"].as_str().unwrap_or("none");
        if exit != Some(1) {
            return format!("fail:{class} (parser exit {})", exit_word(exit));
        }
        if !run["answer"].is_null() {
            return format!("fail:{class} with an answer");
        }
        return format!("fail:{class}");
    }
    let mut missing = Vec::new();
    if exit != Some(0) {
        missing.push(format!("parser exit {}", exit_word(exit)));
    }
    if envelope["gitmoot_result"].is_null() {
        missing.push("no gitmoot_result".to_string());
    }
    if !run["answer"].is_string() {
        missing.push("no answer".to_string());
    }
    if !run["session_id"].is_string() {
        missing.push("no session id".to_string());
    }
    let tokens = |field: &str| run["usage"][field].as_u64().unwrap_or(0);
    if reports_usage && (tokens("input_tokens") == 0 || tokens("output_tokens") == 0) {
        missing.push("no usage".to_string());
    }
    if missing.is_empty() {
        "ok".to_string()
    } else {
        format!("ok but {}", missing.join(", "))
    }
}

/// A parser exit status in words (`1`, `by a signal`).
pub fn exit_word(exit: Option<i32>) -> String {
    exit.map_or_else(|| "by a signal".to_string(), |code| code.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use moot::registry;
    use serde_json::json;

    #[test]
    fn every_runtime_names_known_scenarios_and_verdicts() {
        for meta in registry::all() {
            let Some(certify) = meta.doctor else { continue };
            for (name, verdict) in certify.differs {
                assert!(find(name).is_some(), "{}: no scenario {name}", meta.name);
                assert!(well_formed(verdict), "{}: {name}: {verdict}", meta.name);
            }
        }
        assert!(SCENARIOS.iter().all(|s| well_formed(s.expect)));
    }

    #[test]
    fn a_verdict_matches_only_what_is_allowed() {
        assert!(matches("ok", "ok"));
        assert!(!matches("ok", "ok but no session id"));
        assert!(matches("fail:truncated|model_error", "fail:model_error"));
        assert!(!matches("fail:truncated", "fail:model_error"));
        assert!(!matches("fail:truncated", "ok"));
        assert!(!matches("ok", "fail:truncated"));
        assert!(!matches("fail:truncated", "fail:truncated (parser exit 0)"));
    }

    #[test]
    fn an_envelope_is_read_into_a_verdict() {
        let good = json!({"gitmoot_result": {"decision": "approved"}, "run": {"ok": true,
            "answer": "done", "session_id": "s1", "usage": {"input_tokens": 3, "output_tokens": 4}}});
        assert_eq!(observe(&good, Some(0), true), "ok");
        assert_eq!(
            observe(&good, Some(1), true),
            "ok but parser exit 1",
            "an ok envelope with a failing exit is not ok"
        );
        let bare = json!({"gitmoot_result": null, "run": {"ok": true, "answer": "done",
            "session_id": null, "usage": {"input_tokens": 0, "output_tokens": 0}}});
        assert_eq!(
            observe(&bare, Some(0), true),
            "ok but no gitmoot_result, no session id, no usage"
        );
        assert_eq!(
            observe(&bare, Some(0), false),
            "ok but no gitmoot_result, no session id"
        );
        let failed = json!({"gitmoot_result": null, "run": {"ok": false, "answer": null,
            "error": {"class": "truncated"}}});
        assert_eq!(observe(&failed, Some(1), true), "fail:truncated");
        assert_eq!(
            observe(&failed, Some(0), true),
            "fail:truncated (parser exit 0)"
        );
    }
}
