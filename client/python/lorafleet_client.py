"""lorafleet asyncio client: many concurrent generation requests over one ZeroMQ DEALER socket.

Uses Debian's python3-zmq and python3-msgpack only. The wire protocol is docs/protocol.md: every
frame is one msgpack map {"v": 1, "type": ..., fields...}; each accepted request ends with exactly
one terminal reply (done, error or cancelled).

    async with Client("tcp://127.0.0.1:5555") as c:
        req = await c.submit(prompt="Once upon a time", max_tokens=32)
        async for delta in req:            # streamed text deltas
            print(delta, end="", flush=True)
        result = await req.result()       # Result(text, finish_reason, usage, timings)

    # or simply
    result = await c.generate(messages=[{"role": "user", "content": "Hi"}], max_tokens=20)
"""

import asyncio
import json
import itertools
import random
from dataclasses import dataclass, field
from typing import AsyncIterator, Dict, List, Optional, Union

import msgpack
import zmq
import zmq.asyncio

PROTOCOL_VERSION = 1
TERMINAL = ("done", "error", "cancelled")


class LorafleetError(Exception):
    """A request ended with an error reply (or the connection failed). `code` is the protocol's
    error code (docs/protocol.md); with "overloaded", "no_workers" and "rate_limited" (the
    client's CURVE key is past its rpm= / tpm= limits, the message names which)
    `retry_after_ms` says when a retry may succeed."""

    def __init__(self, code: str, message: str, retry_after_ms: Optional[int] = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retry_after_ms = retry_after_ms


class Cancelled(LorafleetError):
    def __init__(self):
        super().__init__("cancelled", "the request was cancelled")


@dataclass
class Result:
    """A finished request."""
    text: str
    finish_reason: str
    usage: Dict[str, int] = field(default_factory=dict)
    timings: Dict[str, float] = field(default_factory=dict)
    tokens: List[int] = field(default_factory=list)
    seed: int = 0  # the seed it was sampled with (its own or the router's); usage["resumed"]: moves
    # With logprobs=True: per token (as `tokens`), {"logprob": float, "top": [(token id, logprob), ...]}
    logprobs: List[dict] = field(default_factory=list)


def _token_logprobs(logprob, top_tokens, top_logprobs) -> dict:
    return {"logprob": float(logprob), "top": list(zip(top_tokens or [], top_logprobs or []))}


class Request:
    """One in-flight request: iterate it for text deltas, await result() for the end."""

    def __init__(self, client: "Client", rid: int, stream: bool, window: Optional[int] = None):
        self.id = rid
        self._client = client
        self._stream = stream
        self._window = window if stream else None
        self._ungranted = 0  # deltas the application took and the server has not been granted
        self._iterating = False
        self._queue: asyncio.Queue = asyncio.Queue()
        self._done: asyncio.Future = asyncio.get_running_loop().create_future()
        self._text: List[str] = []
        self._tokens: List[int] = []
        self._logprobs: List[dict] = []
        self._msg: Optional[dict] = None  # the submit as sent (several gateways: to send it again)
        self._submitted = asyncio.get_running_loop().time()
        self._granted = 0  # credits granted so far
        self._moves = 0  # times it moved to another gateway

    def _on_message(self, msg: dict) -> None:
        t = msg.get("type")
        if self._done.done():
            return  # nothing may follow a terminal reply; ignore defensively
        if t == "token":
            self._text.append(msg.get("text", ""))
            self._tokens.append(msg.get("token", -1))
            if "logprob" in msg:
                self._logprobs.append(_token_logprobs(msg["logprob"], msg.get("top_tokens"),
                                                      msg.get("top_logprobs")))
            self._queue.put_nowait(msg.get("text", ""))
        elif t == "done":
            text = msg.get("text") if msg.get("text") is not None else "".join(self._text)
            tokens, logprobs = self._tokens, self._logprobs
            if msg.get("logprobs") is not None:  # stream=False: the done frame carries them
                tokens = list(msg.get("tokens", []))
                logprobs = [_token_logprobs(*x) for x in zip(msg["logprobs"], msg.get("top_tokens", []),
                                                              msg.get("top_logprobs", []))]
            usage = dict(msg.get("usage", {}))
            if self._moves:
                usage["resumed"] = usage.get("resumed", 0) + self._moves
            self._done.set_result(Result(text, msg.get("finish_reason", ""), usage,
                                         msg.get("timings", {}), tokens, msg.get("seed", 0), logprobs))
            self._queue.put_nowait(None)
        elif t == "error":
            self._fail(LorafleetError(msg.get("code", "internal"), msg.get("message", ""),
                                      msg.get("retry_after_ms")))
        elif t == "cancelled":
            self._fail(Cancelled())

    def _fail(self, exc: Exception) -> None:
        if not self._done.done():
            self._done.set_exception(exc)
            self._queue.put_nowait(None)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._iterate()

    async def _iterate(self):
        self._iterating = True
        while True:
            delta = await self._queue.get()
            if delta is None:
                if self._done.exception() is not None:
                    raise self._done.exception()
                return
            yield delta
            # The application took the delta: credit it back, half a window at a time.
            if self._window:
                self._ungranted += 1
                if self._ungranted >= max(1, self._window // 2) and not self._done.done():
                    await self._client._send({"type": "credit", "id": self.id, "tokens": self._ungranted})
                    self._granted += self._ungranted
                    self._ungranted = 0

    async def _consume(self) -> None:
        try:
            async for _ in self._iterate():
                pass
        except Exception:  # the same error reaches the caller through result()
            pass

    async def result(self, timeout: Optional[float] = None) -> Result:
        """The finished request; raises LorafleetError for an error reply. With a window and
        nobody iterating the stream, this consumes it (granting credits) while it waits."""
        if self._window and not self._iterating:
            self._iterating = True
            asyncio.ensure_future(self._consume())
        return await asyncio.wait_for(asyncio.shield(self._done), timeout)

    async def cancel(self) -> None:
        """Asks the server to cancel; the request then ends with Cancelled (or done, if first)."""
        await self._client._send({"type": "cancel", "id": self.id})


class Client:
    """An asyncio client. One DEALER socket; ZeroMQ reconnects by itself after a server restart,
    and requests in flight when the server goes silent fail after `timeout` seconds.

    Several endpoints (gateways of one cluster, a list): while requests are in flight the client
    pings its gateway every `heartbeat` seconds; when nothing arrives for 3 of them it moves to the
    next gateway and sends every live request there again as a continuation (the tokens it has,
    the same seed: the client gives each request one), so a stream pauses and goes on with the
    text an undisturbed run gives. `continuations` counts the moves."""

    def __init__(self, endpoint: Union[str, List[str]], *, timeout: Optional[float] = None,
                 server_public_key: Optional[bytes] = None, public_key: Optional[bytes] = None,
                 secret_key: Optional[bytes] = None, tenant: Optional[str] = None,
                 heartbeat: float = 2.0):
        self._endpoints = [endpoint] if isinstance(endpoint, str) else list(endpoint)
        if not self._endpoints:
            raise ValueError("give at least one endpoint")
        self._at = 0
        self.endpoint = self._endpoints[0]
        self.timeout = timeout
        self.tenant = tenant  # the tenant of submits that name none
        self.heartbeat = heartbeat
        self.continuations = 0
        self._ctx = zmq.asyncio.Context.instance()
        if server_public_key and not (public_key and secret_key):
            public_key, secret_key = zmq.curve_keypair()
        self._curve = (server_public_key, public_key, secret_key) if server_public_key else None
        self._sock = self._socket(self.endpoint)
        self._watchdog: Optional[asyncio.Task] = None
        self._last_rx = 0.0
        self._silent_moves = 0  # gateways given up on since anything arrived
        self._ids = itertools.count(1)
        self._live: Dict[int, Request] = {}
        self._adapters_lock: Optional[asyncio.Lock] = None
        self._waiters: Dict[str, List[asyncio.Future]] = {"pong": [], "stats": [], "drained": [], "undrained": [],
                                                     "adapters_result": []}
        self._reader: Optional[asyncio.Task] = None
        self._closed = False

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def _socket(self, endpoint: str):
        sock = self._ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVHWM, 100000)
        sock.setsockopt(zmq.SNDHWM, 100000)
        if self._curve:
            sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = self._curve
        sock.connect(endpoint)
        return sock

    def _ensure_reader(self) -> None:
        if self._reader is None:
            loop = asyncio.get_running_loop()
            self._last_rx = loop.time()
            self._reader = loop.create_task(self._read_loop())
            if len(self._endpoints) > 1:
                self._watchdog = loop.create_task(self._watch())

    async def _watch(self) -> None:
        """Several gateways: pings while requests are in flight; after 3 silent heartbeats moves
        every live request to the next gateway."""
        loop = asyncio.get_running_loop()
        last_ping = loop.time()
        while not self._closed:
            await asyncio.sleep(self.heartbeat / 4)
            now = loop.time()
            if not self._live:
                self._last_rx = now  # silence while idle is not a failure
                continue
            if now - last_ping >= self.heartbeat:
                last_ping = now
                try:
                    await self._send({"type": "ping"})
                except zmq.ZMQError:
                    pass
            if now - self._last_rx > 3 * self.heartbeat:
                self._silent_moves += 1
                if self._silent_moves >= len(self._endpoints):  # every gateway in turn was silent
                    self._last_rx = now
                    self._silent_moves = 0
                    for rid, req in list(self._live.items()):
                        self._live.pop(rid, None)
                        req._fail(LorafleetError("worker_lost", f"no gateway of {len(self._endpoints)} answered heartbeats"))
                    continue
                await self._move_on(now)

    async def _move_on(self, now: float) -> None:
        old = self._sock
        # If the old gateway is only slow, not gone, it should not keep generating: a cancel for
        # each request, given a moment to leave before the socket closes.
        old.setsockopt(zmq.LINGER, 100)
        for rid in list(self._live):
            try:
                old.send(msgpack.packb({"v": PROTOCOL_VERSION, "type": "cancel", "id": rid}, use_bin_type=True),
                         flags=zmq.NOBLOCK)
            except zmq.ZMQError:
                break
        self._at = (self._at + 1) % len(self._endpoints)
        self.endpoint = self._endpoints[self._at]
        self._sock = self._socket(self.endpoint)
        # A recv pending on a closed socket may never return: a new reader reads the new socket.
        if self._reader is not None:
            self._reader.cancel()
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())
        old.close(0)
        self._last_rx = now
        for rid, req in list(self._live.items()):
            msg = dict(req._msg)
            if req._stream and req._tokens:
                msg["continued"] = list(req._tokens)
            if "window" in msg:
                msg["window"] = min(msg["window"] + req._granted, 1 << 20)
            if "deadline_ms" in msg:
                left = msg["deadline_ms"] - int((now - req._submitted) * 1000)
                if left <= 0:
                    self._live.pop(rid, None)
                    req._fail(LorafleetError("timeout", "deadline passed while the gateway was unreachable"))
                    continue
                msg["deadline_ms"] = left
            req._moves += 1
            self.continuations += 1
            await self._send(msg)

    async def _send(self, msg: dict) -> None:
        msg = {"v": PROTOCOL_VERSION, **msg}
        await self._sock.send(msgpack.packb(msg, use_bin_type=True))

    async def _read_loop(self) -> None:
        while not self._closed:
            sock = self._sock
            try:
                frame = await sock.recv()
            except asyncio.CancelledError:
                return
            except zmq.ZMQError:
                if sock is not self._sock and not self._closed:
                    continue  # moved to another gateway: read from its socket
                return
            if sock is not self._sock:
                continue  # a late frame of the gateway given up on
            self._last_rx = asyncio.get_running_loop().time()
            self._silent_moves = 0
            try:
                msg = msgpack.unpackb(frame, raw=False, strict_map_key=True)
            except Exception:
                continue  # a frame we cannot read: nothing to route it to
            if not isinstance(msg, dict):
                continue
            t = msg.get("type")
            if not isinstance(t, str):
                continue
            if t in self._waiters:
                if t in ("drained", "undrained", "adapters_result"):  # one answer per call, in the order asked
                    waiters, self._waiters[t] = self._waiters[t][:1], self._waiters[t][1:]
                else:
                    waiters, self._waiters[t] = self._waiters[t], []
                for w in waiters:
                    if not w.done():
                        w.set_result(msg)
                continue
            rid = msg.get("id")
            req = self._live.get(rid) if isinstance(rid, int) else None
            if req is None:
                continue
            req._on_message(msg)
            if t in TERMINAL:
                self._live.pop(rid, None)

    async def submit(self, prompt: Optional[str] = None, *, messages: Optional[List[dict]] = None,
                     adapter: Optional[str] = None, max_tokens: int = 16, temperature: float = 1.0,
                     top_k: int = 0, top_p: float = 1.0, repetition_penalty: float = 1.0,
                     seed: Optional[int] = None, stop: Optional[List[str]] = None,
                     ignore_eos: bool = False, stream: bool = True,
                     deadline_ms: Optional[int] = None, window: Optional[int] = None,
                     ttft_ms: Optional[int] = None, tenant: Optional[str] = None,
                     logit_bias: Optional[Dict[int, float]] = None, logprobs: bool = False,
                     top_logprobs: int = 0,
                     json_schema: Optional[dict] = None, json_object: bool = False,
                     regex: Optional[str] = None, choice: Optional[List[str]] = None,
                     grammar: Optional[str] = None, speculative: Optional[int] = None) -> Request:
        """Sends one request and returns its handle at once (no round trip).

        `window` (streaming): the server runs at most this many tokens ahead of what the
        application has taken from the stream; the client grants credits as it iterates, so a
        consumer that stops reading stops the request's generation (it leaves the batch) instead
        of piling tokens up. None: unlimited.

        tenant: who the request is for (scheduling share, per-tenant limits; at most 64 bytes),
        else the client's; a gateway that knows this client's CURVE key by name uses that.
        deadline_ms / ttft_ms: a request the server predicts will miss them fails at once with
        LorafleetError code "deadline_unmeetable".

        logit_bias: token id -> bias in [-100, 100] added to its logit before sampling (OpenAI's
        meaning: -100 bans, +100 forces). logprobs / top_logprobs (0-20): each token's
        log-probability and its most likely alternatives, in Result.logprobs.

        Structured output (at most one): json_schema (a dict, the output is JSON valid under it),
        json_object (any JSON value), regex (the whole output matches), choice (one of the
        strings), grammar (GBNF). One the gateway cannot compile fails with "invalid_request".

        speculative: speculative decoding (never changes the output): -2 on, 0 off, 1-16 on with
        up to that many proposed tokens per step; None: the worker's policy."""
        if self._closed:
            raise LorafleetError("invalid_request", "the client is closed")
        self._ensure_reader()
        rid = next(self._ids)
        msg = {"type": "submit", "id": rid, "max_tokens": max_tokens,
               "temperature": float(temperature), "top_k": top_k, "top_p": float(top_p),
               "repetition_penalty": float(repetition_penalty), "stream": stream}
        if messages is not None:
            msg["messages"] = messages
        else:
            msg["prompt"] = prompt if prompt is not None else ""
        if adapter:
            msg["adapter"] = adapter
        if seed is not None:
            msg["seed"] = seed
        if stop:
            msg["stop"] = list(stop)
        if ignore_eos:
            msg["ignore_eos"] = True
        if deadline_ms is not None:
            msg["deadline_ms"] = deadline_ms
        if window is not None and stream:
            msg["window"] = window
        if ttft_ms is not None:
            msg["ttft_ms"] = ttft_ms
        if speculative is not None:
            msg["speculative"] = speculative
        tenant = tenant if tenant is not None else self.tenant
        if tenant:
            msg["tenant"] = tenant
        if logit_bias:
            msg["logit_bias"] = {int(k): float(v) for k, v in logit_bias.items()}
        if logprobs:
            msg["logprobs"] = True
        if top_logprobs:
            msg["top_logprobs"] = top_logprobs
        constraints = [(k, t) for k, t, given in (
            ("json_schema", json.dumps(json_schema) if json_schema is not None else "", json_schema is not None),
            ("json_object", "", json_object),
            ("regex", regex or "", regex is not None),
            ("choice", json.dumps(list(choice)) if choice is not None else "", choice is not None),
            ("grammar", grammar or "", grammar is not None)) if given]
        if len(constraints) > 1:
            raise LorafleetError("invalid_request", "give at most one of json_schema, json_object, regex, "
                                 "choice and grammar")
        if constraints:
            msg["constraint_kind"] = constraints[0][0]
            if constraints[0][1]:
                msg["constraint"] = constraints[0][1]
        if len(self._endpoints) > 1 and "seed" not in msg:
            msg["seed"] = random.getrandbits(63)  # another gateway must draw the same tokens
        req = Request(self, rid, stream, window)
        req._msg = msg
        self._live[rid] = req
        await self._send(msg)
        if self.timeout is not None:
            asyncio.get_running_loop().call_later(self.timeout, self._expire, rid)
        return req

    def _expire(self, rid: int) -> None:
        req = self._live.pop(rid, None)
        if req is not None:
            req._fail(LorafleetError("timeout", f"no terminal reply within {self.timeout} s"))
            asyncio.ensure_future(self._send({"type": "cancel", "id": rid}))

    async def generate(self, prompt: Optional[str] = None, **kw) -> Result:
        """submit() and wait for the result."""
        req = await self.submit(prompt, **kw)
        return await req.result()

    async def _ask(self, kind: str, timeout: float, **fields) -> dict:
        self._ensure_reader()
        fut = asyncio.get_running_loop().create_future()
        self._waiters[{"ping": "pong", "drain": "drained", "undrain": "undrained", "adapters": "adapters_result"}.get(kind, kind)].append(fut)
        await self._send({"type": kind, **fields})
        return await asyncio.wait_for(fut, timeout)

    async def ping(self, timeout: float = 5.0) -> float:
        """Round-trip time in seconds; raises asyncio.TimeoutError when the server is silent."""
        t0 = asyncio.get_running_loop().time()
        await self._ask("ping", timeout)
        return asyncio.get_running_loop().time() - t0

    async def stats(self, timeout: float = 5.0) -> Dict[str, float]:
        """The cluster's counters: flat dotted names to numbers."""
        return (await self._ask("stats", timeout)).get("values", {})

    async def drain(self, node: str, timeout: float = 15.0) -> Dict[str, int]:
        """Drains a worker node (or one worker, "node/N"): nothing more is placed there and its
        running requests move to other workers, which continue them exactly. Returns
        {"workers": drained, "moved": requests moved}; workers == 0 when no live worker matched."""
        reply = await self._ask("drain", timeout, node=node)
        return {"workers": reply.get("workers", 0), "moved": reply.get("moved", 0)}

    async def undrain(self, node: str, timeout: float = 15.0) -> Dict[str, int]:
        """Undoes a drain of a worker node (or one worker, "node/N"): its drained workers take
        requests again. Returns {"workers": put back}; 0 when no live drained worker matched."""
        reply = await self._ask("undrain", timeout, node=node)
        return {"workers": reply.get("workers", 0)}

    async def adapters(self, op: str = "list", name: Optional[str] = None, path: Optional[str] = None,
                       timeout: float = 90.0) -> dict:
        """The cluster's adapter registry: op "list", "add" / "update" (name, path: a PEFT
        directory inside the router's adapter roots, checked by a worker first) or "remove"
        (name). Returns {"seq": newest log event, "adapters": [{name, version, removed, path, hash,
        rank, targets, bytes, updated_ms, resident}]}; raises LorafleetError when refused. Calls
        are serialised (an add's answer could otherwise overtake another's)."""
        fields = {"op": op}
        if name is not None:
            fields["name"] = name
        if path is not None:
            fields["path"] = path
        if self._adapters_lock is None:
            self._adapters_lock = asyncio.Lock()
        async with self._adapters_lock:
            reply = await self._ask("adapters", timeout, **fields)
        if "code" in reply:
            raise LorafleetError(reply["code"], reply.get("message", ""))
        return {"seq": reply.get("seq", 0), "adapters": reply.get("adapters", [])}

    async def close(self) -> None:
        """Fails what is still in flight locally and closes the socket."""
        self._closed = True
        for req in list(self._live.values()):
            req._fail(LorafleetError("cancelled", "the client was closed"))
        self._live.clear()
        if self._reader is not None:
            self._reader.cancel()
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._sock.close(0)
