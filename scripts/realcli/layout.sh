# shellcheck shell=bash
# Where scripts/realcli/install.sh put a runtime's pinned CLI, read from its install file
# (shared/src/runtime/<rt>/<cli>.install): sourced by e2e.sh and scripts/container/matrix.sh.
# Needs REALCLI_DIR.

# install_file RUNTIME: the install file that says RUNTIME=RUNTIME (in $install).
install_file() {
    install=$(grep -l "^RUNTIME=$1\$" "$(dirname "${BASH_SOURCE[0]}")"/../../shared/src/runtime/*/*.install) ||
        { echo "no install file says RUNTIME=$1" >&2; return 1; }
}

# install_field FILE KEY: the value of KEY=VALUE in an install file (empty when it has none).
install_field() {
    sed -n "s/^$2=//p" "$1"
}

# realcli_layout RUNTIME LINKS: program (the executable's name) and path_dirs (what PATH needs)
# of the runtime's CLI, from $install. A CLI that needs nothing else on PATH runs through a link
# in LINKS, a directory of its own, and program_path is where it is.
realcli_layout() {
    local dir relative
    dir=$REALCLI_DIR/$(install_field "$install" DIR)
    program_path=$dir/$(install_field "$install" PROGRAM)
    program=${program_path##*/} path_dirs=
    for relative in $(install_field "$install" PATH_DIRS); do
        path_dirs=${path_dirs:+$path_dirs:}$dir/$relative
    done
    if [ -z "$path_dirs" ]; then
        path_dirs=$2
        mkdir -p "$path_dirs" && ln -sf "$program_path" "$path_dirs/$program"
    fi
}
