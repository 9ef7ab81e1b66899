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
