#!/usr/bin/python3
"""Load for the elastic-membership test (node_join.sh): a closed loop of STREAMS concurrent
requests (greedy and seeded, 24-64 tokens) until STOP_FILE appears, then the ones in flight finish;
every request, its result or its error, goes to OUT (JSON). With --replay, sends every request of
OUT again, a few at a time, on a calm cluster and fails when any text differs.

Usage: join_load.py ENDPOINT OUT STOP_FILE [--streams N]
       join_load.py ENDPOINT OUT --replay"""
import asyncio
import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../client/python"))
from lorafleet_client import Client, LorafleetError  # noqa: E402

PROMPTS = ["Once upon a time", "The cluster grew", "A pod named", "In the beginning", "Scale out, then in"]


def make_request(i):
    rnd = random.Random(i)
    r = {"i": i, "prompt": PROMPTS[i % len(PROMPTS)] + f" ({i})", "max_tokens": rnd.randint(24, 64),
         "ignore_eos": True}
    if i % 2:
        r.update(temperature=0.9, seed=1000 + i)
    else:
        r.update(temperature=0.0)
    return r


def params(r):
    return {k: v for k, v in r.items() if k not in ("i", "text", "error", "resumed")}


async def run(c, r):
    try:
        res = await c.generate(r["prompt"], **{k: v for k, v in params(r).items() if k != "prompt"})
        r["text"] = res.text
        r["resumed"] = res.usage.get("resumed", 0)
    except LorafleetError as e:
        r["error"] = f"{e.code}: {e.message}"
    return r


async def load(endpoint, out, stop_file, streams):
    done = []
    counter = iter(range(10**9))
    async with Client(endpoint, timeout=300) as c:
        async def lane():
            while not os.path.exists(stop_file):
                done.append(await run(c, make_request(next(counter))))
        await asyncio.gather(*(lane() for _ in range(streams)))
    with open(out, "w") as f:
        json.dump(done, f)
    errors = [r for r in done if "error" in r]
    print(f"load: {len(done)} requests, {len(errors)} errors, "
          f"{sum(1 for r in done if r.get('resumed'))} resumed")
    for r in errors[:10]:
        print("  error:", r["i"], r["error"])
    return 0 if not errors else 1


async def replay(endpoint, out):
    with open(out) as f:
        done = json.load(f)
    bad = 0
    async with Client(endpoint, timeout=300) as c:
        sem = asyncio.Semaphore(8)

        async def one(r):
            nonlocal bad
            async with sem:
                again = await run(c, dict(params(r), i=r["i"]))
            if again.get("text") != r.get("text"):
                bad += 1
                if bad <= 5:
                    print(f"  differs: request {r['i']} (resumed {r.get('resumed')}):\n"
                          f"    under faults: {r.get('text')!r}\n    calm:         {again.get('text')!r}")
        await asyncio.gather(*(one(r) for r in done))
    print(f"replay: {len(done)} requests, {bad} differ")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    a = sys.argv[1:]
    if "--replay" in a:
        sys.exit(asyncio.run(replay(a[0], a[1])))
    streams = int(a[a.index("--streams") + 1]) if "--streams" in a else 64
    sys.exit(asyncio.run(load(a[0], a[1], a[2], streams)))
