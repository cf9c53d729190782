#!/bin/sh
# Kimi Code under the adapter.sh contract: -p with stream-json output, the system prompt folded
# in front of the request (kimi has no system prompt input), a large prompt staged and granted
# with --add-dir, the session resumed from MOSAIC_SESSION_DIR. MOSAIC_THINKING is not passed:
# kimi has no reasoning-effort input. Its stderr goes to the parser, which reads the session id
# and the CLI's own fatal error text there.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=kimi
moot_fold_system_prompt=1
moot_stderr_to_parser=1
session=$(moot_saved_session kimi) || session=
moot_adapter kimi kimi \
    ${MOSAIC_MODEL:+--model "$MOSAIC_MODEL"} \
    ${session:+--session "$session"}
