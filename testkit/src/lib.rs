//! Test support shared by every tool's tests (a dev-dependency only, never linked into a
//! tool): run a built binary on real bytes, check golden cases, and check that a man page
//! documents every flag of `--help`. One harness, so every parser is held to the same golden
//! format. [`fs`] writes and reads files' modes; [`fake_upstream`] is a fake omp auth broker;
//! [`realcli`] finds the real CLIs scripts/realcli/install.sh installed.

// Test support: a failed expectation here is a failed test, so panicking is the point.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use moot::report::one_line;

pub mod events;
#[cfg(feature = "net")]
pub mod fake_upstream;
pub mod fs;
pub mod realcli;
pub mod seccomp;

/// How long a test waits for a state it expects before it calls the wait a hang. A guard, not a
/// speed requirement: what the tests wait for takes well under a second on an idle machine, and
/// the guard only turns a broken build into a failure instead of a stuck CI job, so no busy
/// machine comes near it. No test asserts how long something took.
pub const HANG_GUARD: std::time::Duration = std::time::Duration::from_secs(120);

/// Polls `ready` until it gives a value and returns it; fails the test, saying it never saw
/// `what`, once [`HANG_GUARD`] has passed.
#[track_caller]
pub fn wait_for<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let started = std::time::Instant::now();
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(
            started.elapsed() < HANG_GUARD,
            "{what}: not seen in {HANG_GUARD:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Set (to anything) by `.ci/run`: a test that cannot run here fails instead of skipping, so a
/// CI machine without the kernel or the tools a test needs never passes it silently.
pub const NO_SKIP: &str = "MOOT_NO_SKIP";

/// Skips `test` loudly (`SKIPPED test: why` on stderr), or fails it when [`NO_SKIP`] is set.
pub fn skip(test: &str, why: &str) {
    assert!(
        std::env::var_os(NO_SKIP).is_none(),
        "{test} cannot run here and {NO_SKIP} is set: {why}"
    );
    eprintln!("SKIPPED {test}: {why}");
}

/// The kernel's Landlock ABI as the built moot-sandbox at `sandbox` reports it (`--check`; 0
/// without Landlock).
pub fn landlock_abi(sandbox: &Path) -> i64 {
    let out = Command::new(sandbox)
        .arg("--check")
        .output()
        .expect("moot-sandbox --check runs");
    let check: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("moot-sandbox --check prints JSON");
    check["kernel_abi"].as_i64().unwrap_or(0)
}

/// False, after a loud [`skip`], when the kernel's Landlock ABI is older than `needed`.
pub fn landlock_abi_at_least(sandbox: &Path, needed: i64, test: &str) -> bool {
    let abi = landlock_abi(sandbox);
    if abi < needed {
        skip(
            test,
            &format!("needs Landlock ABI {needed}, this kernel has ABI {abi}"),
        );
        return false;
    }
    true
}

/// Resets INT, QUIT, TERM and HUP to their default action in `command`'s child. A test run in
/// the background of a non-interactive shell inherits INT and QUIT ignored, and a tool that was
/// started ignoring a signal passes that on to what it runs: a test that signals the tool must
/// not depend on how the test run itself was started.
pub fn with_default_signals(command: &mut Command) -> &mut Command {
    use nix::sys::signal::{signal, SigHandler, Signal};
    use std::os::unix::process::CommandExt;
    // SAFETY: only resets signal dispositions between fork and exec.
    unsafe {
        command.pre_exec(|| {
            for sig in [
                Signal::SIGINT,
                Signal::SIGQUIT,
                Signal::SIGTERM,
                Signal::SIGHUP,
            ] {
                signal(sig, SigHandler::SigDfl)?;
            }
            Ok(())
        })
    }
}

/// Runs `bin` with `args`, feeding `stdin` from a thread (so a large input cannot deadlock
/// against a full stdout pipe), and returns its whole output.
pub fn run(bin: &str, args: &[String], stdin: &[u8]) -> Output {
    run_in(bin, args, stdin, None)
}

/// Like [`run`], in directory `dir`.
pub fn run_in(bin: &str, args: &[String], stdin: &[u8], dir: Option<&Path>) -> Output {
    let mut command = Command::new(bin);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"));
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        // The tool may stop reading early (and exit); a broken pipe here is not a test failure.
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().expect("wait for the tool");
    feeder.join().expect("stdin feeder");
    output
}

/// The input stream of golden case `name` under `testdata/<dialect>/`.
pub fn case(dialect: &str, name: &str) -> Vec<u8> {
    let path = testdata().join(dialect).join(format!("{name}.ndjson"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Owned command-line arguments.
pub fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A scratch directory `--cleanup` may remove, as moot-render or an adapter leaves one: mode
/// 0700, the marker of shared/src/cleanup.rs, and a file in a subdirectory.
pub fn scratch_dir(parent: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = parent.join(name);
    std::fs::create_dir_all(dir.join("nested")).expect("mkdir scratch");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod 700");
    std::fs::write(dir.join(moot::cleanup::MARKER), b"").expect("mark scratch");
    std::fs::write(dir.join("nested/prompt.md"), b"secret prompt").expect("write scratch");
    dir
}

/// Checks that a bad flag is one line on stderr, `tool: ... (see --help)`, with exit `status`
/// and nothing on stdout: every tool reports usage errors the same way.
pub fn check_usage_error(bin: &str, tool: &str, status: i32) {
    let out = run(bin, &args(&["--no-such-flag"]), b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(status), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr:?}");
    assert!(
        stderr.starts_with(&format!("{tool}: unexpected argument '--no-such-flag'"))
            && stderr.ends_with("(see --help)\n"),
        "{stderr:?}"
    );
}

/// Spawns `bin` with no arguments and stdin, stdout and stderr piped, for a test that drives
/// the pipes itself.
pub fn spawn_piped(bin: &str) -> std::process::Child {
    Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {bin}: {e}"))
}

/// Runs `bin --text <flags>` on golden case `name` of `dialect`, checks that it succeeded with
/// nothing on stderr, and returns stdout: the answer alone.
pub fn text_answer(bin: &str, dialect: &str, name: &str, flags: &[&str]) -> String {
    let out = run(bin, &text_args(flags), &case(dialect, name));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{dialect}/{name}: {stderr}");
    assert!(stderr.is_empty(), "{dialect}/{name}: {stderr:?}");
    String::from_utf8(out.stdout).expect("the answer is UTF-8")
}

/// Runs `bin --text <flags>` on golden case `name` of `dialect`, checks that it failed as the
/// adapter.sh contract says (exit 1, nothing on stdout, one line on stderr), and returns stderr.
pub fn text_failure(bin: &str, dialect: &str, name: &str, flags: &[&str]) -> String {
    let out = run(bin, &text_args(flags), &case(dialect, name));
    let stderr = String::from_utf8(out.stderr).expect("stderr is UTF-8");
    assert_eq!(out.status.code(), Some(1), "{dialect}/{name}: {stderr}");
    assert!(out.stdout.is_empty(), "{dialect}/{name}: stdout not empty");
    assert_eq!(stderr.lines().count(), 1, "{dialect}/{name}: {stderr:?}");
    stderr
}

fn text_args(flags: &[&str]) -> Vec<String> {
    std::iter::once("--text")
        .chain(flags.iter().copied())
        .map(str::to_string)
        .collect()
}

/// What `--text` prints for golden case `name` of `dialect`: the expected envelope's
/// `run.answer` and a final newline.
pub fn golden_answer(dialect: &str, name: &str) -> String {
    let path = testdata().join(dialect).join(format!("{name}.json"));
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let envelope: serde_json::Value = serde_json::from_slice(&bytes).expect("a golden envelope");
    let answer = envelope["run"]["answer"].as_str().expect("run.answer");
    format!("{answer}\n")
}

/// Checks that `--help` exits 0 and shows `Examples:` with `example` among them, and that
/// `--version` prints `<tool> <version>`.
pub fn check_help_and_version(bin: &str, tool: &str, example: &str) {
    let help = run(bin, &args(&["--help"]), b"");
    assert_eq!(help.status.code(), Some(0));
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("Examples:") && help.contains(example),
        "{help}"
    );
    let version = run(bin, &args(&["--version"]), b"");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("{tool} {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// Declares the golden tests of `moot-parse-<runtime>`: every case under `testdata/<runtime>`
/// through the built binary ([`check_goldens`]), at least `at_least` of them, and its man page
/// ([`check_man_page`]).
#[macro_export]
macro_rules! parser_golden_tests {
    ($runtime:literal, at_least = $at_least:expr) => {
        #[test]
        fn golden_cases() {
            let bin = env!(concat!("CARGO_BIN_EXE_moot-parse-", $runtime));
            let checked = $crate::check_goldens(bin, concat!("moot-parse-", $runtime), $runtime);
            assert!(
                checked >= $at_least,
                "only {checked} golden cases under testdata/{}",
                $runtime
            );
        }

        #[test]
        fn event_goldens_and_independent_counts() {
            let bin = env!(concat!("CARGO_BIN_EXE_moot-parse-", $runtime));
            let checked = $crate::events::check_event_goldens(bin, $runtime);
            assert!(checked > 0, "no real capture under testdata/{}", $runtime);
        }

        #[test]
        fn model_activity_and_completion_are_published() {
            let bin = env!(concat!("CARGO_BIN_EXE_moot-parse-", $runtime));
            $crate::check_activity_and_completion(bin, $runtime);
        }

        #[test]
        fn man_page_documents_every_flag() {
            let bin = env!(concat!("CARGO_BIN_EXE_moot-parse-", $runtime));
            $crate::check_man_page(bin, concat!("moot-parse-", $runtime, ".1"));
        }
    };
}

/// Declares the `--text` tests of `moot-parse-<runtime>` (the adapter.sh contract) on its golden
/// cases: `answer` succeeds with its golden answer alone on stdout; `truncated` fails with
/// nothing on stdout and one `truncated` line on stderr; `no_result` (a case and its answer)
/// succeeds without a gitmoot_result; a bad flag is one line ([`check_usage_error`]).
#[macro_export]
macro_rules! parser_text_tests {
    (
        $runtime:literal,
        answer = $answer:literal,
        truncated = $truncated:literal,
        no_result = ($no_result:literal, $no_result_answer:literal)
    ) => {
        const BIN: &str = env!(concat!("CARGO_BIN_EXE_moot-parse-", $runtime));

        #[test]
        fn text_prints_only_the_answer() {
            assert_eq!(
                $crate::text_answer(BIN, $runtime, $answer, &[]),
                $crate::golden_answer($runtime, $answer)
            );
        }

        #[test]
        fn text_prints_nothing_for_a_failed_run() {
            let stderr = $crate::text_failure(BIN, $runtime, $truncated, &[]);
            let prefix = concat!("moot-parse-", $runtime, ": truncated: TRUNCATED: ");
            assert!(stderr.starts_with(prefix), "{stderr:?}");
        }

        #[test]
        fn text_does_not_require_a_gitmoot_result() {
            assert_eq!(
                $crate::text_answer(BIN, $runtime, $no_result, &[]),
                $no_result_answer
            );
        }

        #[test]
        fn a_usage_error_is_one_line() {
            $crate::check_usage_error(BIN, concat!("moot-parse-", $runtime), 2);
        }
    };
}

/// Declares the two properties every dialect's streams hold: a successful real capture cut
/// anywhere before its end never succeeds, save a cut for which `ends_a_run` holds
/// ([`check_truncation`]), and rows of the `unknown_rows` types never change a verdict
/// ([`check_unknown_rows`]).
#[macro_export]
macro_rules! dialect_invariant_tests {
    (
        $runtime:literal,
        $new:expr,
        ends_a_run = $ends_a_run:expr,
        unknown_rows = $rows:expr,
        silent = $silent:expr
    ) => {
        #[test]
        fn truncating_a_successful_capture_never_succeeds() {
            let checked = $crate::check_truncation($runtime, $new, $ends_a_run);
            assert!(checked > 1000, "only {checked} cuts checked");
        }

        #[test]
        fn model_activity_shows_while_the_cli_runs() {
            let spoke = $crate::check_model_activity($runtime, $new, $silent);
            assert!(spoke > 10, "only {spoke} cases showed model activity");
        }

        #[test]
        fn unknown_rows_anywhere_never_change_the_verdict() {
            let compared = $crate::check_unknown_rows($runtime, $new, $rows);
            assert!(compared > 300, "only {compared} streams compared");
        }
    };
}

/// The line (0-based) after which `dialect` first says the model spoke, fed `stream` line by
/// line as the parse driver feeds it; `None` when it never does.
pub fn first_model_line<D: moot::dialect::Dialect>(mut dialect: D, stream: &[u8]) -> Option<usize> {
    for (index, line) in stream.split(|b| *b == b'\n').enumerate() {
        if moot::ndjson::is_blank(line) {
            continue;
        }
        let mut events = moot::event::Events::tally(D::RUNTIME);
        let _ = dialect.line(&moot::surrogate::replace_lone(line), &mut events);
        if dialect.model_spoke() {
            return Some(index);
        }
    }
    None
}

/// Model activity on every golden case of `dialect`: a run that succeeded shows a model event
/// (unless its stream is one final row); a real capture that succeeded shows it before its last
/// line, so it is published while the CLI still runs; the `silent` cases, whose model never
/// spoke, show none. Returns how many cases spoke.
pub fn check_model_activity<D: moot::dialect::Dialect>(
    dialect: &str,
    new: impl Fn() -> D,
    silent: &[&str],
) -> usize {
    let mut spoke = 0;
    for case in cases(dialect) {
        let stream = std::fs::read(&case.input).expect("read the case");
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&case.expected).expect("read the envelope"))
                .expect("a golden envelope");
        let first = first_model_line(new(), &stream);
        let name = case.name.as_str();
        if silent.contains(&name) {
            assert_eq!(first, None, "{dialect}/{name}: the model never spoke");
            continue;
        }
        if expected["run"]["ok"] != true {
            spoke += usize::from(first.is_some());
            continue;
        }
        let last = stream.trim_ascii_end().split(|b| *b == b'\n').count() - 1;
        // A lone row is a final result alone (claude's --output-format json): no event to show.
        let Some(first) = first.or((last == 0).then_some(0)) else {
            panic!("{dialect}/{name}: a successful run showed no model event");
        };
        spoke += 1;
        if name.starts_with("real-") && last > 0 {
            assert!(
                first < last,
                "{dialect}/{name}: first model event on line {first} of {last}"
            );
        }
    }
    spoke
}

/// The fewest whole lines of `lines` after which `bin` publishes model activity, read to their
/// end in one run each (`lines.len()` when no prefix does). A token, once written, is written by
/// every longer prefix, so bisection finds it in a few runs; and the prefix one line shorter is
/// proved not to publish.
fn lines_until_activity(bin: &str, lines: &[&[u8]]) -> usize {
    let publishes = |count: usize| {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = [
            "--text".to_string(),
            "--activity-dir".to_string(),
            dir.path().display().to_string(),
        ];
        run(bin, &args, &lines[..count].concat());
        dir.path().join(moot::parse::ACTIVITY_FILE).exists()
    };
    let (mut silent, mut speaking) = (0, lines.len());
    if !publishes(speaking) {
        return lines.len();
    }
    while speaking - silent > 1 {
        let middle = (silent + speaking) / 2;
        if publishes(middle) {
            speaking = middle;
        } else {
            silent = middle;
        }
    }
    speaking
}

/// `--activity-dir` and `--completion-file` through the built parser: the token appears once
/// the first model line has been written and before stdin is closed (the CLI still runs), holds
/// exactly `output\n` with mode 0600, and never appears for a stream without a model event;
/// the completion line names the exit status.
pub fn check_activity_and_completion(bin: &str, dialect: &str) {
    use std::os::unix::fs::PermissionsExt;
    let (case, stream) = cases(dialect)
        .into_iter()
        .filter(|case| case.name.starts_with("real-") && dialect_only(case))
        .map(|case| {
            let stream = std::fs::read(&case.input).expect("read the case");
            (case, stream)
        })
        .find(|(case, stream)| {
            let ok =
                std::fs::read_to_string(&case.expected).is_ok_and(|e| e.contains("\"ok\":true"));
            ok && stream.iter().filter(|b| **b == b'\n').count() > 2
        })
        .expect("a real successful capture");
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join(moot::parse::ACTIVITY_FILE);
    let completion = dir.path().join("completion");
    let mut child = Command::new(bin)
        .args(&case.args)
        .args(["--text", "--activity-dir"])
        .arg(dir.path())
        .arg("--completion-file")
        .arg(&completion)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the parser");
    let lines: Vec<&[u8]> = stream.split_inclusive(|b| *b == b'\n').collect();
    let written = lines_until_activity(bin, &lines);
    assert!(
        written < lines.len(),
        "{dialect}/{}: no token before the stream ended",
        case.name
    );
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(&lines[..written].concat()).expect("feed");
    stdin.flush().expect("flush");
    // Waits on the token, which the parser must write while its stdin stays open.
    wait_for(
        &format!(
            "{dialect}/{}: the token after line {written} while the stream stays open",
            case.name
        ),
        || token.exists().then_some(()),
    );
    for line in &lines[written..] {
        stdin.write_all(line).expect("feed the rest");
    }
    drop(stdin);
    let out = child.wait_with_output().expect("wait for the parser");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&token).expect("the token"),
        moot::parse::ACTIVITY_TOKEN
    );
    let mode = std::fs::metadata(&token)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        std::fs::read_to_string(&completion).expect("completion"),
        "complete 0\n"
    );

    // A directory that cannot take the token costs one warning line naming the tool, not the run.
    let gone = dir.path().join("gone");
    let mut args = case.args.clone();
    args.extend([
        "--text".to_string(),
        "--activity-dir".to_string(),
        gone.display().to_string(),
    ]);
    let out = run(bin, &args, &stream);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.starts_with(&format!("moot-parse-{dialect}: warning: cannot publish"))
            && stderr.lines().count() == 1,
        "{stderr:?}"
    );

    // A stream without a model event publishes nothing; a failure completes with its status.
    let quiet = tempfile::tempdir().expect("tempdir");
    let quiet_completion = quiet.path().join("completion");
    let args = vec![
        "--text".to_string(),
        "--activity-dir".to_string(),
        quiet.path().display().to_string(),
        "--completion-file".to_string(),
        quiet_completion.display().to_string(),
    ];
    let out = run(bin, &args, b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(!quiet.path().join(moot::parse::ACTIVITY_FILE).exists());
    assert_eq!(
        std::fs::read_to_string(&quiet_completion).expect("completion"),
        "complete 1\n"
    );
}

/// The workspace's `testdata/` directory.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

/// One golden case: `<name>.ndjson` is the input, `<name>.json` the exact expected stdout, and
/// the optional `<name>.args` holds extra flags, one per line. Cases run in their own directory,
/// so a file named in `.args` is relative to it (`{dir}` is accepted and stands for `.`) and no
/// machine-specific path can reach an expected output.
#[derive(Debug)]
pub struct Case {
    pub name: String,
    pub dir: PathBuf,
    pub input: PathBuf,
    pub expected: PathBuf,
    pub args: Vec<String>,
}

/// Every case under `testdata/<dialect>/`, sorted by name.
pub fn cases(dialect: &str) -> Vec<Case> {
    let dir = testdata().join(dialect);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".ndjson").map(str::to_string)
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let args_file = dir.join(format!("{name}.args"));
            let args = std::fs::read_to_string(&args_file)
                .map(|text| {
                    text.lines()
                        .filter(|l| !l.trim().is_empty())
                        .map(|l| l.replace("{dir}", "."))
                        .collect()
                })
                .unwrap_or_default();
            Case {
                dir: dir.clone(),
                input: dir.join(format!("{name}.ndjson")),
                expected: dir.join(format!("{name}.json")),
                name,
                args,
            }
        })
        .collect()
}

/// Runs every golden case of `dialect` through `bin` and checks the whole stdout byte for byte,
/// the exit status (0 exactly when `run.ok`), and stderr (empty on success, else exactly the
/// line the envelope's error makes: see [`check_case`]). With `MOOT_BLESS=1` the expected files
/// are (re)written instead: review the diff before committing.
pub fn check_goldens(bin: &str, tool: &str, dialect: &str) -> usize {
    let bless = std::env::var_os("MOOT_BLESS").is_some();
    let cases = cases(dialect);
    let mut failures = Vec::new();
    for case in &cases {
        let input = std::fs::read(&case.input).expect("read case input");
        let output = run_in(bin, &case.args, &input, Some(&case.dir));
        if bless {
            std::fs::write(&case.expected, &output.stdout).expect("bless");
            continue;
        }
        if let Err(why) = check_case(case, tool, &output) {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden case(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    cases.len()
}

/// Checks one run of `case` by `tool`: stdout is the expected envelope byte for byte; a success
/// exits 0 with nothing on stderr; a failure exits 1 with stderr exactly
/// `{tool}: {class}: {message}\n`, class and message those of the envelope's `run.error`, the
/// message folded onto one line as the parser folds it ([`one_line`]). So a parser cannot say
/// one thing on stderr and another in its envelope.
pub fn check_case(case: &Case, tool: &str, output: &Output) -> Result<(), String> {
    let expected = std::fs::read(&case.expected).map_err(|e| {
        format!(
            "no expected file {} ({e}); run with MOOT_BLESS=1",
            case.expected.display()
        )
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.stdout != expected {
        return Err(format!(
            "stdout differs\n  want: {}\n  got:  {stdout}",
            String::from_utf8_lossy(&expected)
        ));
    }
    let envelope: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| format!("stdout is not JSON: {e}"))?;
    let ok = envelope["run"]["ok"].as_bool().ok_or("run.ok missing")?;
    let status = output.status.code();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if ok {
        if status != Some(0) || !stderr.is_empty() {
            return Err(format!("ok run: status {status:?}, stderr {stderr:?}"));
        }
        return Ok(());
    }
    let error = &envelope["run"]["error"];
    let class = error["class"].as_str().ok_or("run.error.class missing")?;
    let message = error["message"]
        .as_str()
        .ok_or("run.error.message missing")?;
    let want = format!("{tool}: {class}: {}\n", one_line(message));
    if status != Some(1) || output.stderr != want.as_bytes() {
        return Err(format!(
            "failed run: status {status:?}, stderr {stderr:?}, want status Some(1) and stderr {want:?}"
        ));
    }
    Ok(())
}

/// Checks that the man page mentions every long flag `--help` lists (roff's `\-` is read as `-`).
pub fn check_man_page(bin: &str, man_page: &str) {
    let help = run(bin, &["--help".to_string()], b"");
    let help = String::from_utf8_lossy(&help.stdout);
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../man")
            .join(man_page),
    )
    .unwrap_or_else(|e| panic!("cannot read man/{man_page}: {e}"))
    .replace("\\-", "-");
    let missing: Vec<String> = long_flags(&help)
        .into_iter()
        .filter(|flag| !page.contains(&format!("--{flag}")))
        .collect();
    assert!(
        missing.is_empty(),
        "man/{man_page} does not document: --{}",
        missing.join(", --")
    );
}

/// The long flags of clap's options list: lines that open with `-x, --flag` or `--flag`.
fn long_flags(help: &str) -> Vec<String> {
    let mut flags: Vec<String> = help
        .lines()
        .filter(|line| line.trim_start().starts_with('-'))
        .flat_map(|line| {
            line.split_whitespace()
                .take_while(|word| word.starts_with('-'))
                .filter_map(|word| word.trim_end_matches(',').strip_prefix("--"))
                .map(|flag| {
                    flag.split(['=', '[', '<'])
                        .next()
                        .unwrap_or_default()
                        .to_string()
                })
                .collect::<Vec<_>>()
        })
        .filter(|flag| !flag.is_empty())
        .collect();
    flags.sort();
    flags.dedup();
    flags
}

/// The envelope contract every parser's output holds whatever its input (the property tests and
/// the fuzz targets check it): `json` is exactly one JSON object on one line with the keys
/// `gitmoot_result` and `run`; `run.ok` holds exactly when there is an answer and no error; a
/// failure names a known class and carries no answer, result or family; a printed result
/// re-validates to itself (when `require_result`); every input byte is counted. Returns the
/// parsed envelope; panics naming the broken rule.
pub fn check_envelope(json: &str, input_len: u64, require_result: bool) -> serde_json::Value {
    use serde_json::Value;
    assert!(!json.contains('\n'), "the envelope spans lines: {json}");
    let values: Vec<Value> = serde_json::Deserializer::from_str(json)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("the envelope does not parse back ({e}): {json}"));
    assert_eq!(values.len(), 1, "not exactly one envelope: {json}");
    let value = values.into_iter().next().expect("one value");
    let keys: Vec<&str> = value
        .as_object()
        .expect("the envelope is an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["gitmoot_result", "run"], "{json}");
    let run = &value["run"];
    assert_eq!(run["bytes"].as_u64(), Some(input_len), "bytes: {json}");
    let ok = run["ok"].as_bool().expect("run.ok is a boolean");
    if ok {
        assert!(run["answer"].is_string(), "ok without an answer: {json}");
        assert!(run["error"].is_null(), "ok with an error: {json}");
        if require_result {
            let result = value["gitmoot_result"].clone();
            assert_eq!(
                moot::gitmoot_result::validate(result.clone()).as_ref(),
                Ok(&result),
                "the printed result does not validate to itself: {json}"
            );
        }
    } else {
        assert!(run["answer"].is_null(), "a failure with an answer: {json}");
        assert!(
            value["gitmoot_result"].is_null(),
            "a failure with a result: {json}"
        );
        assert!(run["family"].is_null(), "a failure with a family: {json}");
        let class = run["error"]["class"].as_str().expect("run.error.class");
        assert!(
            moot::envelope::ErrorClass::ALL
                .iter()
                .any(|known| known.name() == class),
            "unknown class {class}"
        );
        assert!(run["error"]["message"].is_string(), "no message: {json}");
    }
    value
}

/// The envelope `dialect` prints for `stream` with the default flags, the result required or
/// not (`--text`), checked against the envelope contract ([`check_envelope`]).
pub fn envelope_of<D: moot::dialect::Dialect>(
    dialect: D,
    stream: &[u8],
    require_result: bool,
) -> serde_json::Value {
    checked_envelope(parsed(dialect, stream), stream.len(), require_result)
}

/// The stream read through `dialect`, before the result contract is applied: one read serves
/// the envelopes with and without the result required.
fn parsed<D: moot::dialect::Dialect>(dialect: D, stream: &[u8]) -> moot::parse::Parsed {
    let args = moot::parse::ParseArgs::default();
    moot::parse::parse(dialect, stream, &args).expect("read from memory")
}

/// The envelope of a stream of `len` bytes read into `parsed`, checked by [`check_envelope`].
fn checked_envelope(
    parsed: moot::parse::Parsed,
    len: usize,
    require_result: bool,
) -> serde_json::Value {
    let json = serde_json::to_string(&parsed.into_envelope(require_result)).expect("serialise");
    check_envelope(&json, len as u64, require_result)
}

fn succeeds<D: moot::dialect::Dialect>(dialect: D, stream: &[u8], require_result: bool) -> bool {
    envelope_of(dialect, stream, require_result)["run"]["ok"] == true
}

/// Offsets where a whole line may be inserted: the start (after a BOM) and after every `\n`.
pub fn line_boundaries(stream: &[u8]) -> Vec<usize> {
    let start = if stream.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    std::iter::once(start)
        .chain(memchr::memchr_iter(b'\n', stream).map(|at| at + 1))
        .collect()
}

/// The verdict: the whole envelope but the line and byte counts and the tool tally, with the
/// line number a malformed-row message starts with blanked (inserting lines moves the row, not
/// the verdict). The tally is left out because it counts every tool row, one the verdict's
/// rules never read included: a row that starts a tool call adds a call and nothing else.
pub fn verdict(mut envelope: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    let run = envelope["run"].as_object_mut().expect("run is an object");
    run.remove("lines");
    run.remove("bytes");
    run.remove("tools");
    if let Some(Value::String(message)) = run
        .get_mut("error")
        .and_then(|e| e.as_object_mut())
        .and_then(|e| e.get_mut("message"))
    {
        if let Some(rest) = message.strip_prefix("line ") {
            let after_number = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            *message = format!("line N{after_number}");
        }
    }
    envelope
}

/// Unknown rows never change a verdict: each of `unknown` (a row of a type the dialect does
/// not read, shaped like its real rows and naming what it does read inside) inserted at every
/// line boundary of every golden case of `dialect` that takes no flags leaves the verdict
/// exactly as it was. Returns the number of streams compared.
pub fn check_unknown_rows<D: moot::dialect::Dialect>(
    dialect: &str,
    new: impl Fn() -> D + Sync,
    unknown: &[&str],
) -> usize {
    let plain: Vec<Case> = cases(dialect).into_iter().filter(dialect_only).collect();
    sum_in_parallel(&plain, |case| {
        let stream = std::fs::read(&case.input).expect("read case input");
        if !has_a_row(&stream) {
            // A row added to a stream with none is the CLI's first event: "printed nothing"
            // (no_output) is then no longer true, by design.
            return 0;
        }
        let expected = verdict(envelope_of(new(), &stream, true));
        let mut compared = 0;
        for at in line_boundaries(&stream) {
            for row in unknown {
                let mixed = [&stream[..at], row.as_bytes(), b"\n", &stream[at..]].concat();
                assert_eq!(
                    verdict(envelope_of(new(), &mixed, true)),
                    expected,
                    "{dialect}/{}: {row} inserted at byte {at} changed the verdict",
                    case.name
                );
                compared += 1;
            }
        }
        compared
    })
}

/// Whether `case` is read by its dialect alone: no flag, or only `--no-session-store` (which
/// accepts what the dialect decided about a Kimi Code stream instead of failing it closed).
pub fn dialect_only(case: &Case) -> bool {
    case.args.iter().all(|arg| arg == "--no-session-store")
}

/// Whether `stream` has a line with anything on it (the parsers' first event).
pub fn has_a_row(stream: &[u8]) -> bool {
    stream
        .split(|&b| b == b'\n')
        .any(|line| !moot::ndjson::is_blank(line))
}

/// Where to cut a stream: every byte of a short one; in a long one every line boundary, every
/// byte of the first and last 64 of each line, and every 257th byte between (a cut inside a
/// long line is judged like any other inside it: only its row type matters).
fn cut_points(stream: &[u8]) -> Vec<usize> {
    const SHORT: usize = 16 * 1024;
    const EDGE: usize = 64;
    if stream.len() <= SHORT {
        return (0..stream.len()).collect();
    }
    let mut cuts = Vec::new();
    let mut start = 0;
    for line in stream.split_inclusive(|&b| b == b'\n') {
        let end = start + line.len();
        cuts.extend(
            (start..end).filter(|&at| at < start + EDGE || at + EDGE >= end || at % 257 == 0),
        );
        start = end;
    }
    cuts
}

/// True when `prefix` ends a run: its last whole line is one for which `ends_a_run` holds, and
/// what follows it is at most the start of a line that names no type yet, which the parsers
/// skip like any garbage that identifies nothing.
fn is_a_whole_run(prefix: &[u8], ends_a_run: impl Fn(&[u8]) -> bool) -> bool {
    let Some(newline) = memchr::memrchr(b'\n', prefix) else {
        return false;
    };
    let (lines, tail) = (&prefix[..newline], &prefix[newline + 1..]);
    let last_line = lines.rsplit(|&b| b == b'\n').next().unwrap_or(lines);
    let names_a_type = memchr::memmem::find(tail, b"\"type\":\"")
        .is_some_and(|at| memchr::memchr(b'"', &tail[at + 8..]).is_some());
    ends_a_run(last_line) && !names_a_type
}

/// The truncation property: every real capture of `dialect` that succeeds as it stands (with
/// no flags of its own) fails when cut at any point before its end, with the result required
/// or not. The one exception is a cut that ends a whole earlier run ([`is_a_whole_run`]): omp
/// and pi can write several runs to one stream, and a stream cut just after one is byte for
/// byte a whole run. Returns the number of cuts checked.
pub fn check_truncation<D: moot::dialect::Dialect>(
    dialect: &str,
    new: impl Fn() -> D + Sync,
    ends_a_run: impl Fn(&[u8]) -> bool + Sync,
) -> usize {
    let real: Vec<Case> = cases(dialect)
        .into_iter()
        .filter(|case| case.name.starts_with("real-") && dialect_only(case))
        .collect();
    let captures = std::sync::atomic::AtomicUsize::new(0);
    let checked = sum_in_parallel(&real, |case| {
        let stream = std::fs::read(&case.input).expect("read case input");
        if !succeeds(new(), &stream, true) {
            return 0;
        }
        captures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut checked = 0;
        for cut in cut_points(&stream) {
            let prefix = &stream[..cut];
            if is_a_whole_run(prefix, &ends_a_run) {
                continue;
            }
            let read = parsed(new(), prefix);
            for require_result in [true, false] {
                let envelope = checked_envelope(read.clone(), prefix.len(), require_result);
                assert!(
                    envelope["run"]["ok"] != true,
                    "{dialect}/{} cut at byte {cut} of {} succeeded",
                    case.name,
                    stream.len()
                );
                checked += 1;
            }
        }
        checked
    });
    assert!(
        captures.into_inner() > 0,
        "no successful real capture under testdata/{dialect}"
    );
    checked
}

/// The sum of `check` over `cases`, run on every core: the property checks re-read each stream
/// once per cut or insertion, which is most of `cargo test`'s time on one thread. The largest
/// cases go first so that no thread is left with one at the end. A failed check's panic is
/// passed on as it was raised.
fn sum_in_parallel(cases: &[Case], check: impl Fn(&Case) -> usize + Sync) -> usize {
    let mut order: Vec<&Case> = cases.iter().collect();
    order.sort_by_key(|case| {
        std::cmp::Reverse(std::fs::metadata(&case.input).map_or(0, |m| m.len()))
    });
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.min(order.len()))
            .map(|_| {
                scope.spawn(|| {
                    let mut sum = 0;
                    while let Some(case) =
                        order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        sum += check(case);
                    }
                    sum
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .sum()
    })
}

/// Rows of types the pi family (omp, pi) does not read, shaped like its own and naming, inside,
/// the types and values it does read: for [`check_unknown_rows`].
pub const PI_FAMILY_UNKNOWN_ROWS: &[&str] = &[
    r#"{"type":"zz_future","message":{"role":"assistant","content":[{"type":"text","text":"spoof"}],"stopReason":"error"}}"#,
    r#"{"type":"tool_execution_end","toolCallId":"x","result":{"content":[{"type":"text","text":"{\"type\":\"agent_end\"}"}]},"isError":true}"#,
    r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"message_end"},"message":{"role":"assistant"}}"#,
];

/// The line that ends a pi-family run (its `agent_end`): for [`check_truncation`].
pub fn ends_a_pi_family_run(line: &[u8]) -> bool {
    line.starts_with(br#"{"type":"agent_end""#)
}

/// Runs `bin <flags>` in `dir` on golden case `real-plain` of `dialect`: for the flags that name
/// files relative to the working directory (`--stderr-file`, `--cleanup`).
pub fn run_plain_in(bin: &str, dialect: &str, flags: &[&str], dir: &Path) -> Output {
    run_in(bin, &args(flags), &case(dialect, "real-plain"), Some(dir))
}

/// Like [`text_failure`] (no flags), and checks that its one stderr line starts with `prefix`:
/// for failures whose provider text after the class is not worth pinning whole.
pub fn text_failure_starts_with(bin: &str, dialect: &str, name: &str, prefix: &str) {
    let stderr = text_failure(bin, dialect, name, &[]);
    assert!(stderr.starts_with(prefix), "{dialect}/{name}: {stderr}");
}
