"""A fault-injecting OpenAI-compatible server on 127.0.0.1, for the fault suite (issue 10).

Use it as a context manager; every request takes the next scripted `Reply` (the last one
repeats), and is recorded::

    with FaultServer(Reply.completion('{"answer": "4"}')) as server:
        lm = ts.LM("m", base_url=server.url, api_key="sk-test", max_retries=0)
        ...
        assert len(server.requests) == 1

A `Reply` is a status, headers and a body given as a function returning its pieces (bytes),
written one by one with ``drip`` seconds between them (a slow or endless body is a generator).
Builders: `Reply.completion` (a chat completion), `Reply.sse` (``data:`` events), `Reply.json`,
`Reply.raw`, `Reply.gzip_bomb` (a gzip body inflating to many bytes, built without ever holding
them); ``Reply(echo=fn)`` answers with ``fn(seen)``, a reply made from the `Seen` request
(e.g. a 401 quoting the ``Authorization`` header back).

``Reply(status=0)`` drops the connection without answering. ``server.connection_closed`` (a
`threading.Event`) is set whenever a connection ends and ``closed_connections`` counts them,
so a test can wait for the server to see a client go.

Bounded and self-stopping: the server runs on its own thread and event loop, accepts at most
``max_requests`` requests (later ones get a 503 and are still counted), closes every
connection after its response, cuts any response still writing after ``lifetime`` seconds,
and stops when the ``with`` block ends. Nothing is sent anywhere but 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import struct
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import typedspy as ts

__all__ = ["FaultServer", "Reply", "Seen"]


@dataclass(frozen=True)
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """What to answer: status, headers, body pieces, and seconds between pieces."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    pieces: Callable[[], Iterable[bytes]] = tuple
    drip: float = 0.0
    echo: Callable[[Seen], Reply] | None = None

    @staticmethod
    def raw(body: bytes | str, *, status: int = 200, content_type: str = "text/plain") -> Reply:
        data = body.encode() if isinstance(body, str) else body
        return Reply(status, {"content-type": content_type}, lambda: [data])

    @staticmethod
    def json(value: Any, *, status: int = 200) -> Reply:
        return Reply.raw(json.dumps(value), status=status, content_type="application/json")

    @staticmethod
    def completion(content: str | None, **message: Any) -> Reply:
        return Reply.json(completion_body(content, **message))

    @staticmethod
    def sse(events: Iterable[str | Mapping[str, Any]], *, done: bool = True) -> Reply:
        """``data:`` events (a mapping is sent as JSON, a string as it is)."""

        def pieces() -> Iterator[bytes]:
            for event in events:
                data = event if isinstance(event, str) else json.dumps(event)
                yield f"data: {data}\n\n".encode()
            if done:
                yield b"data: [DONE]\n\n"

        return Reply(200, {"content-type": "text/event-stream"}, pieces)

    @staticmethod
    def gzip_bomb(inflated: int, *, content_type: str = "application/json") -> Reply:
        """A gzip body of zeros that inflates to ``inflated`` bytes (about 1/1000 of it sent)."""
        return Reply(
            200,
            {"content-type": content_type, "content-encoding": "gzip"},
            lambda: _gzip_zeros(inflated),
        )


def completion_body(content: str | None, **message: Any) -> dict[str, Any]:
    """A minimal chat completion whose message has ``content`` (and ``message`` extras)."""
    return {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": 0,
        "model": "fault-1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _gzip_zeros(total: int, block: int = 1 << 20) -> Iterator[bytes]:
    # Deflating a run of zeros gives the same bytes block after block: compute two, repeat one.
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    zeros = bytes(block)
    yield b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip header, no name, no time
    yield compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH)
    middle = compressor.compress(zeros) + compressor.flush(zlib.Z_SYNC_FLUSH)
    crc = zlib.crc32(zeros)
    for _ in range(1, total // block):
        yield middle
        crc = zlib.crc32(zeros, crc)
    yield compressor.flush() + struct.pack("<II", crc, (total // block * block) & 0xFFFFFFFF)


class FaultServer:
    """The server: ``url`` is its ``/v1`` base URL, ``requests`` what it received."""

    def __init__(
        self,
        *replies: Reply,
        max_requests: int = 200,
        lifetime: float = 30.0,
        models: Reply | None = None,
    ) -> None:
        self.replies = list(replies) or [Reply.completion("{}")]
        self.models = models  # the answer to GET /models (else OpenAI's, see `_next`)
        self.requests: list[Seen] = []
        self.models_requests = 0
        self.max_requests = max_requests
        self.lifetime = lifetime
        self.closed_connections = 0
        self.connection_closed = threading.Event()  # set whenever a connection ends
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> FaultServer:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        # A new server at this URL (a port an earlier test's server had): what was found for it
        # no longer holds, as the stand-in does (a test counting /models requests flaked on it).
        ts.lm.forget(self.url)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            tasks = asyncio.all_tasks() - {asyncio.current_task()}
            for task in tasks:
                task.cancel()
            # Let each cancelled connection close its socket before the loop stops: a task
            # still cancelling at stop leaves an unclosed transport for a later test's GC.
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._serve, "127.0.0.1", 0)

    def _next(self, seen: Seen) -> Reply:
        if seen.method == "GET" and seen.path.rstrip("/").endswith("/models"):
            # An LM asks an unknown base URL which server it is (ADR-084): answer as OpenAI does,
            # apart from the requests a test scripts replies for.
            self.models_requests += 1
            if self.models is not None:
                return self.models
            listed = Reply.json({"object": "list", "data": [{"id": "m", "owned_by": "system"}]})
            return dataclasses.replace(
                listed, headers={**listed.headers, "openai-version": "2020-10-01"}
            )
        self.requests.append(seen)
        if len(self.requests) > self.max_requests:
            return Reply.raw("fault server: request limit reached", status=503)
        index = min(len(self.requests), len(self.replies)) - 1
        reply = self.replies[index]
        return reply.echo(seen) if reply.echo is not None else reply

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            seen = await asyncio.wait_for(_read_request(reader), 10)
            if seen is not None:
                await asyncio.wait_for(self._write(writer, self._next(seen)), self.lifetime)
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the client went away, or the response ran past the lifetime: cut it
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            self.closed_connections += 1
            self.connection_closed.set()

    async def _write(self, writer: asyncio.StreamWriter, reply: Reply) -> None:
        if reply.status == 0:  # drop the connection: no response at all
            return
        head = [f"HTTP/1.1 {reply.status} Fault", "connection: close"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())  # the body ends at close
        for piece in reply.pieces():
            writer.write(piece)
            await writer.drain()
            if reply.drip:
                await asyncio.sleep(reply.drip)


async def _read_request(reader: asyncio.StreamReader) -> Seen | None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines[0]:
        return None
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return Seen(method, path, headers, body)
