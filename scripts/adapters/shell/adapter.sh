#!/bin/sh
# A shell command under the adapter.sh contract: MOOT_SHELL_COMMAND runs as
# `sh -c "$MOOT_SHELL_COMMAND" gitmoot "<request>"` and its stdout is the response.
set -u
case $0 in */*) . "${0%/*}/../lib.sh" ;; *) . ../lib.sh ;; esac
moot_runtime=shell
moot_no_provider=1
moot_no_sessions=1
[ -n "${MOOT_SHELL_COMMAND:-}" ] || moot_die 2 "MOOT_SHELL_COMMAND is not set: give the command to run"
moot_fold_system_prompt=1
moot_adapter shell raw --session "$MOOT_SHELL_COMMAND"
