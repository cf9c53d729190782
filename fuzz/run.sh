#!/bin/sh
# Runs fuzz targets for SECONDS each, seeded from testdata/ (fuzz/seed.py); exits nonzero on the
# first crash, hang (an input over 10 s) or memory blow-up (over 2 GiB), leaving the input in
# fuzz/artifacts/<target>/. Needs only the stable toolchain and crates.io: cargo-fuzz is
# installed when absent, and RUSTC_BOOTSTRAP=1 lets stable rustc take the -Z flags it passes.
# No sanitizer (-s none): the code under test is safe Rust, so ASan would only halve the
# executions; panics, aborts, stack overflows, timeouts and OOMs are caught without it.
#
# Usage: fuzz/run.sh SECONDS [TARGET...]   (default: every target `cargo fuzz list` names)
set -eu
cd "$(dirname "$0")"
CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz/run.sh: installing cargo-fuzz $CARGO_FUZZ_VERSION" >&2
    cargo install cargo-fuzz --locked --version "$CARGO_FUZZ_VERSION"
fi
export RUSTC_BOOTSTRAP=1
seconds=$1
shift
targets=${*:-$(cargo fuzz list)}
cargo fuzz build -s none
for target in $targets; do
    corpus=$(python3 seed.py "$target")
    echo "fuzz/run.sh: $target for ${seconds}s" >&2
    cargo fuzz run -s none "$target" "$corpus" -- \
        -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1
done
