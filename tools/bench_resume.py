#!/usr/bin/python3
"""What a resumption costs a client: the pause in its stream when its worker is drained mid-request.

Against a running server with two workers (`lorafleet serve --workers 2 ...`), for each prompt
length: one greedy streaming request alone; after `--at` tokens, `lorafleet drain worker-1` moves
it (it was placed on worker-1, the first of two idle workers) to worker-2, which re-prefills prompt
+ streamed tokens and continues. Reports the median inter-token gap of an undisturbed run, the
longest gap after the drain was sent, and checks that the text equals the undisturbed run's and
that done reports usage.resumed == 1. Each length runs on a fresh `serve` the script starts (a
drained worker stays drained until its process restarts).

    tools/bench_resume.py --lorafleet build/release/tools/lorafleet --model /tmp/m124 \
        --lengths 128,512,896 --at 32 --max-tokens 96
"""

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "client", "python"))
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
                    None, lambda: subprocess.run(drain_cmd, check=True, capture_output=True))
        res = await req.result()
        if drain is not None:
            await drain
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    return gaps, "".join(text), res


def serve(args, port):
    cmd = [args.lorafleet, "serve", "--model", args.model, "--workers", "2", "--threads", "1",
           "--listen", f"tcp://127.0.0.1:{port}", "--log-level", "warn"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        if "serving on" in line:
            break
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lorafleet", default="build/release/tools/lorafleet")
    ap.add_argument("--model", required=True)
    ap.add_argument("--lengths", default="128,512,896")
    ap.add_argument("--at", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--port", type=int, default=5791)
    args = ap.parse_args()
    word = " the quick brown fox jumps over the lazy dog"
    print("| prompt tokens | tokens re-prefilled | median gap ms | longest gap after the drain ms | same text | resumed |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in [int(x) for x in args.lengths.split(",")]:
        prompt = (word * (n // 9 + 1)).split(" ")
        prompt = " ".join(prompt[: n + 1])
        p = serve(args, args.port)
        try:
            ep = f"tcp://127.0.0.1:{args.port}"
            ref_gaps, ref_text, _ = asyncio.run(one_request(ep, prompt, args.max_tokens, 0, None))
            drain = [args.lorafleet, "drain", "worker-1", "--endpoint", ep]
            gaps, text, res = asyncio.run(one_request(ep, prompt, args.max_tokens, args.at, drain))
        finally:
            p.terminate()
            p.wait()
        move = max(gaps[args.at - 1:])
        print(f"| {res.usage.get('prompt_tokens')} | {res.usage.get('prompt_tokens', 0) + args.at} | "
              f"{1e3 * statistics.median(ref_gaps):.1f} | {1e3 * move:.1f} | {text == ref_text} | "
              f"{res.usage.get('resumed', 0)} |", flush=True)


if __name__ == "__main__":
    main()
