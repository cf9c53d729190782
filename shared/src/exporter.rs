//! The parsers' `--otlp-endpoint` and `--otlp-file`: the run's events go, as they are read, to a
//! `moot-otlp` child, which turns them into one OpenTelemetry trace once the verdict is out.
//!
//! The OTLP messages and the HTTP client live in moot-otlp (net/src/otlp.rs), so a parser links
//! neither: without the flags it is as small and as fast as before, and with them it pays for
//! a pipe write per event. moot-otlp is looked for beside the parser's own executable (where
//! `make install` puts every tool), then on PATH.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use anyhow::Context;

/// The exporter's name.
pub const EXPORTER: &str = "moot-otlp";

/// A running moot-otlp.
#[derive(Debug)]
pub struct Exporter {
    child: Child,
}

/// Where moot-otlp is: beside this executable, else on PATH.
fn exporter_program() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(EXPORTER)))
        .filter(|beside| beside.is_file())
        .unwrap_or_else(|| PathBuf::from(EXPORTER))
}

impl Exporter {
    /// Starts moot-otlp sending to `endpoint` and/or writing `file`; returns it and the pipe its
    /// events go into.
    pub fn spawn(
        endpoint: Option<&str>,
        file: Option<&Path>,
    ) -> anyhow::Result<(Exporter, ChildStdin)> {
        let program = exporter_program();
        let mut command = Command::new(&program);
        if let Some(endpoint) = endpoint {
            command.arg("--endpoint").arg(endpoint);
        }
        if let Some(file) = file {
            command.arg("--file").arg(file);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .with_context(|| {
                format!(
                    "cannot start {} for --otlp-endpoint/--otlp-file (install it beside this tool or on PATH)",
                    program.display()
                )
            })?;
        let stdin = child
            .stdin
            .take()
            .context("moot-otlp was started without a stdin pipe")?;
        Ok((Exporter { child }, stdin))
    }

    /// Waits for moot-otlp, whose stdin must be closed by now; `Err` says why no trace went out
    /// (moot-otlp has printed its own line).
    pub fn finish(mut self) -> Result<(), String> {
        match self.child.wait() {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("{EXPORTER} {status}")),
            Err(error) => Err(format!("cannot wait for {EXPORTER}: {error}")),
        }
    }
}

/// Writes to the events output, if any, and to the exporter. An exporter that went away (its
/// error is its own to report) is dropped and the other output goes on.
pub struct Tee {
    pub primary: Option<Box<dyn Write>>,
    pub exporter: Option<io::BufWriter<ChildStdin>>,
}

impl Write for Tee {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if let Some(exporter) = self.exporter.as_mut() {
            if exporter.write_all(bytes).is_err() {
                self.exporter = None;
            }
        }
        match self.primary.as_mut() {
            Some(primary) => primary.write_all(bytes).map(|()| bytes.len()),
            None => Ok(bytes.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if let Some(exporter) = self.exporter.as_mut() {
            if exporter.flush().is_err() {
                self.exporter = None;
            }
        }
        match self.primary.as_mut() {
            Some(primary) => primary.flush(),
            None => Ok(()),
        }
    }
}
