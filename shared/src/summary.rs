//! moot-report's engine: many verdict envelopes in, one summary out.
//!
//! Envelopes are read one at a time as they stream (a file may hold one, or many as NDJSON or
//! concatenated JSON), and only counts are kept: totals, failures by class, decisions, tokens and
//! cost by runtime and model, and the few slowest jobs. Memory grows with the number of distinct
//! runtimes, models, classes and decisions, never with the number of envelopes.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

/// How many of the slowest jobs the summary names.
pub const SLOWEST: usize = 5;

/// The part of an envelope the summary reads; everything else is ignored, so an envelope with
/// fields added later still counts.
#[derive(Deserialize)]
struct EnvelopeView {
    gitmoot_result: Option<ResultView>,
    run: RunView,
}

#[derive(Deserialize)]
struct ResultView {
    decision: Option<String>,
}

#[derive(Deserialize)]
struct RunView {
    runtime: String,
    ok: bool,
    error: Option<ErrorView>,
    model: Option<String>,
    #[serde(default)]
    usage: UsageView,
    process: Option<ProcessView>,
}

#[derive(Deserialize)]
struct ErrorView {
    class: String,
}

#[derive(Default, Deserialize)]
struct UsageView {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    cost_usd: Option<f64>,
}

#[derive(Deserialize)]
struct ProcessView {
    elapsed_ms: Option<u64>,
}

/// Tokens and cost of the jobs of one runtime and model.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct ModelRow {
    pub runtime: String,
    /// The model the envelope names; `-` when it names none (a run that failed before it said).
    pub model: String,
    pub jobs: u64,
    pub ok: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The sum over the jobs whose CLI reported a cost; `None` when none did (never estimated).
    pub cost_usd: Option<f64>,
    /// How many jobs reported a cost.
    pub priced_jobs: u64,
}

/// One of the slowest jobs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowJob {
    /// Where it was read: the file, and `#N` for the Nth envelope after a file's first.
    pub job: String,
    pub runtime: String,
    pub elapsed_ms: u64,
    /// `ok`, or the failure's class.
    pub outcome: String,
}

/// The summary of every envelope read so far.
#[derive(Debug, Default, Serialize)]
pub struct Summary {
    pub jobs: u64,
    pub ok: u64,
    pub failed: u64,
    /// Failed jobs by class (`truncated`, `no_output`, ...).
    pub failed_by_class: BTreeMap<String, u64>,
    /// Jobs by their gitmoot_result's decision (`approved`, ...), for jobs that gave one.
    pub decisions: BTreeMap<String, u64>,
    /// By runtime, then model (a list in JSON: [`Summary::models`]).
    #[serde(rename = "models", serialize_with = "rows")]
    by_model: BTreeMap<(String, String), ModelRow>,
    /// The slowest jobs whose envelope carries a wall time, slowest first.
    pub slowest: Vec<SlowJob>,
}

/// The model rows as a JSON list, in their map's order.
fn rows<S: serde::Serializer>(
    by_model: &BTreeMap<(String, String), ModelRow>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(by_model.values())
}

impl Summary {
    /// Reads every envelope in `input` (one, or many as NDJSON or concatenated JSON), naming
    /// them after `source`; an error names the envelope and what is wrong with it.
    pub fn read(&mut self, source: &str, input: impl Read) -> Result<(), String> {
        let values = serde_json::Deserializer::from_reader(io::BufReader::new(input))
            .into_iter::<EnvelopeView>();
        for (index, envelope) in values.enumerate() {
            let job = if index == 0 {
                source.to_string()
            } else {
                format!("{source}#{}", index + 1)
            };
            let envelope = envelope.map_err(|e| {
                let what = if e.is_data() {
                    "not a moot envelope (it needs run.runtime and run.ok)"
                } else {
                    "not JSON"
                };
                format!("{job}: {what}: {e}")
            })?;
            self.add(job, envelope);
        }
        Ok(())
    }

    fn add(&mut self, job: String, envelope: EnvelopeView) {
        let run = envelope.run;
        self.jobs += 1;
        let outcome = if run.ok {
            self.ok += 1;
            "ok".to_string()
        } else {
            self.failed += 1;
            let class = run.error.map_or_else(|| "unknown".to_string(), |e| e.class);
            *self.failed_by_class.entry(class.clone()).or_default() += 1;
            class
        };
        if let Some(decision) = envelope.gitmoot_result.and_then(|r| r.decision) {
            *self.decisions.entry(decision).or_default() += 1;
        }
        let model = run.model.unwrap_or_else(|| "-".to_string());
        let row = self
            .by_model
            .entry((run.runtime.clone(), model.clone()))
            .or_insert_with(|| ModelRow {
                runtime: run.runtime.clone(),
                model,
                ..ModelRow::default()
            });
        row.jobs += 1;
        row.ok += u64::from(run.ok);
        // Counts from files anyone may have written: they saturate, never wrap or panic.
        row.input_tokens = row.input_tokens.saturating_add(run.usage.input_tokens);
        row.output_tokens = row.output_tokens.saturating_add(run.usage.output_tokens);
        if let Some(cost) = run.usage.cost_usd {
            row.cost_usd = Some(row.cost_usd.unwrap_or(0.0) + cost);
            row.priced_jobs += 1;
        }
        if let Some(elapsed_ms) = run.process.and_then(|p| p.elapsed_ms) {
            self.note_time(SlowJob {
                job,
                runtime: run.runtime,
                elapsed_ms,
                outcome,
            });
        }
    }

    /// Keeps `job` if it is among the [`SLOWEST`]; the earlier of two equally slow stays first.
    fn note_time(&mut self, job: SlowJob) {
        let at = self
            .slowest
            .partition_point(|kept| kept.elapsed_ms >= job.elapsed_ms);
        if at < SLOWEST {
            self.slowest.insert(at, job);
            self.slowest.truncate(SLOWEST);
        }
    }

    /// The rows of tokens and cost, by runtime, then model.
    pub fn models(&self) -> impl ExactSizeIterator<Item = &ModelRow> {
        self.by_model.values()
    }
}

/// How the summary is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal or a log.
    Table,
    /// GitHub-flavoured Markdown, for a CI step summary (`>> "$GITHUB_STEP_SUMMARY"`).
    Markdown,
    /// One JSON document.
    Json,
}

/// Prints `summary` in `format`.
pub fn print(summary: &Summary, format: Format, out: &mut impl Write) -> io::Result<()> {
    match format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, summary)?;
            writeln!(out)
        }
        Format::Table | Format::Markdown => print_text(summary, format == Format::Markdown, out),
    }
}

fn print_text(summary: &Summary, markdown: bool, out: &mut impl Write) -> io::Result<()> {
    let heading = |title: &str| {
        if markdown {
            format!("\n### {title}\n\n")
        } else {
            format!("\n{title}\n")
        }
    };
    // In Markdown the totals are a list, so that each stays a line of its own.
    let bullet = if markdown { "- " } else { "" };
    if markdown {
        writeln!(out, "## moot: {} jobs\n", summary.jobs)?;
    }
    writeln!(
        out,
        "{bullet}{} jobs: {} ok, {} failed",
        summary.jobs, summary.ok, summary.failed
    )?;
    if !summary.failed_by_class.is_empty() {
        let classes = counts(&summary.failed_by_class);
        writeln!(out, "{bullet}failed by class: {classes}")?;
    }
    if !summary.decisions.is_empty() {
        writeln!(out, "{bullet}decisions: {}", counts(&summary.decisions))?;
    }
    if summary.models().len() > 0 {
        write!(out, "{}", heading("By runtime and model"))?;
        let mut rows = vec![[
            "runtime", "model", "jobs", "ok", "input", "output", "cost USD",
        ]
        .map(String::from)];
        for m in summary.models() {
            let cost = match m.cost_usd {
                None => "-".to_string(),
                Some(cost) if m.priced_jobs == m.jobs => format!("{cost:.4}"),
                Some(cost) => format!("{cost:.4} ({} of {} jobs)", m.priced_jobs, m.jobs),
            };
            rows.push([
                m.runtime.clone(),
                m.model.clone(),
                m.jobs.to_string(),
                m.ok.to_string(),
                m.input_tokens.to_string(),
                m.output_tokens.to_string(),
                cost,
            ]);
        }
        table(&rows, markdown, out)?;
    }
    if !summary.slowest.is_empty() {
        write!(out, "{}", heading("Slowest"))?;
        let mut rows = vec![["seconds", "runtime", "outcome", "job"].map(String::from)];
        for s in &summary.slowest {
            rows.push([
                format!("{:.1}", s.elapsed_ms as f64 / 1000.0),
                s.runtime.clone(),
                s.outcome.clone(),
                s.job.clone(),
            ]);
        }
        table(&rows, markdown, out)?;
    }
    Ok(())
}

/// `name n, name n`, most first (then by name).
fn counts(counts: &BTreeMap<String, u64>) -> String {
    let mut sorted: Vec<(&String, &u64)> = counts.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    sorted
        .iter()
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `rows` (the first is the header) as a Markdown table, or as columns padded to their widest
/// cell; a cell's `|` is escaped in Markdown, and no cell can break a row (names and models
/// come from the envelopes, which anyone may have written).
fn table<const N: usize>(
    rows: &[[String; N]],
    markdown: bool,
    out: &mut impl Write,
) -> io::Result<()> {
    let clean = |cell: &str| -> String {
        let one_line: String = cell
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if markdown {
            one_line.replace('|', "\\|")
        } else {
            one_line
        }
    };
    let rows: Vec<[String; N]> = rows
        .iter()
        .map(|row| row.clone().map(|c| clean(&c)))
        .collect();
    if markdown {
        for (i, row) in rows.iter().enumerate() {
            writeln!(out, "| {} |", row.join(" | "))?;
            if i == 0 {
                writeln!(out, "|{}", "---|".repeat(N))?;
            }
        }
        return Ok(());
    }
    crate::columns::write_columns(&rows, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(runtime: &str, ok: bool, elapsed: Option<u64>) -> String {
        let error = if ok {
            "null".to_string()
        } else {
            r#"{"class":"truncated","message":"m","last_text":null}"#.to_string()
        };
        let elapsed = elapsed.map_or("null".into(), |e| e.to_string());
        format!(
            r#"{{"gitmoot_result":null,"run":{{"runtime":"{runtime}","ok":{ok},"error":{error},"model":"m1","usage":{{"input_tokens":10,"output_tokens":2,"cost_usd":null}},"process":{{"elapsed_ms":{elapsed}}}}}}}"#
        )
    }

    #[test]
    fn only_the_slowest_are_kept_and_memory_does_not_grow_with_the_jobs() {
        let mut summary = Summary::default();
        let stream: String = (0..10_000u64)
            .map(|i| envelope("pi", i % 3 != 0, Some(i % 977)) + "\n")
            .collect();
        summary.read("all.ndjson", stream.as_bytes()).unwrap();
        assert_eq!(
            (summary.jobs, summary.ok, summary.failed),
            (10_000, 6_666, 3_334)
        );
        assert_eq!(summary.failed_by_class["truncated"], 3_334);
        let models: Vec<&ModelRow> = summary.models().collect();
        assert_eq!(models.len(), 1);
        assert_eq!(models[0].input_tokens, 100_000);
        let slowest: Vec<u64> = summary.slowest.iter().map(|s| s.elapsed_ms).collect();
        assert_eq!(slowest, [976; SLOWEST]);
        // The earliest of the equally slow: 976, 1953, ... (977 apart).
        assert_eq!(summary.slowest[0].job, "all.ndjson#977");
    }

    #[test]
    fn huge_token_counts_saturate() {
        let huge = envelope("pi", true, None).replace(
            "\"input_tokens\":10",
            &format!("\"input_tokens\":{}", u64::MAX),
        );
        let mut summary = Summary::default();
        summary
            .read("x", format!("{huge}\n{huge}\n").as_bytes())
            .unwrap();
        assert_eq!(summary.models().next().unwrap().input_tokens, u64::MAX);
    }

    #[test]
    fn a_broken_envelope_is_named() {
        let mut summary = Summary::default();
        let two = envelope("omp", true, None) + "\n{\"run\":{\"ok\":true}}\n";
        let error = summary.read("jobs.ndjson", two.as_bytes()).unwrap_err();
        assert!(
            error.starts_with("jobs.ndjson#2: not a moot envelope"),
            "{error}"
        );
        let error = Summary::default()
            .read("x.json", &b"{\"run\": "[..])
            .unwrap_err();
        assert!(error.starts_with("x.json: not JSON"), "{error}");
    }

    #[test]
    fn a_cell_cannot_break_a_row() {
        let rows = [
            ["a".to_string(), "b".to_string()],
            ["x|y\nz".to_string(), "w".to_string()],
        ];
        let mut out = Vec::new();
        table(&rows, true, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "| a | b |\n|---|---|\n| x\\|y z | w |\n"
        );
    }
}
