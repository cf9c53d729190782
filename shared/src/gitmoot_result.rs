//! Finding and validating the `gitmoot_result` object in a final answer.
//!
//! Compatible with gitmoot's own extraction, so its users get the same verdict: the whole trimmed
//! answer is the first candidate when it is an object mentioning the key; then every balanced
//! `{...}` (string- and escape-aware) that contains `"gitmoot_result"`, left to right. The first
//! candidate that validates wins; when none does, the first validation error is reported. As in
//! gitmoot (Go's encoding/json), a lone surrogate escape in a candidate reads as U+FFFD. Code
//! fences are not special: a fenced object is found like any other.

// The contract is checked by walking `serde_json::Value` rather than by a derived struct with
// `deny_unknown_fields`: serde would word its errors itself ("unknown field `x`, expected one of
// ..."), stop at the first bad field in document order rather than in the contract's order, and
// rebuild `findings` and the optional keys from typed fields instead of passing the model's JSON
// through; the messages are part of the output (`invalid_result`) and must not change.

use serde_json::{Map, Value};

use crate::surrogate;

const KEY: &str = "gitmoot_result";
const QUOTED_KEY: &str = "\"gitmoot_result\"";

/// The decisions a result may carry.
pub const DECISIONS: &[&str] = &[
    "approved",
    "changes_requested",
    "blocked",
    "implemented",
    "failed",
    "skipped",
];
const STRING_ARRAYS: &[&str] = &["changes_made", "tests_run", "needs"];
/// Every key the contract knows; any other is an error, as in gitmoot.
const RESULT_KEYS: &[&str] = &[
    "decision",
    "summary",
    "findings",
    "changes_made",
    "tests_run",
    "needs",
    "delegations",
    "artifact_body",
    "learnings",
    "human_questions",
];
const ACTIONS: &[&str] = &["ask", "review", "implement"];
const EPHEMERAL_RUNTIMES: &[&str] = &["codex", "claude", "kimi"];
const FAILURE_POLICIES: &[&str] = &["block_parent", "continue", "escalate", "escalate_human"];
const SYNTHESIS_RULES: &[&str] = &["summary", "vote", "quorum", "verify"];
const LEARNING_SCOPES: &[&str] = &["repo", "general"];

/// Upper bound on bytes scanned while matching braces, as a multiple of the answer's length: a
/// hostile answer of nested braces would otherwise cost quadratic time.
const SCAN_BUDGET_FACTOR: usize = 64;

/// Why no valid result was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultError {
    /// No candidate object carries the key.
    Missing,
    /// A candidate carries the key but fails validation; the first such error.
    Invalid(String),
}

/// Extracts and validates the result, returning the normalised `gitmoot_result` value.
pub fn extract(answer: &str) -> Result<Value, ResultError> {
    let mut first_error = None;
    for candidate in candidates(answer) {
        // The model wrote this JSON itself, and may have cut an emoji in its escapes: read a
        // lone half as gitmoot (Go's encoding/json) and the CLIs' own readers do, as U+FFFD.
        let json = surrogate::replace_lone(candidate.as_bytes());
        let Ok(Value::Object(mut object)) = serde_json::from_slice::<Value>(&json) else {
            continue;
        };
        let Some(result) = object.remove(KEY) else {
            continue;
        };
        match validate(result) {
            Ok(valid) => return Ok(valid),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.map_or(ResultError::Missing, ResultError::Invalid))
}

/// Candidate texts in gitmoot's order; lazily, so a valid early candidate ends the scan.
fn candidates(answer: &str) -> impl Iterator<Item = &str> {
    let trimmed = answer.trim();
    let whole = (trimmed.starts_with('{') && trimmed.contains(QUOTED_KEY)).then_some(trimmed);
    let bytes = answer.as_bytes();
    let mut budget = bytes.len().saturating_mul(SCAN_BUDGET_FACTOR);
    let has_key = answer.contains(QUOTED_KEY);
    let mut next = 0;
    let balanced = std::iter::from_fn(move || {
        if !has_key {
            return None;
        }
        while let Some(offset) = memchr::memchr(b'{', &bytes[next..]) {
            let start = next + offset;
            next = start + 1;
            match balanced_end(&bytes[start..], &mut budget) {
                Scan::Closed(end) => {
                    let candidate = &answer[start..start + end];
                    if candidate.contains(QUOTED_KEY) {
                        return Some(candidate);
                    }
                }
                Scan::Open => {}
                Scan::OutOfBudget => return None,
            }
        }
        None
    });
    whole.into_iter().chain(balanced)
}

enum Scan {
    /// The object closes after this many bytes.
    Closed(usize),
    /// The text ends before the object closes.
    Open,
    /// The scan budget ran out: stop looking altogether.
    OutOfBudget,
}

/// The shortest balanced object starting at `text[0] == b'{'`.
fn balanced_end(text: &[u8], budget: &mut usize) -> Scan {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in text.iter().enumerate() {
        let Some(left) = budget.checked_sub(1) else {
            return Scan::OutOfBudget;
        };
        *budget = left;
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Scan::Closed(i + 1);
                }
            }
            _ => {}
        }
    }
    Scan::Open
}

/// Validates one `gitmoot_result` value and returns it normalised: missing arrays become `[]`,
/// keys in the contract's order, optional keys only when present.
pub fn validate(result: Value) -> Result<Value, String> {
    let Value::Object(mut fields) = result else {
        return Err(format!("{KEY} must be an object"));
    };
    let mut out = Map::new();

    if let Some(unknown) = fields
        .keys()
        .find(|key| !RESULT_KEYS.contains(&key.as_str()))
    {
        return Err(format!("unsupported {KEY} field {unknown:?}"));
    }
    let decision = take_string(&mut fields, "decision")?.ok_or("decision is required")?;
    if !DECISIONS.contains(&decision.as_str()) {
        return Err(format!(
            "decision {decision:?} is not one of {}",
            DECISIONS.join(", ")
        ));
    }
    let summary = take_string(&mut fields, "summary")?.unwrap_or_default();
    if summary.trim().is_empty() {
        return Err("summary must be a non-blank string".into());
    }
    let findings = take_array(&mut fields, "findings")?;
    let string_arrays = STRING_ARRAYS
        .iter()
        .map(|&key| take_string_array(&mut fields, key).map(|v| (key, v)))
        .collect::<Result<Vec<_>, _>>()?;
    let delegations = take_array(&mut fields, "delegations")?;
    let artifact_body = take_string(&mut fields, "artifact_body")?;
    let learnings = fields.remove("learnings");
    let human_questions = fields.remove("human_questions");

    if decision == "skipped" && !delegations.is_empty() {
        return Err("a skipped result must not carry delegations".into());
    }
    validate_delegations(&delegations, artifact_body.is_some())?;
    if let Some(learnings) = &learnings {
        validate_learnings(learnings)?;
    }
    if let Some(questions) = &human_questions {
        validate_human_questions(questions)?;
    }

    out.insert("decision".into(), Value::String(decision));
    out.insert("summary".into(), Value::String(summary));
    out.insert("findings".into(), Value::Array(findings));
    for (key, values) in string_arrays {
        out.insert(key.into(), Value::Array(values));
    }
    out.insert("delegations".into(), Value::Array(delegations));
    if let Some(body) = artifact_body {
        out.insert("artifact_body".into(), Value::String(body));
    }
    if let Some(learnings) = learnings {
        out.insert("learnings".into(), learnings);
    }
    if let Some(questions) = human_questions {
        out.insert("human_questions".into(), questions);
    }
    Ok(Value::Object(out))
}

fn take_string(fields: &mut Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match fields.remove(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(format!("{key} must be a string, not {}", kind(&other))),
    }
}

/// An array field; absent or null is `[]`.
fn take_array(fields: &mut Map<String, Value>, key: &str) -> Result<Vec<Value>, String> {
    match fields.remove(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(format!("{key} must be an array, not {}", kind(&other))),
    }
}

fn take_string_array(fields: &mut Map<String, Value>, key: &str) -> Result<Vec<Value>, String> {
    let items = take_array(fields, key)?;
    if let Some((i, bad)) = items.iter().enumerate().find(|(_, v)| !v.is_string()) {
        return Err(format!("{key}[{i}] must be a string, not {}", kind(bad)));
    }
    Ok(items)
}

fn validate_delegations(delegations: &[Value], has_artifact_body: bool) -> Result<(), String> {
    let mut ids: Vec<&str> = Vec::new();
    let mut wants_artifacts = false;
    for (i, delegation) in delegations.iter().enumerate() {
        let at = format!("delegations[{i}]");
        let Value::Object(d) = delegation else {
            return Err(format!("{at} must be an object"));
        };
        for key in d.keys() {
            if !DELEGATION_KEYS.contains(&key.as_str()) {
                return Err(format!("{at}: unsupported field {key:?}"));
            }
        }
        let id = required_text(d, "id", &at)?;
        if ids.contains(&id) {
            return Err(format!("{at}: duplicate id {id:?}"));
        }
        ids.push(id);
        match (d.get("agent"), d.get("ephemeral")) {
            (Some(_), Some(_)) => return Err(format!("{at}: give agent or ephemeral, not both")),
            (None, None) => return Err(format!("{at}: needs an agent or an ephemeral runtime")),
            (Some(_), None) => {
                required_text(d, "agent", &at)?;
            }
            (None, Some(ephemeral)) => validate_ephemeral(ephemeral, &at)?,
        }
        one_of(d, "action", ACTIONS, true, &at)?;
        required_text(d, "prompt", &at)?;
        one_of(d, "failure_policy", FAILURE_POLICIES, false, &at)?;
        one_of(d, "synthesis_rule", SYNTHESIS_RULES, false, &at)?;
        for key in ["fingerprint", "model", "effort", "phase", "worktree"] {
            optional_string(d, key, &at)?;
        }
        for key in ["retry", "quorum"] {
            if d.get(key).is_some_and(|v| !v.is_u64()) {
                return Err(format!("{at}: {key} must be a non-negative integer"));
            }
        }
        if d.get("timeout")
            .is_some_and(|v| !(v.is_string() || v.is_u64()))
        {
            return Err(format!(
                "{at}: timeout must be a duration string or seconds"
            ));
        }
        validate_quorum(d, &at)?;
        if let Some(artifacts) = d.get("artifacts") {
            string_list(artifacts, &format!("{at}.artifacts"))?;
            wants_artifacts = true;
        }
    }
    validate_deps(delegations, &ids)?;
    if wants_artifacts && !has_artifact_body {
        return Err("artifact_body is required when a delegation names artifacts".into());
    }
    Ok(())
}

const DELEGATION_KEYS: &[&str] = &[
    "id",
    "agent",
    "ephemeral",
    "action",
    "prompt",
    "deps",
    "timeout",
    "retry",
    "failure_policy",
    "synthesis_rule",
    "quorum",
    "fingerprint",
    "model",
    "effort",
    "phase",
    "artifacts",
    "worktree",
];

fn validate_ephemeral(ephemeral: &Value, at: &str) -> Result<(), String> {
    let Value::Object(e) = ephemeral else {
        return Err(format!("{at}: ephemeral must be an object"));
    };
    one_of(
        e,
        "runtime",
        EPHEMERAL_RUNTIMES,
        true,
        &format!("{at}.ephemeral"),
    )
}

/// A quorum needs the quorum rule and cannot exceed the dependencies it counts.
fn validate_quorum(d: &Map<String, Value>, at: &str) -> Result<(), String> {
    let Some(quorum) = d.get("quorum").and_then(Value::as_u64) else {
        return Ok(());
    };
    let deps = d.get("deps").and_then(Value::as_array).map_or(0, Vec::len) as u64;
    if quorum == 0 || quorum > deps {
        return Err(format!(
            "{at}: quorum {quorum} must be between 1 and the number of deps ({deps})"
        ));
    }
    Ok(())
}

/// Every dependency names another delegation, and the graph has no cycle.
fn validate_deps(delegations: &[Value], ids: &[&str]) -> Result<(), String> {
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); delegations.len()];
    for (i, delegation) in delegations.iter().enumerate() {
        let at = format!("delegations[{i}]");
        let Some(deps) = delegation.get("deps") else {
            continue;
        };
        for dep in string_list(deps, &format!("{at}.deps"))? {
            let Some(target) = ids.iter().position(|id| *id == dep) else {
                return Err(format!("{at}: dep {dep:?} names no delegation"));
            };
            edges[i].push(target);
        }
    }
    if has_cycle(&edges) {
        return Err("delegations: deps form a cycle".into());
    }
    Ok(())
}

fn has_cycle(edges: &[Vec<usize>]) -> bool {
    // Kahn's algorithm: a cycle leaves nodes that never reach in-degree zero.
    let mut indegree = vec![0usize; edges.len()];
    for targets in edges {
        for &t in targets {
            indegree[t] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..edges.len()).filter(|&n| indegree[n] == 0).collect();
    let mut seen = 0;
    while let Some(node) = ready.pop() {
        seen += 1;
        for &t in &edges[node] {
            indegree[t] -= 1;
            if indegree[t] == 0 {
                ready.push(t);
            }
        }
    }
    seen != edges.len()
}

fn validate_learnings(learnings: &Value) -> Result<(), String> {
    let Value::Array(items) = learnings else {
        return Err("learnings must be an array".into());
    };
    for (i, item) in items.iter().enumerate() {
        let at = format!("learnings[{i}]");
        let Value::Object(l) = item else {
            return Err(format!("{at} must be an object"));
        };
        only_keys(l, &["key", "scope", "content"], &at)?;
        required_text(l, "key", &at)?;
        one_of(l, "scope", LEARNING_SCOPES, true, &at)?;
        required_text(l, "content", &at)?;
    }
    Ok(())
}

fn validate_human_questions(questions: &Value) -> Result<(), String> {
    let Value::Array(items) = questions else {
        return Err("human_questions must be an array".into());
    };
    let mut ids = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("human_questions[{i}]");
        let Value::Object(q) = item else {
            return Err(format!("{at} must be an object"));
        };
        only_keys(q, &["id", "prompt", "choices"], &at)?;
        let id = required_text(q, "id", &at)?;
        if ids.contains(&id) {
            return Err(format!("{at}: duplicate id {id:?}"));
        }
        ids.push(id);
        required_text(q, "prompt", &at)?;
        if let Some(choices) = q.get("choices") {
            string_list(choices, &format!("{at}.choices"))?;
        }
    }
    Ok(())
}

fn only_keys(object: &Map<String, Value>, allowed: &[&str], at: &str) -> Result<(), String> {
    match object.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(format!("{at}: unsupported field {key:?}")),
        None => Ok(()),
    }
}

fn required_text<'a>(
    object: &'a Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<&'a str, String> {
    match object.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        _ => Err(format!("{at}: {key} must be a non-blank string")),
    }
}

fn optional_string(object: &Map<String, Value>, key: &str, at: &str) -> Result<(), String> {
    match object.get(key) {
        None | Some(Value::String(_)) => Ok(()),
        Some(other) => Err(format!("{at}: {key} must be a string, not {}", kind(other))),
    }
}

fn one_of(
    object: &Map<String, Value>,
    key: &str,
    allowed: &[&str],
    required: bool,
    at: &str,
) -> Result<(), String> {
    match object.get(key) {
        None if !required => Ok(()),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
        _ => Err(format!("{at}: {key} must be one of {}", allowed.join(", "))),
    }
}

fn string_list<'a>(value: &'a Value, at: &str) -> Result<Vec<&'a str>, String> {
    value
        .as_array()
        .and_then(|items| items.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
        .ok_or_else(|| format!("{at} must be an array of strings"))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OK: &str = r#"{"gitmoot_result":{"decision":"approved","summary":"fine"}}"#;

    fn normalised(decision: &str, summary: &str) -> Value {
        json!({"decision":decision,"summary":summary,"findings":[],"changes_made":[],
               "tests_run":[],"needs":[],"delegations":[]})
    }

    #[test]
    fn whole_answer_object_is_found_and_normalised() {
        assert_eq!(extract(OK), Ok(normalised("approved", "fine")));
    }

    #[test]
    fn found_inside_prose_and_fences() {
        let answer = format!("Here you go:\n```json\n{OK}\n```\nThanks.");
        assert_eq!(extract(&answer), Ok(normalised("approved", "fine")));
    }

    #[test]
    fn braces_inside_strings_do_not_confuse_the_matcher() {
        let answer =
            r#"note {"gitmoot_result":{"decision":"blocked","summary":"a } and a \" {"}} end"#;
        assert_eq!(extract(answer), Ok(normalised("blocked", "a } and a \" {")));
    }

    #[test]
    fn first_valid_candidate_wins_and_first_error_is_reported() {
        let bad = r#"{"gitmoot_result":{"decision":"maybe","summary":"x"}}"#;
        let good2 = r#"{"gitmoot_result":{"decision":"failed","summary":"second"}}"#;
        let answer = format!("{bad}\n{OK}\n{good2}");
        assert_eq!(extract(&answer), Ok(normalised("approved", "fine")));
        assert_eq!(
            extract(bad),
            Err(ResultError::Invalid(
                "decision \"maybe\" is not one of approved, changes_requested, blocked, implemented, failed, skipped".into()
            ))
        );
    }

    /// A summary whose emoji the model cut in its own escapes: gitmoot reads the half as
    /// U+FFFD (Go's encoding/json), so the result holds; a pair stays the emoji.
    #[test]
    fn a_lone_surrogate_escape_in_the_result_reads_as_the_replacement_character() {
        let answer = r#"{"gitmoot_result":{"decision":"approved","summary":"fine \ud83d"}}"#;
        assert_eq!(extract(answer), Ok(normalised("approved", "fine \u{FFFD}")));
        let answer = r#"Done. {"gitmoot_result":{"decision":"approved","summary":"\ud83d\udc4d"}}"#;
        assert_eq!(extract(answer), Ok(normalised("approved", "\u{1F44D}")));
        let answer = r#"{"gitmoot_result":{"decision":"approved","summary":"\\ud83d"}}"#;
        assert_eq!(extract(answer), Ok(normalised("approved", r"\ud83d")));
    }

    #[test]
    fn missing_when_no_candidate_mentions_the_key() {
        assert_eq!(
            extract("all good, nothing to flag"),
            Err(ResultError::Missing)
        );
        assert_eq!(extract(r#"{"result":{}}"#), Err(ResultError::Missing));
    }

    #[test]
    fn rejects_unknown_fields_and_bad_types() {
        let cases = [
            (
                r#"{"decision":"approved","summary":"s","status":"ok"}"#,
                "unsupported gitmoot_result field \"status\"",
            ),
            (
                r#"{"decision":"approved","summary":"  "}"#,
                "summary must be a non-blank string",
            ),
            (
                r#"{"decision":"approved","summary":"s","tests_run":[1]}"#,
                "tests_run[0] must be a string, not a number",
            ),
            (
                r#"{"decision":"approved","summary":"s","needs":"x"}"#,
                "needs must be an array, not a string",
            ),
        ];
        for (result, want) in cases {
            let value: Value = serde_json::from_str(result).unwrap();
            assert_eq!(validate(value), Err(want.to_string()), "{result}");
        }
    }

    #[test]
    fn skipped_carries_no_delegations() {
        let v = json!({"decision":"skipped","summary":"s","delegations":[
            {"id":"a","agent":"rev","action":"review","prompt":"p"}]});
        assert_eq!(
            validate(v),
            Err("a skipped result must not carry delegations".into())
        );
    }

    #[test]
    fn delegations_are_checked() {
        let base = |d: Value| json!({"decision":"approved","summary":"s","delegations":[d]});
        let ok = json!({"id":"a","agent":"rev","action":"review","prompt":"p"});
        assert!(validate(base(ok)).is_ok());
        let eph = json!({"id":"a","ephemeral":{"runtime":"claude"},"action":"ask","prompt":"p"});
        assert!(validate(base(eph)).is_ok());
        let cases = [
            (
                json!({"id":"a","action":"review","prompt":"p"}),
                "delegations[0]: needs an agent or an ephemeral runtime",
            ),
            (
                json!({"id":"a","agent":"r","action":"produce","prompt":"p"}),
                "delegations[0]: action must be one of ask, review, implement",
            ),
            (
                json!({"id":"a","ephemeral":{"runtime":"omp"},"action":"ask","prompt":"p"}),
                "delegations[0].ephemeral: runtime must be one of codex, claude, kimi",
            ),
            (
                json!({"id":"a","agent":"r","action":"ask","prompt":"p","deps":["zz"]}),
                "delegations[0]: dep \"zz\" names no delegation",
            ),
            (
                json!({"id":"a","agent":"r","action":"ask","prompt":"p","colour":"red"}),
                "delegations[0]: unsupported field \"colour\"",
            ),
            (
                json!({"id":"a","agent":"r","action":"ask","prompt":"p","artifacts":["x"]}),
                "artifact_body is required when a delegation names artifacts",
            ),
        ];
        for (d, want) in cases {
            assert_eq!(validate(base(d.clone())), Err(want.to_string()), "{d}");
        }
    }

    #[test]
    fn dependency_cycles_are_rejected() {
        let v = json!({"decision":"approved","summary":"s","delegations":[
            {"id":"a","agent":"r","action":"ask","prompt":"p","deps":["b"]},
            {"id":"b","agent":"r","action":"ask","prompt":"p","deps":["a"]}]});
        assert_eq!(validate(v), Err("delegations: deps form a cycle".into()));
    }

    #[test]
    fn an_unclosed_brace_does_not_hide_a_later_result() {
        let answer = format!("{{ oops, I never close {OK}");
        assert_eq!(extract(&answer), Ok(normalised("approved", "fine")));
    }

    /// Found by the property test `a_valid_result_is_found_whatever_surrounds_it`: serde_json's
    /// default float parsing may miss the last digit, so a number in `findings` came back
    /// changed; with `float_roundtrip` every number the model wrote survives exactly.
    #[test]
    fn finding_numbers_survive_exactly() {
        let answer = r#"{"gitmoot_result":{"decision":"approved","summary":"a","findings":[-2.4638427048041185e299,0.1]}}"#;
        let result = extract(answer).unwrap();
        assert_eq!(
            result["findings"].to_string(),
            "[-2.4638427048041185e+299,0.1]"
        );
    }

    #[test]
    fn hostile_nesting_is_bounded() {
        let answer = format!("{}\"gitmoot_result\"", "{".repeat(200_000));
        assert_eq!(extract(&answer), Err(ResultError::Missing));
    }
}
