//! What moot-doctor prints: a table for people, or one JSON document (`--json`) for CI. Both
//! come from the same [`Report`].

use std::io::{self, Write};

use moot::sandbox::environment::Environment;
use serde::Serialize;

/// Everything one doctor run found.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Every scenario of every runtime matched (and, with `--strict`, every version was in its
    /// known-good range and Landlock enforces here).
    pub ok: bool,
    /// The environment the runs had: what confines them here.
    pub environment: Environment,
    pub runtimes: Vec<RuntimeReport>,
}

/// One runtime's certification.
#[derive(Debug, Serialize)]
pub struct RuntimeReport {
    pub runtime: &'static str,
    /// The CLI that ran, when one was found.
    pub program: Option<String>,
    /// The version it printed, when one was found in its `--version` output.
    pub version: Option<String>,
    pub pinned: &'static str,
    /// The known-good range (`>=PINNED <NEXT_MINOR`).
    pub known_good: String,
    pub in_range: bool,
    /// The version the CLI's own stream named (the parsers' `run.cli_version`), when one did:
    /// reported beside the probed one, not judged.
    pub stream_version: Option<String>,
    /// Why the runtime was left out without failing: run without naming runtimes, the CLI found
    /// under its executable name is another runtime's (Kimi Code's `kimi` is not kimi-cli's).
    pub skipped: Option<String>,
    /// Why the runtime could not be certified at all (its CLI not found, the fake model not
    /// started, ...): then it has no scenarios.
    pub problem: Option<String>,
    pub scenarios: Vec<ScenarioReport>,
    /// Wall time of the whole certification, in seconds.
    pub seconds: f64,
}

/// One scenario of one runtime.
#[derive(Debug, Serialize)]
pub struct ScenarioReport {
    pub scenario: &'static str,
    pub expected: &'static str,
    pub observed: String,
    /// `pass`, `FAIL` or `n/a`.
    pub result: &'static str,
    /// For a `FAIL` whose run failed, the envelope's `run.error.message`: the CLI's own words
    /// (a CLI that could not start quotes its stderr there). The table shows it after the
    /// observed verdict.
    pub why: Option<String>,
    pub seconds: f64,
}

impl Report {
    /// Prints the report as `--json` asks, or as a table.
    pub fn print(&self, json: bool, out: &mut impl Write) -> io::Result<()> {
        if json {
            serde_json::to_writer_pretty(&mut *out, self)?;
            writeln!(out)?;
        } else {
            self.table(out)?;
        }
        out.flush()
    }

    fn table(&self, out: &mut impl Write) -> io::Result<()> {
        environment_table(&self.environment, out)?;
        table_header(out)?;
        for rt in &self.runtimes {
            rt.rows(out)?;
        }
        self.wall_times(out)
    }

    /// The last lines of the table: each runtime's wall time.
    pub fn wall_times(&self, out: &mut impl Write) -> io::Result<()> {
        for rt in &self.runtimes {
            writeln!(out, "{}: {:.1} s in all", rt.runtime, rt.seconds)?;
        }
        Ok(())
    }
}

/// The environment, a table of its own before the runtimes' (and a blank line after it).
pub fn environment_table(environment: &Environment, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "| environment | found |")?;
    writeln!(out, "|---|---|")?;
    for (what, found) in environment.rows() {
        writeln!(out, "| {what} | {} |", cell(&found))?;
    }
    writeln!(out)
}

/// The table's head, printed once before the first row.
pub fn table_header(out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "| runtime | version | in range | scenario | expected | observed | result | s |"
    )?;
    writeln!(out, "|---|---|---|---|---|---|---|---|")
}

impl RuntimeReport {
    /// Every row of this runtime: why it was skipped or could not be certified, then its
    /// scenarios.
    pub fn rows(&self, out: &mut impl Write) -> io::Result<()> {
        self.status_rows(out)?;
        for s in &self.scenarios {
            self.row(s, out)?;
        }
        Ok(())
    }

    /// The rows that say the runtime was skipped, or could not be certified at all.
    pub fn status_rows(&self, out: &mut impl Write) -> io::Result<()> {
        let version = self.version_cell();
        if let Some(why) = &self.skipped {
            writeln!(
                out,
                "| {} | {version} | - | - | - | skipped: {} | n/a | {:.1} |",
                self.runtime,
                cell(why),
                self.seconds
            )?;
        }
        if let Some(problem) = &self.problem {
            writeln!(
                out,
                "| {} | {version} | {} | - | - | {} | FAIL | {:.1} |",
                self.runtime,
                self.in_range_cell(),
                cell(problem),
                self.seconds
            )?;
        }
        Ok(())
    }

    /// One scenario's row, with why its run failed after the observed verdict.
    pub fn row(&self, s: &ScenarioReport, out: &mut impl Write) -> io::Result<()> {
        let observed = match &s.why {
            Some(why) => format!("{}: {why}", s.observed),
            None => s.observed.clone(),
        };
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            self.runtime,
            self.version_cell(),
            self.in_range_cell(),
            s.scenario,
            s.expected,
            cell(&observed),
            s.result,
            s.seconds
        )?;
        out.flush()
    }

    /// One line for a log: what this runtime's certification came to.
    pub fn summary(&self) -> String {
        let count = |result: &str| self.scenarios.iter().filter(|s| s.result == result).count();
        let outcome = match (&self.skipped, &self.problem) {
            (Some(why), _) => format!("skipped: {why}"),
            (None, Some(problem)) => format!("not certified: {problem}"),
            (None, None) => format!(
                "{} pass, {} FAIL, {} n/a",
                count("pass"),
                count("FAIL"),
                count("n/a")
            ),
        };
        // A skipped runtime's reason names the version found, which is another runtime's.
        let version = match (&self.skipped, &self.version) {
            (Some(_), _) => String::new(),
            (None, version) => format!(" {}", version.as_deref().unwrap_or("(version unknown)")),
        };
        format!(
            "{}{version}: {outcome} ({:.1} s)",
            self.runtime, self.seconds
        )
    }

    /// A CLI that was not found has no version to judge: `-` in both cells, and the problem
    /// says why.
    fn version_cell(&self) -> &str {
        match (&self.program, &self.version) {
            (None, _) => "-",
            (_, Some(version)) => version,
            (_, None) => "unknown",
        }
    }

    fn in_range_cell(&self) -> String {
        if self.program.is_none() {
            "-".to_string()
        } else if self.in_range {
            "yes".to_string()
        } else {
            format!("no ({})", self.known_good)
        }
    }
}

/// Text made safe for one table cell: one line, no column separator.
fn cell(text: &str) -> String {
    moot::report::one_line(text).replace('|', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skipped_runtime_s_line_names_the_version_found_once() {
        let report = RuntimeReport {
            runtime: "kimi-cli",
            program: None,
            version: Some("9.8.7".into()),
            pinned: "0.0.1",
            known_good: ">=0.0.1 <0.1.0".into(),
            in_range: false,
            stream_version: None,
            skipped: Some("the kimi found is version 9.8.7, another runtime's CLI".into()),
            problem: None,
            scenarios: Vec::new(),
            seconds: 0.5,
        };
        assert_eq!(
            report.summary(),
            "kimi-cli: skipped: the kimi found is version 9.8.7, another runtime's CLI (0.5 s)"
        );
        let certified = RuntimeReport {
            skipped: None,
            ..report
        };
        assert_eq!(
            certified.summary(),
            "kimi-cli 9.8.7: 0 pass, 0 FAIL, 0 n/a (0.5 s)"
        );
    }
}
