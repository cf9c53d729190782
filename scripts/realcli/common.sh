# shellcheck shell=bash
# Shared helpers for run_<cli>.sh.  Source it; do not execute it.
# Everything talks only to the fake model on 127.0.0.1:$FAKE_PORT.
set -u

REALCLI_DIR=${REALCLI_DIR:-${TMPDIR:-/tmp}/moot-realcli}          # where CLIs are installed (one dir per CLI)
SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CAPTURE_ROOT=${CAPTURE_ROOT:-$PWD/captures}
FAKE_PORT=${FAKE_PORT:-18080}                      # each run_<cli>.sh sets its own port
FAKE_SCENARIO_FILE=${FAKE_SCENARIO_FILE:-$REALCLI_DIR/scenario.$FAKE_PORT}
FAKE_LOG=${FAKE_LOG:-$REALCLI_DIR/fake.$FAKE_PORT.log}
WS=${WS:-$REALCLI_DIR/ws}                          # workspace the CLIs run in
PYTHON=${PYTHON:-$(command -v python3)}
# Loopback only.  Safety net: every proxy-aware HTTP client is pointed at a closed
# loopback port (127.0.0.1:9), so catalog fetches / update checks / telemetry die
# locally instead of leaving the machine; the fake provider is exempted by NO_PROXY.
export HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9
export https_proxy=$HTTPS_PROXY http_proxy=$HTTP_PROXY all_proxy=$ALL_PROXY
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

FAKE_PID=""

prepare_ws() {  # fresh workspace for every capture (tool runs may have written files)
  case "$WS" in /tmp/*) rm -rf "$WS";; esac
  mkdir -p "$WS"
  printf '# demo workspace\n\nThis is a tiny workspace used for CLI capture runs.\n' > "$WS/README.md"
  printf 'fn main() { println!("hi"); }\n' > "$WS/main.rs"
  printf 'notes\n' > "$WS/notes.txt"
}

# The fake model is moot-doctor's (net/src/fake_model/, `moot-doctor --serve`); MOOT_BIN names the
# directory of the built tools (default: the workspace's target/debug).  A run script sets
# FAKE_RETRY_FAILS, FAKE_RETRY_THEN or FAKE_LEGACY_RESULT=1 for the server it starts next.
MOOT_BIN=${MOOT_BIN:-$SCRIPT_DIR/../../target/debug}

start_fake() {
  if curl -s -m 2 "http://127.0.0.1:$FAKE_PORT/health" >/dev/null 2>&1; then
    echo "[common] port $FAKE_PORT is already in use; stop that server or set FAKE_PORT" >&2
    exit 1
  fi
  [ -x "$MOOT_BIN/moot-doctor" ] || {
    echo "[common] no moot-doctor in $MOOT_BIN: run cargo build, or set MOOT_BIN" >&2
    exit 1
  }
  mkdir -p "$(dirname "$FAKE_LOG")"
  local extra=()
  [ -n "${FAKE_RETRY_FAILS:-}" ] && extra+=(--retry-fails "$FAKE_RETRY_FAILS")
  [ -n "${FAKE_RETRY_THEN:-}" ] && extra+=(--retry-then "$FAKE_RETRY_THEN")
  [ -n "${FAKE_LEGACY_RESULT:-}" ] && extra+=(--legacy-result)
  "$MOOT_BIN/moot-doctor" --serve --port "$FAKE_PORT" --scenario-file "$FAKE_SCENARIO_FILE" \
      --log "$FAKE_LOG" "${extra[@]}" >"$REALCLI_DIR/fake.$FAKE_PORT.out" 2>&1 &
  FAKE_PID=$!
  for _ in $(seq 1 50); do
    curl -s -m 1 "http://127.0.0.1:$FAKE_PORT/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  trap stop_fake EXIT
  echo "[common] fake model pid $FAKE_PID on 127.0.0.1:$FAKE_PORT" >&2
}

stop_fake() {
  if [ -n "$FAKE_PID" ]; then kill "$FAKE_PID" 2>/dev/null; wait "$FAKE_PID" 2>/dev/null; FAKE_PID=""; fi
}

set_scenario() {
  echo "$1" > "$FAKE_SCENARIO_FILE"
  curl -s -m 2 "http://127.0.0.1:$FAKE_PORT/__reset" >/dev/null
  echo "=== scenario $1" >> "$FAKE_LOG"
}

# capture <outdir> <name> <timeout-seconds> <scenario> -- cmd args...
# Runs cmd (cwd = $WS) under `timeout`, saving stdout/stderr/exit code.
want() {  # ONLY="a b c" restricts a run script to those capture names
  [ -z "${ONLY:-}" ] && return 0
  case " $ONLY " in *" $1 "*) return 0;; esac
  return 1
}

begin_capture() {  # begin_capture <outdir> <name> <scenario>: false when ONLY leaves <name> out
  want "$2" || return 1
  mkdir -p "$1"
  set_scenario "$3"
  prepare_ws
}

capture() {
  local outdir=$1 name=$2 tmo=$3 scen=$4; shift 4
  [ "$1" = "--" ] && shift
  begin_capture "$outdir" "$name" "$scen" || return 0
  echo "[capture] $name (scenario=$scen, timeout=${tmo}s): $*" >&2
  ( cd "$WS" && timeout -k 5 "$tmo" "$@" </dev/null >"$outdir/$name.stdout.ndjson" 2>"$outdir/$name.stderr.txt" )
  local rc=$?
  echo "$rc" > "$outdir/$name.exit"
  echo "[capture] $name exit=$rc stdout=$(wc -c <"$outdir/$name.stdout.ndjson")B stderr=$(wc -c <"$outdir/$name.stderr.txt")B" >&2
}

# capture_each <outdir> "<scenario>[:<timeout-seconds>] ..." -- cmd args...
# One capture per scenario, named after it, with the same command; the timeout is 60 s unless
# given after the scenario's name (error:240).
capture_each() {
  local outdir=$1 list=$2 item; shift 2
  for item in $list; do
    case "$item" in
      *:*) capture "$outdir" "${item%%:*}" "${item#*:}" "${item%%:*}" "$@";;
      *) capture "$outdir" "$item" 60 "$item" "$@";;
    esac
  done
}

# write_kimi_config <file> [<line>...]: a config.toml pointing either Kimi CLI (kimi-cli and Kimi
# Code read the same format) at the fake provider, each <line> at the top.  type "kimi" is
# Moonshot's OpenAI-compatible Chat Completions API at <base_url>/chat/completions.
write_kimi_config() {
  local file=$1 line; shift
  {
    echo 'default_model = "fake"'
    for line in "$@"; do echo "$line"; done
    cat <<TOML

[providers.fake]
type = "kimi"
base_url = "http://127.0.0.1:$FAKE_PORT/v1"
api_key = "dummy-not-a-secret"

[models.fake]
provider = "fake"
model = "fake-model"
max_context_size = 128000
TOML
  } > "$file"
}

# capture_kill <outdir> <name> <max-wait-seconds> <scenario> -- cmd args...
# Starts cmd in the background, waits until it has written its first stdout
# line (or a line matching $KILL_AFTER_PATTERN, or $KILL_AFTER_SECONDS elapsed),
# then SIGKILLs it (by PID) and records the exit status (137).
capture_kill() {
  local outdir=$1 name=$2 tmo=$3 scen=$4; shift 4
  [ "$1" = "--" ] && shift
  begin_capture "$outdir" "$name" "$scen" || return 0
  local out="$outdir/$name.stdout.ndjson" err="$outdir/$name.stderr.txt"
  echo "[capture_kill] $name (scenario=$scen): $*" >&2
  ( cd "$WS" && exec "$@" </dev/null >"$out" 2>"$err" ) &
  local pid=$! waited=0 lines t0 now log0 treq=""
  t0=$(date +%s%N)
  log0=$(grep -c '' "$FAKE_LOG" 2>/dev/null || echo 0)
  while kill -0 "$pid" 2>/dev/null; do
    lines=$(grep -c '' "$out" 2>/dev/null || echo 0)
    # wait for the first assistant text delta-ish output if possible, else any output
    if [ "${KILL_AFTER_REQUEST_SECONDS:-}" != "" ]; then
      # N seconds after the CLI's first model request reached the fake provider
      # (robust against slow CLI start-up, unlike KILL_AFTER_SECONDS)
      if [ -z "$treq" ] && tail -n +$((log0+1)) "$FAKE_LOG" 2>/dev/null | grep -q '"method":"POST"'; then
        treq=$(date +%s%N)
      fi
      if [ -n "$treq" ]; then
        now=$(date +%s%N)
        [ $(( (now - treq) / 1000000 )) -ge $((KILL_AFTER_REQUEST_SECONDS*1000)) ] && break
      fi
    elif [ "${KILL_AFTER_SECONDS:-}" != "" ]; then
      now=$(date +%s%N)
      [ $(( (now - t0) / 1000000 )) -ge $((KILL_AFTER_SECONDS*1000)) ] && break
    elif [ "${KILL_AFTER_PATTERN:-}" != "" ]; then
      grep -q -- "$KILL_AFTER_PATTERN" "$out" 2>/dev/null && break
    elif [ "$lines" -ge 1 ]; then
      break
    fi
    sleep 0.05; waited=$((waited+1))
    [ "$waited" -ge $((tmo*20)) ] && break
  done
  kill -"${KILL_SIGNAL:-KILL}" "$pid" 2>/dev/null   # KILL_SIGNAL=TERM for a graceful stop (exit 143)
  wait "$pid"; local rc=$?
  echo "$rc" > "$outdir/$name.exit"
  echo "[capture_kill] $name exit=$rc stdout=$(wc -c <"$out")B" >&2
}

first_field() {  # first_field <ndjson> <key>: the key of the file's first line, empty when absent
  [ -s "$1" ] || return 0
  head -1 "$1" | "$PYTHON" -c 'import json,sys
try: print(json.load(sys.stdin).get(sys.argv[1], ""))
except ValueError: pass' "$2"
}

make_big_prompt() {  # make_big_prompt <path> <KiB>
  local path=$1 kib=$2
  "$PYTHON" - "$path" "$kib" <<'EOF'
import sys
path, kib = sys.argv[1], int(sys.argv[2])
lines = ["# Big prompt attachment", "", "Read this whole file, then answer with the gitmoot_result JSON line.", ""]
i = 0
while sum(len(l) + 1 for l in lines) < kib * 1024:
    lines.append("line %06d: the quick brown fox jumps over the lazy dog; lorem ipsum dolor sit amet, consectetur." % i)
    i += 1
data = "\n".join(lines) + "\n"
data = data[: kib * 1024 - 1] + "\n"
import os
tmp = "%s.tmp.%d" % (path, os.getpid())
open(tmp, "w").write(data)
os.replace(tmp, path)  # atomic: concurrent run scripts never read a half-written file
EOF
}
