#!/bin/sh
# One agent job in CI: omp does what JOB (a prompt file) asks in WORKTREE, confined by the
# kernel to write only there, with the provider's key kept out of its reach. The job passes
# only on a completed run that validated and whose agent was denied nothing.
#
#   sh examples/ci-job.sh WORKTREE JOB
#
#   MOOT_PROVIDER_URL       the provider's base URL, as omp's models.yml names it
#   MOOT_PROVIDER_KEY_FILE  the file (0600, yours) holding the provider's key
#   MOOT_PROVIDER_CA        optional: a PEM file of the private CA the provider's certificate is under
#   MOOT_JOB_DIR            optional: an empty directory of yours (mode 0700) where the run's
#                           files are kept: run.ndjson (the transcript), status, verdict.json,
#                           events.ndjson (what the agent did: moot(7), EVENTS)
#                           (default: a new temporary one, removed when the job passes)
#   MOOT_SEAT_USER          optional, for a job that runs as root: USER[:GROUP] the agent runs
#                           as (nobody:nogroup), which must be able to write the worktree
#                           (README.md: "In a CI container that runs as root")
#
# Exit 0: the answer is on stdout. 1: the run failed, a tool of the pipeline refused its input
# (a key file others can read, say), or the sandbox denied the agent something; the first line
# on stderr says why, the last where the run's files are. 2: a usage error of this script.
set -eu
fail() { echo "ci-job: $1" >&2; exit "${2:-1}"; }
[ $# = 2 ] || fail "usage: sh examples/ci-job.sh WORKTREE JOB" 2
# omp works in the directory it starts in, whatever it is granted: moot-run --cwd starts it in
# the worktree wherever this job runs, and moot-render --cwd looks there for the repository
# under review (what it must switch off or refuse), taking relative paths from there too.
worktree=$(cd "$1" 2>/dev/null && pwd -P) || fail "no such worktree: $1" 2
[ -f "$2" ] || fail "no such job file: $2" 2
job=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
provider=${MOOT_PROVIDER_URL:-}
key=${MOOT_PROVIDER_KEY_FILE:-}
[ -n "$provider" ] && [ -n "$key" ] || fail "set MOOT_PROVIDER_URL and MOOT_PROVIDER_KEY_FILE" 2
ca=${MOOT_PROVIDER_CA:-}
seat_user=${MOOT_SEAT_USER:-}
[ -n "$seat_user" ] || [ "$(id -u)" != 0 ] ||
  echo "ci-job: warning: the agent runs as root, which can chmod and chown root's files past" \
    "Landlock; set MOOT_SEAT_USER=nobody:nogroup (README.md)" >&2
stage=${MOOT_JOB_DIR:-$(mktemp -d)}
# The seat's user enters the stage (its prompt and state are there) but lists nothing.
[ -z "$seat_user" ] || chmod 711 "$stage" || fail "cannot open $stage to $seat_user"
# omp's HOME, sessions and caches in the seat, made by moot-sandbox (the seat user's, with
# --user): never your own ~/.omp.
state=$stage/state
trap 'rm -rf "$state"' EXIT
# The verdict is for you alone, even in a stage the seat's user may enter.
(umask 077 && : >"$stage/verdict.json")

moot-render omp --policy workspace-write --seat --stream --deadline 600 \
    --stage-dir "$stage/p" ${seat_user:+--stage-user "$seat_user"} \
    --cwd "$worktree" --add-dir "$worktree" --prompt-file "$job" |
  moot-broker --forward "$provider" --key-file "$key" ${ca:+--upstream-ca "$ca"} -- \
  moot-run --deadline 600 --cwd "$worktree" --transcript "$stage/run.ndjson" \
    --status-file "$stage/status" --env-preset omp --protect "$worktree" --cleanup "$stage/p" \
    --stdin-argv -- \
    moot-sandbox --profile omp --state "$state" ${seat_user:+--user "$seat_user"} \
      --rw "$worktree" --ro-try "$stage/p" -- |
  moot-parse-omp --status-file "$stage/status" --events "$stage/events.ndjson" --progress \
    >"$stage/verdict.json" ||
  fail "the run failed (the first line above says why); its files are in $stage"

# The sandbox lets the agent write only the worktree, and an agent that was denied a write
# may still report success: its work did not happen. So any denial in the transcript fails
# the job, in the shell's words or node's (EACCES: permission denied), a probe the agent meant
# to make included. One it hid from its own output (2>/dev/null) is not seen: check the
# worktree for the work itself where that matters.
if grep -qi -e 'permission denied' -e 'read-only file system' -e 'operation not permitted' \
    "$stage/run.ndjson"; then
  fail "the sandbox denied the agent a write or a read outside $worktree; its files are in $stage"
fi
moot-parse-omp --text --status-file "$stage/status" <"$stage/run.ndjson"
[ -n "${MOOT_JOB_DIR:-}" ] || rm -rf "$stage"
