#!/bin/sh
# Prints the path of a Debian 12 (bookworm) root file system for the
# package tests (tests/package.rs), a tarball made by mmdebstrap from
# Debian's mirror: the minimal base and ffmpeg, the package's one
# dependency outside it, so that installing the package needs no network.
# Made once per machine (about 2 minutes, 220 MB) in CACHE_DIR, named by
# the sha256 of this script, so a change here makes a new one.
# Usage: sh tests/debian/root.sh CACHE_DIR
set -eu

[ $# -eq 1 ] || { echo "usage: $0 CACHE_DIR" >&2; exit 2; }
cache=$1
key=$(sha256sum "$0" | cut -c1-16)
root=$cache/debian12-root-$key.tar.zst
if [ ! -s "$root" ]; then
    command -v mmdebstrap >/dev/null 2>&1 \
        || { echo "tests/debian/root.sh needs mmdebstrap (apt-get install mmdebstrap zstd)" >&2; exit 1; }
    mkdir -p "$cache"
    # Older roots of this script give way.
    rm -f "$cache"/debian12-root-*.tar.zst
    mmdebstrap --quiet --variant=minbase --include=ffmpeg \
        --aptopt='Acquire::Retries "3"' \
        bookworm "$root.new.tar.zst" http://deb.debian.org/debian >&2
    mv "$root.new.tar.zst" "$root"
fi
echo "$root"
