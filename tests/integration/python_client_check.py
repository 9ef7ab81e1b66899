#!/usr/bin/python3
"""Checks the Python asyncio client against a running cluster: concurrent streams, one terminal
each, cancellation, error replies, frames the gateway's decoder refuses, stats.
Usage: python_client_check.py ENDPOINT [ADAPTER_DIR (inside the server's adapter roots)]"""
import asyncio
import json
import re
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../client/python"))
from lorafleet_client import Cancelled, Client, LorafleetError  # noqa: E402


async def main(endpoint, adapter_path=None):
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
                         (dict(prompt="x", adapter="nope"), "unknown_adapter"),
                         (dict(prompt="x", tenant="t" * 65), "invalid_request")]:
            try:
                await c.generate(**kw)
                raise AssertionError(f"expected {code} for {kw}")
            except LorafleetError as e:
                assert e.code == code, (kw, e.code, e.message)
        stats = await c.stats()
        assert stats["router.workers"] >= 1, stats
        # A sampled request without a seed reports the one it got; asking again with it gives
        # the same text.
        first = await c.generate(prompt="Once upon a time", max_tokens=12, temperature=1.0)
        assert first.seed != 0 and first.usage.get("resumed") == 0, (first.seed, first.usage)
        again = await c.generate(prompt="Once upon a time", max_tokens=12, temperature=1.0, seed=first.seed)
        assert again.text == first.text and again.seed == first.seed, (first, again)
        # A tenant, and the client's default tenant, are accepted like any request.
        assert (await c.generate(prompt="Hi", max_tokens=3, tenant="team-a", deadline_ms=60000,
                                 ttft_ms=30000)).usage["completion_tokens"] >= 1
        async with Client(endpoint, timeout=60, tenant="team-b") as b:
            assert (await b.generate(prompt="Hi", max_tokens=3)).usage["completion_tokens"] >= 1
        # Draining a name no worker has drains nothing.
        assert await c.drain("no-such-node") == {"workers": 0, "moved": 0}
        # Undrain: nothing is drained, so nothing is put back (the round trip of the message).
        assert await c.undrain("no-such-node") == {"workers": 0}
        await structured(c)
        if adapter_path:
            await registry(c, adapter_path)
        await credits(c)
        await logprobs_and_bias(c)
    await refused_frames_fail_at_once(endpoint)
    print("python client: ok")


async def structured(c):
    """Structured output through the Python client: choice, regex, a JSON schema; a bad one is
    refused at the gateway."""
    r = await c.generate(prompt="Sentiment:", max_tokens=16, temperature=0, choice=["good", "bad"])
    assert r.text in ("good", "bad"), r.text
    r = await c.generate(prompt="Code:", max_tokens=16, temperature=1.0, seed=4, regex="[A-Z]{3}-[0-9]{2}")
    assert re.fullmatch("[A-Z]{3}-[0-9]{2}", r.text), r.text
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"enum": [1, 2]}},
              "required": ["ok", "n"], "additionalProperties": False}
    r = await c.generate(prompt="JSON:", max_tokens=64, temperature=0, json_schema=schema)
    v = json.loads(r.text)
    assert isinstance(v["ok"], bool) and v["n"] in (1, 2) and set(v) == {"ok", "n"}, r.text
    try:
        await c.generate(prompt="x", regex="a(")
        raise AssertionError("expected invalid_request for a bad regex")
    except LorafleetError as e:
        assert e.code == "invalid_request" and "regex" in e.message, (e.code, e.message)


async def registry(c, path):
    """The adapter registry: add, use, list, remove, and a refusal."""
    added = await c.adapters("add", "tone", path)
    assert added["adapters"][0]["version"] == 1 and added["seq"] >= 1, added
    assert (await c.generate(prompt="Hi", max_tokens=3, adapter="tone")).usage["completion_tokens"] >= 1
    listed = await c.adapters()
    assert [a["name"] for a in listed["adapters"]] == ["tone"], listed
    assert (await c.adapters("remove", "tone"))["adapters"][0]["removed"] is True
    try:
        await c.generate(prompt="Hi", max_tokens=3, adapter="tone")
        raise AssertionError("a removed adapter was served")
    except LorafleetError as e:
        assert e.code == "unknown_adapter", e
    try:
        await c.adapters("add", "x", "/etc")
        raise AssertionError("an adapter outside the roots was added")
    except LorafleetError as e:
        assert e.code == "invalid_request" and "outside the allowed roots" in e.message, e


def paused(stats):
    return sum(v for k, v in stats.items() if k.startswith("worker.") and k.endswith(".paused"))


async def credits(c):
    """A window: iterating grants credits; a reader that stops holds the request at its window,
    off the batch, until it reads on; result() alone consumes (and grants) for the caller."""
    want = await c.generate(prompt="Once upon a time", max_tokens=30, temperature=0, ignore_eos=True)
    r = await c.submit(prompt="Once upon a time", max_tokens=30, temperature=0, ignore_eos=True, window=4)
    parts = []
    async for d in r:
        parts.append(d)
        if len(parts) == 2:
            # Stop reading for a while: the server stops at the window and pauses the request.
            for _ in range(300):
                if paused(await c.stats()) == 1:
                    break
                await asyncio.sleep(0.01)
            assert paused(await c.stats()) == 1, await c.stats()
            assert len(r._tokens) == 4, r._tokens  # the window, not one token more
    res = await r.result()
    assert "".join(parts) == res.text == want.text, (parts, res.text, want.text)
    r = await c.submit(prompt="Once upon a time", max_tokens=30, temperature=0, ignore_eos=True, window=3)
    assert (await r.result(timeout=60)).text == want.text
    for _ in range(300):
        if paused(await c.stats()) == 0:
            break
        await asyncio.sleep(0.01)
    assert paused(await c.stats()) == 0


async def refused_frames_fail_at_once(endpoint):
    """A frame refused by the decoder's msgpack limits (too deep, an array too long) fails its own
    request at once: the gateway's error carries the frame's id. The client's timeout is 60 s."""
    loop = asyncio.get_running_loop()
    async with Client(endpoint, timeout=60) as c:
        good = [await c.submit(prompt=f"Story number {i}:", max_tokens=16, temperature=0,
                               ignore_eos=True) for i in range(4)]
        for kw, why in [(dict(messages=[{"role": "user", "content": "hi"}] * 2000),
                         "an array has more than 1024 elements"),
                        (dict(messages=[{"role": "user", "content": {"a": {"b": "deep"}}}]),
                         "nested deeper than 3 levels"),
                        (dict(prompt="x", stop=[[["deep"]]]), "nested deeper than 3 levels")]:
            t0 = loop.time()
            req = await c.submit(**kw)
            try:
                await req.result(timeout=20)  # asyncio.TimeoutError here: the id was not used
                raise AssertionError(f"expected invalid_request ({why})")
            except LorafleetError as e:
                assert e.code == "invalid_request" and why in e.message, (why, e.code, e.message)
            assert loop.time() - t0 < 20, (why, loop.time() - t0)
        for r in good:
            res = await r.result()
            assert res.usage["completion_tokens"] == 16, res.usage


async def logprobs_and_bias(c):
    """logprobs and logit_bias over ZeroMQ: per token in token frames (streamed) or in done
    (stream=False), the same either way; +100 forces a token, -100 bans the greedy one, and a
    batch of requests with different biases each gets its own."""
    kw = dict(prompt="Once upon a time", max_tokens=6, temperature=0, ignore_eos=True)
    streamed = await c.generate(**kw, logprobs=True, top_logprobs=3)
    whole = await c.generate(**kw, logprobs=True, top_logprobs=3, stream=False)
    assert streamed.tokens == whole.tokens and len(whole.tokens) == 6, (streamed.tokens, whole.tokens)
    assert len(streamed.logprobs) == len(whole.logprobs) == 6, (streamed.logprobs, whole.logprobs)
    for tok, a, b in zip(whole.tokens, streamed.logprobs, whole.logprobs):
        assert abs(a["logprob"] - b["logprob"]) < 1e-6 and a["top"] == b["top"], (a, b)
        assert len(a["top"]) == 3 and a["top"][0][0] == tok, (tok, a)  # greedy: the most likely
        assert a["logprob"] <= 0 and abs(a["top"][0][1] - a["logprob"]) < 1e-6, a
    assert (await c.generate(**kw)).logprobs == [], "no logprobs unless asked"
    greedy = whole.tokens[0]
    banned = await c.generate(**kw, logit_bias={greedy: -100}, logprobs=True, top_logprobs=1)
    assert banned.tokens[0] != greedy, (greedy, banned.tokens)
    # Reported logprobs are the model's, without the bias (OpenAI's API since 2024): the banned
    # token still ranks first, and the produced one's logprob is lower.
    assert banned.logprobs[0]["top"][0][0] == greedy, banned.logprobs[0]
    assert banned.logprobs[0]["logprob"] < banned.logprobs[0]["top"][0][1], banned.logprobs[0]
    # One continuous batch, each row its own bias.
    reqs = [await c.submit(**kw, logit_bias={1000 + i: 100}, stream=i % 2 == 0) for i in range(6)]
    for i, r in enumerate(reqs):
        res = await r.result(timeout=60)
        if i % 2 == 0:
            assert res.tokens == [1000 + i] * 6, (i, res.tokens)
        else:
            assert res.usage["completion_tokens"] == 6, res.usage
    forced = await c.generate(**kw, logit_bias={1000: 100})
    assert forced.tokens == [1000] * 6, forced.tokens
    sampled = await c.generate(**{**kw, "temperature": 1.0}, seed=3, logit_bias={"1001": 100})
    assert sampled.tokens == [1001] * 6, sampled.tokens
    for bias, why in [({60000: 1}, "outside the vocabulary"), ({5: 101}, "[-100, 100]"),
                      ({i: 1 for i in range(301)}, "at most 300")]:
        try:
            await c.generate(**kw, logit_bias=bias)
            raise AssertionError(f"expected a refusal for {list(bias.items())[:2]}")
        except LorafleetError as e:
            assert e.code == "invalid_request" and why in e.message and "logit_bias" in e.message, (why, e.message)


asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None))
