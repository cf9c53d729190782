//! moot-doctor: certifies the CLI a user actually has. For each runtime it reads the CLI's
//! version and compares it with the known-good range its runtime declares
//! (`runtime/<rt>/doctor.rs`), starts the fake model on loopback, writes a private HOME that
//! points the CLI at it, and runs every scenario ([`scenario::SCENARIOS`]) through the README's
//! pipeline with moot's own tools, comparing each verdict with the expected one.

mod fake_home;
pub mod output;
pub mod pipeline;
pub mod scenario;

use std::fs;
use std::io::{self, IsTerminal, Write};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::fake_model::{self, FakeModel};
use crate::http;
use moot::model::doctor::{known_good, known_good_range, same_major, version_in, FAKE_KEY};
use moot::model::{Certify, FakeHome, Meta};
use moot::registry;
use moot::sandbox::environment::Environment;
use moot::tree;

use output::{Report, RuntimeReport, ScenarioReport};
use pipeline::{Env, Outcome, Pipeline};
use scenario::{
    Check, Scenario, NOT_APPLICABLE, PLANT_MARKS, RESUME_MARKER, SCENARIOS, WRITTEN_FILE,
};

/// Exit status: a scenario differed (or, with `--strict`, a version was out of range).
pub const EXIT_DIFFERS: u8 = 1;
/// Exit status: a usage error.
pub const EXIT_USAGE: u8 = 2;

/// How long a CLI may take to print its version.
const PROBE_LIMIT: Duration = Duration::from_secs(30);

/// moot-doctor's flags.
#[derive(Debug, Default, Args)]
pub struct DoctorArgs {
    /// The runtimes to certify (default: every registered runtime with a parser whose CLI is on
    /// PATH).
    #[arg(value_name = "RUNTIME")]
    pub runtimes: Vec<String>,

    /// Certify this executable instead of the runtime's CLI on PATH (one RUNTIME only).
    #[arg(long, value_name = "PATH")]
    pub program: Option<PathBuf>,

    /// A version outside the known-good range, or an environment where Landlock cannot
    /// enforce, fails (exit 1) instead of only being reported.
    #[arg(long)]
    pub strict: bool,

    /// Only report the environment a job would run in: Landlock (and whether a probe saw it
    /// enforce), seccomp, no_new_privs, the container, user namespaces. No CLI is run.
    #[arg(long, conflicts_with_all = ["runtimes", "program", "keep", "scenarios", "serve", "fake_home"])]
    pub environment: bool,

    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Keep every run's transcript, envelope and stderr under DIR/<runtime>/ as
    /// <scenario>.ndjson, <scenario>.json and <scenario>.stderr (a golden's pair, and what to
    /// attach to a bug report).
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,

    // The help lists the scenarios from their one list.
    #[arg(long = "scenario", value_name = "NAME", help = certify_scenarios_help())]
    pub scenarios: Vec<String>,

    /// The deadline of one run, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    pub deadline: u64,

    /// Only serve the fake model on 127.0.0.1 (its origin is printed on stdout once it
    /// listens), until killed.
    #[arg(long, conflicts_with_all = ["runtimes", "program", "strict", "json", "keep", "scenarios"])]
    pub serve: bool,

    /// With --serve: the port (default: any free port).
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,

    // The help lists the fake model's scenarios from their one list.
    #[arg(long, value_name = "FILE", help = serve_scenarios_help())]
    pub scenario_file: Option<PathBuf>,

    /// With --serve: write every request body into DIR.
    #[arg(long, value_name = "DIR")]
    pub dump_dir: Option<PathBuf>,

    /// With --serve: append one JSON line per request to FILE.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,

    /// With --serve: answer a model call 401 unless its Authorization or x-api-key header
    /// carries the key in FILE (its first line), as a real provider does: a test of a
    /// credential proxy sees which key arrived.
    #[arg(long, value_name = "FILE")]
    pub require_key_file: Option<PathBuf>,

    /// With --serve: how many model calls the retry and retry500 scenarios fail before they
    /// recover (default: 1).
    #[arg(long, value_name = "N")]
    pub retry_fails: Option<u32>,

    /// With --serve: the scenario retry and retry500 recover into (default: plain).
    #[arg(long, value_name = "SCENARIO")]
    pub retry_then: Option<String>,

    /// With --serve: answer with the legacy {"status":"ok"} gitmoot_result, which moot's
    /// parsers refuse as invalid.
    #[arg(long)]
    pub legacy_result: bool,

    /// With --serve: serve HTTPS with the PEM certificate chain in FILE (and --tls-key): the
    /// origin printed is https://, for a test of moot-broker --upstream-ca.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// With --serve --tls-cert: the certificate's PEM private key.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Only write RUNTIME's configuration for the fake model at --origin into DIR (made if
    /// absent), as a certification does, and print as sh assignments what to run the CLI with
    /// there (HOME=DIR): a certification's run, by hand, beside --serve.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = ["serve", "program", "strict", "json", "keep", "scenarios"]
    )]
    pub fake_home: Option<PathBuf>,

    /// With --fake-home: the fake model's origin, as --serve printed it.
    #[arg(long, value_name = "URL")]
    pub origin: Option<String>,

    /// With --fake-home: the provider key the configuration holds, the first line of FILE
    /// (default: moot-doctor's own dummy key).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,

    /// With --fake-home: mark the project DIR trusted, for a CLI that reads a repository's own
    /// configuration only from a trusted project (codex); the others have no such notion and
    /// ignore it.
    #[arg(long, value_name = "DIR")]
    pub trust: Option<PathBuf>,
}

/// `--scenario`'s help: every scenario moot-doctor certifies.
fn certify_scenarios_help() -> String {
    let names: Vec<&str> = scenario::SCENARIOS.iter().map(|s| s.name).collect();
    format!(
        "Run only this scenario (repeatable; default: all of them): {}",
        names.join(", ")
    )
}

/// `--scenario-file`'s help: what the file holds, and every scenario `--serve` knows.
fn serve_scenarios_help() -> String {
    format!(
        "With --serve: the file whose first line names the scenario, re-read on every request \
         (`toolcmd CMD` runs CMD; an empty line is plain): {}",
        fake_model::scenario::Scenario::NAMES.join(", ")
    )
}

/// moot-doctor's body: serves, or certifies and prints the report.
pub fn run(tool: &str, args: &DoctorArgs) -> Result<ExitCode> {
    if args.serve {
        return serve(tool, args);
    }
    if args.environment {
        return environment_only(tool, args);
    }
    let chosen = match choose(args) {
        Ok(chosen) => chosen,
        Err(problem) => {
            moot::eprintln_whole!("{tool}: {problem}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    };
    if let Some(home) = &args.fake_home {
        return fake_home::write(tool, args, home, &chosen);
    }
    let environment = moot::sandbox::environment();
    let mut report = Report {
        ok: environment_holds(tool, args, &environment),
        environment,
        runtimes: Vec::new(),
    };
    // On a terminal each row is printed as its scenario ends (a full run takes minutes);
    // otherwise the table or the JSON comes at the end, and a log gets one line per CLI.
    let live = !args.json && io::stdout().is_terminal();
    if live {
        output::environment_table(&report.environment, &mut io::stdout().lock())?;
        output::table_header(&mut io::stdout().lock())?;
    }
    for (meta, certify) in chosen {
        let rt = certify_one(args, meta, certify, &mut |rt, scenario| {
            if live {
                // A row that cannot be shown now is still in the report's verdict.
                let _ = rt.row(scenario, &mut io::stdout().lock());
            }
        });
        if live {
            rt.status_rows(&mut io::stdout().lock())?;
        } else {
            moot::eprintln_whole!("{tool}: {}", rt.summary());
        }
        for s in rt.scenarios.iter().filter(|s| s.result == FAIL) {
            moot::eprintln_whole!(
                "{tool}: {} {}: expected {}, observed {}",
                rt.runtime,
                s.scenario,
                s.expected,
                s.observed
            );
        }
        if let Some(problem) = &rt.problem {
            moot::eprintln_whole!("{tool}: {}: {problem}", rt.runtime);
        }
        if let (Some(streamed), Some(probed)) = (&rt.stream_version, &rt.version) {
            if version_in(streamed).as_ref() != Some(probed) {
                moot::eprintln_whole!(
                    "{tool}: {}: its stream names version {streamed}, its --version printed {probed}",
                    rt.runtime
                );
            }
        }
        if !rt.in_range && rt.version.is_some() && rt.skipped.is_none() {
            moot::eprintln_whole!(
                "{tool}: {}: version {} is outside the known-good range {}{}",
                rt.runtime,
                rt.version.as_deref().unwrap_or("unknown"),
                rt.known_good,
                if args.strict {
                    ""
                } else {
                    " (reported only; --strict fails it)"
                }
            );
        }
        report.ok &= rt.problem.is_none()
            && rt.scenarios.iter().all(|s| s.result != FAIL)
            && (rt.in_range || !args.strict || rt.skipped.is_some());
        report.runtimes.push(rt);
    }
    if live {
        report.wall_times(&mut io::stdout().lock())?;
    } else {
        report.print(args.json, &mut io::stdout().lock())?;
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_DIFFERS)
    })
}

const PASS: &str = "pass";
const FAIL: &str = "FAIL";

/// `--environment`: the environment alone, as a table or JSON; with `--strict`, exit 1 where
/// Landlock cannot enforce.
fn environment_only(tool: &str, args: &DoctorArgs) -> Result<ExitCode> {
    let environment = moot::sandbox::environment();
    let holds = environment_holds(tool, args, &environment);
    let mut out = io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &environment)?;
        writeln!(out)?;
    } else {
        output::environment_table(&environment, &mut out)?;
    }
    out.flush()?;
    Ok(if holds {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_DIFFERS)
    })
}

/// Whether the environment lets a job be confined, said on stderr when it does not; it fails
/// the run only under `--strict` (every scenario would fail anyway, each saying why).
fn environment_holds(tool: &str, args: &DoctorArgs, environment: &Environment) -> bool {
    if environment.enforces {
        return true;
    }
    let why = match (&environment.landlock_abi, &environment.landlock_errno) {
        (Some(abi), _) => format!("Landlock ABI {abi} answers, but the probe saw no write denied"),
        (None, Some(errno)) => format!(
            "Landlock is {} ({errno})",
            environment.landlock.replace('_', " ")
        ),
        (None, None) => "Landlock does not answer".to_string(),
    };
    moot::eprintln_whole!(
        "{tool}: this environment cannot confine a job: {why}{}",
        if args.strict {
            ""
        } else {
            " (reported only; --strict fails it)"
        }
    );
    !args.strict
}

/// The runtimes asked for, or every certifiable one on PATH; a usage problem as one line.
fn choose(args: &DoctorArgs) -> Result<Vec<(&'static Meta, &'static Certify)>, String> {
    // By hand: clap counts --serve's default (false) as present for `requires`.
    let serve_only = [
        ("--port", args.port.is_some()),
        ("--scenario-file", args.scenario_file.is_some()),
        ("--dump-dir", args.dump_dir.is_some()),
        ("--log", args.log.is_some()),
        ("--require-key-file", args.require_key_file.is_some()),
        ("--retry-fails", args.retry_fails.is_some()),
        ("--retry-then", args.retry_then.is_some()),
        ("--legacy-result", args.legacy_result),
        ("--tls-cert", args.tls_cert.is_some()),
        ("--tls-key", args.tls_key.is_some()),
    ];
    if let Some((flag, _)) = serve_only.iter().find(|(_, given)| *given) {
        return Err(format!("{flag} is for --serve only"));
    }
    if args.fake_home.is_some() {
        if args.runtimes.len() != 1 {
            return Err("--fake-home takes exactly one RUNTIME".into());
        }
        match args.origin.as_deref() {
            None => {
                return Err(
                    "--fake-home needs --origin URL (the fake model's, as --serve printed it)"
                        .into(),
                )
            }
            Some(origin) if !is_origin(origin) => {
                return Err(format!(
                    "--origin {origin}: not an http:// or https:// origin (give the fake \
                     model's, as --serve printed it: http://127.0.0.1:PORT)"
                ))
            }
            Some(_) => {}
        }
    } else if let Some(flag) = [
        ("--origin", args.origin.is_some()),
        ("--key-file", args.key_file.is_some()),
        ("--trust", args.trust.is_some()),
    ]
    .iter()
    .find_map(|(flag, given)| given.then_some(flag))
    {
        return Err(format!("{flag} is for --fake-home only"));
    }
    for name in &args.scenarios {
        if scenario::find(name).is_none() {
            let names: Vec<&str> = SCENARIOS.iter().map(|s| s.name).collect();
            return Err(format!(
                "--scenario {name}: no such scenario; use one of {}",
                names.join(", ")
            ));
        }
    }
    if args.runtimes.is_empty() {
        if args.program.is_some() {
            return Err("--program needs the RUNTIME it is a CLI of".into());
        }
        let found: Vec<_> = certifiable()
            .filter(|(meta, _)| moot::program::find_on_path(meta.executable).is_some())
            .collect();
        if found.is_empty() {
            // Kimi Code and kimi-cli share `kimi`: each name once.
            let mut names: Vec<&str> = Vec::new();
            for (meta, _) in certifiable() {
                if !names.contains(&meta.executable) {
                    names.push(meta.executable);
                }
            }
            return Err(format!(
                "none of {} is on PATH; install one or name a RUNTIME with --program",
                names.join(", ")
            ));
        }
        return Ok(found);
    }
    if args.program.is_some() && args.runtimes.len() != 1 {
        return Err("--program takes exactly one RUNTIME".into());
    }
    let mut chosen = Vec::new();
    for name in &args.runtimes {
        let meta = registry::find(name).map_err(|refusal| refusal.to_string())?;
        let certify = meta
            .doctor
            .filter(|_| meta.parser.is_some())
            .ok_or_else(|| {
                let names: Vec<&str> = certifiable().map(|(m, _)| m.name).collect();
                format!(
                    "runtime {name} has no CLI to certify; use one of {}",
                    names.join(", ")
                )
            })?;
        chosen.push((meta, certify));
    }
    Ok(chosen)
}

/// Whether `url` is an origin (`http://HOST[:PORT]` or https), as --serve prints one: it goes
/// verbatim into the CLIs' configuration files.
fn is_origin(url: &str) -> bool {
    url.parse::<hyper::Uri>().is_ok_and(|uri| {
        matches!(uri.scheme_str(), Some("http" | "https"))
            && uri.host().is_some_and(|host| !host.is_empty())
            && uri.path_and_query().is_none_or(|p| p.as_str() == "/")
            && !url.ends_with('/')
    })
}

/// Every registered runtime with a parser and a doctor record.
fn certifiable() -> impl Iterator<Item = (&'static Meta, &'static Certify)> {
    registry::all()
        .iter()
        .copied()
        .filter(|meta| meta.parser.is_some())
        .filter_map(|meta| meta.doctor.map(|certify| (meta, certify)))
}

/// Certifies one runtime: never an `Err`, a problem is part of its report.
/// What is told each scenario's row as it ends, with its runtime's report so far.
type Progress<'a> = dyn FnMut(&RuntimeReport, &ScenarioReport) + 'a;

fn certify_one(
    args: &DoctorArgs,
    meta: &'static Meta,
    certify: &'static Certify,
    progress: &mut Progress,
) -> RuntimeReport {
    let started = Instant::now();
    let mut report = RuntimeReport {
        runtime: meta.name,
        program: None,
        version: None,
        pinned: certify.pinned(),
        known_good: known_good_range(certify.pinned()),
        in_range: false,
        stream_version: None,
        skipped: None,
        problem: None,
        scenarios: Vec::new(),
        seconds: 0.0,
    };
    if let Err(problem) = certify_into(args, meta, certify, &mut report, progress) {
        report.problem = Some(format!("{problem:#}"));
    }
    report.seconds = started.elapsed().as_secs_f64();
    report
}

/// One certification's private temporary directory: the HOME, the workspace and the stages,
/// which the CLI under certification wrote into. It is removed with [`tree::remove_tree`] when
/// it drops: a hostile CLI's deep or read-only trees defeat `remove_dir_all`, not that.
struct Scratch(PathBuf);

impl Scratch {
    fn create() -> Result<Scratch> {
        let dir = tempfile::Builder::new()
            .prefix("moot-doctor.")
            .tempdir()
            .context("a private temporary directory")?;
        Ok(Scratch(dir.keep()))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(e) = tree::remove_tree(&self.0) {
            moot::eprintln_whole!("moot-doctor: cannot remove {}: {e}", self.0.display());
        }
    }
}

/// Everything one runtime's certification holds while it runs. Its temporary directory (the
/// private HOME, the workspace, the stages) is removed when it drops.
struct Bench<'a> {
    args: &'a DoctorArgs,
    meta: &'static Meta,
    certify: &'static Certify,
    dir: Scratch,
    model: FakeModel,
    fake: FakeHome,
    env: Env,
    tools: [PathBuf; 5],
    /// The provider key the credential proxy holds (a 0600 file of the scratch).
    key_file: PathBuf,
    workspace: PathBuf,
    /// The CLI's private state: its HOME in the seat (the doctor's `home` is the operator's).
    state: PathBuf,
    /// The last version a run's stream named (`run.cli_version`).
    streamed: std::cell::RefCell<Option<String>>,
    /// The last failed run's `run.error.message`: why, for a scenario that did not match.
    failed_because: std::cell::RefCell<Option<String>>,
}

fn certify_into(
    args: &DoctorArgs,
    meta: &'static Meta,
    certify: &'static Certify,
    report: &mut RuntimeReport,
    progress: &mut Progress,
) -> Result<()> {
    let program = match &args.program {
        Some(path) => moot::program::resolve_program(path.as_os_str(), None)
            .with_context(|| format!("--program {}", path.display()))?,
        None => moot::program::find_on_path(meta.executable).with_context(|| {
            format!(
                "{} is not on PATH (or name it with --program)",
                meta.executable
            )
        })?,
    };
    report.program = Some(program.display().to_string());
    let tools = Pipeline::tools(meta)?;
    let dir = Scratch::create()?;
    let home = dir.path().join("home");
    let bin = dir.path().join("bin");
    let dump = dir.path().join("dump");
    for made in [&home, &bin, &dump] {
        fs::create_dir(made).with_context(|| made.display().to_string())?;
    }
    // The CLI under its runtime's executable name, first on PATH: what moot-render's argv
    // names is then the program being certified.
    symlink(absolute(&program)?, bin.join(meta.executable)).context("the CLI's link")?;
    // Every run goes through a credential proxy, as the README pipeline's does: the fake
    // model takes only the key the proxy holds, and the seat holds the job token.
    let key_file = dir.path().join("provider.key");
    moot::private_file::create_private(&key_file)
        .and_then(|mut file| file.write_all(FAKE_KEY.as_bytes()))
        .context("the provider key")?;
    let model = FakeModel::start(fake_model::Options {
        dump_dir: Some(dump),
        required_key: Some(FAKE_KEY.to_string()),
        ..fake_model::Options::default()
    })
    .context("the fake model")?;
    let fake = (certify.fake_home)(&home, &model.origin(), FAKE_KEY).context("the private HOME")?;
    let env = Env::new(&home, &bin, program.parent(), &fake);

    let [_, _, _, sandbox, _] = &tools;
    let state = dir.path().join("state");
    let probe = pipeline::Probe {
        sandbox,
        runtime: meta.name,
        program: &bin.join(meta.executable),
        args: certify.version_args,
        state: &state,
    };
    let printed = pipeline::probe(&env, &probe, dir.path(), PROBE_LIMIT)?;
    report.version = version_in(&printed);
    report.in_range = report
        .version
        .as_deref()
        .is_some_and(|v| known_good(certify.pinned(), v));

    let dir_ws = dir.path().join("ws");
    if let Some(why) = another_runtimes_cli(args, meta, certify, report.version.as_deref()) {
        report.skipped = Some(why);
        return Ok(());
    }
    let bench = Bench {
        args,
        meta,
        certify,
        dir,
        model,
        fake,
        env,
        tools,
        key_file,
        workspace: dir_ws,
        state,
        streamed: Default::default(),
        failed_because: Default::default(),
    };
    for scenario in SCENARIOS
        .iter()
        .filter(|s| args.scenarios.is_empty() || args.scenarios.iter().any(|n| n == s.name))
    {
        let row = bench.scenario(scenario);
        progress(report, &row);
        report.scenarios.push(row);
    }
    report.stream_version = bench.streamed.take();
    if let Some(keep) = &args.keep {
        let kept = keep.join(meta.name);
        fs::create_dir_all(&kept).with_context(|| format!("--keep {}", kept.display()))?;
        fs::write(kept.join("version.txt"), printed)?;
    }
    Ok(())
}

/// When the runtime was not named and shares its executable name with another certifiable
/// runtime, whether the CLI found is that other runtime's (its major version is not this
/// runtime's): then it is left out rather than failed.
fn another_runtimes_cli(
    args: &DoctorArgs,
    meta: &Meta,
    certify: &Certify,
    version: Option<&str>,
) -> Option<String> {
    let shared = certifiable()
        .any(|(other, _)| other.name != meta.name && other.executable == meta.executable);
    let version = version?;
    (args.runtimes.is_empty() && shared && !same_major(certify.pinned(), version)).then(|| {
        format!(
            "the {} found is version {version}, another runtime's CLI ({} is {})",
            meta.executable,
            meta.name,
            known_good_range(certify.pinned())
        )
    })
}

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    Ok(std::env::current_dir()?.join(path))
}

impl Bench<'_> {
    fn scenario(&self, scenario: &'static Scenario) -> ScenarioReport {
        let started = Instant::now();
        self.failed_because.take();
        let expected = scenario::expected(self.meta, self.certify, scenario);
        let observed = if expected == NOT_APPLICABLE {
            "-".to_string()
        } else {
            self.observe(scenario)
                .unwrap_or_else(|e| format!("not run: {e:#}"))
        };
        let result = if expected == NOT_APPLICABLE {
            NOT_APPLICABLE
        } else if scenario::matches(expected, &observed) {
            PASS
        } else {
            FAIL
        };
        ScenarioReport {
            scenario: scenario.name,
            expected,
            observed,
            result,
            why: self.failed_because.take().filter(|_| result == FAIL),
            seconds: started.elapsed().as_secs_f64(),
        }
    }

    /// A fresh git workspace, an empty dump of requests, and the fake model set to `fake`.
    fn prepare(&self, fake: &str) -> Result<()> {
        let ws = &self.workspace;
        tree::remove_tree(ws).with_context(|| format!("the last workspace, {}", ws.display()))?;
        fs::create_dir(ws)?;
        let git = |args: &[&str]| -> Result<()> {
            let status = Command::new("git")
                .env_clear()
                .envs(self.env.vars.iter().map(|(k, v)| (k, v)))
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .args([
                    "-c",
                    "user.email=doctor@moot",
                    "-c",
                    "user.name=moot-doctor",
                ])
                .args(args)
                .current_dir(ws)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .context("git (the workspace is a git repository, as a job's is)")?;
            if !status.success() {
                bail!("git {}: {status}", args.join(" "));
            }
            Ok(())
        };
        git(&["init", "-q"])?;
        git(&["commit", "-q", "--allow-empty", "-m", "init"])?;
        self.clear_dump()?;
        self.model.reset();
        self.model
            .set_scenario(fake)
            .map_err(|e| anyhow::anyhow!("the fake model refused scenario {fake}: {e}"))
    }

    /// Plants the runtime's repository files in the workspace, but those its CLI has no switch
    /// for (`repo_code`: moot-render refuses those, as its own tests show).
    fn plant(&self) -> Result<()> {
        let marks = self.workspace.join(PLANT_MARKS);
        fs::create_dir(&marks)?;
        let refused = |path: &str| {
            self.meta
                .repo_code
                .iter()
                .any(|code| path == *code || path.starts_with(&format!("{code}/")))
        };
        for (path, text) in self.certify.plants.iter().filter(|(p, _)| !refused(p)) {
            let text = text.replace("@MARK@", &marks.to_string_lossy());
            moot::model::doctor::write_config(&self.workspace, path, &text)?;
        }
        Ok(())
    }

    /// The markers planted code left: each names what ran.
    fn planted_code_that_ran(&self) -> Result<Vec<String>> {
        let mut ran: Vec<String> = fs::read_dir(self.workspace.join(PLANT_MARKS))?
            .map(|entry| Ok(entry?.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_>>()?;
        ran.sort();
        Ok(ran)
    }

    fn dump(&self) -> PathBuf {
        self.dir.path().join("dump")
    }

    fn clear_dump(&self) -> Result<()> {
        for entry in fs::read_dir(self.dump())? {
            let path = entry?.path();
            tree::remove_tree(&path)?;
        }
        Ok(())
    }

    /// Whether a request the fake model received since the last clear carried `marker`.
    fn model_saw(&self, marker: &str) -> Result<bool> {
        for entry in fs::read_dir(self.dump())? {
            let path = entry?.path();
            if path.is_file()
                && fs::read_to_string(&path)
                    .unwrap_or_default()
                    .contains(marker)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether the fake model answered a call with an HTTP error since the last reset.
    fn model_failed_a_call(&self) -> bool {
        self.model
            .requests()
            .iter()
            .any(|r| matches!(r.plan, Some(fake_model::Plan::HttpError { .. })))
    }

    fn pipeline(&self) -> Pipeline<'_> {
        let [render, broker, run, sandbox, parse] = self.tools.clone();
        Pipeline {
            broker,
            origin: self.model.origin(),
            key_file: &self.key_file,
            meta: self.meta,
            fake: &self.fake,
            env: &self.env,
            workspace: &self.workspace,
            state: &self.state,
            render,
            run,
            sandbox,
            parse,
        }
    }

    /// Runs `scenario` and says what moot concluded, with what a scenario checks beyond the
    /// verdict.
    fn observe(&self, scenario: &Scenario) -> Result<String> {
        self.prepare(scenario.fake)?;
        let deadline = match self.fake.drop_deadline {
            Some(seconds) if scenario.name == DROP => seconds,
            _ => self.args.deadline,
        };
        if scenario.check == Check::LoadsNothing {
            self.plant()?;
        }
        let prompt = match scenario.check {
            Check::Verdict | Check::Recovers => "Inspect the workspace.",
            Check::WroteFile | Check::LoadsNothing => "Run the tool.",
            Check::Resumes => FIRST_TURN,
        };
        let first = self.turn(scenario.name, prompt, deadline, None)?;
        let observed = self.verdict(&first);
        match scenario.check {
            Check::Verdict => Ok(observed),
            Check::Recovers => Ok(if observed == "ok" && !self.model_failed_a_call() {
                "ok but the model never failed a call".into()
            } else {
                observed
            }),
            Check::WroteFile => Ok(
                if observed == "ok" && !self.workspace.join(WRITTEN_FILE).is_file() {
                    format!("ok but no {WRITTEN_FILE} in the workspace")
                } else {
                    observed
                },
            ),
            Check::LoadsNothing => {
                let ran = self.planted_code_that_ran()?;
                Ok(if !ran.is_empty() {
                    format!("the repository's code ran: {}", ran.join(" "))
                } else if observed == "ok" && !self.workspace.join(WRITTEN_FILE).is_file() {
                    format!("ok but no {WRITTEN_FILE} in the workspace")
                } else {
                    observed
                })
            }
            Check::Resumes => {
                if observed != "ok" {
                    return Ok(format!("{observed} (first turn)"));
                }
                let session = first
                    .envelope
                    .as_ref()
                    .and_then(|e| e["run"]["session_id"].as_str().map(str::to_string))
                    .or(first.announced);
                let Some(session) = session else {
                    return Ok("ok but the first turn named no session".into());
                };
                self.clear_dump()?;
                let label = format!("{}-2", scenario.name);
                let second = self.turn(&label, "Second turn.", deadline, Some(&session))?;
                let observed = self.verdict(&second);
                Ok(if observed != "ok" {
                    format!("{observed} (second turn)")
                } else if !self.model_saw(RESUME_MARKER)? {
                    "ok but the second turn did not carry the first".into()
                } else {
                    observed
                })
            }
        }
    }

    /// One run through the pipeline, its files kept under `--keep` as `<label>.*`.
    fn turn(
        &self,
        label: &str,
        prompt: &str,
        deadline: u64,
        session: Option<&str>,
    ) -> Result<Outcome> {
        let stage = self.dir.path().join(format!("stage-{label}"));
        let outcome = self
            .pipeline()
            .run_once(&stage, prompt, deadline, session)?;
        if let Some(keep) = &self.args.keep {
            keep_files(&outcome.stage, &keep.join(self.meta.name), label)
                .with_context(|| format!("--keep {}", keep.display()))?;
        }
        Ok(outcome)
    }

    fn verdict(&self, outcome: &Outcome) -> String {
        match &outcome.envelope {
            Some(envelope) => {
                if let Some(version) = envelope["run"]["cli_version"].as_str() {
                    self.streamed.replace(Some(version.to_string()));
                }
                if let Some(message) = envelope["run"]["error"]["message"].as_str() {
                    self.failed_because.replace(Some(message.to_string()));
                }
                scenario::observe(envelope, outcome.exit, self.meta.matrix.usage)
            }
            None => format!(
                "no envelope (parser exit {})",
                scenario::exit_word(outcome.exit)
            ),
        }
    }
}

/// The scenario whose deadline a runtime may shorten (`FakeHome::drop_deadline`).
const DROP: &str = "drop";

/// The first turn of the resume scenario: the second must carry it.
const FIRST_TURN: &str = "First turn: remember the word ZEBRA-41.";

/// Copies one run's transcript, envelope and every stderr into `dir` as `<label>.ndjson`,
/// `<label>.json` and `<label>.stderr` (the tools' and the CLI's, each under a header).
fn keep_files(stage: &Path, dir: &Path, label: &str) -> Result<()> {
    fs::create_dir_all(dir)?;
    let copy = |from: &str, to: String| -> Result<()> {
        let from = stage.join(from);
        if from.is_file() {
            fs::copy(&from, dir.join(to)).with_context(|| from.display().to_string())?;
        }
        Ok(())
    };
    copy("run.ndjson", format!("{label}.ndjson"))?;
    copy("envelope.json", format!("{label}.json"))?;
    let mut stderr = Vec::new();
    for (name, what) in [
        ("render.err", "moot-render"),
        ("run.err", "moot-run (and the CLI)"),
        ("cli.err", "the CLI (--stderr-file)"),
        ("parse.err", "the parser"),
    ] {
        if let Ok(text) = fs::read(stage.join(name)) {
            writeln!(stderr, "==> {what} <==")?;
            stderr.extend(text);
        }
    }
    fs::write(dir.join(format!("{label}.stderr")), stderr)?;
    Ok(())
}

/// The key on the first line of `path`, which `flag` named.
fn key_in(flag: &str, path: &Path) -> Result<String> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("{flag} ({})", path.display()))?;
    match text.lines().next().map(str::trim) {
        Some(key) if !key.is_empty() => Ok(key.to_string()),
        _ => bail!("{flag} ({}): no key on its first line", path.display()),
    }
}

/// `--serve`: only the fake model, its origin on stdout once it listens.
fn serve(tool: &str, args: &DoctorArgs) -> Result<ExitCode> {
    if let Some(then) = &args.retry_then {
        if let Err(problem) = fake_model::Scenario::parse(then) {
            moot::eprintln_whole!("{tool}: --retry-then {then}: {problem}");
            return Ok(ExitCode::from(EXIT_USAGE));
        }
    }
    let defaults = fake_model::Options::default();
    let options = fake_model::Options {
        port: args.port,
        scenario_file: args.scenario_file.clone(),
        log: args.log.clone(),
        dump_dir: args.dump_dir.clone(),
        required_key: args
            .require_key_file
            .as_deref()
            .map(|path| key_in("--require-key-file", path))
            .transpose()?,
        retry_fails: args.retry_fails.unwrap_or(defaults.retry_fails),
        retry_then: args.retry_then.clone(),
        legacy_result: args.legacy_result,
    };
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            Some(http::Tls::from_pem_files(cert, key).with_context(|| {
                format!("--tls-cert {} --tls-key {}", cert.display(), key.display())
            })?)
        }
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    fake_model::serve_forever(options, tls, |port| {
        let mut out = io::stdout().lock();
        let _ = writeln!(out, "{scheme}://127.0.0.1:{port}");
        let _ = out.flush();
    })
    .context("the fake model")?;
    Ok(ExitCode::SUCCESS)
}
