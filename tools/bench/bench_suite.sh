#!/bin/bash
# The load-test benchmark suite (issue: load-test tool): six experiments against a local cluster
# on a GPT-2-124M-shaped random model, each a `lorafleet serve` process measured by
# `lorafleet loadtest`, all in one run so the figures compare. Results: OUT/<name>.{json,csv,svg}
# and OUT/summary.txt (appended to, so several --only runs can share OUT).
#
#   tools/bench/bench_suite.sh [BUILD_DIR] [OUT_DIR] [--quick] [--only 1,2,...] [--threads N]
#
# The figures of the last full run, with the pictures: docs/benchmarks.md, docs/bench-suite/.
# --quick shrinks the model (4 layers, 256 wide) and the request counts, to check the script.
# --threads: the compute threads of the single worker in experiments 1-5 (default 0: serve's own
# default, all cores; the recorded run of the old engine used 1); experiment 6 always gives each
# worker one thread.
set -euo pipefail
build=build/release; out=build/bench-suite
if (($#)) && [[ $1 != --* ]]; then build=$1; shift; fi
if (($#)) && [[ $1 != --* ]]; then out=$1; shift; fi
quick=0; only="1,2,3,4,5,6"; threads=0
while (($#)); do case $1 in --quick) quick=1;; --only) only=${2:?--only needs a list such as 1,2,6}; shift;; --threads) threads=${2:?--threads needs a number}; shift;;
  *) echo "bench_suite: unknown option $1" >&2; exit 2;; esac; shift; done
bin=$build/tools/lorafleet
mkdir -p "$out"
model=$out/model adapters=$out/adapters
if [ ! -f "$model/model.safetensors" ]; then
  if ((quick)); then "$bin" make-model --out "$model" --layers 4 --heads 4 --embd 256 --seed 1
  else "$bin" make-model --out "$model" --layers 12 --heads 12 --embd 768 --context 1024 --seed 1; fi
fi
for i in 1 2 3 4 5 6 7 8; do
  [ -f "$adapters/a$i/adapter_config.json" ] ||
    "$bin" make-adapter --base "$model" --out "$adapters/a$i" --rank 8 --seed "$i" > /dev/null
done
n() { if ((quick)); then echo "$2"; else echo "$1"; fi; }
port=$((24000 + RANDOM % 10000))
server=""
serve() {  # serve FLAGS...: start a server, wait until ready
  rm -f "$out/ready"
  "$bin" serve --model "$model" --adapters "$adapters" --listen "tcp://127.0.0.1:$port" \
    --ready-file "$out/ready" --kv-cache-mb "$(n 2048 256)" "$@" > "$out/serve.log" 2>&1 &
  server=$!
  for _ in $(seq 1 240); do [ -s "$out/ready" ] && return 0; sleep 0.5; done
  cat "$out/serve.log"; echo "bench_suite: server did not start" >&2; exit 1
}
stop() { kill -TERM "$server"; wait "$server" || true; server=""; }
trap '[ -n "$server" ] && kill -TERM "$server" 2>/dev/null || true' EXIT
lt() { local name=$1; shift
  echo "== $name: loadtest $*" | tee -a "$out/summary.txt"
  "$bin" loadtest "tcp://127.0.0.1:$port" --quiet --timeout 3600 --out "$out/$name" "$@" \
    | tee -a "$out/summary.txt" || echo "($name: some requests were lost or failed)" | tee -a "$out/summary.txt"
}
run() { [[ ",$only," == *",$1,"* ]]; }
{ echo "# bench_suite $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
  echo "# $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  echo "# experiments $only, worker threads $threads"; } >> "$out/summary.txt"

if run 1; then  # one stream: 32 in / 128 out
  serve --workers 1 --threads "$threads"
  lt 1-one-stream --concurrency 1 --requests "$(n 8 3)" --input 32 --output "$(n 128 32)"
  stop
fi
if run 2; then  # concurrency sweep, 128 in / 128 out
  serve --workers 1 --threads "$threads" --max-seqs 64
  lt 2-sweep --sweep-concurrency "$(n 1,2,4,8,16,32,64 1,4,8)" --per-client 2 --input "$(n 128 32)" --output "$(n 128 32)"
  stop
fi
if run 3; then  # the course's mix: continuous vs static vs no KV cache
  for mode in continuous static static_no_cache; do
    serve --workers 1 --threads "$threads" --max-seqs 8 --mode "$mode"
    lt "3-course-$mode" --concurrency 32 --requests 32 --input 16 --output 10 --long-every 8 --long-output 100
    stop
  done
fi
if run 4; then  # open loop, Poisson, mixed lengths: goodput at TTFT p99 <= 1 s, TPOT <= 100 ms
  serve --workers 1 --threads "$threads" --max-seqs 64
  lt 4-poisson --sweep-rate "$(n 0.25,0.5,1,2 1,4)" --requests "$(n 48 16)" --input "$(n 32-512 16-64)" \
    --output "$(n 16-256 8-32)" --goodput-ttft-ms 1000 --goodput-tpot-ms 100
  stop
fi
if run 5; then  # 8 adapters vs base only
  serve --workers 1 --threads "$threads" --max-seqs 32
  lt 5-base --concurrency 32 --requests "$(n 64 16)" --input 64 --output "$(n 64 16)"
  lt 5-adapters8 --concurrency 32 --requests "$(n 64 16)" --input 64 --output "$(n 64 16)" --adapters a1,a2,a3,a4,a5,a6,a7,a8
  stop
fi
if run 6; then  # scaling: one worker vs two workers behind the router (one thread each)
  for w in 1 2; do
    serve --workers "$w" --threads 1 --max-seqs 32
    lt "6-workers$w" --concurrency 16 --requests "$(n 32 16)" --input 64 --output "$(n 64 16)"
    stop
  done
fi
echo "bench_suite: results in $out (summary.txt, *.json, *.csv, *.svg)"
