//! moot-report through the built binary: the summary of real envelopes (goldens of every
//! runtime under testdata/, three of them as one NDJSON file) in each format, byte for byte;
//! standard input; --strict; and the refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_moot-report");

/// Real envelopes of every runtime (goldens under testdata/), named `<runtime>-<case>.json`,
/// and three of pi's as one NDJSON file.
const ENVELOPES: [&str; 10] = [
    "omp/status-file-timed-out",
    "omp/status-file-clean",
    "omp/real-plain",
    "claude/cache-tokens",
    "claude/clean-stream-exit-one",
    "codex/cached-tokens",
    "codex/clean-stream-exit-one",
    "opencode/aborted",
    "opencode/cached-tokens",
    "kimi/code-error-event-after-retries",
];
const PI_THREE: [&str; 3] = ["pi/real-drop", "pi/real-plain", "pi/real-drop-with-exit"];

/// A directory holding [`ENVELOPES`] and `pi-three.ndjson`, once per test binary.
fn data() -> PathBuf {
    static DATA: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let dir = DATA.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let golden = |case: &str| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../testdata")
                .join(format!("{case}.json"));
            std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        };
        for case in ENVELOPES {
            std::fs::write(
                dir.path().join(case.replace('/', "-") + ".json"),
                golden(case),
            )
            .unwrap();
        }
        let three: Vec<u8> = PI_THREE.iter().flat_map(|case| golden(case)).collect();
        std::fs::write(dir.path().join("pi-three.ndjson"), three).unwrap();
        dir
    });
    dir.path().to_path_buf()
}

/// The expected output files.
fn expected(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/expected")
        .join(name)
}

/// The envelope files of [`data`], by name.
fn envelopes() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// moot-report with `args`, from tests/data/, `stdin` on its standard input.
fn report(args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(data())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// Each format of the summary of every envelope of [`data`] against its expected file in
/// tests/expected/
/// (`MOOT_BLESS=1` writes them).
#[test]
fn the_summary_of_real_envelopes_is_as_expected_in_every_format() {
    let names = envelopes();
    assert!(names.len() >= 10, "{names:?}");
    for (format, file) in [
        ("table", "summary.txt"),
        ("markdown", "summary.md"),
        ("json", "summary.json"),
    ] {
        let mut args = vec!["--format", format];
        args.extend(names.iter().map(String::as_str));
        let out = report(&args, b"");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
        let path = expected(file);
        if std::env::var_os("MOOT_BLESS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &out.stdout).unwrap();
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{} ({e}); run with MOOT_BLESS=1", path.display()));
        assert_eq!(text(&out.stdout), want, "--format {format}");
    }
}

/// The JSON summary's totals, counted here from the envelopes themselves.
#[test]
fn the_totals_are_the_envelopes_own() {
    let (mut jobs, mut ok, mut input, mut cost) = (0u64, 0u64, 0u64, 0f64);
    for name in envelopes() {
        let text = std::fs::read_to_string(data().join(&name)).unwrap();
        for envelope in serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>() {
            let run = &envelope.unwrap()["run"];
            jobs += 1;
            ok += u64::from(run["ok"].as_bool().unwrap());
            input += run["usage"]["input_tokens"].as_u64().unwrap();
            cost += run["usage"]["cost_usd"].as_f64().unwrap_or(0.0);
        }
    }
    let mut args = vec!["--format", "json"];
    let names = envelopes();
    args.extend(names.iter().map(String::as_str));
    let summary: serde_json::Value = serde_json::from_slice(&report(&args, b"").stdout).unwrap();
    assert_eq!(summary["jobs"], jobs);
    assert_eq!(summary["ok"], ok);
    assert_eq!(summary["failed"], jobs - ok);
    let models = summary["models"].as_array().unwrap();
    let sum = |field: &str| -> f64 {
        models
            .iter()
            .map(|m| m[field].as_f64().unwrap_or(0.0))
            .sum()
    };
    assert_eq!(sum("input_tokens") as u64, input);
    assert!((sum("cost_usd") - cost).abs() < 1e-9, "{summary}");
}

/// Standard input gives the same counts as the files (only the jobs' names differ).
#[test]
fn standard_input_is_read_as_ndjson() {
    let names = envelopes();
    let mut all = Vec::new();
    for name in &names {
        all.extend(std::fs::read(data().join(name)).unwrap());
        all.push(b'\n');
    }
    let mut args = vec!["--format", "json"];
    args.extend(names.iter().map(String::as_str));
    let from_files: serde_json::Value = serde_json::from_slice(&report(&args, b"").stdout).unwrap();
    let from_stdin: serde_json::Value =
        serde_json::from_slice(&report(&["--format", "json", "-"], &all).stdout).unwrap();
    for field in [
        "jobs",
        "ok",
        "failed",
        "failed_by_class",
        "decisions",
        "models",
    ] {
        assert_eq!(from_files[field], from_stdin[field], "{field}");
    }
    assert!(from_stdin["slowest"][0]["job"]
        .as_str()
        .unwrap()
        .starts_with("stdin#"));
}

#[test]
fn strict_fails_a_matrix_with_a_failed_job_or_none() {
    let ok = report(&["--strict", "omp-real-plain.json"], b"");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let failed = report(
        &[
            "--strict",
            "omp-real-plain.json",
            "codex-clean-stream-exit-one.json",
        ],
        b"",
    );
    assert_eq!(failed.status.code(), Some(1));
    assert!(text(&failed.stdout).starts_with("2 jobs: 1 ok, 1 failed\n"));
    let none = report(&["--strict"], b"");
    assert_eq!(none.status.code(), Some(1));
    assert_eq!(report(&[], b"").status.code(), Some(0));
}

#[test]
fn input_that_is_not_an_envelope_is_named_on_one_line() {
    let plain = std::fs::read(data().join("omp-real-plain.json")).unwrap();
    let mut second_broken = plain.clone();
    second_broken.extend_from_slice(b"\n{\"run\":{\"ok\":true}}\n");
    for (args, stdin, says) in [
        (
            vec!["no-such.json"],
            Vec::new(),
            "moot-report: no-such.json: ",
        ),
        (vec![], b"not json".to_vec(), "moot-report: stdin: not JSON"),
        (
            vec![],
            second_broken,
            "moot-report: stdin#2: not a moot envelope",
        ),
        (vec!["--format", "yaml"], Vec::new(), "moot-report: "),
    ] {
        let out = report(&args, &stdin);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with(says), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn help_shows_examples_and_version_prints() {
    moot_testkit::check_help_and_version(BIN, "moot-report", "moot-report results/*.json");
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
