//! The job engines' specs (examples/engines/) parse, fan out over registered runtimes, run
//! the job make test-container runs in moot's image (libexec/moot/job.sh), keep the run's files
//! out of the agent's reach, merge the envelopes with moot-report, and, for Kubernetes, ask for
//! the pod the issue of confinement needs: non-root, no privilege escalation, no capability, the
//! runtime's default seccomp profile and a read-only root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Where make install puts the engines' job, which every spec and the container test run.
const JOB: &str = "/usr/local/libexec/moot/job.sh";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every YAML document of `path`.
fn documents(path: &str) -> Vec<Value> {
    let text = read(path);
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// The runtimes a job can run: every registered one with a parser.
fn runtimes() -> BTreeSet<String> {
    moot::registry::all()
        .iter()
        .filter(|meta| meta.parser.is_some())
        .map(|meta| meta.name.to_string())
        .collect()
}

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// A matrix over several runtimes a job can run. The specs name the runtimes a user's job images
/// carry, not every one moot knows: a new runtime needs no edit here.
fn assert_fans_out(matrix: &Value) {
    let listed = strings(matrix);
    assert!(listed.len() > 1, "{matrix}");
    assert!(
        listed.is_subset(&runtimes()),
        "{listed:?} against {:?}",
        runtimes()
    );
}

/// The text of every `run` (GitHub) or script line (GitLab) of a job, joined.
fn commands(job: &Value) -> String {
    let mut text = String::new();
    for step in job["steps"].as_array().into_iter().flatten() {
        text.push_str(step["run"].as_str().unwrap_or_default());
        text.push('\n');
    }
    for line in job["script"].as_array().into_iter().flatten() {
        text.push_str(line.as_str().unwrap());
        text.push('\n');
    }
    text
}

#[test]
fn the_job_is_where_make_install_puts_it_and_the_container_test_runs_it() {
    assert!(read("Makefile").contains("install -m 0755 examples/engines/job.sh $(ADAPTER_DIR)/"));
    assert!(read("Makefile").contains("PREFIX ?= /usr/local"));
    assert!(read("scripts/container/test.sh").contains(&format!("sh {JOB} codex ")));
}

#[test]
fn github_actions_fans_out_over_every_runtime_and_merges_into_the_step_summary() {
    let [workflow] = documents("examples/engines/github-actions.yml")
        .try_into()
        .unwrap();
    let agent = &workflow["jobs"]["agent"];
    assert_fans_out(&agent["strategy"]["matrix"]["runtime"]);
    let run = commands(agent);
    assert!(
        run.contains(&format!(
            "sh {JOB} \"${{{{ matrix.runtime }}}}\" \"$GITHUB_WORKSPACE\""
        )),
        "{run}"
    );
    assert!(
        run.contains("\"$RUNNER_TEMP/out\""),
        "the run's files outside the workspace: {run}"
    );
    assert!(run.contains("moot-doctor --environment --strict"), "{run}");
    let upload = agent["steps"].as_array().unwrap().last().unwrap();
    assert_eq!(
        upload["with"]["path"],
        "${{ runner.temp }}/out/envelope.json"
    );
    let summary = &workflow["jobs"]["summary"];
    assert_eq!(summary["needs"], "agent");
    assert_eq!(summary["if"], "always()");
    let merge = commands(summary);
    assert!(
        merge.contains("moot-report --format markdown --strict envelopes/*/envelope.json >>\"$GITHUB_STEP_SUMMARY\""),
        "{merge}"
    );
}

#[test]
fn gitlab_fans_out_with_parallel_matrix_and_merges() {
    let [pipeline] = documents("examples/engines/gitlab-ci.yml")
        .try_into()
        .unwrap();
    let agent = &pipeline["agent"];
    assert_fans_out(&agent["parallel"]["matrix"][0]["RUNTIME"]);
    let script = commands(agent);
    assert!(
        script.contains(&format!(
            "sh {JOB} \"$RUNTIME\" \"$CI_PROJECT_DIR\" \"$private/prompt.md\" \"$private/out\""
        )),
        "{script}"
    );
    assert!(script.contains("private=$(mktemp -d)"), "{script}");
    let summary = commands(&pipeline["summary"]);
    assert!(
        summary.contains("moot-report --format markdown --strict envelopes/*.json"),
        "{summary}"
    );
}

#[test]
fn kubernetes_runs_an_indexed_job_in_a_locked_down_pod() {
    let docs = documents("examples/engines/kubernetes-job.yaml");
    let tasks = docs.iter().find(|d| d["kind"] == "ConfigMap").unwrap()["data"]["tasks"]
        .as_str()
        .unwrap()
        .to_string();
    let job = docs.iter().find(|d| d["kind"] == "Job").unwrap();
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(
        spec["completions"].as_u64().unwrap(),
        tasks.lines().count() as u64
    );
    for task in tasks.lines() {
        let runtime = task.split_whitespace().next().unwrap();
        assert!(
            runtimes().contains(runtime),
            "task {task:?}: no such runtime with a parser"
        );
    }
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let [container] = pod["containers"].as_array().unwrap().as_slice() else {
        panic!("one container")
    };
    let security = &container["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(
        strings(&security["capabilities"]["drop"]),
        ["ALL".to_string()].into()
    );
    let command = container["command"].as_array().unwrap();
    let script = command.last().unwrap().as_str().unwrap();
    assert!(
        script.contains("$((JOB_COMPLETION_INDEX + 1))p"),
        "{script}"
    );
    assert!(
        script.contains(&format!(
            "exec sh {JOB} \"$1\" /work \"$2\" \"/out/$JOB_COMPLETION_INDEX\""
        )),
        "{script}"
    );
}

/// The job refuses to keep the run's files where the agent writes, before anything runs.
#[test]
fn the_job_refuses_an_output_inside_the_worktree() {
    let dir = tempfile::tempdir().unwrap();
    let prompt = dir.path().join("prompt.md");
    fs::write(&prompt, "Do it.").unwrap();
    let out = Command::new("sh")
        .arg(root().join("examples/engines/job.sh"))
        .args(["codex"])
        .arg(dir.path())
        .arg(&prompt)
        .arg(dir.path().join("out"))
        .env_remove("MOOT_PROVIDER_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("job: OUT (") && stderr.contains("inside the worktree"),
        "{stderr}"
    );
}
