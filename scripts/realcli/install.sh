#!/usr/bin/env bash
# Installs the pinned real CLIs (README.md beside this file says why each version) into
# $REALCLI_DIR/<dir>, from the npm and PyPI registries only. What to install, which version and
# where is read from each runtime's install file (shared/src/runtime/*/*.install), the one place
# moot-doctor's record reads its pinned version from: nothing here names a CLI. Idempotent: a
# CLI whose pinned version is already there is left alone. Prints one line per CLI; exits 1 if
# any failed.
#
#   REALCLI_DIR   where to install (default: $TMPDIR/moot-realcli)
#   ONLY          a space-separated subset of the install files' CLI names ("omp pi")
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd) || exit 1
REALCLI_DIR=${REALCLI_DIR:-${TMPDIR:-/tmp}/moot-realcli}
mkdir -p "$REALCLI_DIR" || exit 1
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

# install_field FILE KEY: the value of KEY=VALUE in FILE (empty when it has none).
install_field() {
    sed -n "s/^$2=//p" "$1" | head -n 1
}

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

# A Python 3.12 or newer, the first one found (pyenv's included): kimi-cli needs it.
python_3_12() {
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

# pip_install DIR PACKAGE==VERSION: a private venv under $REALCLI_DIR/DIR.
pip_install() {
    local dir=$REALCLI_DIR/$1 spec=$2
    local stamp="$dir/.installed"
    [ "$(cat "$stamp" 2>/dev/null)" = "$spec" ] && return 0
    local python
    python=$(python_3_12) || { echo "no Python 3.12+ for $spec" >&2; return 1; }
    mkdir -p "$dir" && "$python" -m venv "$dir/venv" &&
        "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "$spec" \
            >"$dir/pip.log" 2>&1 || { tail -5 "$dir/pip.log" >&2; return 1; }
    printf '%s' "$spec" >"$stamp"
}

# install FILE: the CLI one install file describes.
install() {
    local file=$1 dir from package pinned with
    dir=$(install_field "$file" DIR) from=$(install_field "$file" FROM)
    package=$(install_field "$file" PACKAGE) pinned=$(install_field "$file" PINNED)
    with=$(install_field "$file" WITH)
    # shellcheck disable=SC2086 # WITH is a list of package specs
    case $from in
        npm) npm_install "$dir" "$package@$pinned" $with ;;
        pypi) pip_install "$dir" "$package==$pinned" ;;
        *) echo "$file: FROM=$from is neither npm nor pypi" >&2; return 1 ;;
    esac
}

failed=0 known=
for file in "$here"/../../shared/src/runtime/*/*.install; do
    cli=$(install_field "$file" CLI)
    known="$known $cli"
    case " ${ONLY:-$cli} " in *" $cli "*) ;; *) continue ;; esac
    if (install "$file"); then echo "installed $cli in $REALCLI_DIR"; else echo "FAILED $cli"; failed=1; fi
done
for cli in ${ONLY:-}; do
    case " $known " in *" $cli "*) ;; *) echo "install.sh: unknown CLI $cli (known:$known)" >&2; failed=1 ;; esac
done
exit $failed
