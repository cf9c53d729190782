# shellcheck shell=sh disable=SC3067 # test -O: dash, bash and busybox sh all have it
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
#   MOOT_SEAT_USER             USER[:GROUP]: run the CLI as this unprivileged user (moot-sandbox
#                              --user; the adapter runs as root). It gets the staged prompt and
#                              its private state; the workspace must be writable by it, and
#                              MOSAIC_SESSION_DIR enterable (mode 0711). See README, root CI.
#   MOOT_PROVIDER_URL          the provider's base URL as the CLI's configuration names it (or a
#                              prefix of it): with a workspace, moot-broker --forward holds the
#                              key and the seat gets only a job token and a loopback proxy
#                              (moot-sandbox(1), THE CREDENTIAL PROXY). Required with a workspace
#                              for every runtime with a provider, unless MOOT_KEY_IN_SEAT=1.
#   MOOT_PROVIDER_KEY_FILE     the file holding the provider's key (0600, yours), or
#   MOOT_PROVIDER_KEY_ENV      the variable holding it (the CLI finds the token there)
#   MOOT_PROVIDER_KEY_HEADER   bearer or x-api-key (default: the header the CLI sends its key in)
#   MOOT_PROVIDER_CA           a PEM file of a private CA the provider's certificate is under
#   MOOT_KEY_IN_SEAT           1: run without the proxy: the seat's private state gets the
#                              operator's provider config, key and logins as they are
#   MOOT_KEEP_ENV              more variables the CLI gets, split on blanks (a provider key the
#                              runtime's preset does not list: FAKE_PROVIDER_API_KEY, or
#                              PREFIX* for every name starting with PREFIX). Everything else
#                              outside the preset (moot-run(1), Environment presets) and
#                              MOSAIC_* is removed.
#
# A managed session (man/moot.7, MANAGED SESSIONS) adds:
#   MOSAIC_TOOLS               the built-in tool limit, in the CLI's own tool names
#   MOSAIC_MODEL_ACTIVITY_DIR  where the parser publishes proxy-first-output at the first model event
#   MOSAIC_POLICY_FILE, MOSAIC_TOOLS_FILE   read by the CLI's extensions or hooks: granted read-only
#   MOSAIC_UNSLOP_LOG          written by them: created if absent and granted read-write
#   MOSAIC_TOOL_SOCKET         connected to by them (a pathname socket: see moot-sandbox(1))
#   MOSAIC_TURN_MARKER         pi: written at agent_end; a turn that ends without it failed
#
# The adapter's first argument is its verb (man/moot.7, THE SESSION LIFECYCLE):
#   (none)        deliver MOSAIC_REQUEST and print the answer
#   start         run the startup prompt and print the session reference to store
#   health        run the runtime's health check and print its answer
#   validate REF  check a stored session reference; run nothing

# The startup prompt of a session: the agent initialises and acknowledges, and nothing else.
MOOT_START_PROMPT='Initialize only: make no file edits and run no commands. Reply with a short readiness acknowledgment.'

moot_verb=${1:-deliver}
if [ "$moot_verb" = validate ]; then
    # The runtime is the name of the adapter's directory (kimi-cli's links to kimi's script).
    moot_runtime=${0%/adapter.sh}
    moot_runtime=${moot_runtime##*/}
    [ $# = 2 ] || {
        printf '%s\n' "moot adapter ($moot_runtime): validate takes one session reference" >&2
        exit 2
    }
    exec moot-render "$moot_runtime" --check-session "$2"
fi

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
# shellcheck disable=SC2034 # moot_model is read by the adapter that sources this file
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

# moot_fresh_reference: a fresh:<suffix> reference, for runtimes that never resume.
moot_fresh_reference() {
    moot_suffix=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n') &&
        printf 'fresh:%s\n' "$moot_suffix"
}

# moot_resumes: whether a second turn of this runtime resumes its session, as its registry
# record says (moot-render --list --json prints `"multi_turn": true|false` on a line of its own).
moot_resumes() {
    moot_record=$(moot-render --list --json "$moot_runtime") ||
        moot_die 2 "moot-render cannot describe the runtime $moot_runtime"
    case $moot_record in
        *'"multi_turn": true'*) return 0 ;;
        *'"multi_turn": false'*) return 1 ;;
        *) moot_die 2 "moot-render --list --json $moot_runtime does not say whether it resumes" ;;
    esac
}

# moot_verb_setup: what the verb changes before the run. A start of a runtime that never
# resumes prints a fresh reference and runs nothing; an adapter that keeps no session at all
# (moot_no_sessions=1: shell) refuses it.
moot_verb_setup() {
    case $moot_verb in
        deliver)
            [ -n "${MOSAIC_REQUEST+set}" ] || moot_die 2 "MOSAIC_REQUEST is not set: it carries the request"
            ;;
        health) ;;
        start)
            [ "${moot_no_sessions:-0}" != 1 ] ||
                moot_die 2 "start: $moot_runtime keeps no session (a shell command has none to resume)"
            moot_resumes || { moot_fresh_reference; exit; }
            MOSAIC_REQUEST=$MOOT_START_PROMPT
            ;;
        *) moot_die 2 "unknown verb '$moot_verb': give none to deliver MOSAIC_REQUEST, or start, health, validate REF" ;;
    esac
}

# moot_check_harness_dir VAR DIR: DIR, where the harness file VAR names lives, is the
# operator's own: a real path (no component a symbolic link: an agent that could swap one would
# redirect the file and its grant), owned by this user, writable by no one else, and outside
# the workspace the agent writes (where it could swap the file between turns).
moot_check_harness_dir() {
    moot_real=$(cd -P -- "$2" 2>/dev/null && pwd) ||
        moot_die 2 "$1's directory ($2) is not a directory this user can enter"
    [ "$moot_real" = "$2" ] ||
        moot_die 2 "$1's directory ($2) has a symbolic link in its path: give its real path ($moot_real)"
    [ -O "$2" ] || moot_die 2 "$1's directory ($2) is not owned by this user"
    [ -z "$(find "$2" -maxdepth 0 -perm /022 2>/dev/null)" ] ||
        moot_die 2 "$1's directory ($2) is writable by others: give a directory of your own (mode 0700 or 0755)"
    if [ -n "${MOSAIC_WORKSPACE:-}" ]; then
        moot_ws_real=$(cd -P -- "$MOSAIC_WORKSPACE" 2>/dev/null && pwd) || moot_ws_real=$MOSAIC_WORKSPACE
        case $moot_real/ in
            "$moot_ws_real"/*) moot_die 2 "$1 ($2) is inside MOSAIC_WORKSPACE, where the agent writes: keep harness files out of it" ;;
        esac
    fi
    # The private states in the session directory are the agent's too.
    if [ -n "${MOSAIC_SESSION_DIR:-}" ]; then
        moot_sd_real=$(cd -P -- "$MOSAIC_SESSION_DIR" 2>/dev/null && pwd) || moot_sd_real=$MOSAIC_SESSION_DIR
        case $moot_real/ in
            "$moot_sd_real"/*.state/*) moot_die 2 "$1 ($2) is inside a private state of MOSAIC_SESSION_DIR, where the agent writes: keep harness files out of it" ;;
        esac
    fi
}

# moot_check_managed_files: the managed session's files exist before anything runs (one line
# and exit 2 otherwise); the unslop log is created if absent, so that it can be granted.
moot_check_managed_files() {
    [ -z "${MOSAIC_POLICY_FILE:-}" ] || moot_require_file MOSAIC_POLICY_FILE "$MOSAIC_POLICY_FILE"
    [ -z "${MOSAIC_TOOLS_FILE:-}" ] || moot_require_file MOSAIC_TOOLS_FILE "$MOSAIC_TOOLS_FILE"
    if [ -n "${MOSAIC_UNSLOP_LOG:-}" ]; then
        case $MOSAIC_UNSLOP_LOG in /*) ;; *) moot_die 2 "MOSAIC_UNSLOP_LOG ($MOSAIC_UNSLOP_LOG) must be an absolute path" ;; esac
        moot_check_harness_dir MOSAIC_UNSLOP_LOG "${MOSAIC_UNSLOP_LOG%/*}"
        # It is granted writable, and a grant follows a symbolic link: one planted there (by an
        # agent that could write beside it in an earlier turn) would hand it the link's target.
        [ ! -L "$MOSAIC_UNSLOP_LOG" ] ||
            moot_die 2 "MOSAIC_UNSLOP_LOG ($MOSAIC_UNSLOP_LOG) is a symbolic link: give the file itself"
        [ -f "$MOSAIC_UNSLOP_LOG" ] || (umask 077 && : >>"$MOSAIC_UNSLOP_LOG") 2>/dev/null ||
            moot_die 2 "MOSAIC_UNSLOP_LOG ($MOSAIC_UNSLOP_LOG) cannot be created"
        [ -f "$MOSAIC_UNSLOP_LOG" ] && [ -O "$MOSAIC_UNSLOP_LOG" ] ||
            moot_die 2 "MOSAIC_UNSLOP_LOG ($MOSAIC_UNSLOP_LOG) is not a file owned by this user"
    fi
    if [ -n "${MOSAIC_TURN_MARKER:-}" ]; then
        case $MOSAIC_TURN_MARKER in /*) ;; *) moot_die 2 "MOSAIC_TURN_MARKER ($MOSAIC_TURN_MARKER) must be an absolute path" ;; esac
        [ ! -e "$MOSAIC_TURN_MARKER" ] && [ ! -L "$MOSAIC_TURN_MARKER" ] ||
            moot_die 2 "MOSAIC_TURN_MARKER ($MOSAIC_TURN_MARKER) exists before the turn: give a fresh path"
        moot_check_harness_dir MOSAIC_TURN_MARKER "${MOSAIC_TURN_MARKER%/*}"
        moot_tmp_real=$(cd -P -- "${TMPDIR:-/tmp}" 2>/dev/null && pwd) || moot_tmp_real=
        case ${MOSAIC_TURN_MARKER%/*} in
            /tmp | /var/tmp | /dev/shm | "$moot_tmp_real")
                moot_die 2 "MOSAIC_TURN_MARKER ($MOSAIC_TURN_MARKER) is in a shared temporary directory: give one of the session's own" ;;
        esac
    fi
    if [ -n "${MOSAIC_MODEL_ACTIVITY_DIR:-}" ]; then
        [ -d "$MOSAIC_MODEL_ACTIVITY_DIR" ] ||
            moot_die 2 "MOSAIC_MODEL_ACTIVITY_DIR ($MOSAIC_MODEL_ACTIVITY_DIR) is not a directory"
    fi
}

# moot_adapter RUNTIME PARSER [moot-render flags...]
# Set moot_program to run an absolute path instead of the CLI found on PATH.
# PARSER is a moot-parse-* dialect, or "raw" for runtimes whose stdout is the answer itself.
# A seat whose CLI talks to a provider gets the credential proxy, or the caller says explicitly
# that it may hold the key (MOOT_KEY_IN_SEAT=1). shell and mock talk to none (moot_no_provider).
moot_check_provider() {
    [ "${moot_no_provider:-0}" = 1 ] && return 0
    if [ -n "${MOOT_PROVIDER_URL:-}" ]; then
        [ -n "${MOOT_PROVIDER_KEY_FILE:-}${MOOT_PROVIDER_KEY_ENV:-}" ] ||
            moot_die 2 "MOOT_PROVIDER_URL is set without MOOT_PROVIDER_KEY_FILE or MOOT_PROVIDER_KEY_ENV: name the provider's key"
        return 0
    fi
    [ "${MOOT_KEY_IN_SEAT:-}" = 1 ] ||
        moot_die 2 "MOOT_PROVIDER_URL is not set: name the provider (and MOOT_PROVIDER_KEY_FILE or MOOT_PROVIDER_KEY_ENV) so the seat holds no key, or set MOOT_KEY_IN_SEAT=1 to give the seat your key and logins"
}

moot_adapter() {
    moot_runtime=$1
    moot_parser=$2
    shift 2
    moot_verb_setup
    moot_check_managed_files
    [ -z "${MOSAIC_SYSTEM_PROMPT_FILE:-}" ] ||
        moot_require_file MOSAIC_SYSTEM_PROMPT_FILE "$MOSAIC_SYSTEM_PROMPT_FILE"
    if [ -n "${MOSAIC_WORKSPACE:-}" ]; then
        moot_check_provider
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
    # pi's extension writes the turn marker from inside the seat: into a directory of the
    # scratch made for it alone (granted writable), never the runner's own directory. The
    # adapter moves it to MOSAIC_TURN_MARKER once the turn is over.
    moot_turn_marker=
    if [ -n "${MOSAIC_TURN_MARKER:-}" ]; then
        moot_turn_marker=$MOSAIC_TURN_MARKER
        mkdir "$moot_work/marker" || moot_die 1 "cannot create $moot_work/marker"
        [ -z "${MOOT_SEAT_USER:-}" ] || chown "$MOOT_SEAT_USER" "$moot_work/marker" ||
            moot_die 1 "cannot give $moot_work/marker to MOOT_SEAT_USER ($MOOT_SEAT_USER)"
        MOSAIC_TURN_MARKER=$moot_work/marker/turn.done
        export MOSAIC_TURN_MARKER
    fi

    # The prompt goes to moot-render as a file in the private directory: printf is a builtin,
    # so this costs no process, and the text never touches argv. A health check brings its own.
    if [ "$moot_verb" = health ]; then
        set -- "$@" --health
    else
        moot_prompt >"$moot_work/prompt" || moot_die 1 "cannot write $moot_work/prompt"
        set -- "$@" --prompt-file "$moot_work/prompt"
    fi
    # A refusal (bad model, bad effort, unknown tool, ...) is one line from moot-render and exit 2.
    # With a workspace the run is a seat: moot-sandbox enforces the policy, and the CLI's own
    # sandbox and approval prompts (which would stop its tools headless) are turned off.
    # A seat of another user enters the scratch (never lists or writes it) to reach the staged
    # prompt and its private state, both given to it.
    if [ -n "${MOOT_SEAT_USER:-}" ]; then
        [ -n "${MOSAIC_WORKSPACE:-}" ] || moot_die 2 "MOOT_SEAT_USER needs MOSAIC_WORKSPACE: without a workspace nothing is confined"
        chmod 711 "$moot_work" || moot_die 1 "cannot open $moot_work to MOOT_SEAT_USER"
        set -- "$@" --stage-user "$MOOT_SEAT_USER"
    fi
    moot-render "$moot_runtime" --policy "$moot_policy" --stage-dir "$moot_stage" \
        ${MOSAIC_WORKSPACE:+--seat --add-dir "$MOSAIC_WORKSPACE"} \
        ${MOSAIC_TOOLS:+--tools "$MOSAIC_TOOLS"} \
        ${MOOT_DEADLINE:+--deadline "$MOOT_DEADLINE"} "$@" >"$moot_work/argv" || exit
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
    moot_state=
    if [ -n "${MOSAIC_WORKSPACE:-}" ]; then
        # The CLI's HOME, sessions and caches live in a private state, never the operator's own
        # config and state directories (what it writes there would run in the operator's next
        # unconfined use of the CLI): the managed session's, kept between turns so a resumed
        # turn finds its session, or else this run's, removed with the scratch directory.
        if [ -n "${MOSAIC_SESSION_DIR:-}" ]; then
            moot_check_harness_dir MOSAIC_SESSION_DIR "$MOSAIC_SESSION_DIR"
            [ -z "${MOOT_SEAT_USER:-}" ] || [ -n "$(find "$MOSAIC_SESSION_DIR" -maxdepth 0 -perm -001)" ] ||
                moot_die 2 "MOSAIC_SESSION_DIR ($MOSAIC_SESSION_DIR) must be enterable by MOOT_SEAT_USER (chmod 711), where its private state is"
            moot_state=$MOSAIC_SESSION_DIR/$moot_runtime.state
        else
            moot_state=$moot_work/state
        fi
        # What the installed CLI needs (its install tree, temporary directory, its provider's
        # port) is derived by moot-sandbox --profile from the CLI it wraps.
        # shellcheck disable=SC2086 # MOOT_SANDBOX_FLAGS is a list of flags on purpose
        case $moot_policy in
            read-only) moot_workspace_grant=--ro ;;
            *) moot_workspace_grant=--rw ;;
        esac
        set -- --stdin-argv -- moot-sandbox --profile "$moot_runtime" --state "$moot_state" \
            ${MOOT_SEAT_USER:+--user "$MOOT_SEAT_USER"} \
            "$moot_workspace_grant" "$MOSAIC_WORKSPACE" --ro-try "$moot_stage" \
            ${MOSAIC_SYSTEM_PROMPT_FILE:+--ro "$MOSAIC_SYSTEM_PROMPT_FILE"} \
            ${MOSAIC_POLICY_FILE:+--ro "$MOSAIC_POLICY_FILE"} \
            ${MOSAIC_CLAUDE_SETTINGS:+--ro "$MOSAIC_CLAUDE_SETTINGS"} \
            ${MOSAIC_CLAUDE_MCP_CONFIG:+--ro "$MOSAIC_CLAUDE_MCP_CONFIG"} \
            ${MOSAIC_TOOLS_FILE:+--ro "$MOSAIC_TOOLS_FILE"} \
            ${MOSAIC_UNSLOP_LOG:+--rw "$MOSAIC_UNSLOP_LOG"} \
            ${moot_turn_marker:+--rw "$moot_work/marker"} \
            ${MOOT_SANDBOX_FLAGS:-} --
    fi
    # The CLI gets the runtime's environment preset (its own names, its provider keys, a proxy)
    # and the MOSAIC_* contract, never the rest of the caller's environment (a CI job's
    # GITHUB_TOKEN, its cloud keys): MOOT_KEEP_ENV names what else to keep.
    set -f
    for moot_name in ${MOOT_KEEP_ENV:-}; do
        case $moot_name in
            '' | '*' | *=* | *'*'?*) moot_die 2 "MOOT_KEEP_ENV: '$moot_name' is not a variable name or a PREFIX* pattern" ;;
        esac
        set -- --keep "$moot_name" "$@"
    done
    set +f
    # A worktree the agent may write keeps its git configuration: what the agent changes of it
    # is put back when the run ends, and the run fails (moot-run --protect, exit 122).
    moot_protect=
    [ -n "${MOSAIC_WORKSPACE:-}" ] && [ "$moot_policy" != read-only ] && moot_protect=$MOSAIC_WORKSPACE
    set -- moot-run --status-file "$moot_work/out/status" --cleanup "$moot_stage" \
        --env-preset "$moot_runtime" --keep 'MOSAIC_*' \
        ${moot_protect:+--protect "$moot_protect"} \
        ${moot_stderr:+--stderr-file "$moot_stderr"} \
        ${MOOT_DEADLINE:+--deadline "$MOOT_DEADLINE"} "$@"
    # The provider's key stays with moot-broker, outside the seat (moot_check_provider).
    if [ -n "${MOSAIC_WORKSPACE:-}" ] && [ -n "${MOOT_PROVIDER_URL:-}" ] && [ "${moot_no_provider:-0}" != 1 ]; then
        set -- moot-broker --forward "$MOOT_PROVIDER_URL" \
            ${MOOT_PROVIDER_KEY_FILE:+--key-file "$MOOT_PROVIDER_KEY_FILE"} \
            ${MOOT_PROVIDER_KEY_ENV:+--key-env "$MOOT_PROVIDER_KEY_ENV"} \
            ${MOOT_PROVIDER_KEY_HEADER:+--key-header "$MOOT_PROVIDER_KEY_HEADER"} \
            ${MOOT_PROVIDER_CA:+--upstream-ca "$MOOT_PROVIDER_CA"} -- "$@"
    fi

    if [ "$moot_parser" = raw ]; then
        "$@" <"$moot_work/argv"
        return
    fi
    moot_session_file=
    [ -n "${MOSAIC_SESSION_DIR:-}" ] && moot_session_file=$MOSAIC_SESSION_DIR/$moot_runtime.session
    # A start prints the session reference instead of the answer: the parser records it in a
    # file (only when the run succeeds), under the session directory or else in the scratch.
    if [ "$moot_verb" = start ]; then
        moot_session_file=${moot_session_file:-$moot_work/out/session}
        exec 4>/dev/null
    else
        exec 4>&1
    fi
    # The parser removes the scratch directory itself once the run is read (an rm is a process),
    # unless the adapter still needs it afterwards: the CLI's stderr to keep, a start's session,
    # a turn marker to move.
    moot_self_clean=
    [ -z "$moot_stderr" ] && [ "$moot_verb" != start ] && [ -z "$moot_turn_marker" ] &&
        moot_self_clean=$moot_work
    # Its one diagnostic line goes to stderr, or waits in the scratch when the CLI's stderr may
    # have to be named beside it.
    if [ -n "$moot_stderr" ]; then exec 5>"$moot_work/diagnostic"; else exec 5>&2; fi
    # The parser acknowledges a delivered answer with `complete <status>` once its output is
    # flushed. Read through a descriptor opened now, it outlives the parser's --cleanup; neither
    # the CLI nor the parser inherits it.
    : >"$moot_work/out/completion" && exec 6<"$moot_work/out/completion" ||
        moot_die 1 "cannot create $moot_work/out/completion"
    # The CLI's stderr keeps its channel (fd 7); the shell's own report of a helper that
    # crashed ("Killed") goes nowhere: the one line below says what happened.
    # shellcheck disable=SC2086 # moot_parser_flags is a list of flags on purpose
    {
        "$@" <"$moot_work/argv" 2>&7 6<&- 7>&- |
            moot-parse-"$moot_parser" --text --status-file "$moot_work/out/status" \
                ${moot_parser_flags:-} ${moot_stderr:+--stderr-file "$moot_stderr"} \
                ${moot_session_store:+--session-store "${moot_state:+$moot_state/home/}$moot_session_store"} \
                ${MOSAIC_MODEL_ACTIVITY_DIR:+--activity-dir "$MOSAIC_MODEL_ACTIVITY_DIR"} \
                --completion-file "$moot_work/out/completion" \
                ${moot_self_clean:+--cleanup "$moot_self_clean"} \
                ${moot_session_file:+--session-file "$moot_session_file"} >&4 2>&5 6<&- 7>&-
    } 7>&2 2>/dev/null
    moot_status=$?
    IFS= read -r moot_completion <&6 || moot_completion=
    exec 4>&- 5>&- 6<&-
    # A parser that died while its answer drained (killed, or any crash) never acknowledged,
    # whatever status the shell saw, even one that collides with a handled exit.
    [ "$moot_completion" = "complete $moot_status" ] ||
        moot_die 1 "the parser did not complete the turn (exit $moot_status): its answer may be cut short"
    [ "$moot_status" = 0 ] || moot_failed "$moot_status"
    moot_check_turn_marker
    if [ "$moot_verb" = start ]; then
        [ -s "$moot_session_file" ] || moot_die 1 "start: the run succeeded but $moot_runtime named no session"
        head -n 1 "$moot_session_file"
    fi
}

# moot_failed STATUS: ends a failed turn with the parser's one line, naming where the CLI's full
# stderr was kept when it went to the parser (beside the session, else in TMPDIR).
moot_failed() {
    if [ -n "$moot_stderr" ]; then
        IFS= read -r moot_diagnostic <"$moot_work/diagnostic" ||
            moot_diagnostic="moot adapter ($moot_runtime): the run failed (exit $1)"
        moot_kept=${MOSAIC_SESSION_DIR:-${TMPDIR:-/tmp}}/$moot_runtime-stderr.$$.txt
        if [ -s "$moot_stderr" ] && mv "$moot_stderr" "$moot_kept" 2>/dev/null; then
            moot_diagnostic="$moot_diagnostic (the CLI's full stderr: $moot_kept)"
        fi
        printf '%s\n' "$moot_diagnostic" >&2
    fi
    exit "$1"
}

# moot_check_turn_marker: for an adapter whose CLI marks its turns (moot_marks_turns=1, pi's
# extension at agent_end), a turn that did not write its marker failed, whatever the stream and
# the exit status said; a marker written is moved to MOSAIC_TURN_MARKER.
moot_check_turn_marker() {
    [ -n "$moot_turn_marker" ] || return 0
    if [ "${moot_marks_turns:-0}" != 1 ] || [ "$moot_verb" = health ]; then
        return 0
    fi
    [ -e "$MOSAIC_TURN_MARKER" ] ||
        moot_die 1 "the turn ended without its marker ($moot_turn_marker): $moot_runtime's extension never reached agent_end"
    # The agent could leave a link, a FIFO or a directory there: only a regular file counts,
    # and its first bytes are copied into a file the adapter makes, never moved.
    [ -f "$MOSAIC_TURN_MARKER" ] && [ ! -L "$MOSAIC_TURN_MARKER" ] ||
        moot_die 1 "the turn's marker ($MOSAIC_TURN_MARKER) is not a regular file"
    head -c 4096 "$MOSAIC_TURN_MARKER" >"$moot_work/out/marker" &&
        mv -f "$moot_work/out/marker" "$moot_turn_marker" ||
        moot_die 1 "cannot write the turn marker ($moot_turn_marker)"
}

# moot_saved_session RUNTIME: the session id an earlier successful turn left in
# MOSAIC_SESSION_DIR, if any (the parser writes it only when a run succeeds); none for a start,
# which begins a new session.
moot_saved_session() {
    [ "$moot_verb" != start ] && [ -n "${MOSAIC_SESSION_DIR:-}" ] && [ -s "$MOSAIC_SESSION_DIR/$1.session" ] &&
        head -n 1 "$MOSAIC_SESSION_DIR/$1.session"
}
