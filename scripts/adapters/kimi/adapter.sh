#!/bin/sh
# Kimi Code under the adapter.sh contract: -p with stream-json output, the system prompt folded
# in front of the request (kimi has no system prompt input), a large prompt staged and granted
# with --add-dir, the session resumed from MOSAIC_SESSION_DIR. MOSAIC_THINKING is not passed:
# kimi has no reasoning-effort input. Its stderr goes to the parser, which reads the session id
# and the CLI's own fatal error text there.
#
# The legacy kimi-cli runs this same script (scripts/adapters/kimi-cli/adapter.sh links here):
# the runtime is the name of the directory the script was called through.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
case $0 in
    */kimi-cli/adapter.sh) moot_runtime=kimi-cli ;;
    *) moot_runtime=kimi ;;
esac
moot_fold_system_prompt=1
moot_stderr_to_parser=1
# Kimi Code prints the same stream for a complete, a length-cut and a dropped answer; its
# session store records which (moot-parse-kimi --session-store). The legacy kimi-cli has no
# such record.
# Nothing the legacy kimi-cli prints or stores says whether the answer was finished, so its
# adapter fails closed: an answer must end with its gitmoot_result to count. A start or a
# health check asks for no result: there, an answer is all that is asked.
if [ "$moot_runtime" = kimi ]; then
    # Its session store, below the private state's HOME in a seat (scripts/adapters/lib.sh).
    moot_session_store=.kimi-code/sessions
    [ -n "${MOSAIC_WORKSPACE:-}" ] || moot_session_store=${KIMI_CODE_HOME:-$HOME/.kimi-code}/sessions
elif [ "$moot_verb" = deliver ]; then
    moot_parser_flags=--require-result
fi
session=$(moot_saved_session "$moot_runtime") || session=
moot_adapter "$moot_runtime" kimi \
    ${MOSAIC_MODEL:+--model "$MOSAIC_MODEL"} \
    ${session:+--session "$session"}
