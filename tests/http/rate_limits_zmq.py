#!/usr/bin/python3
"""Rate limits over ZeroMQ with the Python asyncio client (tests/http/rate_limits.sh): with a
CURVE key whose key-file line has rpm=LIMIT, PASS requests go through and the next one fails with
LorafleetError code "rate_limited", the limit named and retry_after_ms at most a refill's time.
Usage: rate_limits_zmq.py ENDPOINT SERVER_KEY_PREFIX CLIENT_KEY_PREFIX PASS LIMIT"""
import asyncio
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../client/python"))
from lorafleet_client import Client, LorafleetError  # noqa: E402


def key(path: str) -> bytes:
    with open(path) as f:
        return f.read().strip().encode()


async def main(endpoint: str, server: str, client: str, passing: int, limit: int) -> None:
    async with Client(endpoint, timeout=60, server_public_key=key(server + ".public"),
                      public_key=key(client + ".public"), secret_key=key(client + ".secret")) as c:
        for i in range(passing):
            r = await c.generate(prompt="Hello there", max_tokens=1, stream=False)
            assert r.finish_reason, (i, r)
        try:
            r = await c.generate(prompt="Hello there", max_tokens=1, stream=False)
            raise SystemExit(f"FAIL: request {passing + 1} over ZeroMQ was served: {r}")
        except LorafleetError as e:
            assert e.code == "rate_limited", (e.code, e.message)
            assert f"requests per minute ({limit})" in e.message, e.message
            refill_ms = 60000 // limit
            assert e.retry_after_ms is not None and 1 <= e.retry_after_ms <= refill_ms, e.retry_after_ms
            print(f"python client: {passing} passed, then rate_limited, retry_after_ms {e.retry_after_ms}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
