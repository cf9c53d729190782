//! moot-parse-omp: omp's `-p --mode=json` NDJSON on stdin, one verdict on stdout.

use moot::runtime::omp::stream::Omp;

const EXAMPLES: &str = "\
Examples:
  cat run.ndjson | moot-parse-omp
  moot-run --status-file s.json -- omp -p --mode=json ... | moot-parse-omp --status-file s.json
  moot-parse-omp --text < run.ndjson        # only the answer, for adapter.sh";

moot::parser_main! {
    /// Read omp's `-p --mode=json` NDJSON on stdin and print one JSON envelope on stdout: the
    /// validated gitmoot_result and a run report whose `ok` is derived from the stream, never from
    /// omp's exit status (omp exits 0 when a turn fails).
    tool: "moot-parse-omp",
    dialect: Omp::default(),
    examples: EXAMPLES,
}
