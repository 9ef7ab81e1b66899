#!/usr/bin/python3
"""What a resumption costs a client: the pause in its stream when its worker is drained mid-request.

For each prompt length and each way a drain moves a request (`--drain-kv ship`: the drained worker
sends its K/V blocks along and the next worker computes only the last partial block;
`recompute`: the next worker re-prefills prompt + streamed tokens), on a fresh
`lorafleet serve --workers 2 --policy round_robin --drain-kv MODE` the script starts (a drained
worker stays drained until its process restarts): one greedy streaming request alone, drained
(`lorafleet drain worker-1`, where round robin placed it) after `--at` tokens, so it moves to
worker-2, whose cache is cold; then the same request undisturbed, for reference.
Reports the median inter-token gap of the undisturbed run and, per mode, the median over
`--repeat` rounds (modes in turn) of the longest gap after the drain was sent; checks that every
drained text equals the undisturbed one and that done reports usage.resumed == 1; shows the
cached tokens the next worker's admission found (the shipped K/V, with `ship`).

    tools/bench/bench_resume.py --lorafleet build/release/tools/lorafleet --model /tmp/m124 \
        --lengths 128,512,896 --at 16 --max-tokens 120 --repeat 3
"""

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "client", "python"))
from lorafleet_client import Client  # noqa: E402


async def one_request(endpoint, prompt, max_tokens, at, drain_cmd):
    """Streams one greedy request; runs drain_cmd after `at` tokens. Returns (gaps, text, usage)."""
    async with Client(endpoint) as c:
        req = await c.submit(prompt=prompt, max_tokens=max_tokens, temperature=0, ignore_eos=True)
        stamps, text = [], []
        drain = None
        async for delta in req:
            stamps.append(time.perf_counter())
            text.append(delta)
            if drain_cmd and drain is None and len(stamps) == at:
                # Not awaited here: the stream's timestamps keep being taken while it runs.
                drain = asyncio.get_running_loop().run_in_executor(
                    None, lambda: subprocess.run(drain_cmd, check="nobody" not in drain_cmd,
                                                 capture_output=True))
        res = await req.result()
        if drain is not None:
            await drain
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    return gaps, "".join(text), res


def serve(args, port, mode):
    cmd = [args.lorafleet, "serve", "--model", args.model, "--workers", "2", "--threads", "1",
           "--listen", f"tcp://127.0.0.1:{port}", "--log-level", "warn", "--drain-kv", mode,
           "--policy", "round_robin"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        if "serving on" in line:
            break
    return p


def one_round(args, prompt, mode):
    """A fresh server: the drained run, then the undisturbed one. Returns what the table needs.
    Mode "none": `lorafleet drain nobody` (matches no worker), the pause the drain command's own
    start costs on a shared machine, the floor under both others."""
    p = serve(args, args.port, "ship" if mode == "none" else mode)
    try:
        ep = f"tcp://127.0.0.1:{args.port}"
        # Round robin places the first request on worker-1; drained, it moves to worker-2, whose
        # prefix cache is cold. The undisturbed run comes after it (on worker-2, the only one
        # left): greedy, its text does not depend on what that worker has cached.
        drain = [args.lorafleet, "drain", "nobody" if mode == "none" else "worker-1", "--endpoint", ep]
        gaps, text, res = asyncio.run(one_request(ep, prompt, args.max_tokens, args.at, drain))
        ref_gaps, ref_text, _ = asyncio.run(one_request(ep, prompt, args.max_tokens, 0, None))
    finally:
        p.terminate()
        p.wait()
    after = gaps[args.at - 1:]
    pause = max(after)
    # The move happened at the longest gap: prompt + the tokens streamed before it had K/V.
    moved = res.usage.get("prompt_tokens", 0) + args.at + after.index(pause)
    return {"median_gap": statistics.median(ref_gaps), "pause": pause, "moved": moved,
            "same": text == ref_text, "resumed": res.usage.get("resumed", 0),
            "cached": res.usage.get("cached_tokens", 0), "prompt": res.usage.get("prompt_tokens", 0)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lorafleet", default="build/release/tools/lorafleet")
    ap.add_argument("--model", required=True)
    ap.add_argument("--lengths", default="128,512,896")
    ap.add_argument("--at", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--port", type=int, default=5791)
    args = ap.parse_args()
    word = " the quick brown fox jumps over the lazy dog"
    modes = ["none", "recompute", "ship"]
    print("| prompt tokens | tokens at the move, median | median gap ms | longest gap, no move ms | "
          "pause, recompute ms | pause, ship ms | ratio | cached at the next worker (ship) | same text | resumed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in [int(x) for x in args.lengths.split(",")]:
        prompt = (word * (n // 9 + 1)).split(" ")
        prompt = " ".join(prompt[: n + 1])
        rounds = {m: [] for m in modes}
        for _ in range(args.repeat):
            for m in modes:
                rounds[m].append(one_round(args, prompt, m))
        med = {m: statistics.median(r["pause"] for r in rounds[m]) for m in modes}
        every = [r for m in ("recompute", "ship") for r in rounds[m]]
        first = rounds["ship"][0]
        print(f"| {first['prompt']} | {statistics.median(r['moved'] for r in every):.0f} | "
              f"{1e3 * statistics.median(r['median_gap'] for r in every):.1f} | {1e3 * med['none']:.1f} | "
              f"{1e3 * med['recompute']:.1f} | {1e3 * med['ship']:.1f} | {med['recompute'] / med['ship']:.1f}x | "
              f"{statistics.median(r['cached'] for r in rounds['ship']):.0f} | "
              f"{sum(r['same'] for r in every)} of {len(every)} | "
              f"{sorted(set(r['resumed'] for r in every))} |", flush=True)


if __name__ == "__main__":
    main()
