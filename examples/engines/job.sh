#!/bin/sh
# One agent job as a job engine runs it (examples/engines/: GitHub Actions, GitLab CI, a
# Kubernetes Indexed Job), and as make test-container does in moot's image: RUNTIME's CLI does
# what PROMPT asks in WORKTREE, confined by Landlock to write only there, behind moot-broker's
# credential proxy; the envelope (the verdict, for moot-report) goes to OUT/envelope.json, the
# transcript to OUT/run.ndjson. make install puts it in PREFIX/libexec/moot/job.sh.
#
#   job.sh RUNTIME WORKTREE PROMPT OUT       (OUT outside WORKTREE)
#
#   MOOT_PROVIDER_URL        the provider's base URL, as the CLI's configuration names it
#   MOOT_PROVIDER_KEY_FILE   the file (0600) holding the provider's key, where the CLI's
#                            configuration holds it; or
#   MOOT_PROVIDER_KEY_ENV    the variable holding it, for a CLI that reads its key from one
#   MOOT_KEEP                variables the runtime's env preset drops that the CLI needs
#                            (its configuration's location, its key's variable), blank-separated
#   MOOT_STDERR_FILE=1       the CLI names its session or fatal error only on stderr (Kimi)
#   MOOT_PARSER_FLAGS        extra flags for the parser (--session-store DIR)
#   MOOT_DEADLINE            seconds (default 600)
#   MOOT_SEAT_USER           USER[:GROUP] the agent runs as; required when the job runs as
#                            root (root's agent could chmod and chown root's files past Landlock)
#
# Exit 0: the run completed, its result validated, and the sandbox denied the agent nothing.
# 1: the run failed, or the transcript shows a denial (the first line on stderr says why). 2: a
# usage error of this script. OUT (new or empty, private) keeps the run's files; the agent's
# private state in it is removed at the end.
set -euf
umask 077
fail() { echo "job: $1" >&2; exit "${2:-1}"; }
[ $# = 4 ] || fail "usage: job.sh RUNTIME WORKTREE PROMPT OUT" 2
runtime=$1
worktree=$(cd "$2" 2>/dev/null && pwd -P) || fail "no such worktree: $2" 2
[ -f "$3" ] || fail "no such prompt file: $3" 2
prompt=$(cd "$(dirname "$3")" && pwd -P)/$(basename "$3")
mkdir -p "$4" && out=$(cd "$4" && pwd -P) || fail "cannot make $4" 2
# A verdict or a state left by an earlier run would pass for this one's.
[ -z "$(ls -A "$out")" ] || fail "OUT ($out) is not empty: give each run a new directory" 2
# The agent may write anywhere in the worktree: the transcript, the status and the envelope kept
# there would be its to forge.
case $out/ in "$worktree"/*) fail "OUT ($out) is inside the worktree, where the agent writes: put it outside" 2 ;; esac
provider=${MOOT_PROVIDER_URL:?set MOOT_PROVIDER_URL}
# The runtime's parser, from its record.
parser=$(moot-render --list --json "$runtime" | sed -n 's/^ *"parser": "\(moot-parse-[a-z-]*\)",$/\1/p')
[ -n "$parser" ] || fail "$runtime: no such runtime with a parser (moot-render --list)" 2
if [ -n "${MOOT_PROVIDER_KEY_ENV:-}" ]; then
    set -- --key-env "$MOOT_PROVIDER_KEY_ENV"
else
    set -- --key-file "${MOOT_PROVIDER_KEY_FILE:?set MOOT_PROVIDER_KEY_FILE or MOOT_PROVIDER_KEY_ENV}"
fi
keep=
for name in ${MOOT_KEEP:-}; do keep="$keep --keep $name"; done
cli_err=
[ -z "${MOOT_STDERR_FILE:-}" ] || cli_err=$out/cli.err
deadline=${MOOT_DEADLINE:-600}
seat_user=${MOOT_SEAT_USER:-}
[ -n "$seat_user" ] || [ "$(id -u)" != 0 ] ||
    fail "the job runs as root: set MOOT_SEAT_USER (nobody:nogroup) for the agent, who must be able to write $worktree" 2
# The seat's user enters OUT (its prompt and state are there) but lists nothing.
[ -z "$seat_user" ] || chmod 711 "$out"
trap 'rm -rf "$out/state"' EXIT
# shellcheck disable=SC2086 # $keep and the parser's flags are words (not globbed: set -f)
moot-render "$runtime" --policy workspace-write --seat --stream --deadline "$deadline" \
    --stage-dir "$out/p" ${seat_user:+--stage-user "$seat_user"} --cwd "$worktree" \
    --add-dir "$worktree" --prompt-file "$prompt" |
  moot-broker --forward "$provider" "$@" -- \
  moot-run --deadline "$deadline" --cwd "$worktree" --transcript "$out/run.ndjson" \
    --status-file "$out/status" --env-preset "$runtime" $keep ${cli_err:+--stderr-file "$cli_err"} \
    --protect "$worktree" --cleanup "$out/p" --stdin-argv -- \
    moot-sandbox --profile "$runtime" --state "$out/state" ${seat_user:+--user "$seat_user"} \
      --rw "$worktree" --ro-try "$out/p" -- |
  "$parser" --status-file "$out/status" ${cli_err:+--stderr-file "$cli_err"} \
    --events "$out/events.ndjson" --progress ${MOOT_PARSER_FLAGS:-} >"$out/envelope.json" ||
  fail "the run failed (the first line above says why); its files are in $out"
# An agent denied a write may still report success: its work did not happen. Any denial in the
# transcript fails the job (the envelope stays as the parser wrote it), as examples/ci-job.sh
# does, with the same blind spot: a denial the agent hid from its output is not seen.
if grep -qi -e 'permission denied' -e 'read-only file system' -e 'operation not permitted' \
    "$out/run.ndjson"; then
  fail "the sandbox denied the agent a write or a read outside $worktree; its files are in $out"
fi
