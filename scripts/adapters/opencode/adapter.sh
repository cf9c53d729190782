#!/bin/sh
# opencode under the adapter.sh contract: opencode run --format json, the model as
# provider/model (MOSAIC_PROVIDER in front of a bare MOSAIC_MODEL), MOSAIC_THINKING as its
# --variant, the system prompt folded in front of the request (opencode run has no system
# prompt input), the session resumed from MOSAIC_SESSION_DIR. With a workspace the run is a
# seat: opencode approves its own permission requests (--auto) and moot-sandbox confines it;
# without one it rejects them, headless, and the run ends.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=opencode
moot_fold_system_prompt=1
moot_qualify_model
session=$(moot_saved_session opencode) || session=
moot_adapter opencode opencode \
    ${moot_model:+--model "$moot_model"} \
    ${MOSAIC_THINKING:+--effort "$MOSAIC_THINKING"} \
    ${session:+--session "$session"}
