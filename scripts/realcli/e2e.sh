#!/usr/bin/env bash
# End to end on the real CLIs: each pinned CLI (installed by install.sh) against the project's
# fake model (moot-doctor --serve), through its adapter and through the README pipeline, always
# confined by moot-sandbox with --profile and no hand-written grant anywhere.
#
#   e2e.sh [CLI...]     CLIs: the registered runtimes with a parser (default: all of them)
#
#   REALCLI_DIR    where install.sh put the CLIs (default: $TMPDIR/moot-realcli)
#   MOOT_BIN       the directory of the built moot tools (default: target/debug)
#   MOOT_NO_SKIP   set (CI): a CLI that is not installed fails the suite instead of skipping
#   ONLY           a space-separated subset of the scenarios below (scripts/realcli/README.md
#                  says what each checks)
#
# Prints one row per run (CLI, path, scenario, result, seconds) and, last, the plain closing
# line "N passed, N failed, N skipped". Exits 1 if anything failed. A scenario that fails is run
# once more: a real CLI is not deterministic under load (codex once ended its stream after the
# detach scenario's command, in CI, two passes at once). A pass on the second run counts as a
# pass and its row says so, with the first run's failure.
#
# No `set -e`: most runs here are expected to fail (a denied write, a cut answer), and each
# scenario checks the status it gets; a step the suite itself needs (a work directory, the fake
# model, a stage) is checked where it is made and ends the suite with one line.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
REALCLI_DIR=${REALCLI_DIR:-${TMPDIR:-/tmp}/moot-realcli}
MOOT_BIN=$(cd "${MOOT_BIN:-$root/target/debug}" && pwd)
SCENARIOS=${ONLY:-plain toolwrite outside example gitplant homeplant nokey envleak homeinstall repoplant forge detach fatal length drop deadline bigprompt resume asks activity marker tools managed start health}
# The managed-session and lifecycle scenarios run through the adapter alone (they are its
# contract); each applies to the CLIs it names.
ADAPTER_ONLY=" activity marker tools managed start health "
# Every registered runtime whose output a parser reads (shell and mock have no CLI to test).
work=$(mktemp -d "${TMPDIR:-/tmp}/moot-e2e.XXXXXX") || { echo "e2e: no work directory" >&2; exit 1; }
# The runtime examples/ci-job.sh runs: the pipeline path runs its pipeline with each CLI's names.
job_runtime=$(sed -n 's/^moot-render \([a-z-]*\) --policy .*/\1/p' "$root/examples/ci-job.sh")
[ -n "$job_runtime" ] || { echo "e2e: examples/ci-job.sh has no moot-render RUNTIME --policy line" >&2; exit 1; }
# What the registry says of each runtime (moot-render --list --json): its parser and whether a
# second turn resumes the session.
"$MOOT_BIN/moot-render" --list --json >"$work/registry.json" || { echo "e2e: moot-render --list failed" >&2; exit 1; }
CLIS=${*:-$(python3 -c 'import json, sys; print(" ".join(e["name"] for e in json.load(open(sys.argv[1])) if e["parser"]))' "$work/registry.json")}
# SEAT_USER=USER:GROUP (as root): every seat runs as that user, as the README's root CI recipe
# says: the stage and the session directories enterable, the staged prompt given to it
# (moot-render --stage-user), moot-sandbox --user, the worktree writable by its group.
SEAT_USER=${SEAT_USER:-}
[ -z "$SEAT_USER" ] || chmod 711 "$work"
passed=0 failed=0 skipped=0 retried=0
trap 'kill "$fake_pid" 2>/dev/null; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT

# The adapters' variables are this suite's to set (setup), none of the caller's.
# shellcheck disable=SC2046 # variable names, one word each
unset $(compgen -e | grep '^MOSAIC_')
# Every CLI talks to the fake provider only; nothing else is reachable anyway.
export HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 ALL_PROXY=http://127.0.0.1:9
export NO_PROXY=127.0.0.1,localhost

# ---- the fake model (moot-doctor's, net/src/fake_model/): one server on a port the kernel
# picks, the scenario re-read from a file on every request, served over HTTPS with a
# certificate of its own CA, which only the credential proxy trusts (--upstream-ca): the CLIs
# reach it through the proxy alone.
scenario_file=$work/scenario
dump=$work/dump
# The provider's key: every CLI's configuration (or environment) holds it as an operator's does,
# the fake model answers 401 to any other, and only moot-broker --forward may send it: each seat
# gets a job token (the nokey scenario searches the seat for the key).
provider_key=e2e-provider-key-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf '%s\n' "$provider_key" >"$work/provider.key" && chmod 600 "$work/provider.key"
ca=$work/tls/cert.pem
mkdir -p "$dump" "$work/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj /CN=moot-e2e -addext subjectAltName=IP:127.0.0.1 \
    -addext basicConstraints=critical,CA:FALSE -keyout "$work/tls/key.pem" -out "$ca" \
    >"$work/tls/openssl.log" 2>&1 ||
    { echo "e2e: openssl could not make the fake model's certificate: $(head -c 300 "$work/tls/openssl.log")" >&2; exit 1; }
echo plain >"$scenario_file"
"$MOOT_BIN/moot-doctor" --serve --scenario-file "$scenario_file" --dump-dir "$dump" \
    --log "$work/requests.ndjson" \
    --require-key-file "$work/provider.key" --tls-cert "$ca" --tls-key "$work/tls/key.pem" \
    >"$work/fake.origin" 2>"$work/fake.log" &
fake_pid=$!
for _ in $(seq 100); do
    [ -s "$work/fake.origin" ] && break
    sleep 0.1
done
provider=$(sed -n '/^https:\/\/127\.0\.0\.1:[0-9]*$/p' "$work/fake.origin")
[ -n "$provider" ] || { echo "e2e: the fake model did not start: $(head -c 300 "$work/fake.log")" >&2; exit 1; }

# ---- per CLI: where it is, its isolated home and provider config, how to run it
# shellcheck source=scripts/realcli/layout.sh
. "$here/layout.sh"
# setup RUNTIME exports HOME (and the CLI's own variables). From the registry it sets runtime,
# parser, resumes (1 when a second turn resumes the session), extensions (1 when its adapter
# loads MOSAIC_EXTENSIONS) and tool_limit (for an adapter that takes MOSAIC_TOOLS: the first of
# its READ_TOOLS, a limit that leaves its shell out). From its install file: program and
# path_dirs, and how this suite drives its adapter (scripts/realcli/README.md, "How the suite
# drives each adapter"). Then it points the CLI at the fake model as moot-doctor does
# (fake_home).
setup() {
    runtime=$1
    local tools
    read -r parser resumes extensions tools < <(python3 -c '
import json, sys
meta = next(e for e in json.load(open(sys.argv[1])) if e["name"] == sys.argv[2])
print(meta["parser"].removeprefix("moot-parse-"), int(meta["matrix"]["multi_turn"]),
      int(meta["extensions"]), int(bool(meta["tools"])))' "$work/registry.json" "$1") ||
        { echo "e2e: $1 is not a registered runtime with a parser" >&2; exit 1; }
    export HOME=$work/home/$1
    mkdir -p "$HOME"
    install_file "$1" || exit 1
    realcli_layout "$1" "$work/bin/$1"
    live_stream=$(install_field "$install" LIVE_STREAM) asks=$(install_field "$install" ASKS)
    hides_keys=$(install_field "$install" HIDES_KEYS) no_usage=$(install_field "$install" NO_USAGE)
    tool_limit=
    [ "$tools" = 0 ] || tool_limit=$(install_field "$install" READ_TOOLS | cut -d' ' -f1)
    adapter_variables
    fake_home "$1"
}
# adapter_variables: the previous CLI's adapter variables unset, this one's exported: its
# ADAPTER_ENV, and its BUNDLE's files written in its HOME (bundle_var: the first one's name).
adapter_variables() {
    local word words
    # shellcheck disable=SC2086 # names, one word each
    [ -z "${adapter_names:-}" ] || unset $adapter_names
    adapter_names='' bundle_var=''
    read -r -a words <<<"$(install_field "$install" ADAPTER_ENV)"
    for word in "${words[@]}"; do
        export "${word?}"
        adapter_names="$adapter_names ${word%%=*}"
    done
    read -r -a words <<<"$(install_field "$install" BUNDLE)"
    for word in "${words[@]}"; do
        printf '%s\n' "${word#*=}" >"$HOME/${word%%=*}.json"
        export "${word%%=*}=$HOME/${word%%=*}.json"
        adapter_names="$adapter_names ${word%%=*}" bundle_var=${bundle_var:-${word%%=*}}
    done
}
# fake_home RUNTIME [--trust DIR]: the CLI's configuration for the fake model in $HOME, with the
# provider's key, from the runtime's own record (moot-doctor --fake-home): its variables
# exported, and what the pipeline needs (moot-run --keep, --stderr-file, the parser's flags, the
# variable the key is in, the dropped stream's deadline) in keep, stderr_flag, parser_flags,
# key_env and drop_deadline.
fake_home() {
    local assignments moot_keep moot_key_env moot_stderr_file moot_text_flags moot_session_store moot_drop_deadline
    assignments=$("$MOOT_BIN/moot-doctor" --fake-home "$HOME" --origin "$provider" \
        --key-file "$work/provider.key" "$@") ||
        { echo "e2e: moot-doctor --fake-home $* failed" >&2; exit 1; }
    eval "$assignments"
    keep=$moot_keep drop_deadline=$moot_drop_deadline parser_flags=$moot_text_flags
    key_env=$moot_key_env stderr_flag=
    # shellcheck disable=SC2089 # text the README pipeline gets (sed), never run as words
    [ -z "$moot_stderr_file" ] || stderr_flag='--stderr-file "$stage/err"'
    # The store is below the CLI's HOME in the private state the pipeline gives it.
    [ -z "$moot_session_store" ] ||
        parser_flags="${parser_flags:+$parser_flags }--session-store $work/state/$1/home/$moot_session_store"
}
# ---- one run: through the adapter, or through the README's pipeline with the runtime's names
# run_adapter and run_pipeline leave stdout in $out, stderr in $err, the status in $status.
# adapter_env holds extra VAR=value words for the run, adapter_verb its verb (none: deliver).
run_adapter() {
    local request=$1 deadline=${2:-} key_file=$work/provider.key
    [ -z "$key_env" ] || key_file=
    (
        cd "$ws" &&
            env MOSAIC_REQUEST="$request" MOSAIC_WORKSPACE="$ws" MOSAIC_SESSION_DIR="$sessions" \
                MOOT_DEADLINE="$deadline" MOOT_KEEP_ENV="${keep:-}" MOOT_SEAT_USER="$SEAT_USER" \
                MOOT_PROVIDER_URL="$provider" MOOT_PROVIDER_CA="$ca" \
                MOOT_PROVIDER_KEY_ENV="$key_env" MOOT_PROVIDER_KEY_FILE="$key_file" \
                "${adapter_env[@]}" \
                sh "$root/scripts/adapters/$runtime/adapter.sh" ${adapter_verb:-}
    ) >"$out" 2>"$err"
    status=$?
}

# The pipeline of the README's CI job (examples/ci-job.sh) with its runtime's names
# ($job_runtime) replaced by this one's, its verdict on stdout.
pipeline_text() {
    local key_source='--key-file "$key"'
    [ -z "$key_env" ] || key_source="--key-env $key_env"
    # The job's pipeline up to its verdict, each command's continued lines joined into one.
    sed -n "/^moot-render $job_runtime --policy/,/verdict.json\" ||\$/p" "$root/examples/ci-job.sh" |
        sed -e ':a' -e '/\\$/N' -e 's/\\\n *//' -e 'ta' |
        sed -e 's# *>"\$stage/verdict.json" ||$##' |
        sed -e "s|moot-render $job_runtime |moot-render $runtime |" \
            -e "s|--env-preset $job_runtime|--env-preset $runtime ${keep:+--keep $keep}|" \
            -e "s|--profile $job_runtime|--profile $runtime|" \
            -e "s|moot-parse-$job_runtime|moot-parse-$parser --text${stderr_flag:+ $stderr_flag}${parser_flags:+ $parser_flags}|" \
            -e "s|--cleanup|${stderr_flag:+$stderr_flag }--cleanup|" \
            -e "s|--key-file \"\$key\"|$key_source|" |
        if [ -n "$SEAT_USER" ]; then
            sed -e "s|--stage-dir \"\$stage/p\"|& --stage-user $SEAT_USER|" \
                -e "s|moot-sandbox --profile|moot-sandbox --user $SEAT_USER --profile|"
        else
            cat
        fi
}

run_pipeline() {
    local request=$1 deadline=${2:-600} resume=${3:-}
    printf '%s' "$request" >"$ws/job.md"
    local stage
    stage=$(mktemp -d "$work/stage.XXXXXX") || { echo "e2e: no stage directory in $work" >&2; exit 1; }
    [ -z "$SEAT_USER" ] || chmod 711 "$stage"
    local text
    text=$(pipeline_text | sed -e "s/--deadline 600/--deadline $deadline/g")
    if [ -n "$resume" ]; then
        text=$(printf '%s' "$text" | sed -e "s/--seat /--seat --session $resume /")
    fi
    # One private state a CLI (the job's $state), kept between the runs of a scenario. Started
    # outside the worktree, as a CI job is: moot-run --cwd puts the CLI there.
    run_stage=$stage
    requests_before=$(wc -l <"$work/requests.ndjson" 2>/dev/null || echo 0)
    (cd "$work" && worktree=$ws job=$ws/job.md stage=$stage state=$work/state/$cli \
        provider=$provider key=$work/provider.key ca=$ca sh -c "$text") >"$out" 2>"$err"
    status=$?
    rm -f "$ws/job.md"
}

# examples/ci-job.sh, from the work directory, on the workspace; sets out, err and status.
run_example() {
    local dir
    dir=$(mktemp -d "$work/job.XXXXXX") || { echo "e2e: no job directory in $work" >&2; exit 1; }
    printf 'Run the tool.' >"$work/job.md"
    (cd "$work" && MOOT_PROVIDER_URL=$provider MOOT_PROVIDER_KEY_FILE=$work/provider.key \
        MOOT_PROVIDER_CA=$ca MOOT_JOB_DIR=$dir MOOT_SEAT_USER=$SEAT_USER \
        sh "$root/examples/ci-job.sh" "$ws" job.md) \
        >"$out" 2>"$err"
    status=$?
}

# ---- scenarios: each sets the fake provider's scenario, runs, and checks what must hold
big_prompt() {
    python3 -c 'import sys; sys.stdout.write("START-OF-PROMPT-MARKER-3K " + "Read all of this. " * 6500 + "END-OF-PROMPT-MARKER-7Q")'
}

# What a complete answer of the fake provider ends with: a cut or dropped answer never does.
COMPLETE='"delegations":[]}}' 

# The workspace writable by the seat's user through its group, the README's root CI recipe.
seat_writable() {
    [ -z "$SEAT_USER" ] ||
        { chgrp -R "${SEAT_USER#*:}" "$ws" && chmod -R g+rwX "$ws" && find "$ws" -type d -exec chmod g+s {} +; }
}

fresh_workspace() {
    ws=$work/ws
    rm -rf "$ws" "$work/outside" "${dump:?}"/*
    mkdir -p "$ws" "$work/outside"
    git -C "$ws" init -q && git -C "$ws" -c user.email=e2e@moot -c user.name=e2e \
        commit -q --allow-empty -m init
    sessions=$work/sessions/$cli
    rm -rf "$sessions" "$work/state/$cli"
    mkdir -p "$sessions" "$work/state"
    if [ -n "$SEAT_USER" ]; then
        chmod 711 "$work/sessions" "$sessions"
        seat_writable
    fi
    adapter_env=() adapter_verb=
}

# activity_run: a slow answer through the adapter with MOSAIC_MODEL_ACTIVITY_DIR; sets status,
# and token_lead, the seconds between the token's appearance and the end of the run.
activity_run() {
    local dir=$1
    adapter_env=(MOSAIC_MODEL_ACTIVITY_DIR="$dir")
    (run_adapter "Inspect the workspace."; echo "$status" >"$work/activity.status") &
    local pid=$! seen=
    while kill -0 "$pid" 2>/dev/null; do
        [ -e "$dir/proxy-first-output" ] && { seen=$SECONDS; break; }
        sleep 0.1
    done
    wait "$pid"
    status=$(cat "$work/activity.status")
    token_lead=$((${seen:+SECONDS - seen}+0))
    [ -n "$seen" ] || token_lead=-1
}

# A program the agent's shell starts, detached and with none of the CLI's descendants'
# descriptors, that tries to add a forged line to the stream the verdict is read from: for every
# ancestor it can see, it reopens /proc/<pid>/fd/1 and /2, takes them with pidfd_getfd and tries
# ptrace, writes through whatever it got while the CLI runs, and again once the CLI has exited.
# Each attempt's result goes to forge.report in the workspace.
forger() {
    cat >"$ws/forge.py" <<'PY'
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
SYS_PIDFD_GETFD, PTRACE_SEIZE = 438, 0x4206
SYS_PTRACE = {"x86_64": 101, "aarch64": 117}[os.uname().machine]
FORGED = b'{"forged":"FORGED-LINE"}\n'
report = open("forge.report", "a")
def say(text):
    report.write(text + "\n")
    report.flush()
def comm(pid):
    return open("/proc/%d/comm" % pid).read().strip()
def stat(pid):
    return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
# The forger's ancestors up to moot-run ("tool" in the report), and the CLI ("cli"): moot-run's
# first child. (A CLI may start its shell detached: omp's is moot-run's child, not the CLI's.)
def ancestors():
    pid, found = os.getppid(), []
    while pid > 1:
        try:
            up = int(stat(pid)[1])
            found.append((pid, "tool"))
            if comm(up) == "moot-run":
                break
            pid = up
        except (OSError, ValueError, IndexError):
            return found
    children = []
    for entry in os.listdir("/proc"):
        try:
            fields = stat(int(entry))
            if int(fields[1]) == up:
                children.append((int(fields[19]), int(entry)))
        except (OSError, ValueError, IndexError):
            pass
    cli = min(children)[1]
    return [(p, r) for p, r in found if p != cli] + [(cli, "cli")]
kept = []
def link(pid, fd):
    try:
        return os.readlink("/proc/%d/fd/%d" % (pid, fd))
    except OSError as e:
        return e.strerror
def attempt(round, pids):
    for pid, role in pids:
        say("%s %s %d is %s: fd 1 %s, fd 2 %s" % (round, role, pid, comm(pid), link(pid, 1), link(pid, 2)))
        for fd in (1, 2):
            try:
                f = open("/proc/%d/fd/%d" % (pid, fd), "wb", buffering=0)
                f.write(FORGED)
                # The CLI's stdout is kept, to write again once it exited; a tool's pipe is
                # let go, or its shell would wait for it.
                if role == "cli" and fd == 1:
                    kept.append(f)
                say("%s %s %d reopen %d: wrote" % (round, role, pid, fd))
            except OSError as e:
                say("%s %s %d reopen %d: %s" % (round, role, pid, fd, e.strerror))
            try:
                got = libc.syscall(SYS_PIDFD_GETFD, os.pidfd_open(pid), fd, 0)
                if got < 0:
                    say("%s %s %d getfd %d: %s" % (round, role, pid, fd, os.strerror(ctypes.get_errno())))
                else:
                    os.write(got, FORGED)
                    if role == "cli" and fd == 1:
                        kept.append(os.fdopen(got, "wb", buffering=0))
                    else:
                        os.close(got)
                    say("%s %s %d getfd %d: wrote" % (round, role, pid, fd))
            except OSError as e:
                say("%s %s %d getfd %d: %s" % (round, role, pid, fd, e.strerror))
        seized = libc.syscall(SYS_PTRACE, PTRACE_SEIZE, pid, 0, 0)
        say("%s %s %d ptrace: %s" % (round, role, pid, "seized" if seized == 0 else os.strerror(ctypes.get_errno())))
pids = ancestors()
attempt("running", pids)
say("first round done")
deadline = time.time() + 60
while time.time() < deadline and any(os.path.exists("/proc/%d" % p) for p, _ in pids):
    time.sleep(0.05)
for f in kept:
    try:
        f.write(FORGED)
        say("exited: wrote through a kept descriptor")
    except OSError:
        pass
attempt("exited", pids)
PY
}

# events_show STATUS: the pipeline's last run (its events.ndjson, moot(7) EVENTS) shows one
# execute call that ended STATUS (completed, denied), between a start and an end, and the
# usage its envelope gives is the sum of what the fake model's replies to the agent's turns
# (the requests that offered tools; a CLI's side calls, opencode's title, are not the agent's)
# reported (its --log), or none for a CLI whose stream reports none (NO_USAGE). Echoes what
# differs.
events_show() {
    [ "$via" = pipeline ] || return 0
    python3 - "$run_stage/events.ndjson" "$work/requests.ndjson" "$requests_before" "$1" "$no_usage" <<'PY'
import json, sys
events_file, log, before, status, no_usage = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
try:
    events = [json.loads(line) for line in open(events_file) if line.strip()]
except (OSError, ValueError) as e:
    sys.exit(print(f"no readable events: {e}"))
if not events or events[0]["type"] != "start" or events[-1]["type"] != "end":
    sys.exit(print(f"the events do not run from start to end: {[e['type'] for e in events]}"))
calls = [e for e in events if e["type"] == "tool_call" and e["kind"] == "execute"]
results = [e for e in events if e["type"] == "tool_result" and e["id"] in {c["id"] for c in calls}]
if len(calls) != 1 or [r["status"] for r in results] != [status]:
    sys.exit(print(f"want one execute call {status}: calls {calls}, results {results}"))
requests = [json.loads(line) for line in list(open(log))[before:]]
sent = [r["usage"] for r in requests if r.get("usage") and r.get("tool_names")]
want = (0, 0) if no_usage else (sum(u["input_tokens"] for u in sent), sum(u["output_tokens"] for u in sent))
usage = events[-1]["usage"]
if no_usage and usage["source"] != "none":
    sys.exit(print(f"NO_USAGE says the stream reports none, the envelope's usage came from {usage['source']}"))
if (usage["input_tokens"], usage["output_tokens"]) != want:
    sys.exit(print(f"usage {usage['input_tokens']} in, {usage['output_tokens']} out; the fake model sent {want[0]} in, {want[1]} out in {len(sent)} replies"))
PY
}

# check SCENARIO PATH: runs one scenario through one path; echoes the reason on failure.
check() {
    local scenario=$1 via=$2
    fresh_workspace
    local run=run_$via
    case $scenario in
        plain)
            echo plain >"$scenario_file"
            $run "Inspect the workspace."
            [ "$status" = 0 ] && grep -q gitmoot_result "$out" || echo "exit $status: $(head -c 300 "$err")"
            ;;
        toolwrite)
            echo toolwrite >"$scenario_file"
            $run "Run the tool."
            if [ "$status" != 0 ] || [ ! -e "$ws/created_by_agent.txt" ]; then
                echo "exit $status, file made: $([ -e "$ws/created_by_agent.txt" ] && echo yes || echo no): $(head -c 300 "$err")"
            elif [ -n "$SEAT_USER" ] && [ "$(stat -c %U:%G "$ws/created_by_agent.txt")" != "$SEAT_USER" ]; then
                echo "the agent wrote as $(stat -c %U:%G "$ws/created_by_agent.txt"), not as $SEAT_USER"
            else
                events_show completed
            fi
            ;;
        outside)
            echo "toolcmd touch inside.txt; touch $work/outside/escaped.txt" >"$scenario_file"
            $run "Run the tool."
            if [ -e "$work/outside/escaped.txt" ]; then
                echo "a write outside the workspace landed"
            elif [ ! -e "$ws/inside.txt" ]; then
                echo "the command never ran (exit $status): $(head -c 300 "$err")"
            else
                events_show denied
            fi
            ;;
        example)
            # examples/ci-job.sh itself, as README.md prints it, started outside the worktree:
            # the agent's write lands in the worktree and the job passes; a write the sandbox
            # denies fails the job, saying so. It runs its own runtime ($job_runtime), its seat
            # as the caller or, in the SEAT_USER pass, as MOOT_SEAT_USER.
            [ "$cli" = "$job_runtime" ] && [ "$via" = pipeline ] || { echo NA; return; }
            echo toolwrite >"$scenario_file"
            run_example
            if [ "$status" != 0 ] || [ ! -e "$ws/created_by_agent.txt" ]; then
                echo "the job: exit $status, file made: $([ -e "$ws/created_by_agent.txt" ] && echo yes || echo no): $(head -c 300 "$err")"
                return
            elif [ -n "$SEAT_USER" ] && [ "$(stat -c %U:%G "$ws/created_by_agent.txt")" != "$SEAT_USER" ]; then
                echo "the job's agent wrote as $(stat -c %U:%G "$ws/created_by_agent.txt"), not as $SEAT_USER"
                return
            fi
            echo "toolcmd touch $work/outside/escaped.txt" >"$scenario_file"
            run_example
            if [ -e "$work/outside/escaped.txt" ]; then
                echo "a write outside the worktree landed"
            elif [ "$status" != 1 ] || ! grep -q '^ci-job: the sandbox denied the agent a write' "$err"; then
                echo "the denied write: exit $status: $(head -c 300 "$err")"
            fi
            ;;
        gitplant)
            # The agent plants code in the worktree's git configuration for the operator's next
            # git command: moot-run puts it back and the run fails; the operator's git runs nothing.
            local pwned=$work/outside/PWNED
            # (A script of the repository's, so no CLI's own command screening sees .git.)
            printf '%s\n' "printf '[core]\\n\\tfsmonitor = \"touch $pwned; false\"\\n' >> .git/config" \
                "printf '#!/bin/sh\\ntouch $pwned\\n' > .git/hooks/pre-commit" \
                'chmod +x .git/hooks/pre-commit' 'touch planted.txt' >"$ws/plant.sh"
            echo "toolcmd sh plant.sh" >"$scenario_file"
            $run "Run the tool."
            git -C "$ws" status >/dev/null 2>&1
            git -C "$ws" add -A >/dev/null 2>&1
            git -C "$ws" -c user.email=e2e@moot -c user.name=e2e commit -q -m after >/dev/null 2>&1
            if [ ! -e "$ws/planted.txt" ]; then
                echo "the command never ran (exit $status): $(head -c 300 "$err")"
            elif [ -e "$pwned" ]; then
                echo "the operator's git ran what the agent planted"
            elif grep -q fsmonitor "$ws/.git/config"; then
                echo "the planted configuration is still there"
            elif [ "$status" = 0 ] || ! grep -q 'protected path' "$err"; then
                echo "the run did not fail as tampered (exit $status): $(head -c 300 "$err")"
            fi
            ;;
        homeplant)
            # The agent writes where a CLI loads its config, extensions, plugins and hooks from:
            # below the HOME it has and, by path, below the operator's. None of it reaches the
            # operator's, which the CLI's next unconfined run (and the next job) would load.
            local op=$HOME
            # Every CLI's (HOME_CODE of every install file), whichever CLI runs.
            local dirs
            dirs=$(sed -n 's/^HOME_CODE=//p' "$root"/shared/src/runtime/*/*.install | tr '\n' ' ')
            {
                printf 'for h in "$HOME" %s; do\n' "$op"
                printf '  for d in %s; do mkdir -p "$h/$d"; echo PLANTED-e2e > "$h/$d/planted.txt"; done\n' "$dirs"
                printf 'done\necho "$HOME" > seen-home.txt\n'
                # A provider on another port in every config it has, for the next job's grant.
                printf 'find "$HOME" -type f \\( -name "*.json" -o -name "*.toml" -o -name "*.yml" \\) |\n'
                printf '  while read -r f; do echo "\\"http://any-host:6379/v1\\"" >> "$f"; done\n'
            } >"$ws/plant.sh"
            echo "toolcmd sh plant.sh" >"$scenario_file"
            $run "Run the tool."
            local state=$work/state/$cli next
            [ "$via" = adapter ] && state=$sessions/$runtime.state
            next=$(moot-sandbox --profile "$runtime" --state "$state" --print-profile -- "$program" 2>&1)
            if [ ! -e "$ws/seen-home.txt" ]; then
                echo "the command never ran (exit $status): $(head -c 300 "$err")"
            elif grep -rqs PLANTED-e2e "$op"; then
                echo "the agent wrote the operator's config: $(grep -rls PLANTED-e2e "$op" | head -n 3 | tr '\n' ' ')"
            elif [ "$(cat "$ws/seen-home.txt")" = "$op" ]; then
                echo "the agent's HOME is the operator's"
            elif ! grep -q -e '^--connect ' <<<"$next" || grep -q -e 6379 <<<"$next"; then
                echo "the next job's grant: $(grep -e '--connect' -e 'moot-sandbox:' <<<"$next" | tr '\n' ' ')"
            fi
            # The run's own status is not judged: the agent broke its own CLI's JSON and TOML
            # in its private state, and a CLI that reads one again before it exits fails the
            # job (kimi-cli exits 1). That stays inside the seat, which is what is tested here.
            ;;
        nokey)
            # No byte of the provider's key in the seat: not in what the agent (or a hook it
            # plants) sees, its environment and every file below its HOME; not in /proc of any
            # process of the seat while it runs; not in the private state afterwards. Its way
            # out is the proxy's port alone (the provider's own port is denied, as is any
            # other), and the proxy is gone after the job.
            {
                echo 'env > seen-env.txt'
                echo 'find "$HOME" -type f -size -1024k -exec cat {} + > seen-files.txt 2>/dev/null'
                echo 'proxy=$(grep -aoh "http://127\.0\.0\.1:[0-9]*" seen-env.txt seen-files.txt | head -n 1)'
                echo 'echo "$proxy" > proxy.txt'
                echo 'for target in ${proxy#http://} '"${provider#https://}"' 10.255.255.1:443; do'
                echo '  bash -c "exec 3<>/dev/tcp/${target%:*}/${target#*:}" 2>/dev/null && r=open || r=denied'
                echo '  echo "$target $r" >> connects.txt'
                echo 'done'
                echo 'sleep 2'
            } >"$ws/nokey.sh"
            echo "toolcmd sh nokey.sh" >"$scenario_file"
            rm -f "$work/watch.stop"
            python3 "$here/seat_watch.py" "$work/provider.key" "$work/watch.stop" >"$work/watch.out" &
            local watcher=$!
            # The caller's environment holds the key in one more variable, as a CI job's may
            # (and as an earlier CLI's exported configuration did here, found once in moot-run's
            # fork child): moot-broker gives the command the token there too.
            MOOT_E2E_STRAY_API_KEY=$provider_key $run "Run the tool."
            : >"$work/watch.stop"
            wait "$watcher"
            local state=$work/state/$cli proxy_port
            [ "$via" = adapter ] && state=$sessions/$runtime.state
            proxy_port=$(sed -n 's|^http://127\.0\.0\.1:||p' "$ws/proxy.txt" 2>/dev/null)
            if [ ! -e "$ws/connects.txt" ]; then
                echo "the command never ran (exit $status): $(head -c 300 "$err")"
            elif [ "$status" != 0 ]; then
                echo "exit $status: $(head -c 300 "$err")"
            elif grep -aqF -e "$provider_key" "$ws/seen-env.txt" "$ws/seen-files.txt"; then
                echo "the agent saw the key: $(grep -lF -e "$provider_key" "$ws"/seen-*.txt | tr '\n' ' ')"
            elif [ -z "$hides_keys" ] && ! grep -aqE 'moot-[0-9a-f]{64}' "$ws/seen-env.txt" "$ws/seen-files.txt"; then
                echo "the agent saw no job token"
            elif grep -raqF -e "$provider_key" "$state"; then
                echo "the private state holds the key: $(grep -rlF -e "$provider_key" "$state" | head -n 3 | tr '\n' ' ')"
            elif ! grep -q '^inspected [1-9]' "$work/watch.out" || grep -q '^FOUND' "$work/watch.out"; then
                echo "the seat's /proc: $(head -c 300 "$work/watch.out")"
            elif [ "$(cat "$ws/connects.txt")" != "127.0.0.1:$proxy_port open
${provider#https://} denied
10.255.255.1:443 denied" ]; then
                echo "connections: $(tr '\n' ' ' <"$ws/connects.txt")"
            elif bash -c "exec 3<>/dev/tcp/127.0.0.1/$proxy_port" 2>/dev/null; then
                echo "the proxy outlived the job (port $proxy_port)"
            fi
            ;;
        envleak)
            # A CI job's secrets in the caller's environment never reach the agent.
            echo "toolcmd env > seen-env.txt" >"$scenario_file"
            GITHUB_TOKEN=ghp_e2e-leaked-token AWS_SECRET_ACCESS_KEY=aws-e2e-leaked-key $run "Run the tool."
            if [ ! -e "$ws/seen-env.txt" ]; then
                echo "the command never ran (exit $status): $(head -c 300 "$err")"
            elif grep -q -e e2e-leaked "$ws/seen-env.txt"; then
                echo "the agent saw: $(grep -o -e '^[A-Z_]*=[a-z_0-9]*-e2e-leaked[a-z-]*' "$ws/seen-env.txt" | tr '\n' ' ')"
            elif [ "$status" != 0 ]; then
                echo "exit $status: $(head -c 300 "$err")"
            fi
            ;;
        homeinstall)
            # `cd ~ && npm install <cli>`: the CLI runs from an install whose root is its home,
            # and the home's other files stay out of the agent's reach. (claude and opencode
            # run a platform binary, kimi-cli a venv: no npm root.)
            local tree=${path_dirs%%/node_modules/*}
            case $tree in "$REALCLI_DIR"/*) ;; *) echo NA; return ;; esac
            [ -d "$tree/node_modules" ] || { echo NA; return; }
            cp -al "$tree/node_modules" "$tree/package.json" "$HOME/" 2>/dev/null ||
                cp -a "$tree/node_modules" "$tree/package.json" "$HOME/" || { echo "cannot install into HOME"; return; }
            mkdir -p "$HOME/.ssh" && echo PRIVATE-KEY-e2e >"$HOME/.ssh/id_ed25519"
            export PATH=$MOOT_BIN:${path_dirs//$tree/$HOME}:/usr/local/bin:/usr/bin:/bin
            echo "toolcmd cat $HOME/.ssh/id_ed25519 > leaked.txt 2>&1; touch ran.txt" >"$scenario_file"
            $run "Run the tool."
            rm -rf "$HOME/node_modules" "$HOME/package.json" "$HOME/.ssh"
            if [ ! -e "$ws/ran.txt" ]; then
                echo "the command never ran (exit $status): $(head -c 300 "$err")"
            elif grep -q PRIVATE-KEY "$ws/leaked.txt"; then
                echo "the agent read a file of the home the CLI is installed in"
            elif [ "$status" != 0 ]; then
                echo "exit $status: $(head -c 300 "$err")"
            fi
            ;;
        repoplant)
            # The repository under review carries every file its CLI was seen to load code or
            # configuration from (testdata/repoplant/, man/moot.7's list): hooks, extensions,
            # plugins, MCP servers, settings that run a command or move the provider. None runs.
            # (Its markers are written in the workspace: the seat lets code that runs write there.)
            local marks=$ws/.repoplant-marks plant=$root/testdata/repoplant/${runtime%-cli}
            mkdir -p "$marks"
            (cd "$plant" && tar cf - .) | (cd "$ws" && tar xf -)
            grep -rl @MARK@ "$ws" --exclude-dir=.git | xargs -r sed -i "s|@MARK@|$marks|g"
            seat_writable
            # A CLI that reads a repository's configuration only from a trusted project (codex)
            # trusts this one here.
            fake_home "$runtime" --trust "$ws"
            echo toolwrite >"$scenario_file"
            local refused
            refused=$("$MOOT_BIN/moot-render" --list --json | python3 -c 'import json, sys
print(" ".join(next(e for e in json.load(sys.stdin) if e["name"] == sys.argv[1])["repo_code"]))' "$runtime")
            if [ -n "$refused" ]; then
                # What no switch of the CLI turns off: refused before anything runs (exit 2
                # from the adapter; the pipeline's parser then reads an empty stream).
                $run "Run the tool."
                if [ "$status" = 0 ] || ! grep -q 'runs the code it names at start-up' "$err"; then
                    echo "not refused (exit $status): $(head -c 300 "$err")"; return
                elif [ -n "$(ls -A "$marks")" ]; then
                    echo "refused, yet ran: $(ls "$marks" | tr '\n' ' ')"; return
                fi
                (cd "$ws" && rm -rf $refused)
            fi
            $run "Run the tool."
            fake_home "$runtime"
            if [ -n "$(ls -A "$marks")" ]; then
                echo "the repository's code ran: $(ls "$marks" | tr '\n' ' ')"
            elif [ "$status" != 0 ] || [ ! -e "$ws/created_by_agent.txt" ]; then
                echo "exit $status: $(head -c 300 "$err")"
            fi
            ;;
        forge)
            forger
            echo "toolcmd setsid python3 forge.py </dev/null >/dev/null 2>&1 & while ! grep -q 'first round done' forge.report 2>/dev/null; do sleep 0.05; done" >"$scenario_file"
            $run "Run the tool."
            local transcript
            transcript=$(ls -dt "$work"/stage.* 2>/dev/null | head -n 1)/run.ndjson
            if [ ! -s "$ws/forge.report" ]; then
                echo "the forger never ran (exit $status): $(head -c 300 "$err")"
            elif grep -q -e ' cli .* reopen 1: wrote' -e 'getfd.*wrote' -e seized "$ws/forge.report"; then
                echo "a process of the job reached the CLI: $(grep -e ' cli .* reopen 1: wrote' -e 'getfd.*wrote' -e seized "$ws/forge.report" | head -n 3 | tr '\n' ';')"
            elif ! grep -q '^running cli .* reopen 1: ' "$ws/forge.report"; then
                echo "the forger never found the CLI: $(head -c 300 "$ws/forge.report")"
            elif grep -qF '{"forged":' "$err"; then
                echo "a forged line reached stderr"
            elif [ "$status" != 0 ] || ! grep -qF "$COMPLETE" "$out" || grep -q FORGED "$out"; then
                echo "exit $status, answer: $(head -c 200 "$out"): $(head -c 300 "$err")"
            elif [ "$via" = pipeline ] && grep -q '^{"forged":' "$transcript"; then
                echo "a forged line is in the transcript"
            fi
            ;;
        detach)
            # 300 detached sleepers and one that sleeps forever: none outlives the run.
            # Their durations end in this suite's pid, so that another suite running beside this
            # one (CI runs the root and the nobody passes at once) neither counts nor kills them.
            echo "toolcmd for i in \$(seq 300); do setsid sleep 4242.$$ </dev/null >/dev/null 2>&1 & done; setsid sh -c 'exec sleep infinity 4243.$$' </dev/null >/dev/null 2>&1 & touch detached.txt" >"$scenario_file"
            local started=$SECONDS
            $run "Run the tool." 120
            local took=$((SECONDS - started)) left
            left=$(pgrep -f -c "^sleep (infinity )?424[23]\\.$$\$")
            pkill -f "^sleep (infinity )?424[23]\\.$$\$"
            if [ ! -e "$ws/detached.txt" ]; then
                echo "the command never ran (exit $status): $(head -c 300 "$err")"
            elif [ "$left" != 0 ]; then
                echo "$left processes the agent started outlived the run"
            elif [ "$status" != 0 ] || [ "$took" -gt 100 ]; then
                echo "exit $status after ${took}s: $(head -c 300 "$err")"
            fi
            ;;
        fatal | length | drop)
            # The provider error is one no client retries (HTTP 400): 5xx is retried with
            # backoff by every CLI for up to minutes, which is their business, not moot's.
            echo "$scenario" >"$scenario_file"
            $run "Inspect the workspace." "$([ "$scenario" = drop ] && echo "${drop_deadline:-}")"
            # A CLI may recover (claude retries a dropped stream without streaming): success is
            # then right, but only with the whole answer. A cut one must never pass.
            if [ "$status" = 0 ] && ! grep -qF "$COMPLETE" "$out"; then
                echo "a cut $scenario answer passed as success: $(head -c 200 "$out")"
            elif [ "$status" != 0 ] && [ -s "$out" ]; then
                echo "a failed run (exit $status) printed an answer: $(head -c 200 "$out")"
            elif [ "$status" = 0 ] && [ "$scenario" = fatal ]; then
                echo "a provider error passed as success"
            elif [ "$scenario" = fatal ] && [ "$via" = adapter ] && [ -n "$stderr_flag" ]; then
                # One line names the cause and the kept file with the CLI's whole stderr.
                local kept
                kept=$(sed -n "s/.*(the CLI's full stderr: \(.*\))\$/\1/p" "$err")
                [ "$(wc -l <"$err")" = 1 ] && [ -s "$kept" ] ||
                    echo "the CLI's stderr was not kept and named on one line: $(head -c 300 "$err")"
            fi
            ;;
        deadline)
            echo slow >"$scenario_file"
            local started=$SECONDS
            $run "Inspect the workspace." 3
            local took=$((SECONDS - started))
            [ "$status" != 0 ] && [ ! -s "$out" ] && [ "$took" -lt 30 ] ||
                echo "exit $status after ${took}s: $(head -c 200 "$out")"
            ;;
        bigprompt)
            echo readfile >"$scenario_file"
            $run "$(big_prompt)"
            local seen=
            grep -rqs START-OF-PROMPT-MARKER-3K "$dump" && seen=start
            grep -rqs END-OF-PROMPT-MARKER-7Q "$dump" && seen="$seen end"
            [ "$status" = 0 ] && [ "$seen" = "start end" ] ||
                echo "exit $status; the provider saw the prompt's: ${seen:-nothing}: $(head -c 300 "$err")"
            ;;
        activity)
            local dir=$work/activity token
            rm -rf "$dir" && mkdir -p "$dir"
            token=$dir/proxy-first-output
            echo slow >"$scenario_file"
            activity_run "$dir"
            if [ "$status" != 0 ] || ! cmp -s "$token" <(printf 'output\n'); then
                echo "exit $status, token: $(od -c "$token" 2>&1 | head -n 1): $(head -c 300 "$err")"
            elif [ "$(stat -c %a "$token")" != 600 ]; then
                echo "the token's mode is $(stat -c %a "$token")"
            elif [ -n "$live_stream" ] && [ "$token_lead" -lt 2 ]; then
                echo "the token appeared ${token_lead}s before the run ended: not while the CLI ran"
            else
                # A turn whose provider fails before the model says anything shows no activity.
                rm -rf "$dir" && mkdir -p "$dir"
                echo fatal >"$scenario_file"
                activity_run "$dir"
                [ "$status" != 0 ] && [ ! -e "$token" ] ||
                    echo "a turn without a model event: exit $status, token $([ -e "$token" ] && echo published || echo absent)"
            fi
            ;;
        marker)
            [ "$extensions" = 1 ] || { echo NA; return; }
            # The extension its managed session's bundle loads, reduced to the marker, copied
            # where the seat's user can read it.
            local ext=$work/turn-marker.ts markers=$work/markers
            cp "$root/scripts/adapters/$runtime/turn-marker.ts" "$ext" ||
                { echo "its adapter loads extensions: scripts/adapters/$runtime/turn-marker.ts"; return; }
            rm -rf "$markers" && mkdir -p "$markers"
            echo plain >"$scenario_file"
            adapter_env=(MOSAIC_TURN_MARKER="$markers/with" MOSAIC_EXTENSIONS="$ext")
            run_adapter "Inspect the workspace."
            if [ "$status" != 0 ] || [ ! -e "$markers/with" ]; then
                echo "with the extension: exit $status, marker $([ -e "$markers/with" ] && echo written || echo missing): $(head -c 300 "$err")"
                return
            fi
            adapter_env=(MOSAIC_TURN_MARKER="$markers/without")
            run_adapter "Inspect the workspace."
            [ "$status" = 1 ] && [ "$(wc -l <"$err")" = 1 ] && grep -q "without its marker" "$err" ||
                echo "without the marker: exit $status: $(head -c 300 "$err")"
            ;;
        tools)
            local limit=$tool_limit
            [ -n "$limit" ] || { echo NA; return; }
            # The same command runs without the limit, and not with it.
            echo "toolcmd touch ran.txt" >"$scenario_file"
            run_adapter "Run the tool."
            [ -e "$ws/ran.txt" ] || { echo "without a limit the command never ran (exit $status): $(head -c 300 "$err")"; return; }
            rm -f "$ws/ran.txt"
            adapter_env=(MOSAIC_TOOLS="$limit")
            run_adapter "Run the tool."
            [ ! -e "$ws/ran.txt" ] ||
                echo "MOSAIC_TOOLS=$limit still let the model's shell command run (exit $status)"
            ;;
        managed)
            # A managed session's adapter refuses to run without its bundle.
            [ -n "$bundle_var" ] || { echo NA; return; }
            adapter_env=("$bundle_var=")
            run_adapter "Inspect the workspace."
            [ "$status" = 2 ] && [ "$(wc -l <"$err")" = 1 ] && grep -q "$bundle_var" "$err" &&
                [ -z "$(ls -A "$dump")" ] ||
                echo "without its settings: exit $status, provider requests $(ls "$dump" | wc -l): $(head -c 300 "$err")"
            ;;
        start)
            echo plain >"$scenario_file"
            adapter_verb=start
            run_adapter "not read by a start"
            local ref
            ref=$(cat "$out")
            if [ "$status" != 0 ] || [ -z "$ref" ] || [ "$(wc -l <"$out")" != 1 ]; then
                echo "start: exit $status, printed '$ref': $(head -c 300 "$err")"
                return
            fi
            adapter_verb="validate $ref"
            run_adapter ""
            [ "$status" = 0 ] || { echo "validate $ref: exit $status: $(head -c 300 "$err")"; return; }
            if [ "$resumes" = 0 ]; then
                case $ref in fresh:?*) ;; *) echo "$cli never resumes, but start printed $ref" ;; esac
                return
            fi
            grep -qxF "$ref" "$sessions/$runtime.session" 2>/dev/null ||
                { echo "start printed $ref but stored $(cat "$sessions/$runtime.session" 2>&1)"; return; }
            grep -rqs "Initialize only" "$dump" || { echo "the provider never saw the startup prompt"; return; }
            rm -rf "${dump:?}"/*
            adapter_verb=
            run_adapter "Second turn."
            [ "$status" = 0 ] && grep -rqs "Initialize only" "$dump" ||
                echo "the next turn did not resume the started session (exit $status): $(head -c 300 "$err")"
            ;;
        health)
            echo plain >"$scenario_file"
            adapter_verb=health
            run_adapter ""
            [ "$status" = 0 ] && [ -s "$out" ] || echo "health: exit $status: $(head -c 300 "$err")"
            ;;
        asks)
            # Outside a seat a write outside the workspace is a permission the CLI would ask
            # for: nobody can answer headless, so the run must end (denied), not wait.
            [ -n "$asks" ] || { echo NA; return; }
            echo "toolcmd touch $work/outside/escaped.txt" >"$scenario_file"
            local started=$SECONDS
            # No seat, no credential proxy: the CLI calls the provider itself, so it trusts the
            # fake model's certificate (opencode is bun's, which reads NODE_EXTRA_CA_CERTS).
            local ca_before=${NODE_EXTRA_CA_CERTS-}
            export NODE_EXTRA_CA_CERTS=$ca
            if [ "$via" = adapter ]; then
                # No MOSAIC_WORKSPACE: no seat, the adapter's read-only policy.
                (cd "$ws" && MOSAIC_REQUEST="Run the tool." MOOT_DEADLINE=120 \
                    sh "$root/scripts/adapters/$runtime/adapter.sh") >"$out" 2>"$err"
                status=$?
            else
                printf 'Run the tool.' >"$ws/job.md"
                (cd "$ws" && moot-render "$runtime" --policy workspace-write --prompt-file job.md |
                    moot-run --deadline 120 | moot-parse-"$parser" --text) >"$out" 2>"$err"
                status=$?
                rm -f "$ws/job.md"
            fi
            if [ -n "$ca_before" ]; then NODE_EXTRA_CA_CERTS=$ca_before; else unset NODE_EXTRA_CA_CERTS; fi
            local took=$((SECONDS - started))
            [ -n "$(ls "$dump")" ] || { echo "the model was never asked (exit $status): $(head -c 300 "$err")"; return; }
            [ "$status" != 0 ] && [ ! -s "$out" ] && [ "$took" -lt 100 ] && [ ! -e "$work/outside/escaped.txt" ] ||
                echo "exit $status after ${took}s, file made: $([ -e "$work/outside/escaped.txt" ] && echo yes || echo no): $(head -c 300 "$err")"
            ;;
        resume)
            if [ "$resumes" = 0 ]; then
                echo SKIP
                return
            fi
            echo plain >"$scenario_file"
            if [ "$via" = adapter ]; then
                run_adapter "First turn: remember the word ZEBRA-41."
                [ "$status" = 0 ] || { echo "first turn: exit $status: $(head -c 300 "$err")"; return; }
                rm -rf "${dump:?}"/*
                run_adapter "Second turn."
            else
                run_pipeline "First turn: remember the word ZEBRA-41."
                [ "$status" = 0 ] || { echo "first turn: exit $status: $(head -c 300 "$err")"; return; }
                local id
                id=$(session_of_first_turn)
                [ -n "$id" ] || { echo "the first turn named no session"; return; }
                rm -rf "${dump:?}"/*
                run_pipeline "Second turn." 600 "$id"
            fi
            [ "$status" = 0 ] && grep -rqs ZEBRA-41 "$dump" ||
                echo "exit $status; the provider saw the first turn: $(grep -rqs ZEBRA-41 "$dump" && echo yes || echo no): $(head -c 300 "$err")"
            ;;
    esac
}

# The session the pipeline's first turn started: what moot-render announced, or what the
# parser reads from the transcript (the pipeline prints the answer only).
session_of_first_turn() {
    local stage
    stage=$(ls -dt "$work"/stage.* | head -n 1)
    local announced
    announced=$(grep -o 'session id [^:]*' "$err" | head -n 1 | sed 's/session id //')
    [ -n "$announced" ] && { echo "$announced"; return; }
    # shellcheck disable=SC2090 # only whether stderr_flag is set counts here
    [ -f "$stage/run.ndjson" ] &&
        "$MOOT_BIN/moot-parse-$parser" ${stderr_flag:+--stderr-file "$stage/err"} <"$stage/run.ndjson" 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["run"]["session_id"] or "")'
}

printf '| CLI | path | scenario | result | s |\n|---|---|---|---|---|\n'
for cli in $CLIS; do
    setup "$cli"
    installed=1
    for dir in ${path_dirs//:/ }; do [ -d "$dir" ] || installed=0; done
    if [ $installed = 0 ] || ! PATH=$path_dirs:$PATH command -v "$program" >/dev/null; then
        if [ -n "${MOOT_NO_SKIP:-}" ]; then
            printf '| %s | - | - | FAILED: not installed in %s (scripts/realcli/install.sh) | 0 |\n' "$cli" "$REALCLI_DIR"
            failed=$((failed + 1))
        else
            echo "SKIPPED $cli: not installed in $REALCLI_DIR; run scripts/realcli/install.sh" >&2
            skipped=$((skipped + 1))
        fi
        continue
    fi
    export PATH=$MOOT_BIN:$path_dirs:/usr/local/bin:/usr/bin:/bin
    out=$work/out err=$work/err
    for scenario in $SCENARIOS; do
        for via in adapter pipeline; do
            case $ADAPTER_ONLY in *" $scenario "*) [ "$via" = adapter ] || continue ;; esac
            started=$SECONDS
            why=$(check "$scenario" "$via")
            # A real CLI is not deterministic under load: a failed run is run once more, and a
            # pass on the second run is reported with the first run's failure, never hidden.
            first=
            case $why in NA | SKIP | '') ;; *) first=$why why=$(check "$scenario" "$via") ;; esac
            took=$((SECONDS - started))
            case $why in
                NA) continue ;;
                '') result=ok passed=$((passed + 1))
                    [ -z "$first" ] || { result="ok on a second run (the first: $(printf '%s' "$first" | tr '\n|' '  ' | head -c 300))" retried=$((retried + 1)); } ;;
                SKIP) result="n/a ($cli never resumes)" skipped=$((skipped + 1)) ;;
                *) result="FAILED: $(printf '%s' "$why" | tr '\n|' '  ' | head -c 300)" failed=$((failed + 1)) ;;
            esac
            printf '| %s | %s | %s | %s | %s |\n' "$cli" "$via" "$scenario" "$result" "$took"
        done
    done
done
[ "$retried" = 0 ] || echo "$retried of the passed passed on a second run (rows 'ok on a second run' above)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
