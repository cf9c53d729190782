#!/bin/sh
# Claude Code under the adapter.sh contract: MOSAIC_CLAUDE_BIN (absolute and executable) or
# claude on PATH; --effort from MOSAIC_THINKING, required; the system prompt as
# --system-prompt-file; stream-json output; the session resumed from MOSAIC_SESSION_DIR and
# stored only after a turn succeeds.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=claude
[ -n "${MOSAIC_THINKING:-}" ] ||
    moot_die 2 "MOSAIC_THINKING is not set: claude needs an effort (low, medium, high, xhigh, max)"
if [ -n "${MOSAIC_CLAUDE_BIN:-}" ]; then
    case $MOSAIC_CLAUDE_BIN in
        /*) ;;
        *) moot_die 2 "MOSAIC_CLAUDE_BIN ($MOSAIC_CLAUDE_BIN) must be an absolute path" ;;
    esac
    [ -f "$MOSAIC_CLAUDE_BIN" ] && [ -x "$MOSAIC_CLAUDE_BIN" ] ||
        moot_die 2 "MOSAIC_CLAUDE_BIN ($MOSAIC_CLAUDE_BIN) is not an executable file"
    moot_program=$MOSAIC_CLAUDE_BIN
fi
session=$(moot_saved_session claude) || session=
moot_adapter claude claude --stream --effort "$MOSAIC_THINKING" \
    ${MOSAIC_MODEL:+--model "$MOSAIC_MODEL"} \
    ${MOSAIC_SYSTEM_PROMPT_FILE:+--system-prompt-file "$MOSAIC_SYSTEM_PROMPT_FILE"} \
    ${session:+--session "$session"}
