//! What moot-doctor prints: a table for people, or one JSON document (`--json`) for CI. Both
//! come from the same [`Report`].

use std::io::{self, Write};

use serde::Serialize;

/// Everything one doctor run found.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Every scenario of every runtime matched (and, with `--strict`, every version was in its
    /// known-good range).
    pub ok: bool,
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
        writeln!(
            out,
            "| runtime | version | in range | scenario | expected | observed | result | s |"
        )?;
        writeln!(out, "|---|---|---|---|---|---|---|---|")?;
        for rt in &self.runtimes {
            let version = rt.version.as_deref().unwrap_or("unknown");
            let in_range = if rt.in_range {
                "yes".to_string()
            } else {
                format!("no ({})", rt.known_good)
            };
            if let Some(why) = &rt.skipped {
                writeln!(
                    out,
                    "| {} | {version} | - | - | - | skipped: {} | n/a | {:.1} |",
                    rt.runtime,
                    cell(why),
                    rt.seconds
                )?;
            }
            if let Some(problem) = &rt.problem {
                let problem = cell(problem);
                writeln!(
                    out,
                    "| {} | {version} | {in_range} | - | - | {problem} | FAIL | {:.1} |",
                    rt.runtime, rt.seconds
                )?;
            }
            for s in &rt.scenarios {
                let observed = match &s.why {
                    Some(why) => format!("{}: {why}", s.observed),
                    None => s.observed.clone(),
                };
                writeln!(
                    out,
                    "| {} | {version} | {in_range} | {} | {} | {} | {} | {:.1} |",
                    rt.runtime,
                    s.scenario,
                    s.expected,
                    cell(&observed),
                    s.result,
                    s.seconds
                )?;
            }
        }
        for rt in &self.runtimes {
            writeln!(out, "{}: {:.1} s in all", rt.runtime, rt.seconds)?;
        }
        Ok(())
    }
}

/// Text made safe for one table cell: one line, no column separator.
fn cell(text: &str) -> String {
    moot::report::one_line(text).replace('|', "/")
}
