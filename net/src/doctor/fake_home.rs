//! `--fake-home`: the private HOME a certification runs a CLI from, written where the user says,
//! so that a run can be reproduced by hand against `--serve`, and so that the end-to-end suite
//! (scripts/realcli/e2e.sh) points each CLI at its fake model with the runtime's own record
//! (`runtime/<rt>/doctor.rs`) instead of a copy of it.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use moot::model::doctor::FAKE_KEY;
use moot::model::{Certify, FakeHome, Meta};
use moot::shell_quote::sh_quote;

use super::{key_in, DoctorArgs};

/// Writes the chosen runtime's configuration into `home` and prints what to run its CLI with.
pub(super) fn write(
    tool: &str,
    args: &DoctorArgs,
    home: &Path,
    chosen: &[(&'static Meta, &'static Certify)],
) -> Result<ExitCode> {
    let [(meta, certify)] = chosen else {
        anyhow::bail!("--fake-home takes exactly one RUNTIME");
    };
    let origin = args.origin.as_deref().unwrap_or_default();
    let key = match &args.key_file {
        Some(path) => key_in("--key-file", path)?,
        None => FAKE_KEY.to_string(),
    };
    // The key goes verbatim into JSON, YAML and TOML files and the printed sh: one that would
    // need escaping in any of them is refused rather than half-escaped.
    if let Some(c) = key
        .chars()
        .find(|c| !c.is_ascii_graphic() || "\"'\\#`$".contains(*c))
    {
        anyhow::bail!(
            "--key-file: the key has {c:?}, which the CLIs' configuration files would need \
             escaped; use a key of letters, digits and punctuation other than quotes, \\, # and $"
        );
    }
    if home.to_string_lossy().chars().any(char::is_control) {
        anyhow::bail!("--fake-home: the directory's name has a control character");
    }
    // Checked before anything is written.
    let project = args.trust.as_deref().map(trusted_project).transpose()?;
    std::fs::create_dir_all(home).with_context(|| format!("--fake-home {}", home.display()))?;
    let home =
        std::fs::canonicalize(home).with_context(|| format!("--fake-home {}", home.display()))?;
    let fake = (certify.fake_home)(&home, origin, &key)
        .with_context(|| format!("{}'s configuration in {}", meta.name, home.display()))?;
    if let (Some(project), Some(trust)) = (&project, certify.trust) {
        trust(&home, project).with_context(|| format!("--trust {}", project.display()))?;
    }
    let mut out = io::stdout().lock();
    print_sh(&mut out, &fake, &key).context(tool.to_string())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `--trust`'s project, absolute: it goes verbatim into a quoted TOML key, so a name that would
/// need escaping there is refused.
fn trusted_project(project: &Path) -> Result<std::path::PathBuf> {
    let project =
        std::fs::canonicalize(project).with_context(|| format!("--trust {}", project.display()))?;
    let name = project.to_string_lossy();
    if name
        .chars()
        .any(|c| c.is_control() || c == '"' || c == '\\')
    {
        anyhow::bail!(
            "--trust {name}: the directory's name has a quote, a backslash or a control character"
        );
    }
    Ok(project)
}

/// `fake` as POSIX sh: an `export` per variable the CLI needs besides HOME, then every fact the
/// pipeline needs as a `moot_*` variable, each printed (empty when it does not apply) so that an
/// `eval` for one runtime clears what another's left. `moot_key_env` names the variable that
/// holds `key`, for a CLI that reads its key from the environment (moot-broker --key-env).
fn print_sh(out: &mut impl Write, fake: &FakeHome, key: &str) -> io::Result<()> {
    for (name, value) in &fake.env {
        writeln!(out, "export {name}={}", sh_quote(value))?;
    }
    let flag = |on: bool| if on { "1" } else { "" };
    let key_env = fake.env.iter().find(|(_, value)| value == key);
    let facts = [
        ("moot_keep", fake.keep.join(" ")),
        (
            "moot_key_env",
            key_env.map(|(name, _)| name.clone()).unwrap_or_default(),
        ),
        ("moot_stderr_file", flag(fake.stderr_file).to_string()),
        ("moot_text_flags", fake.text_flags.join(" ")),
        (
            "moot_session_store",
            fake.session_store.unwrap_or_default().to_string(),
        ),
        (
            "moot_drop_deadline",
            fake.drop_deadline
                .map(|s| s.to_string())
                .unwrap_or_default(),
        ),
    ];
    for (name, value) in facts {
        writeln!(out, "{name}={}", sh_quote(&value))?;
    }
    Ok(())
}
