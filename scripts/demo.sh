#!/bin/sh
# The main job of moot, on streams captured from a real omp 18.2.3 run: replay each through
# moot-parse-omp and show the verdict an orchestrator would act on.
set -u
cd "$(dirname "$0")/.." || exit 1
# Where `make build` puts the release binaries (see the Makefile), unless MOOT_BIN says.
bin=${MOOT_BIN:-target/$(rustc -vV | sed -n 's/^host: //p')/release}
[ -x "$bin/moot-parse-omp" ] || { echo "demo: $bin/moot-parse-omp is missing; run 'make build' first" >&2; exit 1; }

# replay TITLE CAPTURE [FLAGS...]: one captured stream through the parser.
replay() {
    title=$1 capture=testdata/omp/$2.ndjson
    shift 2
    printf '\n== %s\n$ moot-parse-omp %s< %s\n' "$title" "${*:+$* }" "$capture"
    "$bin/moot-parse-omp" "$@" < "$capture"
    printf '(exit status %s)\n' "$?"
}

replay "a plain answer: the verdict and the validated gitmoot_result" real-plain
replay "the adapter contract: only the answer text" real-tool --text
replay "omp exited 0, but --max-time stopped its tool loop: TRUNCATED, not an answer" real-toolloop-maxtime --text
replay "a provider that kept failing: omp gave up retrying" real-error --text
replay "killed by a deadline mid-stream: never a success; usage is kept as a floor" real-toolloop-timeout-term --exit-code 124

# The drop-in adapter end to end: scripts/adapters/omp/adapter.sh, run as Mosaic runs it, with a
# stub omp on PATH that replays a real capture and exits as the real omp did.
stubs=$(mktemp -d "${TMPDIR:-/tmp}/moot-demo.XXXXXX") || exit 1
trap 'rm -rf "$stubs"' EXIT
cp scripts/stub/stub-runtime "$stubs/omp"
adapter() {
    title=$1 capture=testdata/omp/$2.ndjson exit_status=$3
    cp "$capture" "$stubs/omp.stdout"
    echo "$exit_status" >"$stubs/omp.exit"
    printf '\n== %s\n$ MOSAIC_REQUEST=... sh scripts/adapters/omp/adapter.sh   (omp replays %s)\n' \
        "$title" "$capture"
    PATH="$stubs:$PWD/$bin:$PATH" MOSAIC_REQUEST="Review the change and report." \
        MOSAIC_PROVIDER=anthropic MOSAIC_MODEL=claude-sonnet-4-5 sh scripts/adapters/omp/adapter.sh
    printf '(exit status %s)\n' "$?"
}
adapter "adapter.sh: the response alone on stdout" real-tool 0
adapter "adapter.sh: omp exited 1 after giving up; one diagnostic line, nonzero exit" real-error 1
exit 0
