#!/usr/bin/python3
"""Does a client that stops reading hurt the others? Credit-based streaming, measured.

For each mode, on a fresh `lorafleet serve` the script starts: a stalled client opens
`--stalled` long streaming requests (max_tokens `--stalled-max-tokens`, ignore_eos) and never
reads them; then `lorafleet loadtest` runs `--concurrency` normal clients (closed loop) and the
script records their output throughput, the server's RSS before and after, and how many requests
the workers hold paused. Modes, in turn within each of `--rounds` rounds (medians reported):

  none    no stalled client: the reference
  credit  the stalled client is the Python client with `window` (`--window` tokens) that never
          iterates its streams: the server stops each at its window and pauses it (off the batch)
  raw     a bare DEALER socket that sends the same submits without a window and never receives:
          the old way, its streams run on in the batch to max_tokens

    tools/bench/bench_credit.py --model /tmp/m124 --rounds 3
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

import msgpack
import zmq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
from lorafleet_client import Client  # noqa: E402

PROMPT = "Once upon a time there was a server that never stopped talking to a client"


def stalled_client(endpoint, mode, n, max_tokens, window):
    """Runs until killed: opens n streams and never reads them."""
    if mode == "raw":
        ctx = zmq.Context.instance()
        s = ctx.socket(zmq.DEALER)
        s.connect(endpoint)
        for i in range(n):
            s.send(msgpack.packb({"v": 1, "type": "submit", "id": i + 1, "prompt": PROMPT,
                                  "max_tokens": max_tokens, "temperature": 0.0, "ignore_eos": True}))
        while True:
            time.sleep(3600)

    async def hold():
        async with Client(endpoint) as c:
            reqs = [await c.submit(prompt=PROMPT, max_tokens=max_tokens, temperature=0, ignore_eos=True,
                                   window=window) for _ in range(n)]
            await asyncio.sleep(3600)
            return reqs
    asyncio.run(hold())


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def paused_and_running(endpoint):
    async with Client(endpoint) as c:
        s = await c.stats()
    pick = lambda suffix: int(sum(v for k, v in s.items() if k.startswith("worker.") and k.endswith(suffix)))
    return pick(".paused"), pick(".running")


def one_run(args, mode):
    ep = f"tcp://127.0.0.1:{args.port}"
    serve = subprocess.Popen([args.lorafleet, "serve", "--model", args.model, "--listen", ep, "--log-level", "warn"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stalled = None
    try:
        for line in serve.stdout:
            if "serving on" in line:
                break
        if mode != "none":
            stalled = subprocess.Popen([sys.executable, __file__, "--stalled-client", mode, "--endpoint", ep,
                                        "--stalled", str(args.stalled), "--stalled-max-tokens",
                                        str(args.stalled_max_tokens), "--window", str(args.window)])
            time.sleep(1.0)  # admitted, and (credit) stopped at their windows
        before = rss_kb(serve.pid)
        out = f"/tmp/bench_credit_{os.getpid()}"
        subprocess.run([args.lorafleet, "loadtest", ep, "--concurrency", str(args.concurrency), "--requests",
                        str(args.requests), "--input", str(args.input), "--output", str(args.output),
                        "--quiet", "--out", out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = rss_kb(serve.pid)
        paused, running = asyncio.run(paused_and_running(ep))
        with open(out + ".json") as f:
            point = json.load(f)["points"][0]
        return {"tok_s": point["output_tokens_per_s"], "completed": point["completed"],
                "rss_before_mb": before / 1024, "rss_growth_mb": (after - before) / 1024,
                "paused": paused, "running_after": running}
    finally:
        if stalled:
            stalled.kill()
            stalled.wait()
        serve.terminate()
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()


def write_svg(path, tok_s, args):
    """Bars: the median of each mode, dots: each round."""
    labels = {"none": "no stalled client", "credit": f"stalled, window {args.window}",
              "raw": "stalled, no window"}
    top = max(max(v) for v in tok_s.values()) * 1.15
    w, h, left, base, bar = 520, 300, 70, 250, 90
    y = lambda v: base - (base - 30) * v / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<text x="{w / 2}" y="18" text-anchor="middle">the {args.concurrency} other clients\' output tok/s '
           f'({args.stalled} stalled streams)</text>',
           f'<line x1="{left}" y1="{base}" x2="{w - 10}" y2="{base}" stroke="black"/>']
    for i in range(5):
        v = top * i / 4
        out.append(f'<text x="{left - 6}" y="{y(v) + 4:.0f}" text-anchor="end">{v:.0f}</text>')
        out.append(f'<line x1="{left}" y1="{y(v):.0f}" x2="{w - 10}" y2="{y(v):.0f}" stroke="#ddd"/>')
    for k, (m, vals) in enumerate(tok_s.items()):
        x = left + 30 + k * (bar + 60)
        med = statistics.median(vals)
        color = {"none": "#888", "credit": "#2a7", "raw": "#c44"}[m]
        out.append(f'<rect x="{x}" y="{y(med):.0f}" width="{bar}" height="{base - y(med):.0f}" fill="{color}"/>')
        for v in vals:
            out.append(f'<circle cx="{x + bar / 2}" cy="{y(v):.1f}" r="3" fill="black"/>')
        out.append(f'<text x="{x + bar / 2}" y="{base + 16}" text-anchor="middle">{labels[m]}</text>')
        out.append(f'<text x="{x + bar / 2}" y="{y(med) - 6:.0f}" text-anchor="middle">{med:.0f}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lorafleet", default="build/release/tools/lorafleet")
    ap.add_argument("--model", default="")
    ap.add_argument("--port", type=int, default=5796)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stalled", type=int, default=8)
    ap.add_argument("--stalled-max-tokens", type=int, default=900)
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--requests", type=int, default=96)
    ap.add_argument("--input", type=int, default=32)
    ap.add_argument("--output", type=int, default=32)
    ap.add_argument("--svg", default="", help="also draw the others' throughput per mode (SVG)")
    ap.add_argument("--stalled-client", default="")
    ap.add_argument("--endpoint", default="")
    args = ap.parse_args()
    if args.stalled_client:
        return stalled_client(args.endpoint, args.stalled_client, args.stalled, args.stalled_max_tokens, args.window)
    modes = ["none", "credit", "raw"]
    runs = {m: [] for m in modes}
    for r in range(args.rounds):
        for m in modes:
            runs[m].append(one_run(args, m))
            print(f"round {r + 1} {m}: {runs[m][-1]}", file=sys.stderr, flush=True)
    ref = statistics.median(x["tok_s"] for x in runs["none"])
    if args.svg:
        write_svg(args.svg, {m: [x["tok_s"] for x in runs[m]] for m in modes}, args)
    print("| stalled client | others' output tok/s (median) | vs none | completed | server RSS growth MB | "
          "paused after | running after |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for m in modes:
        med = statistics.median(x["tok_s"] for x in runs[m])
        print(f"| {m} | {med:.1f} | {100 * (med / ref - 1):+.1f}% | "
              f"{min(x['completed'] for x in runs[m])} of {args.requests} | "
              f"{statistics.median(x['rss_growth_mb'] for x in runs[m]):.1f} | "
              f"{statistics.median(x['paused'] for x in runs[m]):.0f} | "
              f"{statistics.median(x['running_after'] for x in runs[m]):.0f} |", flush=True)


if __name__ == "__main__":
    main()
