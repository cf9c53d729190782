#!/usr/bin/env bash
# Capture real `codex exec --json` (npm @openai/codex) output against the fake provider
# (OpenAI Responses API, SSE, POST /v1/responses).
# Install (once): ONLY=codex bash install.sh (its version, and why that one:
# shared/src/runtime/codex/codex.install).
FAKE_PORT=${FAKE_PORT:-18084}
source "$(dirname "$0")/common.sh"

CX_DIR=$REALCLI_DIR/codex
# Run the native binary directly: node_modules/.bin/codex is a node wrapper that spawns
# it as a child, so SIGKILLing the wrapper (kill-midstream) would orphan the real CLI.
CODEX=$CX_DIR/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
export HOME=$CX_DIR/home
# CODEX_HOME outside /tmp: under a temp dir codex prints a "could not create PATH
# aliases" warning on every run (it refuses to put helper binaries under /tmp).
export CODEX_HOME=${CODEX_HOME_OVERRIDE:-$REALCLI_DIR/codex/home}
export FAKE_PROVIDER_API_KEY=dummy-not-a-secret
VER=$("$CODEX" --version 2>/dev/null | awk '{print $2}')
OUT=$CAPTURE_ROOT/codex-$VER
mkdir -p "$HOME" "$CODEX_HOME" "$OUT"

# Custom provider: $CODEX_HOME/config.toml, [model_providers.<id>] with wire_api = "responses".
cat > "$CODEX_HOME/config.toml" <<EOF
model = "gpt-5.5"
model_provider = "fake"

[model_providers.fake]
name = "Fake provider"
base_url = "http://127.0.0.1:$FAKE_PORT/v1"
wire_api = "responses"
env_key = "FAKE_PROVIDER_API_KEY"
EOF

start_fake
X="$CODEX exec --json --skip-git-repo-check"
P='Inspect the workspace and finish with the gitmoot_result JSON line.'
R1='-c model_providers.fake.request_max_retries=1 -c model_providers.fake.stream_max_retries=1'

capture "$OUT" plain            60 plain      -- $X -- "$P"
capture "$OUT" plain-unknown-model 60 plain   -- $X -m fake-model -- "$P"
capture "$OUT" thinking         60 thinking   -- $X -- "$P"
capture "$OUT" tool             90 tool       -- $X -- "$P"
capture "$OUT" toolwrite-readonly-sandbox 90 toolwrite -- $X -- "$P"
capture "$OUT" toolwrite-workspace-write 90 toolwrite -- $X --sandbox workspace-write -- "$P"
capture "$OUT" error-default-settings 120 error -- $X -- "$P"
capture "$OUT" error            90 error      -- $X $R1 -- "$P"
capture "$OUT" overloaded       90 overloaded -- $X $R1 -- "$P"
capture "$OUT" retry            90 retry      -- $X -- "$P"
capture "$OUT" retry500         90 retry500   -- $X -- "$P"
capture "$OUT" length           60 length     -- $X -- "$P"
capture "$OUT" empty            60 empty      -- $X -- "$P"
capture "$OUT" drop             90 drop       -- $X -- "$P"
capture "$OUT" drop-noretry     90 drop       -- $X $R1 -- "$P"
capture "$OUT" toolloop-timeout-term 12 toolloop -- $X -- "$P"

BIG=$REALCLI_DIR/big-prompt-150k.md
make_big_prompt "$BIG" 150
want bigprompt-stdin && { set_scenario plain; prepare_ws; echo "[capture] bigprompt-stdin" >&2
  ( cd "$WS" && timeout -k 5 90 $X - <"$BIG" >"$OUT/bigprompt-stdin.stdout.ndjson" 2>"$OUT/bigprompt-stdin.stderr.txt" )
  echo $? > "$OUT/bigprompt-stdin.exit"; }

# codex --json prints whole items (no text deltas): kill 4 s into a 10 s slow stream,
# and right after the first item of a tool loop.
KILL_AFTER_SECONDS=4 capture_kill "$OUT" kill-midstream 60 slow -- $X -- "$P"
KILL_AFTER_PATTERN='"item.completed"' capture_kill "$OUT" kill-after-first-item 60 toolloop -- $X -- "$P"

# session + resume: codex exec resume <thread_id>
capture "$OUT" session-first    60 plain      -- $X -- "$P"
SID=$(first_field "$OUT/session-first.stdout.ndjson" thread_id)
echo "$SID" > "$OUT/session-first.session-id"
capture "$OUT" session-resume   60 plain      -- $CODEX exec resume --json --skip-git-repo-check "$SID" "Now say it again."

# One 500 is absorbed silently by codex's request-level retry (request_max_retries, default 4,
# i.e. 5 requests), so `retry500` shows no event.  With 5 failures the first stream attempt
# fails, codex prints "Reconnecting... 1/5" and the next attempt succeeds.
if want retry500-visible; then
  stop_fake
  FAKE_RETRY_FAILS=5 start_fake
  capture "$OUT" retry500-visible 120 retry500 -- $X -- "$P"
  stop_fake
fi

"$CODEX" --version > "$OUT/VERSION.txt" 2>&1
echo "done: $OUT" >&2
