#!/usr/bin/env bash
# One script to set up, build and run lorafleet on Debian bookworm (as root).
#
#   ./setup.sh demo    install packages, build, run the main job
#   ./setup.sh test    install packages, build, run every test (what CI runs)
#   ./setup.sh build   install packages and build only
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

packages=(
  build-essential cmake ninja-build pkg-config
  libcaf-dev libssl-dev                 # actors, remote actors, TLS between nodes
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
  libevent-dev                          # the HTTP gateway (evhttp) and the load tester's HTTP client
  nlohmann-json3-dev libtomlplusplus-dev
  python3 python3-zmq python3-msgpack
)
# Serving needs none of libtorch: the demo builds and runs `lorafleet` without it (and cross builds
# only the kernels). Everything else (training, make-model, the tests' ATen reference, the
# benchmarks) needs it.
if [ "$action" = test ] || [ "$action" = build ]; then
  packages+=(
    libtorch-dev libopenblas0-pthread   # without openblas-pthread libtorch uses the reference BLAS
    libdnnl-dev                         # headers only: bench_kernels compares the kernels with oneDNN
    catch2
  )
fi

# The tests also drive the HTTP gateway with curl, the official `openai` npm package (Node.js) and
# headless Chromium (the dashboard).
# The aarch64 kernel tables are tested cross-compiled, under qemu-user.
if [ "$action" = test ] || [ "$action" = cross ]; then
  packages+=(g++-aarch64-linux-gnu qemu-user)
fi
if [ "$action" = test ]; then
  packages+=(curl chromium openssl)     # openssl: the TLS tests make a self-signed certificate
  command -v node > /dev/null || packages+=(nodejs)
  command -v npm > /dev/null || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "$action" = test ] && { [ ! -f tests/http/node_modules/openai/package.json ] ||
                             [ ! -f tests/http/node_modules/ajv/package.json ]; }; then
  echo "setup: installing the openai and ajv npm packages for the HTTP tests"
  (cd tests/http && npm ci --no-audit --no-fund --loglevel=error)
fi

if [ "$action" = cross ]; then
  exec tests/cross/run_aarch64.sh "build/$preset/cross-aarch64"
fi

# Configure once; again when libtorch arrived since (a demo's build dir used for tests).
cache="build/$preset/CMakeCache.txt"
if [ ! -f "build/$preset/build.ninja" ] \
   || { [ "$action" != demo ] && grep -q '^Torch_DIR:PATH=.*NOTFOUND' "$cache"; }; then
  cmake --preset "$preset"
fi
# Each libtorch translation unit needs ~0.5-1 GB of compiler memory: one job per core is fine here.
# The demo builds only the program it runs.
targets=()
[ "$action" = demo ] && targets=(--target lorafleet)
cmake --build --preset "$preset" -j "${JOBS:-$(nproc)}" "${targets[@]}"

bin="build/$preset/tools"
case "$action" in
  build) ;;
  test)
    ctest --preset "$preset" -j "${JOBS:-$(nproc)}" --timeout 1500
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
