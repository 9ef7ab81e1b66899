# Shared by the HTTP test scripts (sourced): python, free ports, TAP-style "ok" lines, and waiting
# for `lorafleet serve --http` to be ready.
py=/usr/bin/python3; [ -x "$py" ] || py=python3
passed=0
ok() { passed=$((passed + 1)); echo "ok $passed - $1"; }
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# wait_http_ready READY_FILE BASE_URL LOG: until the ready file is written and BASE_URL/ready is
# 200 (at most 30 s); otherwise prints LOG and exits 1.
wait_http_ready() {
  for _ in $(seq 1 120); do
    [ -s "$1" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$2/ready" || true)" = 200 ] && return 0
    sleep 0.25
  done
  cat "$3"; echo "server did not start"; exit 1
}
# serve_tiny CONTEXT KV_MB NAME:SEED...: a tiny random model (2 layers, 64 wide, CONTEXT tokens) at
# $tmp/tiny-gpt2 and a rank-8 adapter per NAME:SEED under $tmp/adapters, served by `$bin serve
# --workers 2 --threads 1` over ZeroMQ and HTTP (log: $tmp/serve.log), with the caller's
# `serve_extra` array appended when it has one; sets zport, hport and pid (the caller's EXIT trap
# kills it) and returns once the server is ready.
serve_tiny() {
  local context=$1 kv=$2 a
  shift 2
  "$bin" make-model --out "$tmp/tiny-gpt2" --layers 2 --heads 4 --embd 64 --context "$context" --seed 1 > /dev/null
  mkdir "$tmp/adapters"
  for a in "$@"; do
    "$bin" make-adapter --base "$tmp/tiny-gpt2" --out "$tmp/adapters/${a%%:*}" --rank 8 --seed "${a#*:}" \
      --init-std 0.5 > /dev/null
  done
  zport=$(free_port); hport=$(free_port)
  "$bin" serve --model "$tmp/tiny-gpt2" --adapters "$tmp/adapters" --workers 2 --threads 1 --kv-cache-mb "$kv" \
    --listen "tcp://127.0.0.1:$zport" --http "127.0.0.1:$hport" --ready-file "$tmp/ready" \
    ${serve_extra[@]+"${serve_extra[@]}"} > "$tmp/serve.log" 2>&1 &
  pid=$!
  wait_http_ready "$tmp/ready" "http://127.0.0.1:$hport" "$tmp/serve.log"
}
