#!/usr/bin/python3
"""The course's asyncio demo against a lorafleet cluster: three chat questions with a pirate system
prompt, fired concurrently with different max_tokens; prints each answer and its duration.

    client/python/examples/pirate_chat.py [--endpoint tcp://127.0.0.1:5555] [--adapter NAME]
"""
import argparse
import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from lorafleet_client import Client, LorafleetError  # noqa: E402

SYSTEM = "You are a friendly pirate. Answer every question the way a pirate would talk."
QUESTIONS = [("What is the capital of France?", 24),
             ("Tell me about the sea.", 48),
             ("How do I find buried treasure?", 96)]


async def ask(client, question, max_tokens, adapter, t0):
    start = time.perf_counter()
    try:
        res = await client.generate(messages=[{"role": "system", "content": SYSTEM},
                                              {"role": "user", "content": question}],
                                    max_tokens=max_tokens, temperature=0.8, top_p=0.95, seed=7,
                                    adapter=adapter)
        answer = res.text.strip()
        tail = f"{res.usage.get('completion_tokens', 0)} tokens, {res.finish_reason}"
    except LorafleetError as e:
        answer, tail = f"[error {e.code}: {e.message}]", "failed"
    took = time.perf_counter() - start
    print(f"\n--- {question} (max_tokens {max_tokens}): {took:.2f} s, {tail}, "
          f"done at +{time.perf_counter() - t0:.2f} s\n{answer}", flush=True)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--endpoint", default="tcp://127.0.0.1:5555")
    ap.add_argument("--adapter", default=None)
    a = ap.parse_args()
    async with Client(a.endpoint, timeout=300) as client:
        t0 = time.perf_counter()
        await asyncio.gather(*(ask(client, q, n, a.adapter, t0) for q, n in QUESTIONS))
        print(f"\nall three answered in {time.perf_counter() - t0:.2f} s (concurrently)")


if __name__ == "__main__":
    asyncio.run(main())
