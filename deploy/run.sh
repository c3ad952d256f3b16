#!/bin/sh
# Runs the node on this machine with its classifier (README "Quick start"):
# installs the classifier's model into target/model when it is missing,
# builds the node (release profile, for size) and nvr-classify (profile
# classify, for speed), and runs the node with CLASSIFIER and MODEL_DIR
# naming them. The node's other settings come from the environment
# (docs/configuration.md); arguments are passed to the node.
# Usage: sh deploy/run.sh [ARGS...]   (from anywhere)
set -eu
cd "$(dirname "$0")/.."

for tool in cargo ffmpeg ffprobe; do
  command -v "$tool" >/dev/null 2>&1 || {
    case $tool in
      cargo) echo "deploy/run.sh needs cargo: install Rust 1.85 or newer with rustup (https://rustup.rs)" >&2 ;;
      *) echo "deploy/run.sh needs $tool, to record and detect: sudo apt-get install ffmpeg" >&2 ;;
    esac
    exit 1
  }
done

sh deploy/model/install-model.sh target/model
cargo build --release --bin nvr-node
cargo build --profile classify -p nvr-classify
target=${CARGO_TARGET_DIR:-target}
case $target in /*) ;; *) target=$PWD/$target ;; esac
CLASSIFIER=${CLASSIFIER:-$target/classify/nvr-classify}
MODEL_DIR=${MODEL_DIR:-$PWD/target/model}
export CLASSIFIER MODEL_DIR
exec "$target/release/nvr-node" "$@"
