#!/bin/sh
# Claude Code under the adapter.sh contract: MOSAIC_CLAUDE_BIN (absolute and executable) or
# claude on PATH; --effort from MOSAIC_THINKING, required; the system prompt as
# --system-prompt-file; stream-json output; the session resumed from MOSAIC_SESSION_DIR and
# stored only after a turn succeeds. A managed session (MOSAIC_SESSION_DIR set) requires its
# bundle, MOSAIC_CLAUDE_SETTINGS (the gate hook) and MOSAIC_CLAUDE_MCP_CONFIG, and loads nothing
# else (moot-render --managed).
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=claude
[ -n "${MOSAIC_THINKING:-}" ] || [ "$moot_verb" = health ] ||
    moot_die 2 "MOSAIC_THINKING is not set: claude needs an effort (low, medium, high, xhigh, max)"
set --
if [ -n "${MOSAIC_SESSION_DIR:-}" ] && [ "$moot_verb" != health ]; then
    for moot_var in MOSAIC_CLAUDE_SETTINGS MOSAIC_CLAUDE_MCP_CONFIG; do
        eval "moot_file=\${$moot_var:-}"
        [ -n "$moot_file" ] ||
            moot_die 2 "$moot_var is not set: a managed claude session loads its bundle's hook and MCP servers"
        moot_require_file "$moot_var" "$moot_file"
    done
    set -- --managed --settings "$MOSAIC_CLAUDE_SETTINGS" --mcp-config "$MOSAIC_CLAUDE_MCP_CONFIG"
fi
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
moot_adapter claude claude "$@" --stream ${MOSAIC_THINKING:+--effort "$MOSAIC_THINKING"} \
    ${MOSAIC_MODEL:+--model "$MOSAIC_MODEL"} \
    ${MOSAIC_SYSTEM_PROMPT_FILE:+--system-prompt-file "$MOSAIC_SYSTEM_PROMPT_FILE"} \
    ${session:+--session "$session"}
