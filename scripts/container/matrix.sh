#!/usr/bin/env bash
# make matrix: many agent jobs through the container path, as a job engine would run them. Every
# runtime with a parser, in every scenario of SCENARIOS, is one job: its own container of moot's
# image (make image) under runc with Docker's default seccomp profile, running the engines' job
# (libexec/moot/job.sh) against the fake model on the host's loopback, the agent as uid 65534,
# JOBS at a time (xargs -P).
# The CLIs and their runtimes (node, bun, Python) come from the host, bound read-only, as a job
# image would carry them. Then moot-report merges the envelopes.
#
#   matrix.sh            needs root, what test.sh needs, and scripts/realcli/install.sh's CLIs
#
#   JOBS        jobs at once (default 2)
#   SCENARIOS   the fake model's scenarios (default: plain toolwrite fatal): plain and toolwrite
#               must pass (toolwrite's file in the worktree), fatal must fail
#   IMAGE, REALCLI_DIR, PROFILES   as for test.sh
#
# Prints one row per job (its verdict, wall time and peak memory: the largest resident set of
# any process of its container), moot-report's summary, and "N passed, N failed".
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
IMAGE=${IMAGE:-$root/target/image}
REALCLI_DIR=${REALCLI_DIR:-${TMPDIR:-/tmp}/moot-realcli}
PROFILES=${PROFILES:-${TMPDIR:-/tmp}/moot-profiles}
JOBS=${JOBS:-2}
SCENARIOS=${SCENARIOS:-plain toolwrite fatal}
# shellcheck source=scripts/realcli/layout.sh
. "$root/scripts/realcli/layout.sh"

die() { echo "matrix: $*" >&2; exit 1; }

# --job RUNTIME SCENARIO (what xargs runs): one job in its container, in $work/jobs/RUNTIME-SCENARIO:
# status, envelope.json and ws.txt (the worktree's listing) from inside, measure (exit status,
# seconds, peak KiB) from outside.
if [ "${1:-}" = --job ]; then
    runtime=$2 scenario=$3
    work=${MATRIX_WORK:?}
    dir=$work/jobs/$runtime-$scenario
    mkdir -p "$dir/out" "$dir/bundle"
    install_file "$runtime" || exit 1
    realcli_layout "$runtime" "$dir/cli"
    binds=(--bind /usr/bin:/usr/bin --bind /usr/lib:/usr/lib --bind /usr/share:/usr/share
        --bind /usr/bin:/bin --bind /usr/lib:/lib --bind /etc:/etc
        --bind "$REALCLI_DIR:$REALCLI_DIR" --bind "$work/provider.key:/key/provider.key"
        --bind "$dir/out:/out:rw")
    [ ! -d /usr/lib64 ] || binds+=(--bind /usr/lib64:/usr/lib64 --bind /usr/lib64:/lib64)
    [ "$path_dirs" != "$dir/cli" ] || binds+=(--bind "$dir/cli:$dir/cli")
    # A venv's Python lives where it was built (kimi-cli's: pyenv's, below root's home).
    python_home=$(sed -n 's/^home = //p' "$REALCLI_DIR/$(install_field "$install" DIR)/venv/pyvenv.cfg" 2>/dev/null)
    [ -z "$python_home" ] || binds+=(--bind "${python_home%/bin}:${python_home%/bin}")
    origin=$(cat "$work/origin.$scenario")
    prompt="Inspect the workspace."
    [ "$scenario" = plain ] || prompt="Run the tool."
    script="set -e
mkdir -p /tmp/home /tmp/ws
chown 65534:65534 /tmp/ws
export PATH=/usr/local/bin:$path_dirs:/usr/bin:/bin HOME=/tmp/home
eval \"\$(moot-doctor --fake-home /tmp/home --origin $origin --key-file /key/provider.key $runtime)\"
printf '$prompt' >/tmp/job.md
store=
[ -z \"\$moot_session_store\" ] || store=\"--session-store /tmp/out/state/home/\$moot_session_store\"
set +e
MOOT_PROVIDER_URL=$origin MOOT_PROVIDER_KEY_FILE=/key/provider.key MOOT_PROVIDER_KEY_ENV=\$moot_key_env \\
    MOOT_KEEP=\"\$moot_keep\" MOOT_STDERR_FILE=\$moot_stderr_file MOOT_PARSER_FLAGS=\"\$store\" \\
    MOOT_SEAT_USER=65534:65534 MOOT_DEADLINE=300 sh /usr/local/libexec/moot/job.sh $runtime /tmp/ws /tmp/job.md /tmp/out 2>/out/stderr
echo \$? >/out/status
cp /tmp/out/envelope.json /out/envelope.json
ls /tmp/ws >/out/ws.txt"
    python3 "$here/oci_config.py" "$dir/bundle/config.json" "$work/bundle/rootfs" \
        "$work/docker.json" "$script" "${binds[@]}" || exit 1
    cd "$dir/bundle" || exit 1
    python3 - "$dir" runc run "moot-matrix-$$-$runtime-$scenario" <<'PY'
import resource, subprocess, sys, time
dir, *command = sys.argv[1:]
started = time.monotonic()
with open(dir + "/runc.out", "wb") as out, open(dir + "/runc.err", "wb") as err:
    status = subprocess.call(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
seconds = time.monotonic() - started
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
with open(dir + "/measure", "w") as f:
    f.write("%d %.1f %d\n" % (status, seconds, peak))
PY
    exit 0
fi

[ "$(id -u)" = 0 ] || die "needs root: runc starts containers as root here"
for tool in runc umoci; do command -v "$tool" >/dev/null || die "$tool is not installed (scripts/container/install.sh)"; done
[ -f "$PROFILES/docker.json" ] || die "no Docker profile in $PROFILES (scripts/container/install.sh)"
[ -f "$IMAGE/oci/index.json" ] || die "no image in $IMAGE/oci (make image)"
work=$(mktemp -d "${TMPDIR:-/tmp}/moot-matrix.XXXXXX") || die "no work directory"
chmod 755 "$work"
fakes=()
trap 'kill "${fakes[@]}" 2>/dev/null; [ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
umoci unpack --image "$IMAGE/oci:latest" "$work/bundle" >"$work/umoci.log" 2>&1 ||
    die "umoci cannot unpack the image: $(tail -n 3 "$work/umoci.log")"
python3 "$here/oci_seccomp.py" "$PROFILES/docker.json" >"$work/docker.json" || die "cannot resolve the Docker profile"
printf 'k%s\n' "$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')" >"$work/provider.key"
chmod 600 "$work/provider.key"
# One fake model per scenario, each on its own port.
for scenario in $SCENARIOS; do
    echo "$scenario" >"$work/scenario.$scenario"
    "$work/bundle/rootfs/usr/local/bin/moot-doctor" --serve --scenario-file "$work/scenario.$scenario" \
        --require-key-file "$work/provider.key" >"$work/origin.$scenario" 2>"$work/fake.$scenario.log" &
    fakes+=($!)
done
for scenario in $SCENARIOS; do
    for _ in $(seq 100); do [ -s "$work/origin.$scenario" ] && break; sleep 0.1; done
    [ -s "$work/origin.$scenario" ] || die "the $scenario fake model did not start: $(head -c 300 "$work/fake.$scenario.log")"
done
runtimes=$("$work/bundle/rootfs/usr/local/bin/moot-render" --list --json |
    python3 -c 'import json, sys; print(" ".join(e["name"] for e in json.load(sys.stdin) if e["parser"]))')

started=$SECONDS
for runtime in $runtimes; do
    for scenario in $SCENARIOS; do echo "$runtime $scenario"; done
done | MATRIX_WORK=$work xargs -P "$JOBS" -n 2 bash "$0" --job
took=$((SECONDS - started))

passed=0 failed=0
printf '| runtime | scenario | exit | verdict | s | peak MiB | result |\n|---|---|---|---|---|---|---|\n'
for runtime in $runtimes; do
    for scenario in $SCENARIOS; do
        dir=$work/jobs/$runtime-$scenario
        read -r _ seconds peak <"$dir/measure" 2>/dev/null || seconds=- peak=0
        status=$(cat "$dir/out/status" 2>/dev/null || echo -)
        verdict=$(python3 -c 'import json, sys
run = json.load(open(sys.argv[1]))["run"]
print("ok" if run["ok"] else "fail:" + (run["error"] or {}).get("class", "?"))' "$dir/out/envelope.json" 2>/dev/null || echo none)
        why=
        case $scenario in
            fatal) [ "$status" != 0 ] && [ "${verdict#fail}" != "$verdict" ] || why="a provider error passed" ;;
            *) [ "$status" = 0 ] && [ "$verdict" = ok ] || why="exit $status: $(head -c 200 "$dir/out/stderr" "$dir/runc.err" 2>/dev/null)" ;;
        esac
        [ "$scenario" != toolwrite ] || grep -qx created_by_agent.txt "$dir/out/ws.txt" 2>/dev/null ||
            why=${why:-"the agent's write did not land"}
        if [ -z "$why" ]; then result=ok passed=$((passed + 1)); else result="FAILED: $(tr '\n|' '  ' <<<"$why")" failed=$((failed + 1)); fi
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$runtime" "$scenario" "$status" "$verdict" \
            "$seconds" "$((peak / 1024))" "$result"
    done
done
echo
"$work/bundle/rootfs/usr/local/bin/moot-report" "$work"/jobs/*/out/envelope.json
echo
echo "$((passed + failed)) jobs, $JOBS at a time, in $took s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
