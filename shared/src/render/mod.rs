//! moot-render: the argument vector of one delivery, and nothing but the argument vector.
//!
//! This module owns what is the same for every runtime: the job model (flags and the
//! `MOOT_<RUNTIME>_DEFAULT_*` environment, nothing else), the checks every runtime shares
//! (capabilities, write gates, plan pairing, model and effort values, grants, files), reading the
//! prompt, routing it to argv or to a staged file, the output formats, and the dispatch to the
//! runtime's own builder (`runtime/<rt>/argv.rs`), which alone knows its flags.
//!
//! Nothing is staged until every check has passed, so a refusal (exit 2) leaves nothing behind.
//!
//! This file holds the flags and the flow; `resolve` the shared checks, `prompt` reading the
//! prompt, `output` the formats printed.

mod output;
mod prompt;
mod resolve;

use output::emit;
pub use output::{payload, Output};
use prompt::read_prompt;
use resolve::resolve_job;

use std::ffi::OsString;
use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::model::{
    nonblank, Action, Built, Declared, Delivery, Host, Job, Meta, Policy, Refusal, Staged,
};
use crate::registry::{self, Entry};
use crate::stage::{self, Route, StagePlan};

/// Exit status of a refusal: bad input, nothing staged.
pub const EXIT_REFUSED: u8 = 2;
/// Exit status of a failure of the machine: the staged file or stdout could not be written.
pub const EXIT_FAILED: u8 = 1;

/// How the argv is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Format {
    /// Each element followed by a NUL byte (for `moot-run`, `xargs -0`).
    #[default]
    Nul,
    /// One JSON object: argv, staged paths, policy, plan mode, session id, warnings. A preview:
    /// stages nothing, and says where a large prompt would go.
    Json,
    /// One shell-quoted line, for a human. A preview, as json.
    Sh,
}

/// The policy as the output reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PolicyReport {
    pub value: Policy,
    pub declared: Declared,
    /// Who enforces the policy: the CLI's own sandbox and approvals, or, in a seat, the kernel
    /// through moot-sandbox.
    pub enforced_by: Enforcer,
}

/// Who enforces a policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Enforcer {
    /// The CLI's own sandbox and approval prompts.
    Cli,
    /// Landlock, through moot-sandbox wrapping the CLI (`--seat`).
    MootSandbox,
}

/// The flags of one delivery. Value flags whose values are checked here take a value that
/// starts with '-' (`--model -x`), so the refusal explains what is wrong with it instead of
/// clap reporting an unknown flag.
#[derive(Debug, Clone, Default, Args)]
pub struct JobArgs {
    /// Read the prompt from FILE instead of the argument after `--` (`-` reads stdin).
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<String>,

    /// The job's action. It must be one of the runtime's capabilities, and implement needs a
    /// write-granting policy.
    #[arg(long, value_enum, value_name = "ACTION", default_value_t)]
    pub action: Action,

    /// The seat's autonomy policy, mapped to the runtime's own permission setting.
    #[arg(long, value_enum, value_name = "POLICY", default_value_t)]
    pub policy: Policy,

    /// The run is confined read-only by the kernel (moot-sandbox): omp then gets
    /// --approval-mode=yolo, declared widened, so its headless tools can run.
    #[arg(long)]
    pub readonly_seat: bool,

    /// The run is confined by moot-sandbox, which enforces the policy with Landlock: the CLI's
    /// own sandbox and approval prompts are turned off (omp yolo, codex's sandbox bypassed,
    /// claude's permissions skipped, Kimi Code's --auto), declared widened and enforced by
    /// moot-sandbox. Grant the sandbox what the policy allows (--rw the worktree for
    /// workspace-write, --ro for read-only).
    #[arg(long)]
    pub seat: bool,

    /// The model; else $MOOT_<RUNTIME>_DEFAULT_MODEL; else the runtime's own default.
    #[arg(long, value_name = "MODEL", allow_hyphen_values = true)]
    pub model: Option<String>,

    /// The reasoning effort; else $MOOT_<RUNTIME>_DEFAULT_EFFORT; else the runtime's own.
    #[arg(long, value_name = "LEVEL", allow_hyphen_values = true)]
    pub effort: Option<String>,

    /// Session reference: start (empty, fresh:<suffix>) or resume (an id, or last), in the
    /// runtime's grammar. For shell: the command to run.
    #[arg(long, value_name = "REF", allow_hyphen_values = true)]
    pub session: Option<String>,

    /// The directory the CLI will run in (give moot-run the same --cwd): the repository under
    /// review is looked for there (what moot-render must switch off, or refuse). Relative paths
    /// of the other flags are still taken from where moot-render runs. Default: moot-render's
    /// own working directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<std::path::PathBuf>,

    /// Grant a writable directory (repeatable; writable grants come before readable ones).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub add_dir: Vec<String>,

    /// Grant a readable directory (repeatable).
    #[arg(long = "read-dir", value_name = "DIR")]
    pub read_dir: Vec<String>,

    /// Seconds left for the run (omp: --max-time of 90% of it, omitted under 1 s).
    #[arg(long, value_name = "SECS", value_parser = crate::seconds::parse_millis, allow_hyphen_values = true)]
    pub deadline: Option<u64>,

    /// Plan first, then execute (omp only; needs a write-granting policy).
    #[arg(long)]
    pub plan: bool,

    /// The model that executes the plan (default: the job's model).
    #[arg(long, value_name = "MODEL", allow_hyphen_values = true)]
    pub plan_into: Option<String>,

    /// A system prompt file (claude, pi; appended to omp's own); it must be a readable regular file.
    #[arg(long, value_name = "FILE")]
    pub system_prompt_file: Option<String>,

    /// An extension file to load (pi; repeatable); it must exist.
    #[arg(long, value_name = "FILE")]
    pub extension: Vec<String>,

    /// Limit the CLI to these built-in tools, comma-separated, in the CLI's own names (pi: read,
    /// bash, ...; claude: Read, Bash, ...). An unknown name is refused.
    #[arg(long, value_name = "LIST", allow_hyphen_values = true)]
    pub tools: Option<String>,

    /// A managed session's turn (claude): requires --settings, --mcp-config and an effort, and
    /// loads nothing else (no slash commands, no other MCP servers, restricted built-in tools).
    #[arg(long)]
    pub managed: bool,

    /// The managed session's settings file with its gate hook (claude).
    #[arg(long, value_name = "FILE")]
    pub settings: Option<String>,

    /// The managed session's MCP configuration (claude); no other MCP server is loaded.
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<String>,

    /// Ask for the incremental event stream where the runtime has a choice (claude).
    #[arg(long)]
    pub stream: bool,

    /// Render the runtime's health check instead of a job (no prompt).
    #[arg(long)]
    pub health: bool,

    /// Stage large prompts in DIR (absolute; created 0700 if missing; must be yours and
    /// private). Default: a fresh directory under $TMPDIR.
    #[arg(long, value_name = "DIR")]
    pub stage_dir: Option<String>,

    /// Give a staged prompt to USER (0600; its directory, still yours, 0750 and its group's):
    /// the seat's user under moot-sandbox --user, which could not read root's. Needs root, and
    /// a stage directory moot-render makes (--stage-dir naming one that does not exist yet, or
    /// none).
    #[arg(long, value_name = "USER[:GROUP]")]
    pub stage_user: Option<String>,

    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t)]
    pub format: Format,
}

/// The whole command line of moot-render.
#[derive(Debug, Clone, Default, Args)]
pub struct RenderArgs {
    #[arg(value_name = "RUNTIME", required_unless_present = "list", help = runtime_help())]
    pub runtime: Option<String>,

    /// `-`: read the prompt from stdin.
    #[arg(value_name = "-", num_args = 0.., value_parser = clap::value_parser!(OsString))]
    pub stdin: Vec<OsString>,

    /// The prompt, as exactly one argument after `--`.
    #[arg(last = true, value_name = "PROMPT", value_parser = clap::value_parser!(OsString))]
    pub prompt: Vec<OsString>,

    #[command(flatten)]
    pub job: JobArgs,

    /// List the runtime registry (or one runtime): capabilities, matrix, sessions, defaults,
    /// and whether the executable is on PATH.
    #[arg(long, conflicts_with_all = DELIVERY_ARGS)]
    pub list: bool,

    /// With --list: print a JSON array.
    #[arg(long, requires = "list")]
    pub json: bool,

    /// Check that REF is a session reference RUNTIME takes, and run nothing: exit 0 when it
    /// is, else one line and exit 2.
    #[arg(
        long,
        value_name = "REF",
        allow_hyphen_values = true,
        requires = "runtime",
        conflicts_with = "list",
        conflicts_with_all = DELIVERY_ARGS
    )]
    pub check_session: Option<String>,
}

/// The help of RUNTIME, naming every registered runtime.
fn runtime_help() -> String {
    let names: Vec<&str> = registry::all().iter().map(|meta| meta.name).collect();
    format!("The runtime: {}", names.join(", "))
}

/// Every argument of a delivery, which `--list` and `--check-session` refuse. Named one by one
/// (not by group) so the error names the flag that was given; a test checks that none is missing.
const DELIVERY_ARGS: &[&str] = &[
    "stdin",
    "prompt",
    "prompt_file",
    "action",
    "policy",
    "readonly_seat",
    "seat",
    "model",
    "effort",
    "session",
    "cwd",
    "add_dir",
    "read_dir",
    "deadline",
    "plan",
    "plan_into",
    "system_prompt_file",
    "extension",
    "tools",
    "managed",
    "settings",
    "mcp_config",
    "stream",
    "health",
    "stage_dir",
    "stage_user",
    "format",
];

/// Runs moot-render: prints the argv (or the registry), or one refusal line.
pub fn run(tool: &str, args: &RenderArgs) -> anyhow::Result<ExitCode> {
    if args.list {
        return list(tool, args);
    }
    if let Some(reference) = &args.check_session {
        let name = args.runtime.as_deref().unwrap_or_default();
        return Ok(match check_session(name, reference) {
            Ok(()) => ExitCode::SUCCESS,
            Err(refusal) => refuse(tool, &refusal),
        });
    }
    let host = match Host::probe(args.job.cwd.as_deref()) {
        Ok(host) => host,
        Err(refusal) => return Ok(refuse(tool, &refusal)),
    };
    let rendering = match prepare(args, &host) {
        Ok(rendering) => rendering,
        Err(refusal) => return Ok(refuse(tool, &refusal)),
    };
    // Only the NUL format is for running: json and sh are previews for scripts and humans, and
    // a preview stages nothing (no one would remove it); they say where the prompt would go.
    let preview = args.job.format != Format::Nul;
    if let (Some(plan), false) = (&rendering.stage, preview) {
        stage::write(plan, rendering.prompt.as_bytes())?;
    }
    let emitted = emit(tool, &rendering, args.job.format);
    if emitted.is_err() && !preview {
        // Nobody received the argv, so nobody will run it or remove what it names.
        if let Some(plan) = &rendering.stage {
            stage::remove(plan);
        }
    }
    emitted.context("cannot write the rendering")?;
    Ok(ExitCode::SUCCESS)
}

fn refuse(tool: &str, refusal: &Refusal) -> ExitCode {
    crate::eprintln_whole!("{tool}: {refusal}");
    ExitCode::from(EXIT_REFUSED)
}

fn list(tool: &str, args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let metas = match args.runtime.as_deref() {
        Some(name) => match registry::find(name) {
            Ok(meta) => vec![meta],
            Err(refusal) => return Ok(refuse(tool, &refusal)),
        },
        None => registry::all().to_vec(),
    };
    let entries: Vec<Entry> = metas
        .into_iter()
        .map(|meta| {
            let mut entry = Entry::new(
                meta,
                |name| nonblank(std::env::var(name).ok().as_deref()),
                |exe| crate::program::find_on_path(exe).map(|p| p.display().to_string()),
            );
            entry.installed &= is_this_runtimes(meta, entry.path.as_deref());
            entry
        })
        .collect();
    let mut out = io::stdout().lock();
    registry::write_list(&mut out, &entries, args.json)
        .and_then(|()| out.flush())
        .context("cannot write the registry")?;
    Ok(ExitCode::SUCCESS)
}

/// Whether the CLI found on PATH for `meta` is this runtime's and not another's of the same
/// executable name (Kimi Code and the legacy kimi-cli are both `kimi`): told apart, without
/// running it, by how it was installed against the runtime's install file (`FROM=npm|pypi`).
/// When that cannot be told, it counts for both.
fn is_this_runtimes(meta: &Meta, path: Option<&str>) -> bool {
    let shared = registry::all()
        .iter()
        .any(|other| other.name != meta.name && other.executable == meta.executable);
    let (Some(path), Some(certify)) = (path, meta.doctor) else {
        return true;
    };
    match (
        certify.install_field("FROM"),
        crate::profile::install_kind(std::path::Path::new(path)),
    ) {
        (Some(from), Some(kind)) if shared => from == kind,
        _ => true,
    }
}

/// Checks a session reference against the runtime's grammar, as its builder reads it for a
/// delivery, without a prompt and without running anything.
pub fn check_session(runtime: &str, reference: &str) -> Result<(), Refusal> {
    let meta = registry::find(runtime)?;
    let job = Job {
        session: reference.trim().to_string(),
        ..Job::default()
    };
    let host = Host::probe(None)?;
    (meta.build)(&job, &host, &Delivery::inline("session check")).map(drop)
}

/// A delivery ready to print: every check passed, nothing written yet.
#[derive(Debug)]
pub struct Rendering {
    pub meta: &'static Meta,
    pub built: Built,
    pub policy: PolicyReport,
    pub prompt: String,
    pub stage: Option<StagePlan>,
    pub warnings: Vec<String>,
}

/// Checks everything and builds the argv, touching nothing: shared rules, then the prompt, then
/// the staging location, then the runtime's own rules.
pub fn prepare(args: &RenderArgs, host: &Host) -> Result<Rendering, Refusal> {
    let name = args.runtime.as_deref().unwrap_or_default();
    let meta = registry::find(name)?;
    let mut warnings = Vec::new();
    let job = resolve_job(meta, &args.job, host, &mut warnings)?;
    refuse_repo_code(meta, host)?;
    let prompt = read_prompt(meta, args)?;
    let route = stage::route(meta.name, &prompt, &meta.prompt)?;
    let (delivery, stage) = if route == Route::Inline {
        (Delivery::inline(prompt.as_str()), None)
    } else {
        let protected = stage::Protected {
            worktree: host.worktree.as_ref().map(|w| w.root.as_path()),
            writable: &job.writable,
            euid: host.euid,
        };
        let mut plan = stage::plan(
            args.job.stage_dir.as_deref(),
            &host.tmpdir,
            &host.stage_suffix,
            &protected,
        )?;
        if let Some(user) = &args.job.stage_user {
            plan.give_to(user)?;
        }
        (staged_delivery(&plan, route == Route::Instruct), Some(plan))
    };
    let mut built = (meta.build)(&job, host, &delivery)?;
    warnings.append(&mut built.warnings);
    Ok(Rendering {
        meta,
        policy: PolicyReport {
            value: job.policy,
            declared: built.declared,
            enforced_by: if job.seat {
                Enforcer::MootSandbox
            } else {
                Enforcer::Cli
            },
        },
        built,
        prompt,
        stage,
        warnings,
    })
}

/// Refuses a delivery while the working tree holds a path its CLI runs code from at start-up
/// with no switch to stop it ([`Meta::repo_code`]), from the working directory up to the
/// worktree's root: the repository under review never runs code in the seat before the model
/// acts.
fn refuse_repo_code(meta: &Meta, host: &Host) -> Result<(), Refusal> {
    let top = host.worktree.as_ref().map(|w| w.root.as_path());
    for dir in host.cwd.ancestors() {
        for relative in meta.repo_code {
            let path = dir.join(relative);
            if std::fs::symlink_metadata(&path).is_ok() {
                return Err(Refusal::new(
                    "the working tree",
                    format!(
                        "{} is there, and {} runs the code it names at start-up whatever its \
                         flags say: remove it from the tree, or run another runtime",
                        path.display(),
                        meta.name
                    ),
                ));
            }
        }
        if top.is_none_or(|top| dir == top) {
            break;
        }
    }
    Ok(())
}

/// The token beside a staged prompt: an instruction to read the granted file, or a pointer to
/// the attached one.
fn staged_delivery(plan: &StagePlan, instruct: bool) -> Delivery {
    let staged = Staged {
        dir: plan.dir.display().to_string(),
        file: plan.file.display().to_string(),
    };
    if instruct {
        Delivery::instructed(staged)
    } else {
        Delivery::attached(staged)
    }
}

#[cfg(test)]
mod tests {
    use super::prompt::{checked_text, read_capped};
    use super::*;
    use crate::model::job::testing::host;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: RenderArgs,
    }

    fn parse(argv: &[&str]) -> RenderArgs {
        Cli::try_parse_from(std::iter::once("moot-render").chain(argv.iter().copied()))
            .unwrap()
            .args
    }

    fn refusal(argv: &[&str]) -> String {
        prepare(&parse(argv), &host()).unwrap_err().to_string()
    }

    /// Asserts that each `(argv, line)` case is refused with exactly that line.
    fn refuses(cases: &[(&[&str], &str)]) {
        for (argv, line) in cases {
            assert_eq!(refusal(argv), *line, "{argv:?}");
        }
    }

    fn rendered(argv: &[&str]) -> Rendering {
        prepare(&parse(argv), &host()).unwrap()
    }

    #[test]
    fn list_refuses_every_delivery_argument() {
        use clap::CommandFactory;
        let command = Cli::command();
        let job_args: Vec<_> = command
            .get_arguments()
            .filter(|a| {
                !["list", "json", "runtime", "check_session"].contains(&a.get_id().as_str())
            })
            .filter(|a| a.get_id() != "help" && a.get_id() != "version")
            .map(|a| a.get_id().to_string())
            .collect();
        let mut listed: Vec<String> = DELIVERY_ARGS.iter().map(|s| s.to_string()).collect();
        let mut all = job_args.clone();
        listed.sort();
        all.sort();
        assert_eq!(listed, all);
        let error = Cli::try_parse_from(["moot-render", "--list", "--stream"])
            .err()
            .unwrap();
        assert_eq!(error.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    #[test]
    fn formats() {
        let r = rendered(&["mock", "--", "hi there"]);
        let output = Output::of(&r);
        assert_eq!(payload(&output, Format::Nul), b"printf\0%s\0hi there\0");
        assert_eq!(payload(&output, Format::Sh), b"printf %s 'hi there'\n");
        assert_eq!(
            String::from_utf8(payload(&output, Format::Json)).unwrap(),
            "{\"runtime\":\"mock\",\"argv\":[\"printf\",\"%s\",\"hi there\"],\"staged\":[],\
             \"stage_dir\":null,\"preview\":false,\"policy\":{\"value\":\"auto\",\"declared\":\"applied\",\"enforced_by\":\"cli\"},\
             \"plan_mode\":null,\"session_id\":null,\"warnings\":[]}\n"
        );
    }

    #[test]
    fn capability_and_write_gates() {
        refuses(&[
            (
                &["omp", "--action", "produce", "--", "x"],
                "--action (produce): omp does not advertise it (capabilities: review, implement, \
                 ask)",
            ),
            (
                &["omp", "--action", "implement", "--", "x"],
                "--action (implement): the policy auto grants no writes; use --policy \
                 workspace-write or danger-full-access",
            ),
            (
                &[
                    "omp",
                    "--action",
                    "implement",
                    "--policy",
                    "read-only",
                    "--",
                    "x",
                ],
                "--action (implement): the policy read-only grants no writes; use --policy \
                 workspace-write or danger-full-access",
            ),
            (
                &["omp", "--readonly-seat", "--action", "implement", "--", "x"],
                "--action (implement): a read-only seat grants no writes; use --policy \
                 workspace-write or danger-full-access",
            ),
            (
                &[
                    "omp",
                    "--readonly-seat",
                    "--policy",
                    "workspace-write",
                    "--",
                    "x",
                ],
                "--policy (workspace-write): a read-only seat cannot carry a write-granting \
                 policy; drop --readonly-seat or the policy",
            ),
            (
                &["kimi", "--readonly-seat", "--", "x"],
                "--readonly-seat: kimi has no read-only-seat delivery; only omp does",
            ),
        ]);
        let ok = rendered(&[
            "omp",
            "--action",
            "implement",
            "--policy",
            "workspace-write",
            "--",
            "x",
        ]);
        assert_eq!(ok.policy.value, Policy::WorkspaceWrite);
        let seat = rendered(&["omp", "--readonly-seat", "--", "x"]);
        assert_eq!(
            seat.policy,
            PolicyReport {
                value: Policy::ReadOnly,
                declared: Declared::Widened,
                enforced_by: Enforcer::MootSandbox,
            }
        );
    }

    #[test]
    fn plan_gates() {
        refuses(&[
            (
                &["omp", "--plan-into", "m", "--", "x"],
                "--plan-into (m): it names the model that executes a plan, so it requires --plan",
            ),
            (
                &["claude", "--plan", "--policy", "workspace-write", "--", "x"],
                "--plan: plan mode is omp's alone; claude would run it as an ordinary job",
            ),
        ]);
        for policy in ["read-only", "auto"] {
            assert_eq!(
                refusal(&["omp", "--plan", "--policy", policy, "--", "x"]),
                format!(
                    "--plan: a plan ends in an implementation phase, so it needs a \
                     write-granting policy, and the policy {policy} grants no writes; use \
                     --policy workspace-write or danger-full-access"
                )
            );
        }
        // A blank --plan-into is unset: an empty shell variable must not need special casing.
        assert!(prepare(&parse(&["omp", "--plan-into", " ", "--", "x"]), &host()).is_ok());
    }

    #[test]
    fn model_values_are_one_selector() {
        refuses(&[
            (
                &["omp", "--model=--add-dir=/", "--", "x"],
                "--model (--add-dir=/): a model selector cannot start with '-', where it would \
                 read as a flag",
            ),
            (
                &["codex", "--model", "gpt 5", "--", "x"],
                "--model (gpt 5): a model selector cannot contain whitespace",
            ),
            (
                &["claude", "--model", "a\nb", "--", "x"],
                r"--model (a\nb): a model selector cannot contain control characters",
            ),
        ]);
    }

    #[test]
    fn defaults_come_from_the_environment_after_the_flags() {
        let mut h = host();
        h.env.insert(
            "MOOT_OMP_DEFAULT_MODEL".into(),
            "anthropic/claude-opus-4".into(),
        );
        h.env
            .insert("MOOT_OMP_DEFAULT_EFFORT".into(), "HIGH".into());
        let r = prepare(&parse(&["omp", "--", "x"]), &h).unwrap();
        assert!(r
            .built
            .argv
            .windows(4)
            .any(|w| w == ["--model", "anthropic/claude-opus-4", "--thinking", "high"]));
        let r = prepare(
            &parse(&["omp", "--model", "m", "--effort", "low", "--", "x"]),
            &h,
        )
        .unwrap();
        assert!(r
            .built
            .argv
            .windows(4)
            .any(|w| w == ["--model", "m", "--thinking", "low"]));
        h.env
            .insert("MOOT_OMP_DEFAULT_MODEL".into(), "bad model".into());
        assert_eq!(
            prepare(&parse(&["omp", "--", "x"]), &h)
                .unwrap_err()
                .to_string(),
            "MOOT_OMP_DEFAULT_MODEL (bad model): a model selector cannot contain whitespace"
        );
    }

    #[test]
    fn effort_rules() {
        let r = rendered(&["omp", "--effort", "ludicrous", "--", "x"]);
        assert_eq!(
            r.warnings,
            [
                "--effort (ludicrous): not one of omp's levels (off, minimal, low, medium, high, \
              xhigh, max, auto); dropped, omp keeps its own default"
            ]
        );
        assert!(!r.built.argv.contains(&"--thinking".to_string()));
        assert_eq!(
            refusal(&["claude", "--effort", "auto", "--", "x"]),
            "--effort (auto): claude takes one of low, medium, high, xhigh, max"
        );
        let r = rendered(&["kimi", "--effort", "high", "--", "x"]);
        assert_eq!(
            r.warnings,
            ["--effort (high): kimi has no effort setting; dropped"]
        );
        assert_eq!(
            refusal(&["codex", "--effort", "hi gh", "--", "x"]),
            "--effort (hi gh): codex takes one effort word (letters, digits, '-', '_', '.')"
        );
        let r = rendered(&["shell", "--session", "cat", "--model", "m", "--", "x"]);
        assert_eq!(
            r.warnings,
            ["--model (m): shell has no model setting; dropped"]
        );
    }

    #[test]
    fn prompt_sources() {
        refuses(&[
            (
                &["omp"],
                "prompt: none given; give exactly one prompt: after --, or --prompt-file FILE, or \
                 - for stdin",
            ),
            (
                &["omp", "--prompt-file", "/etc/hostname", "--", "x"],
                "prompt: more than one given; give exactly one prompt: after --, or --prompt-file \
                 FILE, or - for stdin",
            ),
            (
                &["omp", "--", "a", "b"],
                "prompt: 2 arguments after --; quote the prompt as one argument",
            ),
            (
                &["omp", "review the PR"],
                "unexpected argument after RUNTIME: a prompt goes after -- (give exactly one \
                 prompt: after --, or --prompt-file FILE, or - for stdin)",
            ),
            (&["omp", "--", ""], "prompt: empty; give the task"),
            (
                &["omp", "--", " \n\t"],
                "prompt: blank (only whitespace); give the task",
            ),
            (
                &["omp", "--health", "--", "x"],
                "--health: it delivers omp's own check prompt; give no prompt",
            ),
            (
                &["omp", "--prompt-file", "/no/such/file"],
                "--prompt-file (/no/such/file): cannot read it: No such file or directory (os \
                 error 2)",
            ),
        ]);
    }

    #[test]
    fn prompts_are_utf8_text_without_nul() {
        assert_eq!(
            checked_text(b"ok \xff".to_vec()).unwrap_err().to_string(),
            "prompt: not valid UTF-8 (first bad byte at offset 3); re-encode it as UTF-8"
        );
        assert_eq!(
            checked_text(b"a\0b".to_vec()).unwrap_err().to_string(),
            "prompt: contains a NUL byte at offset 1; remove it"
        );
        assert_eq!(checked_text("-@ é".into()).unwrap(), "-@ é");
    }

    #[test]
    fn reading_is_capped() {
        assert_eq!(read_capped(&b"abc"[..], 3).unwrap(), b"abc");
        assert_eq!(
            read_capped(&b"abcd"[..], 3).unwrap_err().to_string(),
            "more than 3 bytes, the most moot-render reads"
        );
    }

    #[test]
    fn grants_and_files_must_exist() {
        refuses(&[
            (
                &["omp", "--add-dir", "/no/such/dir", "--", "x"],
                "--add-dir (/no/such/dir): not a directory",
            ),
            (
                &["omp", "--read-dir", "", "--", "x"],
                "--read-dir (): an empty path (is the variable that names it set?)",
            ),
            (
                &["pi", "--system-prompt-file", "/no/such", "--", "x"],
                "--system-prompt-file (/no/such): not a readable regular file (No such file or \
                 directory (os error 2))",
            ),
            (
                &["claude", "--system-prompt-file", "/tmp", "--", "x"],
                "--system-prompt-file (/tmp): not a readable regular file (not a regular file)",
            ),
            (
                &["codex", "--system-prompt-file", "/etc/hostname", "--", "x"],
                "--system-prompt-file (/etc/hostname): codex has no such input",
            ),
            (
                &["pi", "--extension", "/no/ext.ts", "--", "x"],
                "--extension (/no/ext.ts): not a readable regular file (No such file or directory \
                 (os error 2))",
            ),
        ]);
        let r = rendered(&["omp", "--add-dir", "tmp", "--read-dir", "/", "--", "x"]);
        assert!(r
            .built
            .argv
            .windows(4)
            .any(|w| w == ["--add-dir", "/tmp", "--add-dir", "/"]));
    }

    #[test]
    fn refusal_values_stay_on_one_line() {
        let r = Refusal::new("--plan-into", "bad").value("a\u{7}b\nc");
        assert_eq!(r.to_string(), r"--plan-into (a\u{7}b\nc): bad");
    }
}
