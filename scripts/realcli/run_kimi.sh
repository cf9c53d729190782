#!/usr/bin/env bash
# Capture real `kimi` (PyPI kimi-cli, the legacy Python Kimi CLI) print-mode stream-json output.
# Install (once): ONLY=kimi-cli bash install.sh (its version, and why that one:
# shared/src/runtime/kimi/kimi-cli.install).
FAKE_PORT=${FAKE_PORT:-18081}
source "$(dirname "$0")/common.sh"

KIMI_DIR=$REALCLI_DIR/kimi
export HOME=$KIMI_DIR/home                              # isolated ~/.kimi
export KIMI_DISABLE_TELEMETRY=1                         # no telemetry-logs.kimi.com
KIMI=$KIMI_DIR/venv/bin/kimi
VER=$("$KIMI" --version 2>/dev/null | sed 's/^kimi, version //')
OUT=$CAPTURE_ROOT/kimi-$VER
mkdir -p "$HOME/.kimi" "$OUT"

# Custom provider: ~/.kimi/config.toml (kimi_cli/config.py; type "kimi" is
# kosong.chat_provider.kimi).
write_kimi_config "$HOME/.kimi/config.toml" 'telemetry = false'

start_fake
K="$KIMI --print --output-format stream-json"
P='Inspect the workspace and finish with the gitmoot_result JSON line.'

capture_each "$OUT" "plain thinking tool:90 error:150 overloaded:150 retry:90 retry500:90 length
  empty drop:90" -- $K -p "$P"
capture "$OUT" toolloop-maxsteps 90 toolloop  -- $K --max-steps-per-turn 3 -p "$P"
# kimi is not endless on a tool loop: after 12 identical calls its dead-loop guard ends the
# turn by itself (exit 0).  A 12 s `timeout` (as for the other CLIs) fired during kimi's
# 5-12 s start-up, before any request, so the SIGTERM case is captured 5 s after the first
# model request instead (exit 143).
capture "$OUT" toolloop-deadloop-stop 90 toolloop -- $K -p "$P"
KILL_SIGNAL=TERM KILL_AFTER_REQUEST_SECONDS=5 capture_kill "$OUT" toolloop-sigterm 60 toolloop -- $K -p "$P"
capture "$OUT" final-message-only 60 plain    -- $K --final-message-only -p "$P"

# 150 KiB prompt: one argv string is capped at 128 KiB on Linux, so pipe it on stdin
# (--input-format text is the default for piped stdin in print mode).
BIG=$REALCLI_DIR/big-prompt-150k.md
make_big_prompt "$BIG" 150
begin_capture "$OUT" bigprompt-stdin plain && { echo "[capture] bigprompt-stdin" >&2
  ( cd "$WS" && timeout -k 5 90 $K --input-format text <"$BIG" >"$OUT/bigprompt-stdin.stdout.ndjson" 2>"$OUT/bigprompt-stdin.stderr.txt" )
  echo $? > "$OUT/bigprompt-stdin.exit"; }

# stream-json input on stdin
begin_capture "$OUT" stream-json-input plain && { echo "[capture] stream-json-input" >&2
  printf '%s\n' '{"role":"user","content":"Inspect the workspace and finish with the gitmoot_result JSON line."}' > "$REALCLI_DIR/kimi-input.ndjson"
  ( cd "$WS" && timeout -k 5 60 $K --input-format stream-json <"$REALCLI_DIR/kimi-input.ndjson" >"$OUT/stream-json-input.stdout.ndjson" 2>"$OUT/stream-json-input.stderr.txt" )
  echo $? > "$OUT/stream-json-input.exit"; }

# kimi's stream-json prints whole messages, not deltas: kill (a) 4 s into a slow
# 10 s model stream (nothing printed yet) and (b) right after the first printed
# line of a tool loop (mid-conversation).
# (4 s after the model request arrived: kimi's own start-up takes 5-12 s here, so a plain
# KILL_AFTER_SECONDS=4 killed it before it had sent any request.)
KILL_AFTER_REQUEST_SECONDS=4 capture_kill "$OUT" kill-midstream 60 slow -- $K -p "$P"
KILL_AFTER_PATTERN='"role"' capture_kill "$OUT" kill-after-first-line 60 toolloop -- $K -p "$P"

# session + resume (-S <id>); the id is printed on stderr ("To resume this session: kimi -r <id>")
capture "$OUT" session-first    60 plain      -- $K -p "$P"
SID=$(grep -o 'kimi -r [0-9a-f-]*' "$OUT/session-first.stderr.txt" | awk '{print $3}' | tail -1)
echo "$SID" > "$OUT/session-first.session-id"
capture "$OUT" session-resume   60 plain      -- $K -S "$SID" -p "Now say it again."
capture "$OUT" session-resume-tool 90 tool    -- $K -S "$SID" -p "Run ls this time."

"$KIMI" --version > "$OUT/VERSION.txt" 2>&1
echo "done: $OUT" >&2
