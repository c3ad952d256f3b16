#!/bin/sh
# Installs nvr-node on a board, or upgrades it in place (the data and
# /etc/default/nvr-node are kept); safe to run again.
#
#   sudo sh install.sh [BINARY]               install or upgrade, then (re)start
#   sudo sh install.sh --uninstall            remove the program; keep settings and data
#   sudo sh install.sh --uninstall --purge    remove settings, data and the nvr user too
#
# BINARY defaults to nvr-node next to this script. The other files it installs
# (nvr-node.default, nvr-node.service, nvr-node.init) are taken from beside it.
# DESTDIR=/path installs into a board image instead of this machine: nothing is
# started, the user nvr is made only if DESTDIR/etc/passwd exists, and both the
# systemd unit and the init script are installed. PREFIX (default /usr/local)
# is where the program goes: PREFIX/bin/nvr-node.

set -eu

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022

NAME=nvr-node
RUN_AS=nvr
HOME_DIR=/var/lib/nvr-node
SHIPPED_PREFIX=/usr/local

usage() {
    echo "usage: sh $0 [--uninstall] [--purge] [BINARY]" >&2
    echo "  BINARY    the nvr-node program built for this board (default: nvr-node beside this script)" >&2
    echo "  DESTDIR   install into this folder (a board image), not this machine" >&2
    echo "  PREFIX    where the program goes, PREFIX/bin/nvr-node (default /usr/local)" >&2
    exit 2
}

say() {
    echo "$NAME: $*"
}

fail() {
    echo "$NAME: $*" >&2
    exit 1
}

uninstall=no
purge=no
binary=
for arg in "$@"; do
    case $arg in
        --uninstall) uninstall=yes ;;
        # --purge implies --uninstall.
        --purge) uninstall=yes purge=yes ;;
        -h | --help) usage ;;
        -*) echo "$NAME: unknown option $arg" >&2 && usage ;;
        *)
            [ -z "$binary" ] || usage
            binary=$arg
            ;;
    esac
done

here=$(cd "$(dirname "$0")" && pwd)
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-$SHIPPED_PREFIX}
# Without the trailing slash, so that "$DESTDIR/etc" is one path either way.
DESTDIR=${DESTDIR%/}
PREFIX=${PREFIX%/}
case $DESTDIR in
    '' | /*) ;;
    *) DESTDIR=$(pwd)/$DESTDIR ;;
esac
case $PREFIX in
    /*) ;;
    *) fail "PREFIX must be an absolute path, not $PREFIX" ;;
esac
case $PREFIX in
    *[!A-Za-z0-9/._+-]*) fail "PREFIX may only hold letters, digits and / . _ + -" ;;
esac

bin_path=$PREFIX/bin/$NAME
bin_file=$DESTDIR$bin_path
env_file=$DESTDIR/etc/default/$NAME
unit_file=$DESTDIR/etc/systemd/system/$NAME.service
init_file=$DESTDIR/etc/init.d/$NAME
data_dir=$DESTDIR$HOME_DIR
log_dir=$DESTDIR/var/log/$NAME

# Whether the machine we act on is this one (not an image in DESTDIR).
live() {
    [ -z "$DESTDIR" ]
}

if live && [ "$(id -u)" != 0 ]; then
    fail "run it as root (sudo sh $0 ...), or set DESTDIR to install into a folder"
fi

# systemd is the init when /run/systemd/system exists; an image gets both.
uses_systemd() {
    live && [ -d /run/systemd/system ]
}

# The target's account database: this machine's, or DESTDIR's when it has one.
has_accounts() {
    live || [ -f "$DESTDIR/etc/passwd" ]
}

# With --prefix, useradd and friends edit DESTDIR/etc instead of /etc.
prefix_args() {
    live || printf '%s\n' --prefix "$DESTDIR"
}

user_exists() {
    if live; then
        id "$RUN_AS" >/dev/null 2>&1
    else
        grep -q "^$RUN_AS:" "$DESTDIR/etc/passwd"
    fi
}

group_exists() {
    if live; then
        grep -q "^$RUN_AS:" /etc/group
    else
        grep -q "^$RUN_AS:" "$DESTDIR/etc/group" 2>/dev/null
    fi
}

# uid:gid of RUN_AS in the target, numeric since the image's names may
# differ from this machine's.
owner() {
    awk -F: -v u="$RUN_AS" '$1 == u { print $3 ":" $4 }' "$DESTDIR/etc/passwd"
}

# Copies $1 to $2 with mode $3 through a temporary file in the same folder and
# a rename, so a running program's file is never rewritten in place and a
# failed copy leaves the old file whole. $4, if given, is a sed script applied
# on the way.
put() {
    mkdir -p "$(dirname "$2")"
    tmp=$(dirname "$2")/.$(basename "$2").new.$$
    if [ $# -ge 4 ]; then
        sed "$4" "$1" >"$tmp"
    else
        cp "$1" "$tmp"
    fi
    chmod "$3" "$tmp"
    mv -f "$tmp" "$2"
    tmp=
}
tmp=
trap '[ -z "$tmp" ] || rm -f "$tmp"' EXIT

# The unit and the init script name the program's path; a PREFIX other than
# /usr/local changes it.
rewrite="s|$SHIPPED_PREFIX/bin/$NAME|$bin_path|g"

install_user() {
    if ! has_accounts; then
        say "user $RUN_AS: not made, $DESTDIR/etc/passwd does not exist (make it on the board: run this script there)"
        return 0
    fi
    if user_exists; then
        say "user $RUN_AS: already there"
        return 0
    fi
    shell=/usr/sbin/nologin
    for candidate in /usr/sbin/nologin /sbin/nologin; do
        if [ -x "$DESTDIR$candidate" ]; then
            shell=$candidate
            break
        fi
    done
    if command -v useradd >/dev/null 2>&1; then
        # shellcheck disable=SC2046 # prefix_args prints whole words
        group_exists || groupadd $(prefix_args) --system "$RUN_AS"
        # shellcheck disable=SC2046
        useradd $(prefix_args) --system --gid "$RUN_AS" --home-dir "$HOME_DIR" --no-create-home \
            --shell "$shell" --comment "nvr-node" "$RUN_AS"
    elif live && command -v adduser >/dev/null 2>&1; then
        # BusyBox.
        group_exists || addgroup -S "$RUN_AS"
        adduser -S -D -H -h "$HOME_DIR" -s "$shell" -G "$RUN_AS" -g "nvr-node" "$RUN_AS"
    else
        fail "cannot make the user $RUN_AS: no useradd"
    fi
    say "user $RUN_AS: made (home $HOME_DIR, shell $shell)"
}

install_data_dir() {
    mkdir -p "$data_dir"
    chmod 0750 "$data_dir"
    if [ "$(id -u)" != 0 ] || ! has_accounts || ! user_exists; then
        say "data folder $data_dir: mode 0750 (not given to $RUN_AS: run as root with the user made)"
        return 0
    fi
    if live; then
        chown "$RUN_AS:$RUN_AS" "$data_dir"
    else
        chown "$(owner)" "$data_dir"
    fi
    say "data folder $data_dir: mode 0750, owned by $RUN_AS"
}

install_binary() {
    if [ -f "$bin_file" ] && cmp -s "$binary" "$bin_file" 2>/dev/null; then
        say "program $bin_file: unchanged"
        return 0
    fi
    put "$binary" "$bin_file" 0755
    say "program $bin_file: installed"
}

install_settings() {
    src=$here/nvr-node.default
    if [ ! -e "$env_file" ]; then
        put "$src" "$env_file" 0644
        say "settings $env_file: installed"
    elif cmp -s "$src" "$env_file"; then
        rm -f "$env_file.dist"
        say "settings $env_file: kept (same as shipped)"
    else
        # Never overwrite the user's settings; the new defaults go beside them.
        put "$src" "$env_file.dist" 0644
        say "settings $env_file: kept; this version's defaults are in $env_file.dist"
    fi
}

install_service() {
    if uses_systemd || ! live; then
        put "$here/nvr-node.service" "$unit_file" 0644 "$rewrite"
        say "systemd unit $unit_file: installed"
    fi
    if ! uses_systemd; then
        put "$here/nvr-node.init" "$init_file" 0755 "$rewrite"
        say "init script $init_file: installed"
    fi
}

start_service() {
    live || return 0
    if uses_systemd; then
        systemctl daemon-reload
        systemctl enable --quiet "$NAME"
        systemctl restart "$NAME"
        say "service: enabled and (re)started; logs: journalctl -u $NAME"
    else
        if command -v update-rc.d >/dev/null 2>&1; then
            update-rc.d "$NAME" defaults >/dev/null
            say "service: enabled at boot (update-rc.d)"
        else
            say "service: no update-rc.d; link $init_file into your runlevels to start it at boot"
        fi
        "$init_file" restart
        say "service: (re)started"
    fi
}

stop_service() {
    live || return 0
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] && [ -f "$unit_file" ]; then
        systemctl disable --now "$NAME" >/dev/null 2>&1 || true
        say "service: stopped and disabled (systemd)"
    fi
    if [ -x "$init_file" ]; then
        "$init_file" stop || true
        if command -v update-rc.d >/dev/null 2>&1; then
            update-rc.d -f "$NAME" remove >/dev/null 2>&1 || true
        fi
        say "service: stopped and disabled (init script)"
    fi
}

remove() {
    if [ -e "$1" ]; then
        rm -f "$1"
        say "removed $1"
    fi
}

remove_user() {
    has_accounts || return 0
    if user_exists; then
        # shellcheck disable=SC2046
        userdel $(prefix_args) "$RUN_AS"
        say "user $RUN_AS: removed"
    fi
    # userdel takes the group along when nobody else is in it.
    if group_exists; then
        # shellcheck disable=SC2046
        groupdel $(prefix_args) "$RUN_AS"
        say "group $RUN_AS: removed"
    fi
}

if [ "$uninstall" = yes ]; then
    [ -z "$binary" ] || usage
    stop_service
    remove "$bin_file"
    remove "$unit_file"
    remove "$init_file"
    remove "$env_file.dist"
    if live && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl daemon-reload
    fi
    if [ "$purge" = yes ]; then
        remove "$env_file"
        for dir in "$data_dir" "$log_dir"; do
            if [ -e "$dir" ]; then
                rm -rf "$dir"
                say "removed $dir"
            fi
        done
        remove_user
    else
        say "kept the settings ($env_file) and the data ($data_dir); --purge removes them"
    fi
    say "uninstalled"
    exit 0
fi

[ -n "$binary" ] || binary=$here/$NAME
if [ ! -f "$binary" ]; then
    fail "no program at $binary: give the nvr-node built for this board (sh $0 path/to/nvr-node)"
fi
if [ ! -x "$binary" ]; then
    fail "$binary is not executable (chmod +x $binary)"
fi
for file in nvr-node.default nvr-node.service nvr-node.init; do
    [ -f "$here/$file" ] || fail "$here/$file is missing: keep the files of deploy/ together"
done
# On the board itself, a program built for another CPU fails here, before it
# replaces one that works.
if live && ! "$binary" --version >/dev/null 2>&1; then
    fail "$binary does not run on this machine (built for another board?)"
fi

say "installing $binary into ${DESTDIR:-/} (prefix $PREFIX)"
install_user
install_data_dir
install_binary
install_settings
install_service
start_service
say "done; settings in $env_file"
