#!/bin/sh
# Installs nvr-node on a board, or upgrades it in place (the data and
# /etc/default/nvr-node are kept); safe to run again.
#
#   sudo sh install.sh [BINARY]               install or upgrade, then (re)start
#   sudo sh install.sh BINARY --classifier CLASSIFIER --model MODEL_DIR
#                                             the same, with the classifier and its model
#   sudo sh install.sh BINARY --with-go2rtc GO2RTC
#                                             the same, with go2rtc beside it
#   sudo sh install.sh --uninstall            remove the program; keep settings and data
#   sudo sh install.sh --uninstall --purge    remove settings, data and the nvr user too
#
# BINARY defaults to nvr-node next to this script. The other files it installs
# (nvr-node.default, nvr-node.service, nvr-node.init, and with --with-go2rtc
# go2rtc.yaml, go2rtc.service, go2rtc.init) are taken from beside it. go2rtc
# runs as its own user, go2rtc, with /etc/go2rtc/go2rtc.yaml; an upgrade without
# --with-go2rtc leaves it as it is, and uninstall removes it with the node.
# The classifier goes beside the node, PREFIX/bin/nvr-classify, and its model
# (the folder deploy/model/install-model.sh makes) in
# PREFIX/share/nvr-node/model: the node's defaults for CLASSIFIER and
# MODEL_DIR. They are given together or not at all; an upgrade without them
# leaves installed ones as they are, and uninstall removes them.
# DESTDIR=/path installs into a board image instead of this machine: nothing is
# started, the user nvr is made only if DESTDIR/etc/passwd exists, and both the
# systemd unit and the init script are installed. PREFIX (default /usr/local)
# is where the programs go: PREFIX/bin/nvr-node.

set -eu

PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
umask 022

NAME=nvr-node
RUN_AS=nvr
HOME_DIR=/var/lib/nvr-node
G2_USER=go2rtc
G2_HOME=/var/lib/go2rtc
# In the go2rtc files it installs: uninstall and purge remove only those.
MARKER="nvr-node's install.sh"
SHIPPED_PREFIX=/usr/local
# What deploy/model/install-model.sh writes; SOURCE, written last, names the
# sha256 of the model and of the labels.
MODEL_FILES="model.tflite labels.txt LICENSE SOURCE"

usage() {
    echo "usage: sh $0 [--uninstall] [--purge] [--classifier CLASSIFIER --model MODEL_DIR] [--with-go2rtc GO2RTC] [BINARY]" >&2
    echo "  BINARY      the nvr-node program built for this board (default: nvr-node beside this script)" >&2
    echo "  CLASSIFIER  the nvr-classify program built for this board, installed beside the node" >&2
    echo "  MODEL_DIR   its model, the folder deploy/model/install-model.sh makes" >&2
    echo "  GO2RTC      a go2rtc program for this board, installed beside it as a service of its own" >&2
    echo "  DESTDIR     install into this folder (a board image), not this machine" >&2
    echo "  PREFIX      where the programs go, PREFIX/bin/nvr-node (default /usr/local)" >&2
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
go2rtc=
classifier=
model=
while [ $# -gt 0 ]; do
    case $1 in
        --uninstall) uninstall=yes ;;
        # --purge implies --uninstall.
        --purge) uninstall=yes purge=yes ;;
        --with-go2rtc)
            [ $# -ge 2 ] && [ -n "$2" ] && [ -z "$go2rtc" ] || usage
            go2rtc=$2
            shift
            ;;
        --classifier)
            [ $# -ge 2 ] && [ -n "$2" ] && [ -z "$classifier" ] || usage
            classifier=$2
            shift
            ;;
        --model)
            [ $# -ge 2 ] && [ -n "$2" ] && [ -z "$model" ] || usage
            model=$2
            shift
            ;;
        -h | --help) usage ;;
        -*) echo "$NAME: unknown option $1" >&2 && usage ;;
        *)
            [ -z "$binary" ] || usage
            binary=$1
            ;;
    esac
    shift
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
data_dir=$DESTDIR$HOME_DIR
log_dir=$DESTDIR/var/log/$NAME
g2_bin_path=$PREFIX/bin/go2rtc
g2_bin_file=$DESTDIR$g2_bin_path
g2_config_dir=$DESTDIR/etc/go2rtc
g2_config=$g2_config_dir/go2rtc.yaml
g2_log_dir=$DESTDIR/var/log/go2rtc
classifier_file=$DESTDIR$PREFIX/bin/nvr-classify
share_dir=$DESTDIR$PREFIX/share/$NAME
model_dir=$share_dir/model

# The systemd unit and the init script of service $1.
unit_file() {
    echo "$DESTDIR/etc/systemd/system/$1.service"
}
init_file() {
    echo "$DESTDIR/etc/init.d/$1"
}

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

# Whether user $1 exists in the target.
user_exists() {
    if live; then
        id "$1" >/dev/null 2>&1
    else
        grep -q "^$1:" "$DESTDIR/etc/passwd"
    fi
}

group_exists() {
    if live; then
        grep -q "^$1:" /etc/group
    else
        grep -q "^$1:" "$DESTDIR/etc/group" 2>/dev/null
    fi
}

# user:group of user $1 for chown: numeric in an image, since its names may
# differ from this machine's.
owner() {
    if live; then
        echo "$1:$1"
    else
        awk -F: -v u="$1" '$1 == u { print $3 ":" $4 }' "$DESTDIR/etc/passwd"
    fi
}

# Whether files can be given to user $1.
can_give_to() {
    [ "$(id -u)" = 0 ] && has_accounts && user_exists "$1"
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
tmp_dir=
trap '[ -z "$tmp" ] || rm -f "$tmp"; [ -z "$tmp_dir" ] || rm -rf "$tmp_dir"' EXIT

# The units and the init scripts name the programs' paths; a PREFIX other
# than /usr/local changes them.
rewrite="s|$SHIPPED_PREFIX/bin/$NAME|$bin_path|g; s|$SHIPPED_PREFIX/bin/go2rtc|$g2_bin_path|g"

# Makes the system user $1 with home $2 and comment $3 (and its group).
install_user() {
    if ! has_accounts; then
        say "user $1: not made, $DESTDIR/etc/passwd does not exist (make it on the board: run this script there)"
        return 0
    fi
    if user_exists "$1"; then
        say "user $1: already there"
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
        group_exists "$1" || groupadd $(prefix_args) --system "$1"
        # shellcheck disable=SC2046
        useradd $(prefix_args) --system --gid "$1" --home-dir "$2" --no-create-home \
            --shell "$shell" --comment "$3" "$1"
    elif live && command -v adduser >/dev/null 2>&1; then
        # BusyBox.
        group_exists "$1" || addgroup -S "$1"
        adduser -S -D -H -h "$2" -s "$shell" -G "$1" -g "$3" "$1"
    else
        fail "cannot make the user $1: no useradd"
    fi
    say "user $1: made (home $2, shell $shell)"
}

install_data_dir() {
    mkdir -p "$data_dir"
    chmod 0750 "$data_dir"
    if ! can_give_to "$RUN_AS"; then
        say "data folder $data_dir: mode 0750 (not given to $RUN_AS: run as root with the user made)"
        return 0
    fi
    chown "$(owner "$RUN_AS")" "$data_dir"
    say "data folder $data_dir: mode 0750, owned by $RUN_AS"
}

# Installs program $1 as $2.
install_binary() {
    if [ -f "$2" ] && cmp -s "$1" "$2" 2>/dev/null; then
        say "program $2: unchanged"
        return 0
    fi
    put "$1" "$2" 0755
    say "program $2: installed"
}

# Refuses model folder $1 unless it holds the files install-model.sh writes,
# their sizes non-zero, with the model and the labels SOURCE names: a copy cut
# short, or an install-model.sh that did not finish, fails here.
check_model() {
    for file in $MODEL_FILES; do
        [ -f "$1/$file" ] && [ -s "$1/$file" ] \
            || fail "$1/$file is missing or empty: give the folder deploy/model/install-model.sh makes (--model MODEL_DIR)"
    done
    command -v sha256sum >/dev/null 2>&1 || fail "checking the model needs sha256sum"
    for pair in model:model.tflite labels:labels.txt; do
        file=${pair#*:}
        want=$(sed -n "s/^${pair%%:*} sha256: //p" "$1/SOURCE")
        [ -n "$want" ] || fail "$1/SOURCE names no ${pair%%:*} sha256: not a model install-model.sh made"
        got=$(sha256sum "$1/$file" | cut -d' ' -f1)
        [ "$got" = "$want" ] \
            || fail "$1/$file is not the one $1/SOURCE names (sha256 $got, not $want): copy the folder again"
    done
}

# Whether the installed model is model folder $1's files and nothing else.
same_model() {
    [ -d "$model_dir" ] && [ "$(ls -A "$model_dir" | wc -l)" -eq 4 ] || return 1
    for file in $MODEL_FILES; do
        cmp -s "$1/$file" "$model_dir/$file" || return 1
    done
}

# Installs model folder $1 as a whole: copied into a folder beside the
# installed one, then renamed into its place, so a classifier starting
# meanwhile finds the old model or the new one, never half of one (or, for
# the instant between the two renames, none: it then fails and is started
# again).
install_model() {
    if same_model "$1"; then
        say "model $model_dir: unchanged"
        return 0
    fi
    mkdir -p "$share_dir"
    # Left by an install that was cut short (uninstall removes them too).
    rm -rf "$share_dir"/.model.new.* "$share_dir"/.model.old.*
    tmp_dir=$share_dir/.model.new.$$
    mkdir "$tmp_dir"
    for file in $MODEL_FILES; do
        cp "$1/$file" "$tmp_dir/$file"
        chmod 0644 "$tmp_dir/$file"
    done
    chmod 0755 "$tmp_dir"
    if [ -e "$model_dir" ]; then
        mv "$model_dir" "$share_dir/.model.old.$$"
        mv "$tmp_dir" "$model_dir"
        rm -rf "$share_dir/.model.old.$$"
    else
        mv "$tmp_dir" "$model_dir"
    fi
    tmp_dir=
    say "model $model_dir: installed"
}

# go2rtc saves the node's streams, passwords included, into its settings by
# rewriting the file in place, and would make a missing one readable by all:
# the file is made here, 0600 and go2rtc's, and an existing one is kept as
# it is but for its mode and owner.
install_go2rtc_config() {
    mkdir -p "$g2_config_dir"
    chmod 0750 "$g2_config_dir"
    if [ -e "$g2_config" ]; then
        state=kept
    else
        put "$here/go2rtc.yaml" "$g2_config" 0600
        state=installed
    fi
    chmod 0600 "$g2_config"
    if ! can_give_to "$G2_USER"; then
        say "go2rtc settings $g2_config: $state, mode 0600 (not given to $G2_USER: run as root with the user made)"
        return 0
    fi
    g2_owner=$(owner "$G2_USER")
    chown "0:${g2_owner#*:}" "$g2_config_dir"
    chown "$g2_owner" "$g2_config"
    say "go2rtc settings $g2_config: $state, mode 0600, owned by $G2_USER"
}

# The settings may hold MQTT_PASSWORD: readable by root and the node's group
# only, whatever mode an older install left them with.
install_settings() {
    src=$here/nvr-node.default
    if [ ! -e "$env_file" ]; then
        put "$src" "$env_file" 0640
        state=installed
    elif cmp -s "$src" "$env_file"; then
        rm -f "$env_file.dist"
        state="kept (same as shipped)"
    else
        # Never overwrite the user's settings; the new defaults go beside them.
        put "$src" "$env_file.dist" 0644
        state="kept; this version's defaults are in $env_file.dist"
    fi
    chmod 0640 "$env_file"
    if ! can_give_to "$RUN_AS"; then
        say "settings $env_file: $state, mode 0640 (not given to the group $RUN_AS: run as root with the user made)"
        return 0
    fi
    node_owner=$(owner "$RUN_AS")
    chown "0:${node_owner#*:}" "$env_file"
    say "settings $env_file: $state, mode 0640, group $RUN_AS"
}

# Installs the unit and the init script of service $1 (nvr-node or go2rtc).
install_service() {
    if uses_systemd || ! live; then
        put "$here/$1.service" "$(unit_file "$1")" 0644 "$rewrite"
        say "systemd unit $(unit_file "$1"): installed"
    fi
    if ! uses_systemd; then
        put "$here/$1.init" "$(init_file "$1")" 0755 "$rewrite"
        say "init script $(init_file "$1"): installed"
    fi
}

start_service() {
    live || return 0
    if uses_systemd; then
        systemctl daemon-reload
        systemctl enable --quiet "$1"
        systemctl restart "$1"
        say "service $1: enabled and (re)started; logs: journalctl -u $1"
    else
        if command -v update-rc.d >/dev/null 2>&1; then
            update-rc.d "$1" defaults >/dev/null
            say "service $1: enabled at boot (update-rc.d)"
        else
            say "service $1: no update-rc.d; link $(init_file "$1") into your runlevels to start it at boot"
        fi
        "$(init_file "$1")" restart
        say "service $1: (re)started"
    fi
}

stop_service() {
    live || return 0
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] && [ -f "$(unit_file "$1")" ]; then
        systemctl disable --now "$1" >/dev/null 2>&1 || true
        say "service $1: stopped and disabled (systemd)"
    fi
    if [ -x "$(init_file "$1")" ]; then
        "$(init_file "$1")" stop || true
        if command -v update-rc.d >/dev/null 2>&1; then
            update-rc.d -f "$1" remove >/dev/null 2>&1 || true
        fi
        say "service $1: stopped and disabled (init script)"
    fi
}

# Whether this script installed the go2rtc service (its unit or init script
# carries the marker); a go2rtc installed otherwise is not touched.
go2rtc_is_ours() {
    grep -qsF "$MARKER" "$(unit_file go2rtc)" "$(init_file go2rtc)"
}

remove() {
    if [ -e "$1" ]; then
        rm -f "$1"
        say "removed $1"
    fi
}

remove_dir() {
    if [ -e "$1" ]; then
        rm -rf "$1"
        say "removed $1"
    fi
}

remove_user() {
    has_accounts || return 0
    if user_exists "$1"; then
        # shellcheck disable=SC2046
        userdel $(prefix_args) "$1"
        say "user $1: removed"
    fi
    # userdel takes the group along when nobody else is in it.
    if group_exists "$1"; then
        # shellcheck disable=SC2046
        groupdel $(prefix_args) "$1"
        say "group $1: removed"
    fi
}

if [ "$uninstall" = yes ]; then
    [ -z "$binary" ] && [ -z "$go2rtc" ] && [ -z "$classifier" ] && [ -z "$model" ] || usage
    stop_service "$NAME"
    remove "$bin_file"
    # The classifier and its model are the program's, not data.
    remove "$classifier_file"
    remove_dir "$model_dir"
    rm -rf "$share_dir"/.model.new.* "$share_dir"/.model.old.*
    if rmdir "$share_dir" 2>/dev/null; then
        say "removed $share_dir"
    fi
    remove "$(unit_file "$NAME")"
    remove "$(init_file "$NAME")"
    remove "$env_file.dist"
    if go2rtc_is_ours; then
        stop_service go2rtc
        remove "$g2_bin_file"
        for file in "$(unit_file go2rtc)" "$(init_file go2rtc)"; do
            if grep -qsF "$MARKER" "$file"; then
                remove "$file"
            fi
        done
    fi
    if live && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl daemon-reload
    fi
    if [ "$purge" = yes ]; then
        remove "$env_file"
        remove_dir "$data_dir"
        remove_dir "$log_dir"
        remove_user "$RUN_AS"
        # go2rtc's settings hold the camera passwords.
        if grep -qsF "$MARKER" "$g2_config"; then
            remove_dir "$g2_config_dir"
            remove_dir "$g2_log_dir"
            remove_user "$G2_USER"
        elif [ -e "$g2_config_dir" ]; then
            say "kept $g2_config_dir and the user $G2_USER: its settings were not written by this script"
        fi
    else
        say "kept the settings ($env_file) and the data ($data_dir); --purge removes them"
        if grep -qsF "$MARKER" "$g2_config"; then
            say "kept go2rtc's settings ($g2_config_dir); --purge removes them"
        fi
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
files="nvr-node.default nvr-node.service nvr-node.init"
if [ -n "$go2rtc" ]; then
    if [ ! -f "$go2rtc" ]; then
        fail "no program at $go2rtc: give the go2rtc built for this board (--with-go2rtc path/to/go2rtc)"
    fi
    if [ ! -x "$go2rtc" ]; then
        fail "$go2rtc is not executable (chmod +x $go2rtc)"
    fi
    files="$files go2rtc.yaml go2rtc.service go2rtc.init"
fi
# The one without the other classifies nothing.
if [ -n "$classifier" ] && [ -z "$model" ]; then
    echo "$NAME: --classifier needs --model too: the classifier's model (the folder deploy/model/install-model.sh makes)" >&2
    usage
fi
if [ -n "$model" ] && [ -z "$classifier" ]; then
    echo "$NAME: --model needs --classifier too: the nvr-classify built for this board" >&2
    usage
fi
if [ -n "$classifier" ]; then
    if [ ! -f "$classifier" ]; then
        fail "no program at $classifier: give the nvr-classify built for this board (--classifier path/to/nvr-classify)"
    fi
    if [ ! -x "$classifier" ]; then
        fail "$classifier is not executable (chmod +x $classifier)"
    fi
    [ -d "$model" ] || fail "no folder at $model: give the one deploy/model/install-model.sh makes (--model path/to/model)"
    check_model "$model"
fi
for file in $files; do
    [ -f "$here/$file" ] || fail "$here/$file is missing: keep the files of deploy/ together"
done
# On the board itself, a program built for another CPU fails here, before it
# replaces one that works.
if live && ! "$binary" --version >/dev/null 2>&1; then
    fail "$binary does not run on this machine (built for another board?)"
fi
if live && [ -n "$go2rtc" ]; then
    case $("$go2rtc" -version 2>/dev/null) in
        "go2rtc version "*) ;;
        *) fail "$go2rtc does not run on this machine as go2rtc (built for another board?)" ;;
    esac
fi
# Without arguments it prints its usage and exits 2; one built for another
# CPU fails to start instead.
if live && [ -n "$classifier" ]; then
    case $("$classifier" 2>&1) in
        "usage: nvr-classify "*) ;;
        *) fail "$classifier does not run on this machine as nvr-classify (built for another board?)" ;;
    esac
fi

say "installing $binary into ${DESTDIR:-/} (prefix $PREFIX)"
install_user "$RUN_AS" "$HOME_DIR" "nvr-node"
install_data_dir
install_binary "$binary" "$bin_file"
install_settings
if [ -n "$classifier" ]; then
    install_binary "$classifier" "$classifier_file"
    install_model "$model"
elif [ -e "$classifier_file" ] || [ -e "$model_dir" ]; then
    say "classifier and model: left as they are (--classifier CLASSIFIER --model MODEL_DIR upgrades them)"
else
    say "no classifier installed: motion events will not be classified (--classifier CLASSIFIER --model MODEL_DIR installs it and its model)"
fi
if [ -n "$go2rtc" ]; then
    install_user "$G2_USER" "$G2_HOME" "go2rtc for nvr-node"
    install_binary "$go2rtc" "$g2_bin_file"
    install_go2rtc_config
    install_service go2rtc
elif go2rtc_is_ours; then
    say "go2rtc: left as it is (--with-go2rtc GO2RTC upgrades it)"
fi
install_service "$NAME"
# go2rtc first: the node registers its cameras there as it starts.
[ -z "$go2rtc" ] || start_service go2rtc
start_service "$NAME"
say "done; settings in $env_file"
