#!/bin/sh
# Codex under the adapter.sh contract: codex exec --json, the sandbox mode from the policy,
# MOSAIC_THINKING as the reasoning effort, the system prompt folded in front of the request
# (codex exec has no system prompt input), the thread resumed from MOSAIC_SESSION_DIR.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=codex
moot_fold_system_prompt=1
session=$(moot_saved_session codex) || session=
moot_adapter codex codex \
    ${MOSAIC_MODEL:+--model "$MOSAIC_MODEL"} \
    ${MOSAIC_THINKING:+--effort "$MOSAIC_THINKING"} \
    ${session:+--session "$session"}
