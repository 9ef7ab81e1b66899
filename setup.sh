#!/usr/bin/env bash
# One script to set up, build and run lorafleet on Debian bookworm (as root).
#
#   ./setup.sh demo    install packages, build, run the main job
#   ./setup.sh test    install packages, build, run every test (what CI runs)
#   ./setup.sh build   install packages and build everything, the benchmark programs too
#   ./setup.sh cross   install the aarch64 cross compiler and qemu-user, build the kernels and their
#                      tests for aarch64 and run them on three emulated CPUs (part of `test` too)
#
# Idempotent: packages already installed and an up-to-date build cost a few seconds. The demo
# installs and builds only what serving needs (no libtorch); test and build add the rest.
# LORAFLEET_PRESET=debug|asan|release (default release), JOBS=N parallel compile jobs.
set -euo pipefail
cd "$(dirname "$0")"
action=${1:-build}
preset=${LORAFLEET_PRESET:-release}
# Progress: each long phase says how long it took.
phase_start=$SECONDS
phase_done() { echo "setup: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }

packages=(
  build-essential cmake ninja-build pkg-config
  libcaf-dev libssl-dev                 # actors, remote actors, TLS between nodes
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
  libevent-dev                          # the HTTP gateway (evhttp) and the load tester's HTTP client
  nlohmann-json3-dev libtomlplusplus-dev
)
# Python runs the demo's client and the tests, not the build.
python_packages=(python3 python3-zmq python3-msgpack)
[ "$action" = test ] || [ "$action" = build ] || packages+=("${python_packages[@]}")
# Serving needs none of libtorch: the demo builds and runs `lorafleet` without it (and cross builds
# only the kernels). Everything else (training, make-model, the tests' ATen reference, the
# benchmarks) needs it.
# They are the largest install (~50 s of a fresh machine's 86 s): when missing they install in the
# background while the serving side (which needs none of them) builds, then the rest builds.
torch_packages=()
if [ "$action" = test ] || [ "$action" = build ]; then
  torch_packages+=(
    "${python_packages[@]}"             # not libtorch's, but needed only after the serving build
    libtorch-dev libopenblas0-pthread   # without openblas-pthread libtorch uses the reference BLAS
    libdnnl-dev                         # headers only: bench_kernels compares the kernels with oneDNN
    catch2
  )
fi

# The aarch64 kernel tables are tested cross-compiled, under qemu-user.
if [ "$action" = cross ]; then
  packages+=(g++-aarch64-linux-gnu qemu-user)
fi
# What only the tests run (not the build) is installed in the background while the build runs:
# the aarch64 cross compiler and qemu-user, curl, the official `openai` npm package's Node.js,
# headless Chromium (the dashboard), openssl (the TLS tests make a self-signed certificate) and
# PyYAML (tests/deploy reads the rendered Kubernetes manifests).
late_packages=()
if [ "$action" = test ]; then
  late_packages+=(g++-aarch64-linux-gnu qemu-user curl chromium openssl python3-yaml)
  # Node.js only: Debian's npm would pull in ~700 packages (4 minutes of installing on a fresh
  # machine); without npm, tests/http/install_packages.py installs the lock file's packages.
  command -v node > /dev/null || late_packages+=(nodejs)
fi

not_installed() {  # not_installed PACKAGE...: prints those that are not installed
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(not_installed "${packages[@]}")
mapfile -t torch_missing < <(not_installed "${torch_packages[@]}")
mapfile -t late_missing < <(not_installed "${late_packages[@]}")
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# --force-unsafe-io: dpkg skips its fsync per unpacked file (as Debian's Docker images do);
# measured on a fresh bookworm root (2 vCPUs, .debs already downloaded), the test packages
# installed in 189 and 211 s instead of 525 and 353 s (runs in turn). An install cut short by a
# crash is redone by running this script again.
apt_install() { $sudo apt-get install -y -qq --no-install-recommends -o DPkg::Options::=--force-unsafe-io "$@"; }
if ((${#missing[@]} + ${#torch_missing[@]} + ${#late_missing[@]})); then
  $sudo apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  apt_install "${missing[@]}"
  phase_done "installing packages"
fi
# Background installs, one after the other (dpkg takes one at a time): libtorch's group first,
# then what only the tests run.
torch_pid="" late_pid=""
torch_log=build/setup-torch-packages.log late_log=build/setup-late-packages.log
if ((${#torch_missing[@]})); then
  echo "setup: installing ${torch_missing[*]} in the background while the serving side builds (log: $torch_log)"
  mkdir -p build
  apt_install "${torch_missing[@]}" > "$torch_log" 2>&1 &
  torch_pid=$!
fi
if ((${#late_missing[@]})); then
  echo "setup: installing ${late_missing[*]} in the background while building (log: $late_log)"
  mkdir -p build
  (
    while [ -n "$torch_pid" ] && kill -0 "$torch_pid" 2> /dev/null; do sleep 1; done
    apt_install "${late_missing[@]}"
  ) > "$late_log" 2>&1 &
  late_pid=$!
fi
# background_wait PID LOG WHAT...: the background install must have succeeded before its packages
# are used.
background_wait() {
  local pid=$1 log=$2 t0=$SECONDS
  shift 2
  if ! wait "$pid"; then
    cat "$log" >&2
    echo "setup: installing $* failed (log above)" >&2
    exit 1
  fi
  echo "setup: waited $((SECONDS - t0)) s for the background install of $*"
}
late_wait() { [ -z "$late_pid" ] || background_wait "$late_pid" "$late_log" "${late_missing[@]}"; late_pid=""; }

if [ "$action" = cross ]; then
  exec tests/cross/run_aarch64.sh "build/$preset/cross-aarch64"
fi

# The npm packages of the HTTP tests (the openai SDK, ...) and of the deployment tests (the
# Kubernetes API schemas), again whenever a package-lock.json changes.
npm_install() {
  [ "$action" = test ] || return 0
  local dir lock_sum stamp
  for dir in tests/http tests/deploy; do
    lock_sum=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
    stamp=$dir/node_modules/.lorafleet-lock
    [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ] || continue
    phase_start=$SECONDS
    echo "setup: installing the npm packages of $dir/package-lock.json"
    if command -v npm > /dev/null; then
      (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    else
      /usr/bin/python3 tests/http/install_packages.py "$dir"
    fi
    echo "$lock_sum" > "$stamp"
    phase_done "installing npm packages ($dir)"
  done
}

# Each libtorch translation unit needs ~0.5-1 GB of compiler memory: one job per core is fine here.
jobs=${JOBS:-$(nproc)}
cache="build/$preset/CMakeCache.txt"
if [ -n "$torch_pid" ]; then
  # libtorch is still installing: the serving program first, configured without it (so that a
  # half-unpacked libtorch is never seen), then the rest once it is in.
  cmake --preset "$preset" -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON > /dev/null
  cmake --build --preset "$preset" -j "$jobs" --target lorafleet
  phase_done "building the serving side"
  background_wait "$torch_pid" "$torch_log" "${torch_missing[@]}"
  torch_pid=""
fi
npm_install  # (its installer is Python's)
# Configure once; again when libtorch arrived since (a demo's build dir used for tests, or the
# serving side built above). A reconfigure changes no compile line that was already there.
if [ ! -f "build/$preset/build.ninja" ] \
   || { [ "$action" != demo ] && grep -q -e '^Torch_DIR:PATH=.*NOTFOUND' \
          -e '^CMAKE_DISABLE_FIND_PACKAGE_Torch:[A-Z]*=ON' "$cache"; }; then
  cmake --preset "$preset" -DCMAKE_DISABLE_FIND_PACKAGE_Torch=OFF
fi
# The demo builds only the program it runs, the tests what they run; `build` adds the benchmarks.
targets=()
[ "$action" = demo ] && targets=(--target lorafleet)
[ "$action" = build ] && targets=(--target all benchmarks)
cmake --build --preset "$preset" -j "$jobs" "${targets[@]}"
phase_done "building"

bin="build/$preset/tools"
case "$action" in
  build) ;;
  test)
    late_wait
    phase_start=$SECONDS
    # One test more than cores: several tests wait on timers or sockets for part of their time
    # (heartbeat timeouts, node restarts). On 2 cores, -j3 took 285 s where -j2 took 302 s.
    ctest --preset "$preset" -j "$((jobs + 1))" --timeout 1500
    phase_done "testing"
    ;;
  demo)
    # A local cluster (router + 2 workers + gateway) on the embedded default model and its style
    # adapters, then concurrent streaming requests through the Python client library.
    model=models/default adapters=models/adapters
    if [ ! -f "$model/model.safetensors" ]; then
      echo "setup: models/default/model.safetensors is missing (a partial clone?); fetch the repository again" >&2
      exit 1
    fi
    names=""
    if [ -n "$adapters" ]; then
      for d in "$adapters"/*/; do
        [ -f "$d/adapter_config.json" ] && names="$names${names:+,}$(basename "$d")"
      done
    fi
    port=${LORAFLEET_PORT:-5555}
    rm -f build/demo.ready
    "$bin/lorafleet" serve --model "$model" ${adapters:+--adapters "$adapters"} --workers 2 \
      --listen "tcp://127.0.0.1:$port" --ready-file build/demo.ready &
    server=$!
    trap 'kill -TERM $server 2>/dev/null || true' EXIT
    for _ in $(seq 1 240); do
      [ -s build/demo.ready ] && break
      kill -0 $server 2>/dev/null || { echo "setup: the server failed to start" >&2; exit 1; }
      sleep 0.5
    done
    /usr/bin/python3 client/python/examples/demo.py --endpoint "tcp://127.0.0.1:$port" --adapters "$names"
    kill -TERM $server
    wait $server
    trap - EXIT
    ;;
  *)
    echo "usage: $0 [demo|test|build|cross]" >&2
    exit 2
    ;;
esac
