#!/usr/bin/env bash
# Installs what the tests need (idempotently) and runs all of them.
# Usage: bash tests/run.sh   (from anywhere; root or sudo for the apt step)
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: ffprobe, and GStreamer's RTSP server for the test camera.
packages=(
  ffmpeg
  python3-gi
  gir1.2-gst-rtsp-server-1.0
  gstreamer1.0-plugins-base
  gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad
  gstreamer1.0-plugins-ugly
  gcc
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust 1.85 or newer with rustup (https://rustup.rs), then run this again" >&2
  exit 1
fi
for tool in ffprobe /usr/bin/python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "missing $tool after install" >&2; exit 1; }
done
/usr/bin/python3 -c "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer" \
  || { echo "/usr/bin/python3 cannot import GstRtspServer (gir1.2-gst-rtsp-server-1.0)" >&2; exit 1; }

cargo test --locked
