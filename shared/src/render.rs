//! moot-render: the argument vector of one delivery, and nothing but the argument vector.
//!
//! This module owns what is the same for every runtime: the job model (flags and the
//! `MOOT_<RUNTIME>_DEFAULT_*` environment, nothing else), the checks every runtime shares
//! (capabilities, write gates, plan pairing, model and effort values, grants, files), reading the
//! prompt, routing it to argv or to a staged file, the output formats, and the dispatch to the
//! runtime's own builder (`runtime/<rt>/argv.rs`), which alone knows its flags.
//!
//! Nothing is staged until every check has passed, so a refusal (exit 2) leaves nothing behind.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::model::job::escape_controls;
use crate::model::{
    nonblank, selector_problem, Action, Built, Declared, Delivery, EffortRule, Host, Job, Meta,
    OnUnknown, Plan, Policy, Refusal, Selector, Staged,
};
use crate::registry::{self, Entry};
use crate::shell_quote::sh_quote;
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
    let host = Host::probe()?;
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
            Entry::new(
                meta,
                |name| nonblank(std::env::var(name).ok().as_deref()),
                |exe| crate::program::find_on_path(exe).map(|p| p.display().to_string()),
            )
        })
        .collect();
    let mut out = io::stdout().lock();
    registry::write_list(&mut out, &entries, args.json)
        .and_then(|()| out.flush())
        .context("cannot write the registry")?;
    Ok(ExitCode::SUCCESS)
}

/// Checks a session reference against the runtime's grammar, as its builder reads it for a
/// delivery, without a prompt and without running anything.
pub fn check_session(runtime: &str, reference: &str) -> Result<(), Refusal> {
    let meta = registry::find(runtime)?;
    let job = Job {
        session: reference.trim().to_string(),
        ..Job::default()
    };
    let host = Host::probe().map_err(|e| Refusal::new("host", format!("{e:#}")))?;
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

/// The shared rules, in order: capability, seat, write gates, plan pairing, model, effort,
/// grants, files.
/// The runtimes whose record offers a read-only seat, as the registry holds them.
fn with_a_readonly_seat() -> String {
    let names: Vec<&str> = registry::all()
        .iter()
        .filter(|meta| meta.readonly_seat)
        .map(|meta| meta.name)
        .collect();
    names.join(", ")
}

fn resolve_job(
    meta: &Meta,
    a: &JobArgs,
    host: &Host,
    warnings: &mut Vec<String>,
) -> Result<Job, Refusal> {
    let rt = meta.name;
    if !meta.capabilities.contains(&a.action) {
        let caps: Vec<&str> = meta.capabilities.iter().map(|c| c.name()).collect();
        return Err(Refusal::new(
            "--action",
            format!(
                "{rt} does not advertise it (capabilities: {})",
                caps.join(", ")
            ),
        )
        .value(a.action.name()));
    }
    if a.readonly_seat && !meta.readonly_seat {
        return Err(Refusal::new(
            "--readonly-seat",
            format!(
                "{rt} has no read-only-seat delivery; only {} does",
                with_a_readonly_seat()
            ),
        ));
    }
    if a.readonly_seat && a.policy.grants_write() {
        return Err(Refusal::new(
            "--policy",
            "a read-only seat cannot carry a write-granting policy; drop --readonly-seat or the policy",
        )
        .value(a.policy.name()));
    }
    let policy = if a.readonly_seat {
        Policy::ReadOnly
    } else {
        a.policy
    };
    let no_write = if a.readonly_seat {
        "a read-only seat grants no writes".to_string()
    } else {
        format!("the policy {} grants no writes", policy.name())
    };
    if a.action == Action::Implement && !policy.grants_write() {
        return Err(Refusal::new(
            "--action",
            format!("{no_write}; use --policy workspace-write or danger-full-access"),
        )
        .value("implement"));
    }
    let plan = resolve_plan(meta, a, policy, &no_write)?;
    let model = resolve_model(meta, a, host, warnings)?;
    let effort = resolve_effort(meta, a, host, warnings)?;
    let managed = resolve_managed(meta, a, effort.is_some())?;
    Ok(Job {
        policy,
        readonly_seat: a.readonly_seat,
        seat: a.seat || a.readonly_seat,
        model,
        effort,
        session: a.session.as_deref().unwrap_or_default().trim().to_string(),
        writable: grants("--add-dir", &a.add_dir, host)?,
        readable: grants("--read-dir", &a.read_dir, host)?,
        deadline_ms: a.deadline,
        plan,
        system_prompt: optional_file(
            meta,
            "--system-prompt-file",
            a.system_prompt_file.as_deref(),
            meta.system_prompt,
            host,
        )?,
        extensions: a
            .extension
            .iter()
            .map(|f| optional_file(meta, "--extension", Some(f), meta.extensions, host))
            .filter_map(Result::transpose)
            .collect::<Result<_, _>>()?,
        tools: resolve_tools(meta, a.tools.as_deref())?,
        managed,
        settings: optional_file(
            meta,
            "--settings",
            a.settings.as_deref(),
            meta.managed_bundle,
            host,
        )?,
        mcp_config: optional_file(
            meta,
            "--mcp-config",
            a.mcp_config.as_deref(),
            meta.managed_bundle,
            host,
        )?,
        stream: a.stream,
        health: a.health,
    })
}

fn resolve_plan(
    meta: &Meta,
    a: &JobArgs,
    policy: Policy,
    no_write: &str,
) -> Result<Option<Plan>, Refusal> {
    let into = nonblank(a.plan_into.as_deref());
    if !a.plan {
        return match into {
            Some(into) => Err(Refusal::new(
                "--plan-into",
                "it names the model that executes a plan, so it requires --plan",
            )
            .value(into)),
            None => Ok(None),
        };
    }
    if !meta.plan_mode {
        return Err(Refusal::new(
            "--plan",
            format!(
                "plan mode is omp's alone; {} would run it as an ordinary job",
                meta.name
            ),
        ));
    }
    if !policy.grants_write() {
        return Err(Refusal::new(
            "--plan",
            format!(
                "a plan ends in an implementation phase, so it needs a write-granting policy, and \
                 {no_write}; use --policy workspace-write or danger-full-access"
            ),
        ));
    }
    Ok(Some(Plan { into }))
}

/// The tool limit as a list of the runtime's tool names ("" is the empty limit: no built-in
/// tool). An unknown name is refused rather than passed on: a CLI that ignores it would run
/// with more tools than the caller allowed.
fn resolve_tools(meta: &Meta, tools: Option<&str>) -> Result<Option<Vec<String>>, Refusal> {
    let Some(tools) = tools else {
        return Ok(None);
    };
    let rt = meta.name;
    if meta.tools.is_empty() {
        return Err(Refusal::new("--tools", format!("{rt} has no tool limit")).value(tools));
    }
    let names: Vec<String> = tools
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .map(String::from)
        .collect();
    match names
        .iter()
        .find(|name| !meta.tools.contains(&name.as_str()))
    {
        Some(unknown) => Err(Refusal::new(
            "--tools",
            format!("not one of {rt}'s tools ({})", meta.tools.join(", ")),
        )
        .value(unknown)),
        None => Ok(Some(names)),
    }
}

/// A managed session's turn needs the whole bundle, and an effort, before anything runs.
fn resolve_managed(meta: &Meta, a: &JobArgs, has_effort: bool) -> Result<bool, Refusal> {
    if !a.managed {
        return Ok(false);
    }
    let rt = meta.name;
    if !meta.managed_bundle {
        return Err(Refusal::new(
            "--managed",
            format!("{rt} takes no managed-session bundle"),
        ));
    }
    let missing: Vec<&str> = [
        ("--settings", a.settings.is_none()),
        ("--mcp-config", a.mcp_config.is_none()),
    ]
    .into_iter()
    .filter_map(|(flag, absent)| absent.then_some(flag))
    .collect();
    if !missing.is_empty() {
        return Err(Refusal::new(
            "--managed",
            format!(
                "a managed session loads its bundle's hook and MCP servers; give {}",
                missing.join(" and ")
            ),
        ));
    }
    if !has_effort {
        return Err(Refusal::new(
            "--managed",
            format!(
                "a managed {rt} session needs an effort; give --effort or {}",
                registry::default_env(meta, "EFFORT")
            ),
        ));
    }
    Ok(true)
}

/// The flag's value, else the runtime default from the environment (blank counts as unset).
fn flag_or_default(
    meta: &Meta,
    flag: &str,
    value: Option<&str>,
    what: &str,
    host: &Host,
) -> Option<Selector> {
    if let Some(value) = nonblank(value) {
        return Some(Selector {
            value,
            source: flag.into(),
        });
    }
    let env = registry::default_env(meta, what);
    host.var(&env).map(|value| Selector { value, source: env })
}

fn resolve_model(
    meta: &Meta,
    a: &JobArgs,
    host: &Host,
    warnings: &mut Vec<String>,
) -> Result<Option<Selector>, Refusal> {
    let Some(model) = flag_or_default(meta, "--model", a.model.as_deref(), "MODEL", host) else {
        return Ok(None);
    };
    if !meta.takes_model {
        warnings.push(format!(
            "{} ({}): {} has no model setting; dropped",
            model.source, model.value, meta.name
        ));
        return Ok(None);
    }
    match selector_problem(&model.value) {
        Some(why) => Err(Refusal::new(model.source, why).value(&model.value)),
        None => Ok(Some(model)),
    }
}

fn resolve_effort(
    meta: &Meta,
    a: &JobArgs,
    host: &Host,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, Refusal> {
    let Some(effort) = flag_or_default(meta, "--effort", a.effort.as_deref(), "EFFORT", host)
    else {
        return Ok(None);
    };
    let rt = meta.name;
    match meta.effort {
        EffortRule::Unsupported => {
            warnings.push(format!(
                "{} ({}): {rt} has no effort setting; dropped",
                effort.source, effort.value
            ));
            Ok(None)
        }
        EffortRule::Word => {
            let word = effort
                .value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !effort.value.starts_with('-');
            if word {
                Ok(Some(effort.value))
            } else {
                Err(Refusal::new(
                    effort.source,
                    format!("{rt} takes one effort word (letters, digits, '-', '_', '.')"),
                )
                .value(&effort.value))
            }
        }
        EffortRule::Levels { levels, unknown } => {
            let level = effort.value.to_lowercase();
            if levels.contains(&level.as_str()) {
                return Ok(Some(level));
            }
            let listed = levels.join(", ");
            match unknown {
                OnUnknown::Drop => {
                    warnings.push(format!(
                        "{} ({}): not one of {rt}'s levels ({listed}); dropped, {rt} keeps its own default",
                        effort.source,
                        escape_controls(&effort.value)
                    ));
                    Ok(None)
                }
                OnUnknown::Refuse => Err(Refusal::new(
                    effort.source,
                    format!("{rt} takes one of {listed}"),
                )
                .value(&effort.value)),
            }
        }
    }
}

/// Directory grants as absolute paths (relative ones are taken from the working directory);
/// blank entries are skipped, anything that is not a directory is refused.
fn grants(flag: &str, dirs: &[String], host: &Host) -> Result<Vec<String>, Refusal> {
    dirs.iter()
        .filter(|d| !d.trim().is_empty())
        .map(|dir| {
            let path = host.cwd.join(dir);
            if path.is_dir() {
                Ok(path.display().to_string())
            } else {
                Err(Refusal::new(flag, "not a directory").value(dir))
            }
        })
        .collect()
}

/// A file input: refused when the runtime has no use for it (silently dropping a system prompt
/// would change the job), or when it is not a readable regular file.
fn optional_file(
    meta: &Meta,
    flag: &str,
    file: Option<&str>,
    supported: bool,
    host: &Host,
) -> Result<Option<String>, Refusal> {
    let Some(file) = file else {
        return Ok(None);
    };
    if !supported {
        return Err(Refusal::new(flag, format!("{} has no such input", meta.name)).value(file));
    }
    let path = host.cwd.join(file);
    // The type first: opening a FIFO would block until someone writes to it.
    let readable = std::fs::metadata(&path).and_then(|m| {
        if m.is_file() {
            File::open(&path).map(drop)
        } else {
            Err(io::Error::other("not a regular file"))
        }
    });
    match readable {
        Ok(()) => Ok(Some(path.display().to_string())),
        Err(e) => Err(Refusal::new(flag, format!("not a readable regular file ({e})")).value(file)),
    }
}

/// Reads the one prompt the command line names, and checks it is text a CLI can take.
fn read_prompt(meta: &Meta, args: &RenderArgs) -> Result<String, Refusal> {
    let usage = "give exactly one prompt: after --, or --prompt-file FILE, or - for stdin";
    if args.stdin.iter().any(|a| a != "-") || args.stdin.len() > 1 {
        return Err(Refusal::new(
            "unexpected argument after RUNTIME",
            format!("a prompt goes after -- ({usage})"),
        ));
    }
    if args.prompt.len() > 1 {
        return Err(Refusal::new(
            "prompt",
            format!(
                "{} arguments after --; quote the prompt as one argument",
                args.prompt.len()
            ),
        ));
    }
    let sources = [
        !args.prompt.is_empty(),
        args.job.prompt_file.is_some(),
        !args.stdin.is_empty(),
    ];
    let given = sources.iter().filter(|s| **s).count();
    if args.job.health {
        return match given {
            0 => Ok(meta.health_prompt.to_string()),
            _ => Err(Refusal::new(
                "--health",
                format!(
                    "it delivers {}'s own check prompt; give no prompt",
                    meta.name
                ),
            )),
        };
    }
    let bytes = match given {
        0 => return Err(Refusal::new("prompt", format!("none given; {usage}"))),
        1 => prompt_bytes(args)?,
        _ => {
            return Err(Refusal::new(
                "prompt",
                format!("more than one given; {usage}"),
            ))
        }
    };
    checked_text(bytes)
}

fn prompt_bytes(args: &RenderArgs) -> Result<Vec<u8>, Refusal> {
    let limit = stage::MAX_PROMPT_BYTES;
    if let Some(arg) = args.prompt.first() {
        return Ok(arg.as_encoded_bytes().to_vec());
    }
    match args.job.prompt_file.as_deref() {
        Some(file) if file != "-" => {
            let read = open_regular(file).and_then(|f| read_capped(f, limit));
            read.map_err(|e| {
                Refusal::new("--prompt-file", format!("cannot read it: {e}")).value(file)
            })
        }
        _ => read_capped(io::stdin().lock(), limit)
            .map_err(|e| Refusal::new("stdin", format!("cannot read the prompt: {e}"))),
    }
}

/// Opens a prompt file that must be a regular file (a symbolic link to one is fine): a FIFO
/// would hang moot-render until someone writes it, a device would never end. Opened
/// non-blocking, so even a FIFO's open returns at once to be refused.
fn open_regular(path: &str) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(
            "not a regular file; to read a pipe, give --prompt-file - and pipe it on stdin",
        ));
    }
    Ok(file)
}

/// Reads at most `limit` bytes; more is an error (a prompt that size is a mistake, and holding
/// an unbounded stream in memory is not an option).
fn read_capped(reader: impl Read, limit: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Err(io::Error::other(format!(
            "more than {limit} bytes, the most moot-render reads"
        )));
    }
    Ok(bytes)
}

/// The prompt as text: UTF-8, not blank, no NUL (no CLI takes those on argv or as a prompt).
/// The messages never quote the prompt.
fn checked_text(bytes: Vec<u8>) -> Result<String, Refusal> {
    let text = String::from_utf8(bytes).map_err(|e| {
        Refusal::new(
            "prompt",
            format!(
                "not valid UTF-8 (first bad byte at offset {}); re-encode it as UTF-8",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    if let Some(offset) = text.find('\0') {
        return Err(Refusal::new(
            "prompt",
            format!("contains a NUL byte at offset {offset}; remove it"),
        ));
    }
    if text.trim().is_empty() {
        let what = if text.is_empty() {
            "empty"
        } else {
            "blank (only whitespace)"
        };
        return Err(Refusal::new("prompt", format!("{what}; give the task")));
    }
    Ok(text)
}

/// The JSON object of `--format json`.
#[derive(Debug, Serialize)]
pub struct Output<'a> {
    pub runtime: &'static str,
    pub argv: &'a [String],
    /// Staged files (the prompt), to be readable by the run and removed after it.
    pub staged: Vec<String>,
    /// The staging directory: pass it to `moot-sandbox --ro` and `moot-run --cleanup`.
    pub stage_dir: Option<String>,
    /// True when nothing was written: `staged` and `stage_dir` say where a prompt would go
    /// (json and sh are previews; only the NUL format stages).
    pub preview: bool,
    pub policy: PolicyReport,
    pub plan_mode: Option<&'a str>,
    /// The id of the new session the argv names (claude): store it only if the run succeeds.
    pub session_id: Option<&'a str>,
    pub warnings: &'a [String],
}

impl<'a> Output<'a> {
    pub fn of(rendering: &'a Rendering) -> Self {
        let stage = rendering.stage.as_ref();
        Output {
            runtime: rendering.meta.name,
            argv: &rendering.built.argv,
            staged: stage
                .map(|s| s.file.display().to_string())
                .into_iter()
                .collect(),
            stage_dir: stage.map(|s| s.dir.display().to_string()),
            preview: false,
            policy: rendering.policy,
            plan_mode: rendering.built.plan_mode.as_deref(),
            session_id: rendering.built.session_id.as_deref(),
            warnings: &rendering.warnings,
        }
    }
}

/// Prints the rendering: the payload on stdout; warnings on stderr in every format; staged
/// paths and a new session id on stderr too in the nul and sh formats (json carries them),
/// once the payload is out (a payload nobody received stages nothing).
fn emit(tool: &str, rendering: &Rendering, format: Format) -> io::Result<()> {
    let output = Output {
        preview: format != Format::Nul,
        ..Output::of(rendering)
    };
    // Each line in one write (see report::write_stderr_line): the tools of a pipeline share
    // one stderr.
    let mut err = io::stderr().lock();
    let mut say = |line: String| err.write_all(format!("{line}\n").as_bytes());
    for warning in output.warnings {
        say(format!("{tool}: warning: {warning}"))?;
    }
    let mut out = io::stdout().lock();
    out.write_all(&payload(&output, format))?;
    out.flush()?;
    if format != Format::Json {
        let verb = if output.preview {
            "would stage (a preview writes nothing)"
        } else {
            "staged"
        };
        for (file, dir) in output.staged.iter().zip(&output.stage_dir) {
            say(format!("{tool}: {verb} {file} (stage dir {dir})"))?;
        }
        if let Some(id) = output.session_id {
            say(format!(
                "{tool}: {} session id {id}: store it only if the run succeeds",
                output.runtime
            ))?;
        }
    }
    Ok(())
}

/// The bytes of stdout for one format.
pub fn payload(output: &Output, format: Format) -> Vec<u8> {
    match format {
        Format::Nul => output.argv.iter().fold(Vec::new(), |mut out, arg| {
            out.extend_from_slice(arg.as_bytes());
            out.push(0);
            out
        }),
        Format::Json => {
            let mut out = serde_json::to_vec(output).unwrap_or_default();
            out.push(b'\n');
            out
        }
        Format::Sh => {
            let words: Vec<String> = output.argv.iter().map(|a| sh_quote(a)).collect();
            format!("{}\n", words.join(" ")).into_bytes()
        }
    }
}

#[cfg(test)]
mod tests {
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
        let r = rendered(&[
            "omp",
            "--add-dir",
            "",
            "--add-dir",
            "tmp",
            "--read-dir",
            "/",
            "--",
            "x",
        ]);
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
