#!/bin/sh
# Installs the classifier's model into OUT_DIR: model.tflite, labels.txt,
# LICENSE and SOURCE (README "Classifying what moved: the model").
# Usage: deploy/model/install-model.sh OUT_DIR
#
# The model is MediaPipe's SSD MobileNetV2 (Open Images v4, fp16) from the
# npm package @mediapipe/objectron, pinned by version and sha256. The package
# packs the label map (bytes 0..184) and the model (184..9,987,912) into one
# file; both are cut out unchanged. Run it where the npm registry is reached
# (a build machine) and copy OUT_DIR to the board: the node downloads nothing.
# Idempotent: an OUT_DIR whose SOURCE matches is left alone.
set -eu

[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")" && pwd)

package=@mediapipe/objectron
version=0.4.1675468480
url=https://registry.npmjs.org/@mediapipe/objectron/-/objectron-$version.tgz
tarball_sha256=fc3e37b326b05e8f596099c90b3e0931b05a56cd3160b9ac450b621794bac94c
model_sha256=d0a5255bf8c4f5a0bc4240741a76c41d5e939f7655078f945f50ab53a9375da6
packed=package/objectron_solution_packed_assets.data
packed_size=9987912
labels_size=184
model_size=$((packed_size - labels_size))

source_text="package: $package
version: $version
tarball: $url
tarball sha256: $tarball_sha256
model: $packed bytes $labels_size..$packed_size (object_detection_ssd_mobilenetv2_oidv4_fp16.tflite)
model sha256: $model_sha256
labels: $packed bytes 0..$labels_size (object_detection_oidv4_labelmap.txt)
licence: Apache-2.0 (the package's \"license\" field; it ships no licence file)"

size() { wc -c <"$1" | tr -d ' '; }

if [ -f "$out/SOURCE" ] && [ "$(cat "$out/SOURCE")" = "$source_text" ] \
  && [ -f "$out/model.tflite" ] && [ "$(size "$out/model.tflite")" = "$model_size" ] \
  && [ -f "$out/labels.txt" ] && [ "$(size "$out/labels.txt")" = "$labels_size" ] \
  && [ -f "$out/LICENSE" ]; then
  echo "model already installed in $out"
  exit 0
fi

for tool in curl tar sha256sum dd; do
  command -v "$tool" >/dev/null 2>&1 || { echo "install-model.sh needs $tool" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 3 -o "$work/package.tgz" "$url" \
  || { echo "cannot download $url" >&2; exit 1; }
got=$(sha256sum "$work/package.tgz" | cut -d' ' -f1)
[ "$got" = "$tarball_sha256" ] \
  || { echo "$url: sha256 $got, expected $tarball_sha256" >&2; exit 1; }
tar -xzf "$work/package.tgz" -C "$work" "$packed"
[ "$(size "$work/$packed")" = "$packed_size" ] \
  || { echo "$packed is $(size "$work/$packed") bytes, expected $packed_size" >&2; exit 1; }

mkdir -p "$out"
# Written beside and renamed, so an interrupted install leaves no half file.
dd if="$work/$packed" of="$out/labels.txt.new" bs=$labels_size count=1 status=none
dd if="$work/$packed" of="$out/model.tflite.new" bs=$labels_size skip=1 status=none
[ "$(size "$out/labels.txt.new")" = "$labels_size" ] && [ "$(size "$out/model.tflite.new")" = "$model_size" ] \
  || { echo "cutting $packed gave files of the wrong size" >&2; exit 1; }
# The model is a TFLite flatbuffer: its identifier sits at bytes 4..8.
[ "$(dd if="$out/model.tflite.new" bs=1 skip=4 count=4 status=none)" = "TFL3" ] \
  || { echo "bytes $labels_size.. of $packed are not a TFLite model" >&2; exit 1; }
got=$(sha256sum "$out/model.tflite.new" | cut -d' ' -f1)
[ "$got" = "$model_sha256" ] || { echo "model.tflite: sha256 $got, expected $model_sha256" >&2; exit 1; }
cp "$here/LICENSE-Apache-2.0" "$out/LICENSE.new"
printf '%s\n' "$source_text" >"$out/SOURCE.new"
for f in labels.txt model.tflite LICENSE; do mv "$out/$f.new" "$out/$f"; done
# SOURCE last: it marks a complete install.
mv "$out/SOURCE.new" "$out/SOURCE"
echo "model installed in $out"
