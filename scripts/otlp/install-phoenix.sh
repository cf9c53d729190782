#!/usr/bin/env bash
# Installs Arize Phoenix, the OpenTelemetry receiver the OTLP test sends real runs to
# (e2e/tests/real_cli.rs), into a private venv from PyPI: $PHOENIX_DIR/venv/bin/phoenix.
# Idempotent: a venv holding the pinned version is left alone.
#
#   PHOENIX_DIR   where to install (default: $TMPDIR/moot-phoenix)
set -euo pipefail
PHOENIX_DIR=${PHOENIX_DIR:-${TMPDIR:-/tmp}/moot-phoenix}
# The release the test was written against; its REST API serves spans at
# GET /v1/projects/{project}/spans.
spec=arize-phoenix==20.26.1
stamp=$PHOENIX_DIR/.installed
if [ "$(cat "$stamp" 2>/dev/null)" = "$spec" ]; then
    echo "phoenix: $spec already in $PHOENIX_DIR"
    exit 0
fi
mkdir -p "$PHOENIX_DIR"
python3 -m venv "$PHOENIX_DIR/venv"
"$PHOENIX_DIR/venv/bin/pip" install --quiet --disable-pip-version-check "$spec" \
    >"$PHOENIX_DIR/pip.log" 2>&1 || { tail -5 "$PHOENIX_DIR/pip.log" >&2; exit 1; }
printf '%s' "$spec" >"$stamp"
echo "phoenix: $spec in $PHOENIX_DIR"
