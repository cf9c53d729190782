//! The runtime registry: one table assembled from the facts each runtime module declares.
//!
//! A runtime's flags, levels, session grammar and capabilities live in its own module
//! (`runtime/<rt>/meta.rs`); this module only defines the shape of those declarations, lists
//! them, finds one by name, and prints them for `moot-render --list`. Installed is not
//! authenticated: the only thing looked at on the machine is whether the executable is on PATH,
//! never a credential or a config file.

use std::io::Write;

use serde::Serialize;

use crate::model::{EffortRule, Matrix, Meta, Refusal};
use crate::runtime;

/// Every runtime, in the order `--list` prints them. The one list of runtimes: every other
/// (presets, `--help`, `--env-preset` values, the checklist test) is derived from it.
static RUNTIMES: &[&Meta] = &[
    &runtime::omp::meta::META,
    &runtime::kimi::meta::KIMI,
    &runtime::kimi::meta::KIMI_CLI,
    &runtime::codex::meta::META,
    &runtime::claude::meta::META,
    &runtime::pi::meta::META,
    &runtime::opencode::meta::META,
    &runtime::shell::meta::META,
    &runtime::mock::meta::META,
];

/// Every runtime, in the order `--list` prints them.
pub fn all() -> &'static [&'static Meta] {
    RUNTIMES
}

/// The runtime called `name`.
pub fn find(name: &str) -> Result<&'static Meta, Refusal> {
    all()
        .iter()
        .copied()
        .find(|meta| meta.name == name)
        .ok_or_else(|| {
            let names: Vec<&str> = all().iter().map(|m| m.name).collect();
            Refusal::new(
                "runtime",
                format!("unknown runtime; use one of {}", names.join(", ")),
            )
            .value(name)
        })
}

/// The environment variable holding a runtime's default for `what` (`MODEL` or `EFFORT`).
pub fn default_env(meta: &Meta, what: &str) -> String {
    let name = meta.name.to_ascii_uppercase().replace('-', "_");
    format!("MOOT_{name}_DEFAULT_{what}")
}

/// One runtime as `--list --json` prints it.
#[derive(Debug, Serialize)]
pub struct Entry {
    pub name: &'static str,
    pub executable: &'static str,
    /// The executable is on PATH. Installed is not authenticated.
    pub installed: bool,
    pub path: Option<String>,
    pub description: &'static str,
    /// The tool that reads its output (`moot-parse-<dialect>`), or null when the output is the
    /// answer itself.
    pub parser: Option<String>,
    pub capabilities: Vec<&'static str>,
    pub matrix: Matrix,
    pub sessions: &'static str,
    pub default_model: Option<String>,
    pub default_effort: Option<String>,
    pub default_model_env: String,
    pub default_effort_env: String,
    /// The effort levels it takes, or null when it takes any word or none.
    pub effort_levels: Option<&'static [&'static str]>,
    pub plan_mode: bool,
    pub readonly_seat: bool,
    pub system_prompt_file: bool,
    pub extensions: bool,
    /// The built-in tools `--tools` may limit it to (empty: no tool limit).
    pub tools: &'static [&'static str],
    /// It takes a managed session's bundle (`--managed`, `--settings`, `--mcp-config`).
    pub managed_bundle: bool,
    /// How a prompt of 102400 bytes or more reaches it: attach, instruct or refuse.
    pub prompt_staging: &'static str,
    pub prompt_ceiling: Option<usize>,
    pub usage_source: &'static str,
    /// Paths in the working tree it runs code from that no switch of its turns off: moot-render
    /// refuses a delivery while one exists.
    pub repo_code: &'static [&'static str],
}

impl Entry {
    /// Reads the runtime's defaults from `env` and its executable from `path_lookup`.
    pub fn new(
        meta: &'static Meta,
        env: impl Fn(&str) -> Option<String>,
        path_lookup: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let default_model_env = default_env(meta, "MODEL");
        let default_effort_env = default_env(meta, "EFFORT");
        let path = path_lookup(meta.executable);
        Entry {
            name: meta.name,
            executable: meta.executable,
            installed: path.is_some(),
            path,
            description: meta.description,
            parser: meta.parser.map(|dialect| format!("moot-parse-{dialect}")),
            capabilities: meta.capabilities.iter().map(|a| a.name()).collect(),
            matrix: meta.matrix,
            sessions: meta.sessions,
            default_model: env(&default_model_env),
            default_effort: env(&default_effort_env),
            default_model_env,
            default_effort_env,
            effort_levels: match meta.effort {
                EffortRule::Levels { levels, .. } => Some(levels),
                EffortRule::Unsupported | EffortRule::Word => None,
            },
            plan_mode: meta.plan_mode,
            readonly_seat: meta.readonly_seat,
            system_prompt_file: meta.system_prompt,
            extensions: meta.extensions,
            tools: meta.tools,
            managed_bundle: meta.managed_bundle,
            prompt_staging: meta.prompt.oversize.name(),
            prompt_ceiling: meta.prompt.oversize.ceiling(),
            usage_source: meta.usage_source,
            repo_code: meta.repo_code,
        }
    }
}

/// Writes the registry (or one runtime of it) as a table, or as a JSON array with `json`.
pub fn write_list(out: &mut impl Write, entries: &[Entry], json: bool) -> std::io::Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut *out, entries)?;
        return writeln!(out);
    }
    let header = [
        "RUNTIME",
        "INSTALLED",
        "CAPABILITIES",
        "DEFAULT MODEL",
        "DEFAULT EFFORT",
        "SESSIONS",
    ];
    let rows: Vec<[String; 6]> = entries
        .iter()
        .map(|e| {
            [
                e.name.to_string(),
                if e.installed { "yes" } else { "no" }.to_string(),
                e.capabilities.join(","),
                e.default_model.clone().unwrap_or_else(|| "-".into()),
                e.default_effort.clone().unwrap_or_else(|| "-".into()),
                e.sessions.to_string(),
            ]
        })
        .collect();
    let table: Vec<[String; 6]> = std::iter::once(header.map(String::from))
        .chain(rows)
        .collect();
    crate::columns::write_columns(&table, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Action;

    /// Every folder of src/runtime/ is registered under its own name, and no name twice.
    #[test]
    fn names_are_unique_and_findable() {
        let names: Vec<&str> = all().iter().map(|m| m.name).collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        let folders = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/src/runtime"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_dir());
        for folder in folders {
            let name = folder.file_name().unwrap().to_string_lossy().into_owned();
            assert!(names.contains(&name.as_str()), "{name} is not registered");
        }
        for name in &names {
            assert_eq!(find(name).unwrap().name, *name);
        }
        assert_eq!(
            find("gemini").unwrap_err().to_string(),
            format!(
                "runtime (gemini): unknown runtime; use one of {}",
                names.join(", ")
            )
        );
    }

    #[test]
    fn default_env_names() {
        assert_eq!(
            default_env(find("omp").unwrap(), "MODEL"),
            "MOOT_OMP_DEFAULT_MODEL"
        );
        assert_eq!(
            default_env(find("kimi-cli").unwrap(), "EFFORT"),
            "MOOT_KIMI_CLI_DEFAULT_EFFORT"
        );
    }

    #[test]
    fn omp_does_not_advertise_produce() {
        let omp = find("omp").unwrap();
        assert_eq!(
            omp.capabilities,
            [Action::Review, Action::Implement, Action::Ask]
        );
        assert!(omp.plan_mode && omp.readonly_seat);
        let others_plan: Vec<&str> = all()
            .iter()
            .filter(|m| m.plan_mode || m.readonly_seat)
            .map(|m| m.name)
            .collect();
        assert_eq!(others_plan, ["omp"]);
    }

    #[test]
    fn entries_take_defaults_from_the_environment_only() {
        let omp = find("omp").unwrap();
        let entry = Entry::new(
            omp,
            |name| (name == "MOOT_OMP_DEFAULT_MODEL").then(|| "anthropic/claude-opus-4".into()),
            |_| None,
        );
        assert_eq!(
            entry.default_model.as_deref(),
            Some("anthropic/claude-opus-4")
        );
        assert_eq!(entry.default_effort, None);
        assert!(!entry.installed);
        assert_eq!(entry.prompt_staging, "attach");
        assert_eq!(entry.prompt_ceiling, Some(5_242_880));
    }

    #[test]
    fn the_table_aligns_columns() {
        let entries: Vec<Entry> = all()
            .iter()
            .take(2)
            .map(|m| Entry::new(m, |_| None, |exe| (exe == "omp").then(|| "/bin/omp".into())))
            .collect();
        let mut out = Vec::new();
        write_list(&mut out, &entries, false).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("RUNTIME  INSTALLED  CAPABILITIES"));
        assert!(lines[1].starts_with("omp      yes        review,implement,ask  "));
        assert!(lines[2].starts_with("kimi     no         review,implement,ask,produce  "));
    }
}
