#!/bin/sh
# The aarch64 node as it ships: the release profile, with the standard
# library built from its source (rustup's rust-src) without the backtrace
# symbolizer and with its size-optimized algorithms. A stable toolchain
# builds std this way only with RUSTC_BOOTSTRAP=1, which allows cargo's
# -Z flags. A panic's place is its file without line and column
# (-Zlocation-detail=file, added to the target's rustflags): a line and
# column for each place cost more bytes than the node has to spare. Panics still unwind:
# a panicking handler answers 500 and the node serves on. What it saves:
# docs/install.md, "Its size". Arguments go on to cargo.
# Usage: sh deploy/build-aarch64-node.sh [CARGO ARGS...]
set -eu
cd "$(dirname "$0")/.."
if [ ! -d "$(rustc --print sysroot)/lib/rustlib/src/rust/library/std" ]; then
    echo "the standard library's source is missing: rustup component add rust-src" >&2
    exit 1
fi
# A panic's file is named from its crate's folder (serde_json-1.0.145/src/de.rs,
# library/core/src/...), not from where this machine keeps the sources:
# fewer bytes (docs/install.md), and the same from any machine.
flags='"-Zlocation-detail=file"'
for dir in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ "$(rustc --print sysroot)/lib/rustlib/src/rust/"; do
    flags="$flags, \"--remap-path-prefix=$dir=\""
done
exec env RUSTC_BOOTSTRAP=1 cargo build --locked --release \
    --target aarch64-unknown-linux-musl --bin nvr-node \
    --config "target.aarch64-unknown-linux-musl.rustflags=[$flags]" \
    -Zbuild-std=std,panic_unwind -Zbuild-std-features=panic-unwind,optimize_for_size "$@"
