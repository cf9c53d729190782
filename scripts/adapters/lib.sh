# The one pipeline every scripts/adapters/<runtime>/adapter.sh runs. Sourced, POSIX sh.
#
# The adapter.sh contract (man/moot.7, THE ADAPTER CONTRACT): settings arrive in the environment, never from a config
# file; stdout carries only the response; stderr carries diagnostics and never a credential;
# exit 0 is success and anything else a failure.
#
#   MOSAIC_REQUEST             the request text (required; may hold newlines)
#   MOSAIC_SYSTEM_PROMPT_FILE  absolute path of the system prompt: read, never modified
#   MOSAIC_PROVIDER, MOSAIC_MODEL, MOSAIC_THINKING
#   MOSAIC_WORKSPACE           the workspace: the run happens there, confined by moot-sandbox to
#                              write only inside it
#   MOSAIC_SESSION_DIR         where a resuming runtime keeps its session id between turns
#   MOOT_DEADLINE              seconds the run may take (optional)
#   MOOT_POLICY                autonomy policy; default workspace-write with a workspace, else
#                              read-only
#   MOOT_SANDBOX_FLAGS         extra moot-sandbox grants, split on blanks (for example the CLI's
#                              install directory: --rx /opt/omp)

# moot_die STATUS MESSAGE: one diagnostic line, then exit.
moot_die() {
    moot_status=$1
    shift
    printf '%s\n' "moot adapter ($moot_runtime): $*" >&2
    exit "$moot_status"
}

# moot_require_file VAR PATH: an absolute path to a readable regular file.
moot_require_file() {
    case $2 in
        /*) ;;
        *) moot_die 2 "$1 ($2) must be an absolute path" ;;
    esac
    [ -f "$2" ] && [ -r "$2" ] || moot_die 2 "$1 ($2) is not a readable file"
}

# moot_qualify_model: sets moot_model to the model selector, provider-qualified for routing
# harnesses (omp, pi) when the model does not name its provider itself. (A variable, not a
# command substitution: every fork shows in the adapter's overhead.)
moot_qualify_model() {
    case ${MOSAIC_MODEL:-} in
        '') moot_model= ;;
        */*) moot_model=$MOSAIC_MODEL ;;
        *) moot_model=${MOSAIC_PROVIDER:+$MOSAIC_PROVIDER/}$MOSAIC_MODEL ;;
    esac
}

# moot_prompt: the request, with the system prompt folded in front of it for runtimes that have
# no system prompt input of their own (moot_fold_system_prompt=1).
moot_prompt() {
    if [ "${moot_fold_system_prompt:-0}" = 1 ] && [ -n "${MOSAIC_SYSTEM_PROMPT_FILE:-}" ]; then
        cat "$MOSAIC_SYSTEM_PROMPT_FILE" && printf '\n\n'
    fi
    printf '%s' "$MOSAIC_REQUEST"
}

# moot_replace_program ARGV_FILE PROGRAM: runs PROGRAM (an absolute path) in place of the CLI
# moot-render named, for a deployment that pins its binary (MOSAIC_CLAUDE_BIN).
moot_replace_program() {
    moot_named=$(tr '\000' '\n' <"$1" | head -n 1)
    { printf '%s\000' "$2" && tail -c +$((${#moot_named} + 2)) "$1"; } >"$1.new" &&
        mv "$1.new" "$1" || moot_die 1 "cannot rewrite the argv in $1"
}

# moot_adapter RUNTIME PARSER [moot-render flags...]
# Set moot_program to run an absolute path instead of the CLI found on PATH.
# PARSER is a moot-parse-* dialect, or "raw" for runtimes whose stdout is the answer itself.
moot_adapter() {
    moot_runtime=$1
    moot_parser=$2
    shift 2
    [ -n "${MOSAIC_REQUEST+set}" ] || moot_die 2 "MOSAIC_REQUEST is not set: it carries the request"
    [ -z "${MOSAIC_SYSTEM_PROMPT_FILE:-}" ] ||
        moot_require_file MOSAIC_SYSTEM_PROMPT_FILE "$MOSAIC_SYSTEM_PROMPT_FILE"
    if [ -n "${MOSAIC_WORKSPACE:-}" ]; then
        [ -d "$MOSAIC_WORKSPACE" ] || moot_die 2 "MOSAIC_WORKSPACE ($MOSAIC_WORKSPACE) is not a directory"
        cd "$MOSAIC_WORKSPACE" || moot_die 2 "cannot enter MOSAIC_WORKSPACE ($MOSAIC_WORKSPACE)"
        moot_policy=${MOOT_POLICY:-workspace-write}
    else
        moot_policy=${MOOT_POLICY:-read-only}
    fi

    # Private scratch (0700, files 0600): the prompt, the rendered argv, the stage directory, and
    # out/ where moot-run writes its status file (none of it in the agent's reach).
    # One mkdir creates both (it fails rather than reuse a name that exists, a planted symlink
    # included); mktemp is the fallback when a stale directory holds this pid's name.
    umask 077
    moot_work=${TMPDIR:-/tmp}/moot-adapter.$$
    mkdir "$moot_work" "$moot_work/out" 2>/dev/null || {
        moot_work=$(mktemp -d "${TMPDIR:-/tmp}/moot-adapter.XXXXXX") && mkdir "$moot_work/out"
    } || moot_die 1 "cannot create a private work directory under ${TMPDIR:-/tmp}"
    # The parser removes it once the run is read (--cleanup below): an rm is a process, and
    # processes are most of the adapter's cost. --cleanup removes only a directory that carries
    # moot's marker (a redirection: no process). The trap is for every other way out.
    : >"$moot_work/.moot-scratch" || moot_die 1 "cannot mark $moot_work as moot's scratch"
    trap '[ ! -d "$moot_work" ] || rm -rf "$moot_work"' EXIT
    trap 'exit 129' HUP
    trap 'exit 130' INT
    trap 'exit 143' TERM
    moot_stage=$moot_work/stage

    # The prompt goes to moot-render as a file in the private directory: printf is a builtin,
    # so this costs no process, and the text never touches argv.
    moot_prompt >"$moot_work/prompt" || moot_die 1 "cannot write $moot_work/prompt"
    # A refusal (bad model, bad effort, ...) is one line from moot-render and exit 2.
    # With a workspace the run is a seat: moot-sandbox enforces the policy, and the CLI's own
    # sandbox and approval prompts (which would stop its tools headless) are turned off.
    moot-render "$moot_runtime" --policy "$moot_policy" --stage-dir "$moot_stage" \
        ${MOSAIC_WORKSPACE:+--seat --add-dir "$MOSAIC_WORKSPACE"} \
        ${MOOT_DEADLINE:+--deadline "$MOOT_DEADLINE"} "$@" --prompt-file "$moot_work/prompt" \
        >"$moot_work/argv" || exit
    [ -z "${moot_program:-}" ] || moot_replace_program "$moot_work/argv" "$moot_program"

    # A CLI that names its session or its fatal error only on stderr (kimi) has its stderr
    # handed to the parser (moot_stderr_to_parser=1) instead of passed through.
    moot_stderr=
    [ "${moot_stderr_to_parser:-0}" = 1 ] && moot_stderr=$moot_work/out/stderr
    # moot-run stays outside the sandbox and moot-sandbox wraps only the CLI (its argv, read
    # from stdin, goes after the prefix), so the status file, the stderr file and the stage
    # directory are written and removed by the harness and never by the agent: the sandbox
    # grants the stage read-only and the rest of the scratch directory not at all.
    set --
    if [ -n "${MOSAIC_WORKSPACE:-}" ]; then
        # What the installed CLI needs (its install tree, state and temporary directories, its
        # provider's port) is derived by moot-sandbox --profile from the CLI it wraps.
        # shellcheck disable=SC2086 # MOOT_SANDBOX_FLAGS is a list of flags on purpose
        case $moot_policy in
            read-only) moot_workspace_grant=--ro ;;
            *) moot_workspace_grant=--rw ;;
        esac
        set -- --stdin-argv -- moot-sandbox --profile "$moot_runtime" \
            "$moot_workspace_grant" "$MOSAIC_WORKSPACE" --ro-try "$moot_stage" \
            ${MOSAIC_SYSTEM_PROMPT_FILE:+--ro "$MOSAIC_SYSTEM_PROMPT_FILE"} \
            ${MOOT_SANDBOX_FLAGS:-} --
    fi
    set -- moot-run --status-file "$moot_work/out/status" --cleanup "$moot_stage" \
        ${moot_stderr:+--stderr-file "$moot_stderr"} \
        ${MOOT_DEADLINE:+--deadline "$MOOT_DEADLINE"} "$@"

    if [ "$moot_parser" = raw ]; then
        "$@" <"$moot_work/argv"
        return
    fi
    moot_session_file=
    [ -n "${MOSAIC_SESSION_DIR:-}" ] && moot_session_file=$MOSAIC_SESSION_DIR/$moot_runtime.session
    if [ -z "$moot_stderr" ]; then
        # shellcheck disable=SC2086 # moot_parser_flags is a list of flags on purpose
        "$@" <"$moot_work/argv" |
            moot-parse-"$moot_parser" --text --status-file "$moot_work/out/status" \
                ${moot_parser_flags:-} --cleanup "$moot_work" \
                ${moot_session_file:+--session-file "$moot_session_file"}
        return
    fi
    # The CLI's stderr went to the parser, which names the cause in one line. On a failure the
    # CLI's full text is kept (beside the session, else in TMPDIR) and that line says where;
    # the scratch directory is removed by the trap.
    # shellcheck disable=SC2086 # moot_parser_flags is a list of flags on purpose
    "$@" <"$moot_work/argv" |
        moot-parse-"$moot_parser" --text --status-file "$moot_work/out/status" \
            ${moot_parser_flags:-} --stderr-file "$moot_stderr" \
            ${moot_session_file:+--session-file "$moot_session_file"} 2>"$moot_work/diagnostic"
    moot_status=$?
    [ "$moot_status" = 0 ] && return 0
    IFS= read -r moot_diagnostic <"$moot_work/diagnostic" ||
        moot_diagnostic="moot adapter ($moot_runtime): the run failed (exit $moot_status)"
    moot_kept=${MOSAIC_SESSION_DIR:-${TMPDIR:-/tmp}}/$moot_runtime-stderr.$$.txt
    if [ -s "$moot_stderr" ] && mv "$moot_stderr" "$moot_kept" 2>/dev/null; then
        moot_diagnostic="$moot_diagnostic (the CLI's full stderr: $moot_kept)"
    fi
    printf '%s\n' "$moot_diagnostic" >&2
    return "$moot_status"
}

# moot_saved_session RUNTIME: the session id an earlier successful turn left in
# MOSAIC_SESSION_DIR, if any (the parser writes it only when a run succeeds).
moot_saved_session() {
    [ -n "${MOSAIC_SESSION_DIR:-}" ] && [ -s "$MOSAIC_SESSION_DIR/$1.session" ] &&
        head -n 1 "$MOSAIC_SESSION_DIR/$1.session"
}
