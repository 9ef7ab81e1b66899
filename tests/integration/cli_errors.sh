#!/bin/bash
# Bad command-line values for `lorafleet serve`, `loadtest`, `client`, `generate`, `drain`, `adapters`, `soak`,
# `make-model` (run by lorafleet-train): each must exit
# with status 2 (1 for a runtime error such as an endpoint that cannot be bound) and a message that
# names the flag, quickly, without starting to serve. `--help` after a command prints its usage.
# Usage: cli_errors.sh LORAFLEET_BINARY
set -uo pipefail
bin=$1
ep=tcp://127.0.0.1:9  # never contacted: every case fails before connecting
failures=0
# expect RC SUBSTRING ARGS...: run `lorafleet ARGS`, check the exit status and stderr.
expect() {
  local rc=$1 want=$2; shift 2
  local err got
  err=$(timeout 60 "$bin" "$@" 2>&1 >/dev/null); got=$?
  if [[ $got != "$rc" || $err != *"$want"* ]]; then
    echo "FAIL: lorafleet $*: exit $got (want $rc), stderr: $err (want '$want')"
    failures=$((failures + 1))
  fi
}
# LF_ISA naming no table of this build, or one this CPU cannot run: refused at start, naming what runs.
expect_env() {  # ENV RC SUBSTRING ARGS...
  local env=$1; shift
  local rc=$1 want=$2; shift 2
  local err got
  err=$(env "$env" timeout 60 "$bin" "$@" 2>&1 >/dev/null); got=$?
  if [[ $got != "$rc" || $err != *"$want"* ]]; then
    echo "FAIL: $env lorafleet $*: exit $got (want $rc), stderr: $err (want '$want')"
    failures=$((failures + 1))
  fi
}
expect_env LF_ISA=nonsense 2 "LF_ISA=nonsense names no kernel table of this build" serve
expect_env LF_ISA=nonsense 2 "this CPU runs: portable" generate --prompt hi
case "$(uname -m)" in
  x86_64) grep -q avx512f /proc/cpuinfo || expect_env LF_ISA=avx512 2 "this CPU cannot run that table (it lacks" serve ;;
esac
expect_env LF_ISA=portable 0 "" --help
expect 2 "--workers must be in [1, 64] (got 0)" serve --workers 0
expect 2 "--workers expects an integer (got 'x')" serve --workers x
expect 2 "--workers needs a value" serve --workers
expect 2 "--threads must be in" serve --threads -1
expect 2 "unknown option --blas-threads" serve --blas-threads 2
expect 2 "--policy must be" serve --policy bogus
expect 2 "--balance-scope must be prefix or all (got 'some')" serve --balance-scope some
expect 2 "--balance-abs must be in" serve --balance-abs -1
expect 2 "--balance-rel must be" serve --balance-rel 0.5
expect 2 "--scheduling must be fcfs or vtc (got 'fair')" serve --scheduling fair
expect 2 "--deadline-admission must be on or off" serve --deadline-admission yes
expect 2 "--drain-kv must be ship or recompute" serve --drain-kv teleport
expect 2 "--mode must be" serve --mode bogus
expect 2 "--dtype must be f32, bf16, int8 or int4" serve --dtype f64
expect 2 "--kv-dtype must be f32, bf16 or int8 (got 'f16')" serve --kv-dtype f16
expect 2 "--device must be cpu, cuda or cuda:N (got \"gpu\")" serve --device gpu
expect 2 "--device cuda:0 computes in f32: set --dtype and --kv-dtype to \"f32\"" serve --device cuda:0 --dtype int8
expect 2 "--kv-dtype must be f32, bf16 or int8 (got 'f16')" generate --prompt hi --kv-dtype f16
expect 2 "--queue-limit must be in" serve --queue-limit -1
expect 2 "--max-seqs must be in" serve --max-seqs 0
expect 2 "--block-size must be in" serve --block-size 0
expect 2 "--kv-cache-mb must be in" serve --kv-cache-mb 0
expect 2 "must not exceed --max-batched-tokens" serve --max-seqs 64 --max-batched-tokens 32
expect 2 "--speculation-method must be ngram, draft or auto (got 'lookup')" serve --speculation-method lookup
expect 2 "--speculation-method \"draft\" needs a --draft-model" serve --speculation-method draft
expect 2 "--draft-threads must be in" serve --draft-threads 0
expect 1 "draft model directory /nonexistent/draft does not exist" serve --threads 1 --listen tcp://127.0.0.1:0 --draft-model /nonexistent/draft
expect 2 "--drain-timeout expects an integer" serve --drain-timeout nan
expect 2 "unknown option --bogus" serve --bogus 1
expect 1 "does not exist" serve --model /nonexistent/model
expect 1 "cannot bind bogus" serve --listen bogus --threads 1
expect 2 "--http: the port must be a number" serve --http 127.0.0.1:http
expect 2 "--http: expected HOST:PORT" serve --http 8000
expect 2 "--max-adapter-rank must be in [1, 4096] (got 0)" serve --max-adapter-rank 0
expect 2 "--prefetch-copies expects an integer" serve --prefetch-copies many
bad_log=$(mktemp); printf 'garbage\n' > "$bad_log"
expect 1 "adapter log $bad_log line 1" serve --threads 1 --listen tcp://127.0.0.1:0 --adapter-log "$bad_log"
rm -f "$bad_log"
expect 2 "list | add NAME PATH | update NAME PATH | remove NAME" adapters rename x
expect 2 "list | add NAME PATH" adapters add only-a-name
expect 2 "list | add NAME PATH" adapters remove
expect 1 "no answer from $ep within 1 s" adapters list --endpoint "$ep" --timeout 1
expect 2 "name one node" drain
expect 2 "name one node" drain w1 w2
expect 2 "unknown option --bogus" drain w1 --bogus 1
expect 2 "--requests expects an integer (got 'nan')" soak --requests nan
expect 2 "cannot read the config file" soak /nonexistent.toml
expect 2 "ENDPOINT" loadtest
expect 2 "http client: the port must be a number" loadtest http://127.0.0.1:abc
expect 2 "--arrival must be closed or poisson (got 'bogus')" loadtest $ep --arrival bogus
expect 2 "--via must be zmq or http (got 'curl')" loadtest --self-host --via curl
expect 2 "--via needs --self-host" loadtest $ep --via http
expect 2 "--concurrency must be in" loadtest $ep --concurrency 0
expect 2 "--requests must be in" loadtest $ep --requests 0
expect 2 "--rate must be > 0" loadtest $ep --arrival poisson --rate -1
expect 2 "--rate expects a finite number" loadtest $ep --arrival poisson --rate nan
expect 2 "--burstiness must be > 0" loadtest $ep --arrival poisson --burstiness 0
expect 2 "--input: expected N or LO-HI" loadtest $ep --input 5-2
expect 2 "--output: expected N or LO-HI" loadtest $ep --output 0
expect 2 "--sweep-rate: not a number: 'a'" loadtest $ep --sweep-rate a,b
expect 2 "--sweep-rate: not a number: '2x'" loadtest $ep --sweep-rate 1,2x
expect 2 "--sweep-concurrency: values must be whole numbers" loadtest $ep --sweep-concurrency 1.5
expect 2 "not both" loadtest $ep --sweep-rate 1 --sweep-concurrency 1
expect 2 "--duration must be >= 0" loadtest $ep --duration -3
expect 2 "--skew: expected a share in (0, 1] or zipf:S" loadtest $ep --skew 2 --adapters a
expect 2 "--skew: expected a share in (0, 1] or zipf:S" loadtest $ep --skew zipf:0 --adapters 4
expect 2 "--adapters: a count must be in" loadtest $ep --adapters 0
expect 2 "--goodput-ttft-ms must be > 0" loadtest $ep --goodput-ttft-ms -1
expect 2 "--timeout must be >= 0.001" loadtest $ep --timeout 0
expect 2 "--duration must be >= 0 and <= 2592000" loadtest $ep --duration 1e12
expect 2 "at most 10000000" loadtest $ep --sweep-concurrency 100000 --per-client 1000
expect 2 "--prompts: cannot read" loadtest $ep --prompts /nonexistent/prompts.txt
expect 2 "--timeout must be >= 0.001 and <= 86400" client --endpoint $ep --prompt hi --timeout -1
expect 2 "--timeout must be >= 0.001 and <= 86400" client --endpoint $ep --prompt hi --timeout 1e300
expect 2 "--max-tokens must be in" client --endpoint $ep --prompt hi --max-tokens 0
expect 2 "top_p" client --endpoint $ep --prompt hi --top-p 0
expect 2 "give either --prompt TEXT or --user TEXT" client --endpoint $ep
expect 2 "--temperature expects a finite number" generate --prompt hi --temperature nan
expect 2 "unknown command" frobnicate
expect 2 "unknown command" frobnicate --help
# generate without --model: the embedded default model, an adapter given as a directory
if [ -f "$(dirname "$0")/../../models/default/config.json" ]; then
  "$bin" generate --prompt "ROMEO:" --max-tokens 2 --quiet \
      --adapter "$(dirname "$0")/../../models/adapters/shakespeare" > /dev/null 2>&1 \
    || { echo "FAIL: generate with the default model and an adapter directory"; failures=$((failures + 1)); }
fi
out=$("$bin" serve --help) || { echo "FAIL: serve --help exit $?"; failures=$((failures + 1)); }
[[ $out == *"--max-seqs"* && $out != *"loadtest"* ]] || { echo "FAIL: serve --help: $out"; failures=$((failures + 1)); }
# Both lists come from the settings tables, with ranges and defaults; node (--join) has the workers'.
[[ $out == *"--max-seqs N"*"(1..4096; default 64)"* && $out == *"--policy round_robin|"* ]] \
  || { echo "FAIL: serve --help lists no settings: $out"; failures=$((failures + 1)); }
out=$("$bin" node --help) || { echo "FAIL: node --help exit $?"; failures=$((failures + 1)); }
[[ $out == *"--max-seqs N"* && $out != *"--policy"* ]] || { echo "FAIL: node --help: $out"; failures=$((failures + 1)); }
# A lone byte of a multi-byte character decodes to U+FFFD, as generate and the server print it.
out=$(echo '[158]' | "$bin" tokenize --decode | od -An -tx1 | tr -d ' \n')
[[ $out == "efbfbd" ]] || { echo "FAIL: tokenize --decode of a lone byte: $out"; failures=$((failures + 1)); }
# The serving program does not link libtorch; its libtorch commands run lorafleet-train beside it,
# and without that program they say so.
if readelf -d "$bin" | grep -Eq 'NEEDED.*(libtorch|libc10)'; then
  echo "FAIL: $bin links libtorch"; failures=$((failures + 1))
fi
lonely=$(mktemp -d); cp "$bin" "$lonely/lorafleet"
err=$("$lonely/lorafleet" make-model --out "$lonely/m" 2>&1); got=$?
[[ $got == 1 && $err == *"lorafleet-train"*"is not built"* ]] \
  || { echo "FAIL: make-model without lorafleet-train: exit $got, $err"; failures=$((failures + 1)); }
rm -rf "$lonely"
expect 2 "--layers expects an integer" make-model --out /nonexistent --layers x
if ((failures)); then echo "$failures failure(s)"; exit 1; fi
echo "cli errors: ok"
