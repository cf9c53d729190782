#!/usr/bin/env bash
# What make test-container needs, from Debian's packages (as root): runc, crun, umoci and a
# static busybox installed, and the default seccomp profiles of Docker (moby's, in
# golang-github-docker-docker-dev) and Podman (containers-common's seccomp.json), taken out of
# their packages into PROFILES without installing them (the first would pull in hundreds of Go
# source packages).
#
#   PROFILES   where to put docker.json and podman.json (default: $TMPDIR/moot-profiles)
set -euo pipefail
PROFILES=${PROFILES:-${TMPDIR:-/tmp}/moot-profiles}
[ "$(id -u)" = 0 ] || { echo "container install: needs root (apt-get)" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends runc crun umoci busybox-static >/dev/null
debs=$(mktemp -d "${TMPDIR:-/tmp}/moot-debs.XXXXXX")
trap 'rm -rf "$debs"' EXIT
chmod 755 "$debs"
# apt downloads as _apt where that user exists.
chown _apt "$debs" 2>/dev/null || true
(cd "$debs" && apt-get download -qq golang-github-docker-docker-dev golang-github-containers-common)
for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$debs/x"; done
mkdir -p "$PROFILES"
cp "$debs/x/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json" "$PROFILES/docker.json"
cp "$debs/x/usr/share/containers/seccomp.json" "$PROFILES/podman.json"
echo "container install: runc, crun, umoci, busybox; profiles in $PROFILES"
