//! The job a command line asks for, checked against the runtime's record: capabilities,
//! write gates, plan pairing, model and effort, grants and files. Every refusal is made here,
//! before anything is staged.

use std::fs::File;
use std::io::{self};

use super::JobArgs;
use crate::model::job::escape_controls;
use crate::model::{
    nonblank, selector_problem, Action, EffortRule, Host, Job, Meta, OnUnknown, Plan, Policy,
    Refusal, Selector,
};
use crate::registry::{self};

/// The shared rules, in order: capability, seat, write gates, plan pairing, model, effort,
/// grants, files.
pub(super) fn resolve_job(
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
/// anything that is not a directory is refused. So is an empty or blank one: it is what an
/// unset `"$worktree"` expands to, and skipping it would run the job with no worktree granted.
fn grants(flag: &str, dirs: &[String], host: &Host) -> Result<Vec<String>, Refusal> {
    dirs.iter()
        .map(|dir| {
            let path = host.here.join(dir);
            if dir.trim().is_empty() {
                Err(
                    Refusal::new(flag, "an empty path (is the variable that names it set?)")
                        .value(dir),
                )
            } else if path.is_dir() {
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
    let path = host.here.join(file);
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

/// The runtimes whose record offers a read-only seat, as the registry holds them.
fn with_a_readonly_seat() -> String {
    let names: Vec<&str> = registry::all()
        .iter()
        .filter(|meta| meta.readonly_seat)
        .map(|meta| meta.name)
        .collect();
    names.join(", ")
}
