#!/usr/bin/python3
"""The clients of the simulated cluster: a closed loop of STREAMS concurrent streaming requests
through the router's client port (ZeroMQ, docs/protocol.md), and a calm replay of them.

Every frame is read raw (one DEALER socket, msgpack), so the records show exactly what came back
for each request: how many `accepted`, every `token` (index, id, text), the terminal reply, and
any frame that came after it. Requests are a function of their number: greedy or seeded sampling,
max_tokens 32-96, some with an adapter, most with ignore_eos (a steady load).

    load.py run ENDPOINT OUT STOP_FILE [--streams 64] [--adapters a,b] [--seed S]
        until STOP_FILE exists; then what is in flight finishes (or is recorded as lost after
        --request-timeout); OUT gets every request's record (JSON)
    load.py replay ENDPOINT IN OUT [--concurrency 16]
        sends every finished request of IN again on a calm cluster; OUT gets the differences
"""
import argparse
import asyncio
import itertools
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional

import msgpack
import zmq
import zmq.asyncio

TERMINAL = ("done", "error", "cancelled")
PROMPTS = ["Once upon a time", "The pods were scheduled", "A rolling update began when",
           "In the beginning", "The autoscaler looked at the queue and", "Kubernetes is",
           "The router said to the worker", "To be or not to be"]


def make_request(i: int, seed: int, adapters: List[str]) -> dict:
    """Request number i: the submit's fields."""
    rnd = random.Random(seed * 1_000_003 + i)
    r = {"prompt": f"{PROMPTS[i % len(PROMPTS)]} ({i})", "max_tokens": rnd.randint(32, 96),
         "ignore_eos": rnd.random() < 0.75}
    if rnd.random() < 0.5:
        r["temperature"] = 0.0
    else:
        r.update(temperature=0.8, top_p=0.95, top_k=40, seed=rnd.randrange(1, 2**32))
    if adapters and rnd.random() < 0.3:
        r["adapter"] = rnd.choice(adapters)
    return r


@dataclass
class Record:
    i: int
    request: dict
    rid: int = 0
    submitted: float = 0.0
    ended: Optional[float] = None
    accepted: int = 0
    tokens: List[list] = field(default_factory=list)  # [index, token id, text]
    terminal: Optional[str] = None
    code: str = ""
    message: str = ""
    finish_reason: str = ""
    resumed: int = 0
    after_terminal: List[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(t[2] for t in self.tokens)


class RawClient:
    """One DEALER socket; every frame routed to its request's record, as it came."""

    def __init__(self, endpoint: str):
        self.ctx = zmq.asyncio.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        for opt, value in ((zmq.LINGER, 0), (zmq.RCVHWM, 0), (zmq.SNDHWM, 0)):
            self.sock.setsockopt(opt, value)
        self.sock.connect(endpoint)
        self.ids = itertools.count(1)
        self.records: Dict[int, Record] = {}
        self.ended: Dict[int, asyncio.Future] = {}
        self.stray: List[dict] = []
        self.reader = asyncio.ensure_future(self._read())

    async def submit(self, i: int, request: dict) -> Record:
        rid = next(self.ids)
        rec = Record(i, request, rid=rid, submitted=time.time())
        self.records[rid] = rec
        self.ended[rid] = asyncio.get_running_loop().create_future()
        await self.sock.send(msgpack.packb({"v": 1, "type": "submit", "id": rid, **request}, use_bin_type=True))
        return rec

    async def wait(self, rec: Record, timeout: float) -> None:
        try:
            await asyncio.wait_for(asyncio.shield(self.ended[rec.rid]), timeout)
        except asyncio.TimeoutError:
            pass  # recorded as lost: no terminal reply

    async def _read(self) -> None:
        """Wakes up once for whatever has arrived and takes it all: one await per frame would
        make this process, not the cluster, the bottleneck of a 64-stream load on 2 cores."""
        sync = zmq.Socket.shadow(self.sock.underlying)
        while True:
            await self.sock.poll(flags=zmq.POLLIN)
            while True:
                try:
                    frame = sync.recv(zmq.NOBLOCK)
                except zmq.Again:
                    break
                self._on_frame(msgpack.unpackb(frame, raw=False))

    def _on_frame(self, msg: dict) -> None:
        rid = msg.get("id")
        rec = self.records.get(rid)
        if rec is None:
            self.stray.append(msg)
            return
        kind = msg.get("type")
        if rec.terminal is not None:
            rec.after_terminal.append(kind)
        elif kind == "accepted":
            rec.accepted += 1
        elif kind == "token":
            rec.tokens.append([msg["index"], msg["token"], msg.get("text", "")])
        elif kind in TERMINAL:
            rec.terminal = kind
            rec.ended = time.time()
            rec.code = msg.get("code", "")
            rec.message = msg.get("message", "")
            rec.finish_reason = msg.get("finish_reason", "")
            rec.resumed = (msg.get("usage") or {}).get("resumed", 0)
            self.ended[rid].set_result(None)

    def close(self) -> None:
        self.reader.cancel()
        self.sock.close(0)
        self.ctx.term()


async def usable_adapters(client: RawClient, wanted: List[str]) -> List[str]:
    """The adapters the cluster serves (one greedy token each); unknown ones are left out."""
    usable = []
    for n, name in enumerate(wanted):
        rec = await client.submit(-1 - n, {"prompt": "Hello", "max_tokens": 1, "temperature": 0.0, "adapter": name})
        await client.wait(rec, 60)
        if rec.terminal == "done":
            usable.append(name)
        elif rec.code != "unknown_adapter":
            raise RuntimeError(f"probe request with adapter {name}: {rec.terminal} {rec.code} {rec.message}")
    return usable


async def run(args) -> int:
    client = RawClient(args.endpoint)
    adapters = await usable_adapters(client, [a for a in args.adapters.split(",") if a])
    client.records.clear()
    counter = itertools.count()
    stop = lambda: os.path.exists(args.stop_file)  # noqa: E731
    started = time.time()

    async def lane() -> None:
        while not stop():
            i = next(counter)
            rec = await client.submit(i, make_request(i, args.seed, adapters))
            await client.wait(rec, args.request_timeout)

    async def progress() -> None:
        while True:
            await asyncio.sleep(5)
            recs = list(client.records.values())
            live = sum(1 for r in recs if r.terminal is None)
            print(f"load: {time.time() - started:6.1f} s  {len(recs) - live} ended  {live} in flight  "
                  f"{sum(1 for r in recs if r.terminal == 'error')} errors", flush=True)

    reporter = asyncio.ensure_future(progress())
    await asyncio.gather(*(lane() for _ in range(args.streams)))
    await asyncio.sleep(1.0)  # anything that still arrives after a terminal reply is recorded
    reporter.cancel()
    client.close()
    out = {"streams": args.streams, "adapters": adapters, "wanted_adapters": args.adapters,
           "seconds": time.time() - started, "stray": client.stray[:20],
           "records": [asdict(r) for r in client.records.values()]}
    with open(args.out, "w") as f:
        json.dump(out, f)
    print(f"load: {len(out['records'])} requests in {out['seconds']:.1f} s", flush=True)
    return 0


async def replay(args) -> int:
    with open(args.input) as f:
        records = [r for r in json.load(f)["records"] if r["terminal"] == "done"]
    client = RawClient(args.endpoint)
    sem = asyncio.Semaphore(args.concurrency)
    diffs = []

    async def one(r: dict) -> None:
        async with sem:
            again = await client.submit(r["i"], r["request"])
            await client.wait(again, 120)
        calm = [t[1] for t in again.tokens]
        seen = [t[1] for t in r["tokens"]]
        text = "".join(t[2] for t in r["tokens"])
        if again.terminal != "done" or calm != seen or again.text != text:
            first = next((k for k, (a, b) in enumerate(zip(seen, calm)) if a != b), min(len(seen), len(calm)))
            diffs.append({"i": r["i"], "resumed": r["resumed"], "calm_terminal": again.terminal,
                          "calm_code": again.code, "first_difference": first, "under_load": text,
                          "calm": again.text, "request": r["request"]})

    started = time.time()
    await asyncio.gather(*(one(r) for r in records))
    client.close()
    with open(args.out, "w") as f:
        json.dump({"replayed": len(records), "seconds": time.time() - started, "differences": diffs}, f)
    print(f"replay: {len(records)} requests in {time.time() - started:.1f} s, {len(diffs)} differ", flush=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("endpoint")
    r.add_argument("out")
    r.add_argument("stop_file")
    r.add_argument("--streams", type=int, default=64)
    r.add_argument("--adapters", default="")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--request-timeout", type=float, default=180)
    q = sub.add_parser("replay")
    q.add_argument("endpoint")
    q.add_argument("input")
    q.add_argument("out")
    q.add_argument("--concurrency", type=int, default=16)
    args = p.parse_args()
    return asyncio.run(run(args) if args.cmd == "run" else replay(args))


if __name__ == "__main__":
    sys.exit(main())
