#!/usr/bin/env python3
"""`lorafleet serve` against llama-server on the same weights and cores, through the same HTTP
load tester, in turn.

Each round starts `lorafleet serve --model M --http` (its defaults otherwise), drives it with
`lorafleet loadtest http://...` (closed loop, N concurrent streams, prompt / output lengths, EOS
ignored), stops it, then does the same with llama-server for each GGUF type. Reported: output
tokens/s, TTFT and TPOT p50, the server's peak RSS (VmHWM), and lorafleet / llama-server per
round (medians of the rounds).

    tools/bench/bench_serve_vs_llama.py --model M124 --gguf-prefix /path/gpt2-124m --llama-bin /path/bin
        [--lorafleet build/release/tools/lorafleet] [--types q8_0,f16,f32] [--rounds 3]
        [--concurrency 32] [--requests 64] [--input 128] [--output 128] [--json out.json]

Only loopback addresses are used (ports 18000 and 18090).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def wait_http(url, proc, seconds=120):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit(f"bench_serve_vs_llama: the server exited ({proc.returncode}) before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.5)
    sys.exit(f"bench_serve_vs_llama: {url} did not answer within {seconds} s")


def peak_rss_mb(pid):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def drive(args, url):
    with tempfile.TemporaryDirectory() as d:
        cmd = [args.lorafleet, "loadtest", url, "--concurrency", str(args.concurrency), "--requests",
               str(args.requests), "--input", str(args.input), "--output", str(args.output), "--out", f"{d}/lt",
               "--timeout", str(args.timeout)]
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if out.returncode != 0:
            sys.exit(f"bench_serve_vs_llama: loadtest failed:\n{out.stdout[-3000:]}")
        p = json.load(open(f"{d}/lt.json"))["points"][0]
    return {"tok_s": p["output_tokens_per_s"], "ttft_p50_ms": p["ttft_ms"]["p50"], "tpot_p50_ms": p["tpot_ms"]["p50"],
            "completed": p["completed"], "failed": p["failed"], "lost": p["lost"],
            "stale_retries": p.get("stale_connection_retries", 0)}


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_server(args, cmd, base, ready_path):
    """Starts `cmd`, waits for base + ready_path, drives it, stops it; adds its peak RSS."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(base + ready_path, proc)
        r = drive(args, base)
        r["peak_rss_mb"] = peak_rss_mb(proc.pid)
    finally:
        stop(proc)
    return r


def run_lorafleet(args):
    return run_server(args, [args.lorafleet, "serve", "--model", args.model, "--http", "127.0.0.1:18000",
                             "--listen", "tcp://127.0.0.1:18555", "--log-level", "warn"],
                      "http://127.0.0.1:18000", "/ready")


def run_llama(args, t):
    return run_server(args, [f"{args.llama_bin}/llama-server", "-m", f"{args.gguf_prefix}-{t}.gguf",
                             "-np", str(args.concurrency), "-c", str(1024 * args.concurrency), "-fa", "on",
                             "-t", "2", "-tb", "2", "--host", "127.0.0.1", "--port", "18090"],
                      "http://127.0.0.1:18090", "/health")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--gguf-prefix", required=True)
    p.add_argument("--llama-bin", required=True)
    p.add_argument("--lorafleet", default="build/release/tools/lorafleet")
    p.add_argument("--types", default="q8_0,f16,f32")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--requests", type=int, default=64)
    p.add_argument("--input", type=int, default=128)
    p.add_argument("--output", type=int, default=128)
    p.add_argument("--timeout", type=int, default=120,
                   help="seconds a load test may run (a slow server on a big model needs more)")
    p.add_argument("--json", default="")
    args = p.parse_args()
    types = args.types.split(",")
    runs = {"lorafleet": [], **{t: [] for t in types}}
    for r in range(args.rounds):
        runs["lorafleet"].append(run_lorafleet(args))
        print(f"round {r + 1}: lorafleet {runs['lorafleet'][-1]}", file=sys.stderr, flush=True)
        for t in types:
            runs[t].append(run_llama(args, t))
            print(f"round {r + 1}: llama-server {t} {runs[t][-1]}", file=sys.stderr, flush=True)
    print(f"{args.concurrency} streams, {args.requests} requests, {args.input} in / {args.output} out, "
          f"EOS ignored; medians of {args.rounds} rounds")
    print("| server | output tok/s | TTFT p50 | TPOT p50 | peak RSS | lorafleet / this |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, rs in runs.items():
        med = {k: statistics.median(x[k] for x in rs) for k in ("tok_s", "ttft_p50_ms", "tpot_p50_ms", "peak_rss_mb")}
        ratio = statistics.median(a["tok_s"] / b["tok_s"] for a, b in zip(runs["lorafleet"], rs))
        label = "lorafleet serve (defaults)" if name == "lorafleet" else f"llama-server {name}"
        print(f"| {label} | {med['tok_s']:.1f} | {med['ttft_p50_ms']:.0f} ms | {med['tpot_p50_ms']:.1f} ms | "
              f"{med['peak_rss_mb'] / 1024:.2f} GB | {ratio:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
