#!/usr/bin/env bash
# Capture real `pi` (@mariozechner/pi-coding-agent) headless JSON streams against the fake provider.
# Install (once): ONLY=pi bash install.sh (its version, and why that one:
# shared/src/runtime/pi/pi.install).
FAKE_PORT=${FAKE_PORT:-18082}
source "$(dirname "$0")/common.sh"

PI_DIR=$REALCLI_DIR/pi
export PATH=$PI_DIR/node_modules/.bin:$PATH
export HOME=$PI_DIR/home                               # isolated ~/.pi
export PI_OFFLINE=1                                    # no startup network operations
VER=$(pi --version 2>&1 | tail -1)
OUT=$CAPTURE_ROOT/pi-$VER
mkdir -p "$HOME/.pi/agent" "$OUT"

# Custom provider: ~/.pi/agent/models.json (docs/models.md in the package)
cat > "$HOME/.pi/agent/models.json" <<EOF
{
  "providers": {
    "fake": {
      "baseUrl": "http://127.0.0.1:$FAKE_PORT/v1",
      "api": "openai-completions",
      "apiKey": "dummy-not-a-secret",
      "compat": { "supportsDeveloperRole": false, "supportsReasoningEffort": false },
      "models": [ { "id": "fake-model", "name": "Fake Model", "contextWindow": 128000, "maxTokens": 4096 } ]
    }
  }
}
EOF

start_fake
PI="pi -p --mode json --model fake/fake-model"
P='Inspect the workspace and finish with the gitmoot_result JSON line.'

capture "$OUT" plain            60 plain      -- $PI --no-session "$P"
capture "$OUT" thinking         60 thinking   -- $PI --no-session "$P"
capture "$OUT" tool             90 tool       -- $PI --no-session "$P"
capture "$OUT" error            150 error     -- $PI --no-session "$P"
capture "$OUT" overloaded       150 overloaded -- $PI --no-session "$P"
capture "$OUT" retry            90 retry      -- $PI --no-session "$P"
capture "$OUT" retry500         90 retry500   -- $PI --no-session "$P"
capture "$OUT" length           60 length     -- $PI --no-session "$P"
capture "$OUT" empty            60 empty      -- $PI --no-session "$P"
capture "$OUT" drop             90 drop       -- $PI --no-session "$P"
capture "$OUT" toolloop-timeout-term 10 toolloop -- $PI --no-session "$P"

BIG=$REALCLI_DIR/big-prompt-150k.md
make_big_prompt "$BIG" 150
capture "$OUT" bigprompt-file   90 plain      -- $PI --no-session "@$BIG" "$P"

KILL_AFTER_PATTERN='"text_delta"' capture_kill "$OUT" kill-midstream 60 slow -- $PI --no-session "$P"

# session + resume: first run saves a session, second run continues it by id.
SESS_DIR=$REALCLI_DIR/pi/sessions; rm -rf "$SESS_DIR"; mkdir -p "$SESS_DIR"
capture "$OUT" session-first    60 plain      -- $PI --session-dir "$SESS_DIR" "$P"
SID=$(first_field "$OUT/session-first.stdout.ndjson" id)
echo "$SID" > "$OUT/session-first.session-id"
capture "$OUT" session-resume   60 plain      -- $PI --session-dir "$SESS_DIR" --session "$SID" "Now say it again."

# A single 429/500 is absorbed by the OpenAI SDK (3 requests per attempt), so `retry`/`retry500`
# show no retry event.  With 3 failures the first attempt fails, pi's own auto-retry
# (auto_retry_start / auto_retry_end) runs and the second attempt succeeds.
if want retry-visible || want retry500-visible; then
  stop_fake
  FAKE_RETRY_FAILS=3 start_fake
  capture "$OUT" retry-visible    120 retry    -- $PI --no-session "$P"
  capture "$OUT" retry500-visible 120 retry500 -- $PI --no-session "$P"
  stop_fake
fi

pi --version > "$OUT/VERSION.txt" 2>&1
echo "done: $OUT" >&2
