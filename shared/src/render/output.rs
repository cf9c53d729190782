//! What moot-render prints: the argv in one of its formats, and the staged files.

use std::io::{self, Write};

use serde::Serialize;

use super::{Format, PolicyReport, Rendering};
use crate::shell_quote::sh_quote;

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
pub(super) fn emit(tool: &str, rendering: &Rendering, format: Format) -> io::Result<()> {
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
