#!/usr/bin/python3
"""The README's main job: fire concurrent requests at a running lorafleet cluster - different
prompts, adapters and max_tokens at once - stream them, and print each answer with its latency and
the total throughput.

    client/python/examples/demo.py [--endpoint tcp://127.0.0.1:5555] [--adapters a,b,c]
"""
import argparse
import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lorafleet_client import Client, LorafleetError  # noqa: E402

PROMPTS = [
    ("base", None, "The old ship sailed into the harbour, and", 48),
    ("shakespeare", "shakespeare", "ROMEO:\nWhat light is this upon the", 64),
    ("bible", "bible", "And the LORD spake unto Moses, saying,", 56),
    ("fortunes", "fortunes", "You will", 32),
    ("base", None, "Once upon a time, in a land far away,", 64),
    ("shakespeare", "shakespeare", "KING HENRY:\nNow, lords,", 40),
]


async def one(client, label, adapter, prompt, max_tokens, t0, out):
    start = time.perf_counter()
    first = None
    text = []
    try:
        req = await client.submit(prompt=prompt, adapter=adapter, max_tokens=max_tokens,
                                  temperature=0.8, top_p=0.95, seed=11, repetition_penalty=1.1)
        async for delta in req:
            if first is None:
                first = time.perf_counter() - start
            text.append(delta)
        res = await req.result()
        n = res.usage.get("completion_tokens", 0)
        status = f"{n} tokens, {res.finish_reason}"
    except LorafleetError as e:
        n, status = 0, f"error {e.code}: {e.message}"
    took = time.perf_counter() - start
    out.append(n)
    ttft = f"{first * 1000:.0f} ms" if first is not None else "-"
    print(f"\n=== [{label}] {status}; first token {ttft}, total {took:.2f} s "
          f"(done at +{time.perf_counter() - t0:.2f} s)\n{prompt}{''.join(text)}", flush=True)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", default="tcp://127.0.0.1:5555")
    ap.add_argument("--adapters", default="", help="adapters the cluster serves (comma-separated)")
    a = ap.parse_args()
    served = set(x for x in a.adapters.split(",") if x)
    jobs = [(lbl if (ad is None or ad in served) else f"{lbl}: base, adapter not served",
             ad if ad in served else None, p, n) for lbl, ad, p, n in PROMPTS]
    async with Client(a.endpoint, timeout=600) as c:
        print(f"lorafleet demo: {len(jobs)} concurrent requests to {a.endpoint} "
              f"(adapters: {', '.join(sorted(served)) or 'none'})", flush=True)
        t0 = time.perf_counter()
        counts = []
        await asyncio.gather(*(one(c, *j, t0, counts) for j in jobs))
        wall = time.perf_counter() - t0
        print(f"\nall {len(jobs)} requests done in {wall:.2f} s: {sum(counts)} tokens, "
              f"{sum(counts) / wall:.1f} tokens/s in total")
        stats = await c.stats()
        workers = int(stats.get("router.workers", 0))
        print(f"cluster: {workers} workers, {int(stats.get('router.completed', 0))} requests completed")


if __name__ == "__main__":
    asyncio.run(main())
