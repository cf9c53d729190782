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
    assert!(read("scripts/container/matrix.sh").contains(&format!("sh {JOB} $runtime ")));
}

/// The agent works in a clone of its own, outside the checkout (a hook, config or replace ref
/// planted in the checkout's .git would reach what runs next on the runner), and the run's files
/// are kept outside both.
#[test]
fn github_actions_fans_out_over_runtimes_and_merges_into_the_step_summary() {
    let [workflow] = documents("examples/engines/github-actions.yml")
        .try_into()
        .unwrap();
    let inputs = &workflow["on"]["workflow_dispatch"]["inputs"];
    let listed: Value =
        serde_json::from_str(inputs["runtimes"]["default"].as_str().unwrap()).unwrap();
    assert_fans_out(&listed);
    let agent = &workflow["jobs"]["agent"];
    assert_eq!(
        agent["strategy"]["matrix"]["runtime"],
        "${{ fromJSON(inputs.runtimes) }}"
    );
    assert_eq!(agent["container"]["options"], "--user 0");
    let checkout = &agent["steps"][0];
    assert_eq!(checkout["with"]["persist-credentials"], false, "{checkout}");
    let run = commands(agent);
    for line in [
        "git clone --quiet --no-local \"$GITHUB_WORKSPACE\" \"$RUNNER_TEMP/ws\"",
        &format!("sh {JOB} \"$RUNTIME\" \"$RUNNER_TEMP/ws\" \"$RUNNER_TEMP/prompt.md\" \"$RUNNER_TEMP/out\""),
        "moot-doctor --environment --strict",
    ] {
        assert!(run.contains(line), "{line}: {run}");
    }
    assert_eq!(agent["steps"][1]["env"]["MOOT_SEAT_USER"], "nobody:nogroup");
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
    assert!(merge.contains("no envelope from $runtime"), "{merge}");
}

#[test]
fn gitlab_fans_out_with_parallel_matrix_and_merges() {
    let [pipeline] = documents("examples/engines/gitlab-ci.yml")
        .try_into()
        .unwrap();
    let agent = &pipeline["agent"];
    let matrix = &agent["parallel"]["matrix"][0]["RUNTIME"];
    assert_fans_out(matrix);
    // The summary's list of envelopes to expect is the matrix's.
    let expected: BTreeSet<String> = pipeline["variables"]["RUNTIMES"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(expected, strings(matrix));
    let script = commands(agent);
    for line in [
        "private=$(mktemp -d)",
        "git clone --quiet --no-local \"$CI_PROJECT_DIR\" \"$private/ws\"",
        &format!("sh {JOB} \"$RUNTIME\" \"$private/ws\" \"$private/prompt.md\" \"$private/out\""),
    ] {
        assert!(script.contains(line), "{line}: {script}");
    }
    let summary = &pipeline["summary"];
    assert_eq!(summary["variables"]["GIT_STRATEGY"], "none");
    let merge = commands(summary);
    assert!(
        merge.contains("moot-report --format markdown --strict envelopes/*.json"),
        "{merge}"
    );
    assert!(merge.contains("no envelope from $runtime"), "{merge}");
}

#[test]
fn kubernetes_runs_an_indexed_job_in_a_locked_down_pod() {
    let docs = documents("examples/engines/kubernetes-job.yaml");
    let of = |kind: &'static str| docs.iter().filter(move |d| d["kind"] == kind);
    let tasks = of("ConfigMap")
        .find(|d| d["metadata"]["name"] == "agent-tasks")
        .unwrap()["data"]["tasks"]
        .as_str()
        .unwrap()
        .to_string();
    let job = of("Job").next().unwrap();
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
    assert_eq!(pod["automountServiceAccountToken"], false);
    let containers = pod["containers"].as_array().unwrap();
    let init = pod["initContainers"].as_array().unwrap();
    for container in containers.iter().chain(init) {
        let security = &container["securityContext"];
        assert_eq!(security["allowPrivilegeEscalation"], false, "{container}");
        assert_eq!(security["readOnlyRootFilesystem"], true, "{container}");
        assert_eq!(
            strings(&security["capabilities"]["drop"]),
            ["ALL".to_string()].into()
        );
    }
    let [agent] = containers.as_slice() else {
        panic!("one container")
    };
    let script = agent["command"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .as_str()
        .unwrap();
    for line in [
        "$((JOB_COMPLETION_INDEX + 1))p",
        "moot-doctor --environment --strict",
        &format!("sh {JOB} \"$1\" /work \"$2\" \"/out/$JOB_COMPLETION_INDEX\""),
        "cat \"/out/$JOB_COMPLETION_INDEX/envelope.json\"",
    ] {
        assert!(script.contains(line), "{line}: {script}");
    }
    // UDP is not Landlock's: the pod may reach the provider on 443 and nothing else, no DNS.
    let policy = of("NetworkPolicy").next().unwrap();
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"]["job-name"],
        "agent-jobs"
    );
    assert!(strings(&policy["spec"]["policyTypes"]).contains("Egress"));
    let egress = policy["spec"]["egress"].as_array().unwrap();
    let ports: Vec<&Value> = egress
        .iter()
        .flat_map(|rule| rule["ports"].as_array().unwrap())
        .collect();
    assert!(
        ports
            .iter()
            .all(|p| p["protocol"] == "TCP" && p["port"] == 443),
        "{ports:?}"
    );
    assert!(egress
        .iter()
        .all(|rule| rule["to"].as_array().is_some_and(|to| !to.is_empty())));
}

/// The job refuses, before anything runs, with exit 2 and one line: run files kept where the
/// agent writes, an OUT an earlier run left files in, and (as root) an agent that would run as
/// root.
#[test]
fn the_job_refuses_what_would_hand_the_agent_a_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let worktree = dir.path().join("ws");
    fs::create_dir(&worktree).unwrap();
    let prompt = dir.path().join("prompt.md");
    fs::write(&prompt, "Do it.").unwrap();
    let used = dir.path().join("used");
    fs::create_dir(&used).unwrap();
    fs::write(used.join("envelope.json"), "{}").unwrap();
    let job = |out: &Path, seat_user: Option<&str>| {
        let mut command = Command::new("sh");
        command
            .arg(root().join("examples/engines/job.sh"))
            .arg("codex")
            .arg(&worktree)
            .arg(&prompt)
            .arg(out)
            .env("MOOT_PROVIDER_URL", "http://127.0.0.1:9")
            .env("MOOT_PROVIDER_KEY_FILE", dir.path().join("key"))
            .env(
                "PATH",
                format!(
                    "{}:/usr/bin:/bin",
                    moot_e2e::tool("moot-render").parent().unwrap().display()
                ),
            );
        match seat_user {
            Some(user) => command.env("MOOT_SEAT_USER", user),
            None => command.env_remove("MOOT_SEAT_USER"),
        };
        let out = command.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let refused = |(code, stderr): (Option<i32>, String), why: &str| {
        assert_eq!(code, Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with("job: ") && stderr.contains(why),
            "{why}: {stderr}"
        );
    };
    refused(job(&worktree.join("out"), None), "is inside the worktree");
    refused(job(&used, None), "is not empty");
    if nix::unistd::geteuid().is_root() {
        refused(job(&dir.path().join("out"), None), "set MOOT_SEAT_USER");
    }
}
