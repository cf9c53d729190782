#!/usr/bin/env bash
# Capture real `omp` (@oh-my-pi/pi-coding-agent) headless JSON streams against the fake provider.
# Install (once): ONLY=omp bash install.sh (its version, and why that one:
# shared/src/runtime/omp/omp.install).
FAKE_PORT=${FAKE_PORT:-18080}
source "$(dirname "$0")/common.sh"

OMP_DIR=$REALCLI_DIR/omp
export PATH=$OMP_DIR/node_modules/.bin:$PATH          # omp + bun
export HOME=$OMP_DIR/home                              # isolated ~/.omp
VER=$(omp --version 2>/dev/null | sed 's#^omp/##')
OUT=$CAPTURE_ROOT/omp-$VER
mkdir -p "$HOME/.omp/agent" "$OUT"

# Custom provider: ~/.omp/agent/models.yml (schema: src/config/models-config-schema-bundle.ts)
cat > "$HOME/.omp/agent/models.yml" <<EOF
providers:
  fake:
    baseUrl: http://127.0.0.1:$FAKE_PORT/v1
    api: openai-completions
    apiKey: dummy-not-a-secret
    models:
      - id: fake-model
        name: Fake Model
        contextWindow: 128000
        maxTokens: 4096
EOF

# Settings overlay (config.yml style) that caps omp's own retry loop, so the
# terminal error path is reached quickly (default retry.maxRetries is 10 with
# exponential backoff up to 5 min, i.e. the default error run never ends in time).
RETRY1=$REALCLI_DIR/omp/retry1.yml
printf 'retry:\n  maxRetries: 1\n  baseDelayMs: 200\n' > "$RETRY1"

start_fake
OMP="omp -p --mode=json --no-session --model fake/fake-model"
P='Inspect the workspace and finish with the gitmoot_result JSON line.'

capture "$OUT" plain            60 plain      -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" plain-thinking-high 60 plain   -- $OMP --approval-mode=yolo --thinking high -- "$P"
capture "$OUT" thinking         60 thinking   -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" thinking-high    60 thinking   -- $OMP --approval-mode=yolo --thinking high -- "$P"
capture "$OUT" tool             90 tool       -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" tool-approval-write 90 tool    -- $OMP --approval-mode=write -- "$P"
capture "$OUT" tool-approval-always-ask 90 tool -- $OMP --approval-mode=always-ask -- "$P"
capture "$OUT" toolwrite-approval-write 90 toolwrite -- $OMP --approval-mode=write -- "$P"
capture "$OUT" toolwrite-approval-always-ask 90 toolwrite -- $OMP --approval-mode=always-ask -- "$P"
capture "$OUT" toolwrite-approval-yolo 90 toolwrite -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" error-default-settings-timeout 60 error -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" error            90 error      -- $OMP --approval-mode=yolo --config "$RETRY1" -- "$P"
capture "$OUT" overloaded       90 overloaded -- $OMP --approval-mode=yolo --config "$RETRY1" -- "$P"
# One 429 / one 500: absorbed by omp's transport-level fetchWithRetry (6 attempts, pi-ai
# src/utils/openai-http.ts), so no auto_retry_* event appears in the stream.
capture "$OUT" retry-absorbed    90 retry      -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" retry500-absorbed 90 retry500   -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" length           60 length     -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" empty            60 empty      -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" drop             90 drop       -- $OMP --approval-mode=yolo -- "$P"
capture "$OUT" toolloop-maxtime 60 toolloop   -- $OMP --approval-mode=yolo --max-time 6s -- "$P"
capture "$OUT" toolloop-timeout-term 8 toolloop -- $OMP --approval-mode=yolo -- "$P"

BIG=$REALCLI_DIR/big-prompt-150k.md
make_big_prompt "$BIG" 150
# Two positional messages = two prompts/turns; the @file one becomes a `fileMention`
# message (omp truncates the mention's content, see the capture).
capture "$OUT" bigprompt-file   90 plain      -- $OMP --approval-mode=yolo -- "@$BIG" "$P"
# One message that mentions the file inline.
capture "$OUT" bigprompt-inline-mention 90 plain -- $OMP --approval-mode=yolo -- "Read @$BIG then: $P"
# Prompt on stdin (no positional message).
want bigprompt-stdin && { set_scenario plain; prepare_ws; echo "[capture] bigprompt-stdin" >&2
  ( cd "$WS" && timeout -k 5 90 $OMP --approval-mode=yolo <"$BIG" >"$OUT/bigprompt-stdin.stdout.ndjson" 2>"$OUT/bigprompt-stdin.stderr.txt" )
  echo $? > "$OUT/bigprompt-stdin.exit"; }

KILL_AFTER_PATTERN='"text_delta"' capture_kill "$OUT" kill-midstream 60 slow -- $OMP --approval-mode=yolo -- "$P"

# 12 failures = all transport attempts (6) of the first agent attempt and of its silent re-attempt fail, so omp's session-level
# retry (auto_retry_start / auto_retry_end) runs, and its second attempt succeeds.
if want retry || want retry500; then
  stop_fake
  FAKE_RETRY_FAILS=12 start_fake
  capture "$OUT" retry    120 retry    -- $OMP --approval-mode=yolo -- "$P"
  capture "$OUT" retry500 120 retry500 -- $OMP --approval-mode=yolo -- "$P"
  stop_fake
fi

# Invalid (legacy-shaped) gitmoot_result: the fake provider reads FAKE_LEGACY_RESULT at start-up.
if want plain-legacy-result || want tool-legacy-result; then
  stop_fake
  FAKE_LEGACY_RESULT=1 start_fake
  capture "$OUT" plain-legacy-result 60 plain -- $OMP --approval-mode=yolo -- "$P"
  capture "$OUT" tool-legacy-result  90 tool  -- $OMP --approval-mode=yolo -- "$P"
  stop_fake
fi

omp --version > "$OUT/VERSION.txt" 2>&1
echo "bun $(bun --version)" >> "$OUT/VERSION.txt"
echo "done: $OUT" >&2
