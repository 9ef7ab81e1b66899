#!/usr/bin/python3
"""Load for the no-single-point-of-failure test (ha_failover.sh): STREAMS concurrent requests in a
closed loop, half over ZeroMQ (the asyncio client library, each client given every gateway so it
moves its streams when one is lost) and half over HTTP (OpenAI's streaming /v1/completions),
spread over the gateways given, greedy and seeded, 24-64 tokens, until STOP_FILE
appears; the ones in flight then finish. Every request, its text or error and the longest gap
between two of its streamed pieces, goes to OUT (JSON). Requests that were in flight at a time
listed in MARKS_FILE (one line per fault: epoch seconds, then what happened) report their longest
gap: the pause a client sees, as p50 / p99 / max per fault.

With --replay, sends every request of OUT again on a calm cluster (the same protocol) and fails
when any text differs.

Usage: ha_load.py ZMQ_EP[,ZMQ_EP] HTTP_URL[,HTTP_URL] OUT STOP_FILE MARKS_FILE [--streams N] [--http-only] [--model NAME]
       ha_load.py ZMQ_EP[,...] HTTP_URL[,...] OUT --replay"""
import asyncio
import http.client
import json
import os
import random
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../client/python"))
from lorafleet_client import Client, LorafleetError  # noqa: E402

PROMPTS = ["Once upon a time", "The router fell", "Two gateways", "In the beginning", "No single point"]


HTTP_ONLY = "--http-only" in sys.argv
MODEL = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else "default"  # the API's model name


def make_request(i):
    rnd = random.Random(i)
    r = {"i": i, "proto": "zmq" if i % 2 == 0 and not HTTP_ONLY else "http", "prompt": PROMPTS[i % len(PROMPTS)] + f" ({i})",
         "max_tokens": rnd.randint(24, 64)}
    if i % 4 in (1, 2):
        r.update(temperature=0.9, seed=1000 + i)
    else:
        r.update(temperature=0.0)
    return r


def gen_params(r):
    return {k: r[k] for k in ("max_tokens", "temperature", "seed") if k in r}


async def run_zmq(c, r):
    t0 = last = time.time()
    gap = 0.0
    try:
        req = await c.submit(r["prompt"], ignore_eos=True, **gen_params(r))
        async for _ in req:
            now = time.time()
            gap, last = max(gap, now - last), now
        res = await req.result()
        r["text"] = res.text
        r["resumed"] = res.usage.get("resumed", 0)
    except LorafleetError as e:
        r["error"] = f"{e.code}: {e.message}"
    r.update(start=t0, end=time.time(), gap=gap)
    return r


def run_http(url, r):
    """One streaming completion over a fresh connection (blocking: runs in a thread)."""
    u = urllib.parse.urlparse(url)
    t0 = last = time.time()
    gap = 0.0
    body = dict(model=MODEL, prompt=r["prompt"], stream=True, ignore_eos=True, **gen_params(r))
    text, finish = [], None
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            r["error"] = f"http {resp.status}: {resp.read()[:200]!r}"
        else:
            for line in resp:
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    break
                ev = json.loads(data)
                if "error" in ev:
                    r["error"] = f"stream error: {ev['error']}"
                    break
                now = time.time()
                gap, last = max(gap, now - last), now
                ch = ev["choices"][0]
                text.append(ch.get("text", ""))
                finish = ch.get("finish_reason") or finish
            if "error" not in r:
                if finish is None:
                    r["error"] = "stream ended without a finish_reason"
                else:
                    r["text"] = "".join(text)
        conn.close()
    except Exception as e:  # noqa: BLE001 - any transport failure is a lost request here
        r["error"] = f"http transport: {e!r}"
    r.update(start=t0, end=time.time(), gap=gap)
    return r


async def one(clients, urls, r):
    if r["proto"] == "zmq":
        return await run_zmq(clients[r["i"] // 2 % len(clients)], r)
    url = urls[r["i"] // 2 % len(urls)]
    return await asyncio.get_running_loop().run_in_executor(None, run_http, url, r)


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))] if xs else 0.0


async def load(zmqs, urls, out, stop_file, marks_file, streams):
    done = []
    counter = iter(range(10**9))
    asyncio.get_running_loop().set_default_executor(__import__("concurrent.futures").futures.ThreadPoolExecutor(streams))
    # Each client knows every gateway, starting from a different one: a lost gateway's streams
    # move to the next (heartbeats every 0.5 s).
    clients = [] if HTTP_ONLY else [Client(zmqs[k:] + zmqs[:k], timeout=300, heartbeat=0.5) for k in range(len(zmqs))]
    for c in clients:
        await c.__aenter__()
    try:
        async def lane():
            while not os.path.exists(stop_file):
                done.append(await one(clients, urls, make_request(next(counter))))
        await asyncio.gather(*(lane() for _ in range(streams)))
    finally:
        for c in clients:
            await c.__aexit__(None, None, None)
    with open(out, "w") as f:
        json.dump(done, f)
    errors = [r for r in done if "error" in r]
    marks = []  # (epoch seconds, what happened)
    if os.path.exists(marks_file):
        for line in open(marks_file).read().splitlines():
            if line.strip():
                t, _, what = line.strip().partition(" ")
                marks.append((float(t), what or "fault"))
    by = {p: sum(1 for r in done if r["proto"] == p) for p in ("zmq", "http")}
    print(f"load: {len(done)} requests ({by['zmq']} ZeroMQ, {by['http']} HTTP), {len(errors)} errors, "
          f"{sum(1 for r in done if r.get('resumed'))} resumed or continued (ZeroMQ's count), "
          f"{sum(c.continuations for c in clients)} moved by clients to another gateway")
    for m, what in marks:
        hit = [r["gap"] for r in done if "error" not in r and r["start"] < m < r["end"]]
        if hit:
            print(f"pause at {what}: {len(hit)} requests in flight; longest gap between pieces "
                  f"p50 {percentile(hit, 50) * 1000:.0f} ms, p99 {percentile(hit, 99) * 1000:.0f} ms, "
                  f"max {max(hit) * 1000:.0f} ms")
    for r in errors[:10]:
        print("  error:", r["i"], r["proto"], r["error"])
    return 0 if not errors else 1


async def replay(zmqs, urls, out):
    with open(out) as f:
        done = json.load(f)
    bad = 0
    async with Client(zmqs[0], timeout=300) as c:
        sem = asyncio.Semaphore(8)

        async def again(r):
            nonlocal bad
            async with sem:
                fresh = {k: r[k] for k in ("i", "proto", "prompt", "max_tokens", "temperature", "seed") if k in r}
                if fresh["proto"] == "zmq":
                    fresh = await run_zmq(c, fresh)
                else:
                    fresh = await asyncio.get_running_loop().run_in_executor(None, run_http, urls[0], fresh)
            if fresh.get("text") != r.get("text"):
                bad += 1
                if bad <= 5:
                    print(f"  differs: request {r['i']} over {r['proto']}:\n"
                          f"    under faults: {r.get('text')!r}\n    calm:         {fresh.get('text')!r}")
        await asyncio.gather(*(again(r) for r in done))
    print(f"replay: {len(done)} requests, {bad} differ")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    a = sys.argv[1:]
    zmq_eps, http_urls = a[0].split(","), a[1].split(",")
    if "--replay" in a:
        sys.exit(asyncio.run(replay(zmq_eps, http_urls, a[2])))
    n = int(a[a.index("--streams") + 1]) if "--streams" in a else 64
    sys.exit(asyncio.run(load(zmq_eps, http_urls, a[2], a[3], a[4], n)))
