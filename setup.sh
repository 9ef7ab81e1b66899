#!/usr/bin/env bash
# One script to set up, build and run lorafleet on Debian bookworm (as root).
#
#   ./setup.sh demo    install packages, build, run the main job
#   ./setup.sh test    install packages, build, run every test (what CI runs)
#   ./setup.sh build   install packages and build only
#
# Idempotent: packages already installed and an up-to-date build cost a few seconds.
# LORAFLEET_PRESET=debug|asan|release (default release), JOBS=N parallel compile jobs.
set -euo pipefail
cd "$(dirname "$0")"
action=${1:-build}
preset=${LORAFLEET_PRESET:-release}

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libopenblas0-pthread     # without openblas-pthread libtorch uses the reference BLAS
  libcaf-dev libssl-dev                 # actors, remote actors, TLS between nodes
  libzmq3-dev cppzmq-dev libmsgpack-cxx-dev
  nlohmann-json3-dev libtomlplusplus-dev catch2
  python3 python3-zmq python3-msgpack
)

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

if [ ! -f "build/$preset/build.ninja" ]; then
  cmake --preset "$preset"
fi
# Each libtorch translation unit needs ~0.5-1 GB of compiler memory: one job per core is fine here.
cmake --build --preset "$preset" -j "${JOBS:-$(nproc)}"

bin="build/$preset/tools"
case "$action" in
  build) ;;
  test)
    ctest --preset "$preset" -j "${JOBS:-$(nproc)}" --timeout 1500
    ;;
  demo)
    model=build/demo-model
    if [ ! -f "$model/model.safetensors" ]; then
      "$bin/lorafleet" make-model --out "$model" --layers 4 --heads 4 --embd 256 --seed 1
    fi
    "$bin/lorafleet" generate --model "$model" --max-tokens 24 --temperature 0.8 --seed 7 \
      --prompt "The quick brown fox" --prompt "Once upon a time, in a land far away," \
      --prompt "To be, or not to be:"
    ;;
  *)
    echo "usage: $0 [demo|test|build]" >&2
    exit 2
    ;;
esac
