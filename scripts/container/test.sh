#!/usr/bin/env bash
# make test-container: moot's image (make image) run by real OCI runtimes under the default
# seccomp profiles of the engines that would run it, Docker's and Podman's, each resolved for a
# container with Docker's default capabilities (oci_seccomp.py), under runc (RUNTIME=crun where
# the host's cgroups suit crun: Debian 12's refuses a hybrid hierarchy, as a CI runner's
# container often has).
# Inside, Landlock must enforce (moot-sandbox --check, a denied write), and a real CLI's whole
# pipeline must give the right verdict; with Landlock's calls taken out of the profile (Docker's
# default then answers EPERM, Podman's ENOSYS), moot-sandbox must refuse with exit 3 and one line
# that names the seccomp profile.
#
#   test.sh            needs root, runc, umoci and busybox-static, and both profiles
#                      (scripts/container/install.sh gets them from Debian's packages)
#
#   IMAGE              the directory make image wrote (default: target/image)
#   RUNTIME            the OCI runtime (default: runc)
#   REALCLI_DIR        where scripts/realcli/install.sh put the CLIs (the pipeline runs codex's
#                      static binary from there, bind-mounted read-only)
#   PROFILES           where install.sh put the two profiles (default: $TMPDIR/moot-profiles)
#
# Prints one row per check and the plain closing line "N passed, N failed". Exits 1 if anything
# failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
IMAGE=${IMAGE:-$root/target/image}
RUNTIME=${RUNTIME:-runc}
REALCLI_DIR=${REALCLI_DIR:-${TMPDIR:-/tmp}/moot-realcli}
PROFILES=${PROFILES:-${TMPDIR:-/tmp}/moot-profiles}
DOCKER_PROFILE=$PROFILES/docker.json PODMAN_PROFILE=$PROFILES/podman.json

die() { echo "test-container: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root: runc and crun start containers as root here"
for tool in "$RUNTIME" umoci busybox; do
    command -v "$tool" >/dev/null || die "$tool is not installed (scripts/container/install.sh)"
done
for profile in "$DOCKER_PROFILE" "$PODMAN_PROFILE"; do
    [ -f "$profile" ] || die "no seccomp profile at $profile (scripts/container/install.sh)"
done
[ -f "$IMAGE/oci/index.json" ] || die "no image in $IMAGE/oci (make image)"
# busybox-static's: the image has no shell, and a static one runs in it.
busybox=$(command -v busybox)

work=$(mktemp -d "${TMPDIR:-/tmp}/moot-container.XXXXXX") || die "no work directory"
trap 'kill "${fake_pid:-}" 2>/dev/null; rm -rf "$work"' EXIT
passed=0 failed=0

# The image itself, unpacked by an OCI tool: what an engine would run.
umoci unpack --image "$IMAGE/oci:latest" "$work/bundle" >"$work/umoci.log" 2>&1 ||
    die "umoci cannot unpack the image: $(tail -n 3 "$work/umoci.log")"
rootfs=$work/bundle/rootfs
for name in docker podman; do
    var=${name^^}_PROFILE
    python3 "$here/oci_seccomp.py" "${!var}" >"$work/$name.json" &&
        python3 "$here/oci_seccomp.py" "${!var}" --without landlock >"$work/$name-nolandlock.json" ||
        die "cannot resolve the $name profile"
done

# run_in RUNTIME PROFILE SCRIPT: SCRIPT run by sh (busybox's: a job image brings a shell; the
# CLI's tool runs its commands with it too) as root in a container of the image
# (oci_config.py), with PROFILE's seccomp filter and any MOUNTS ("HOST:CONTAINER" words) bound
# read-only. Sets out, err and status.
run_in() {
    local runtime=$1 profile=$2 script=$3 id mount binds=()
    id=moot-test-$$-$((++runs))
    for mount in "$busybox:/bin/busybox" "$busybox:/bin/sh" ${MOUNTS:-}; do
        binds+=(--bind "$mount")
    done
    python3 "$here/oci_config.py" "$work/bundle/config.json" "$rootfs" "$work/$profile.json" \
        "$script" "${binds[@]}" || die "cannot write the container's configuration"
    (cd "$work/bundle" && timeout 300 "$runtime" run "$id") >"$work/out" 2>"$work/err" </dev/null
    status=$?
    "$runtime" delete -f "$id" >/dev/null 2>&1
    out=$(cat "$work/out") err=$(cat "$work/err")
}
runs=0

# row NAME WHY: WHY empty is a pass.
row() {
    if [ -z "$2" ]; then
        printf '| %s | ok |\n' "$1"
        passed=$((passed + 1))
    else
        printf '| %s | FAILED: %s |\n' "$1" "$(printf '%s' "$2" | tr '\n|' '  ' | head -c 400)"
        failed=$((failed + 1))
    fi
}

# The fake model on the host's loopback, for the pipeline's real CLI.
printf 'k%s\n' "$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')" >"$work/provider.key"
chmod 600 "$work/provider.key"
echo toolwrite >"$work/scenario"
"$rootfs/usr/local/bin/moot-doctor" --serve --scenario-file "$work/scenario" \
    --require-key-file "$work/provider.key" >"$work/fake.origin" 2>"$work/fake.log" &
fake_pid=$!
for _ in $(seq 100); do [ -s "$work/fake.origin" ] && break; sleep 0.1; done
origin=$(cat "$work/fake.origin")
[ -n "$origin" ] || die "the fake model did not start: $(head -c 300 "$work/fake.log")"
codex=$REALCLI_DIR/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex

# pipeline: the script the container runs for the pipeline check: the engines' job
# (examples/engines/job.sh, in the image's libexec) with codex pointed at the fake model as
# moot-doctor --fake-home says, the agent as uid 65534 (the job runs as root). The envelope goes
# to stdout, then the worktree's listing, and KEY-IN-THE-SEAT if the provider's key is in what
# the agent's command saw or in the transcript.
pipeline() {
    cat <<SH
set -e
mkdir -p /tmp/bin /tmp/ws /tmp/home
chown 65534:65534 /tmp/ws
busybox --install -s /tmp/bin
export PATH=/usr/local/bin:/tmp/cli:/tmp/bin HOME=/tmp/home
eval "\$(moot-doctor --fake-home /tmp/home --origin $origin --key-file /tmp/key/provider.key codex)"
printf 'Run the tool.' >/tmp/job.md
set +e
MOOT_PROVIDER_URL=$origin MOOT_PROVIDER_KEY_ENV=\$moot_key_env MOOT_KEEP=\$moot_keep \\
    MOOT_SEAT_USER=65534:65534 MOOT_DEADLINE=120 \\
    sh /usr/local/libexec/moot/job.sh codex /tmp/ws /tmp/job.md /tmp/out
status=\$?
cat /tmp/out/envelope.json
echo
ls -n /tmp/ws
! grep -qF "\$(cat /tmp/key/provider.key)" /tmp/ws/seen-env.txt /tmp/out/run.ndjson || echo KEY-IN-THE-SEAT
exit \$status
SH
}

printf '| check | result |\n|---|---|\n'
runtime=$RUNTIME
for engine in docker podman; do
    run_in "$runtime" "$engine" 'moot-sandbox --check'
    why=
    [ "$status" = 0 ] && grep -q '"passed":true' <<<"$out" || why="exit $status: $out $err"
    row "$runtime, $engine's profile: moot-sandbox --check" "$why"

    run_in "$runtime" "$engine" 'mkdir /tmp/ws && moot-sandbox --rx /bin/busybox --rw /tmp/ws -- /bin/busybox sh -c "touch /tmp/ws/inside; touch /tmp/escaped"; echo "sandbox $?"; ls /tmp /tmp/ws'
    why=
    if ! grep -q '^inside$' <<<"$out"; then
        why="the write inside did not land: $out $err"
    elif grep -q '^escaped$' <<<"$out"; then
        why="the write outside landed"
    elif ! grep -q 'Permission denied' <<<"$err"; then
        why="no denial: $err"
    fi
    row "$runtime, $engine's profile: a write outside the grant is denied" "$why"

    run_in "$runtime" "$engine" 'moot-doctor --environment --strict'
    why=
    [ "$status" = 0 ] && grep -q '| seccomp | filter' <<<"$out" || why="exit $status: $out $err"
    row "$runtime, $engine's profile: moot-doctor --environment --strict sees the filter" "$why"

    # The README's pipeline with codex (its static binary runs FROM scratch; the rest of the
    # image is moot's) against the fake model on the host's loopback: the agent's command runs
    # as the seat's user and its write lands, the verdict is ok, and the key never enters the
    # seat (moot-broker --forward).
    echo "toolcmd env > seen-env.txt; touch created_by_agent.txt" >"$work/scenario"
    MOUNTS="$codex:/tmp/cli/codex $work/provider.key:/tmp/key/provider.key" \
        run_in "$runtime" "$engine" "$(pipeline)"
    echo toolwrite >"$work/scenario"
    why=
    if [ "$status" != 0 ]; then
        why="exit $status: $(tail -c 400 <<<"$out") $err"
    elif ! grep -q ' 65534 *65534 .* created_by_agent.txt$' <<<"$out"; then
        why="the agent's write did not land as uid 65534: $out"
    elif grep -q KEY-IN-THE-SEAT <<<"$out" || ! grep -q ' seen-env.txt$' <<<"$out"; then
        why="the provider's key reached the seat, or the agent's command never ran: $out"
    elif ! grep -q '"runtime":"codex","ok":true' <<<"$out"; then
        why="the verdict: $out"
    fi
    row "$runtime, $engine's profile: codex's pipeline against the fake model gives ok" "$why"

    for errno in EPERM ENOSYS; do
        [ "$engine:$errno" = docker:EPERM ] || [ "$engine:$errno" = podman:ENOSYS ] || continue
        run_in "$runtime" "$engine-nolandlock" 'moot-sandbox --rw /tmp -- /bin/busybox true'
        why=
        if [ "$status" != 3 ] || [ "$(wc -l <<<"$err")" != 1 ]; then
            why="exit $status: $err"
        elif ! grep -q "seccomp filter answers Landlock's system calls with $errno: the container's seccomp profile must allow" <<<"$err"; then
            why="the line does not name the profile: $err"
        fi
        row "$runtime, $engine's profile without landlock ($errno): refused, exit 3, one line" "$why"
    done
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
