#!/bin/sh
# pi under the adapter.sh contract: print mode, --no-skills, the system prompt as
# --system-prompt, MOSAIC_THINKING as --thinking (omitted when unset), MOSAIC_EXTENSIONS (blank
# separated) as -e files that must exist, and the session resumed from MOSAIC_SESSION_DIR.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=pi
# Its extension writes MOSAIC_TURN_MARKER at agent_end: a turn without it failed.
moot_marks_turns=1
moot_qualify_model
session=$(moot_saved_session pi) || session=
set --
for extension in ${MOSAIC_EXTENSIONS:-}; do
    set -- "$@" --extension "$extension"
    # pi reads them inside the sandbox.
    MOOT_SANDBOX_FLAGS="${MOOT_SANDBOX_FLAGS:-} --ro $extension"
done
moot_adapter pi pi "$@" \
    ${moot_model:+--model "$moot_model"} \
    ${MOSAIC_THINKING:+--effort "$MOSAIC_THINKING"} \
    ${MOSAIC_SYSTEM_PROMPT_FILE:+--system-prompt-file "$MOSAIC_SYSTEM_PROMPT_FILE"} \
    ${session:+--session "$session"}
