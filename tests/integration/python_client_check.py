#!/usr/bin/python3
"""Checks the Python asyncio client against a running cluster: concurrent streams, one terminal
each, cancellation, error replies, stats. Usage: python_client_check.py ENDPOINT"""
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../client/python"))
from lorafleet_client import Cancelled, Client, LorafleetError  # noqa: E402


async def main(endpoint):
    async with Client(endpoint, timeout=120) as c:
        assert await c.ping() < 5
        # 40 concurrent greedy requests: streamed text == final text; same prompt, same text.
        reqs = [await c.submit(prompt=f"Story number {i % 4}:", max_tokens=10, temperature=0,
                               ignore_eos=True) for i in range(40)]

        async def collect(r):
            parts = [d async for d in r]
            res = await r.result()
            assert "".join(parts) == res.text, (parts, res.text)
            assert res.usage["completion_tokens"] == 10, res.usage
            return res.text
        texts = await asyncio.gather(*(collect(r) for r in reqs))
        for i, t in enumerate(texts):
            assert t == texts[i % 4], (i, t, texts[i % 4])
        # Cancel mid-stream.
        r = await c.submit(prompt="A long tale", max_tokens=200, ignore_eos=True)
        async for _ in r:
            await r.cancel()
            break
        try:
            await r.result()
            raise AssertionError("expected Cancelled")
        except Cancelled:
            pass
        # Error replies name the problem.
        for kw, code in [(dict(prompt="x", adapter="../etc"), "invalid_request"),
                         (dict(prompt="x", temperature=-1.0), "invalid_request"),
                         (dict(prompt="x", max_tokens=0), "invalid_request"),
                         (dict(prompt=""), "invalid_request"),
                         (dict(prompt="x", adapter="nope"), "unknown_adapter")]:
            try:
                await c.generate(**kw)
                raise AssertionError(f"expected {code} for {kw}")
            except LorafleetError as e:
                assert e.code == code, (kw, e.code, e.message)
        stats = await c.stats()
        assert stats["router.workers"] >= 1, stats
    print("python client: ok")


asyncio.run(main(sys.argv[1]))
