#!/usr/bin/env bash
# Cross-compiles the kernel library and its unit tests for aarch64 with Debian's cross compiler and
# runs them under qemu-user on three emulated CPUs, so every aarch64 kernel table is exercised:
#
#   cortex-a53    NEON only                 -> tables portable, neon
#   neoverse-n1   + dotprod                 -> + neon_dotprod
#   max           + dotprod, i8mm, bf16     -> + neon_i8mm
#
#   tests/cross/run_aarch64.sh [BUILD_DIR [HOST_DIGEST]]     (default build/cross-aarch64)
#
# With HOST_DIGEST (this machine's kernel_digest program), each emulated CPU's digest of every
# kernel's output bits must also equal this machine's: x86 and aarch64 give the same bits.
#
# Needs g++-aarch64-linux-gnu, qemu-user and catch2 (`./setup.sh cross` installs them and runs this). Exit 0
# when every table passes on every CPU; this says nothing about speed on ARM (qemu emulates).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$repo/build/cross-aarch64}"
host_digest="${2:-}"
for tool in aarch64-linux-gnu-g++ qemu-aarch64 cmake ninja; do
  command -v "$tool" > /dev/null || { echo "run_aarch64: $tool is missing (./setup.sh cross installs it)" >&2; exit 2; }
done
[ -f /usr/include/catch2/catch.hpp ] || { echo "run_aarch64: catch2 is missing (apt-get install catch2)" >&2; exit 2; }

mkdir -p "$build/include"
ln -sfn /usr/include/catch2 "$build/include/catch2"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo/tests/cross" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
    -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ -DCATCH_INCLUDE_DIR="$build/include" > "$build/configure.log"
fi
cmake --build "$build" -j "${JOBS:-$(nproc)}"

status=0
want=""
if [ -n "$host_digest" ]; then
  want=$("$host_digest" | sed -n 's/^digest //p') || { echo "the host's tables differ:"; "$host_digest"; exit 1; }
  echo "== host kernel digest $want"
fi
for cpu in cortex-a53 neoverse-n1 max; do
  echo "== aarch64 kernels on qemu -cpu $cpu"
  QEMU_CPU=$cpu QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64 "$build/test_kernels_cross" || status=1
  if [ -n "$want" ]; then
    got=$(QEMU_CPU=$cpu QEMU_LD_PREFIX=/usr/aarch64-linux-gnu qemu-aarch64 "$build/kernel_digest_cross") || {
      echo "aarch64 ($cpu): its tables differ from each other"; echo "$got"; status=1; continue; }
    echo "$got"
    if [ "$(echo "$got" | sed -n 's/^digest //p')" != "$want" ]; then
      echo "aarch64 ($cpu): kernel digest differs from the host's ($want)"
      status=1
    fi
  fi
done
exit $status
