#!/usr/bin/env bash
# On a GPU machine (CUDA, cuBLAS, python3 with torch, transformers and peft; no Debian packages
# needed): builds the CUDA engine standalone (tests/gpu/standalone), runs the GPU tests, the
# check against transformers + PEFT and the benchmarks, and writes each log and a summary to $OUT.
#
#   OUT=/tmp/out tests/gpu/run_device.sh [EXTRA_INCLUDE]
#
# EXTRA_INCLUDE: a folder with nlohmann/json.hpp and catch2/catch.hpp when the system has none.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-/tmp/lf-gpu-out}
mkdir -p "$out"
build=/tmp/lf-gpu-build
extra=${1:-$repo/.gpu/include}
export PYTHONUNBUFFERED=1
stage() {  # stage NAME SECONDS COMMAND...: runs it with a time limit, logs it, notes the result
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "== $name: exit $rc, $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  return $rc
}
: >"$out/summary.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv \
  | tee -a "$out/summary.txt"
stage configure 120 cmake -S "$repo/tests/gpu/standalone" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DLF_EXTRA_INCLUDE="$extra" -DCMAKE_CUDA_ARCHITECTURES=90 || { tail -40 "$out/configure.log"; exit 1; }
stage build 240 cmake --build "$build" -j 16 || { grep -E "error|FAILED" "$out/build.log" | head -40; exit 1; }
stage tests 120 "$build/gpu/test_cuda_engine" -r compact
grep -E "passed|failed|compared|largest" "$out/tests.log" | tail -15 | tee -a "$out/summary.txt"
stage hf 180 python3 "$repo/tools/gpu/check_cuda_vs_hf.py" --bin "$build/tools/cuda_logits" --work /tmp/lf-hf
grep -E "transformers|largest|moves" "$out/hf.log" | tee -a "$out/summary.txt"
model=/tmp/lf-hf/model
[ -f $model/model.safetensors ] || model=""
stage bench 240 "$build/tools/bench_cuda" ${model:+--model $model} --json "$out/bench.json"
cat "$out/bench.log" | tee -a "$out/summary.txt"
if [ -n "$model" ]; then
  stage hf_generate 150 python3 "$repo/tools/gpu/bench_hf_generate.py" --model "$model" --batches 64,256
  cat "$out/hf_generate.log" | grep -v Warning | tail -6 | tee -a "$out/summary.txt"
fi
