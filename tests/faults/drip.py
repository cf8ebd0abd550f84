"""A small hostile server on 127.0.0.1 for deadline tests: drips, stalls, endless streams.

Each request takes the next scripted behaviour (the last one repeats):

* ``("drip", body, interval)``: a 200 with ``Content-Length``, its body sent one byte per
  ``interval`` seconds;
* ``("endless", text, interval)``: an SSE stream that sends a content chunk of ``text`` every
  ``interval`` seconds and never ends;
* ``("stall",)``: reads the request and never answers;
* ``("reply", body)``: a plain 200 with a JSON body.

Everything stops by itself when the server stops (or the client goes): every wait is on the
``stopping`` event. ``gone`` is set each time a client closes a connection mid-answer.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

Behaviour = tuple[Any, ...]


def completion(content: str) -> bytes:
    """A chat-completion body whose message content is ``content``."""
    return json.dumps(
        {
            "id": "chatcmpl-drip",
            "object": "chat.completion",
            "created": 0,
            "model": "drip-1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()


def _chunk(text: str) -> bytes:
    body = {
        "id": "chatcmpl-drip",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "drip-1",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _json_head(length: int) -> bytes:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}"
    return head.encode() + b"\r\n\r\n"


class DripServer:
    """The server; ``base_url`` for an LM, ``requests`` counted, ``gone`` set on a cut-off."""

    def __init__(self, *script: Behaviour) -> None:
        self._script = list(script)
        self.requests = 0
        self.gone = threading.Event()
        self.answering = threading.Event()  # set when an answer has started
        self.stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._threads: list[threading.Thread] = []
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def start(self) -> DripServer:
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)
        return self

    def stop(self) -> None:
        self.stopping.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # unblocks accept() (close alone does not)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            for conn in self._connections:  # unblocks a thread waiting for the next request
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._connections.append(conn)
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            reader = conn.makefile("rb")
            while not self.stopping.is_set():
                try:
                    if not self._read_request(reader):
                        return
                    self._answer(conn, self._next())
                except OSError:  # the client went away
                    self.gone.set()
                    return

    def _read_request(self, reader: Any) -> bool:
        length = 0
        line = reader.readline()
        if not line:
            return False
        while line not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
            line = reader.readline()
        reader.read(length)
        return True

    def _next(self) -> Behaviour:
        with self._lock:
            self.requests += 1
            return self._script.pop(0) if len(self._script) > 1 else self._script[0]

    def _answer(self, conn: socket.socket, behaviour: Behaviour) -> None:
        kind = behaviour[0]
        self.answering.set()
        if kind == "stall":
            self.stopping.wait()
            return
        if kind == "reply":
            body = behaviour[1]
            conn.sendall(_json_head(len(body)) + body)
            return
        if kind == "drip":
            body, interval = behaviour[1], behaviour[2]
            conn.sendall(_json_head(len(body)))
            for i in range(len(body)):
                if self.stopping.wait(interval):
                    return
                conn.sendall(body[i : i + 1])
            return
        text, interval = behaviour[1], behaviour[2]
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        while not self.stopping.wait(interval):  # endless: ends when the server stops
            event = _chunk(text)
            conn.sendall(f"{len(event):x}\r\n".encode() + event + b"\r\n")


@contextmanager
def drip_server(*script: Behaviour) -> Iterator[DripServer]:
    """A started `DripServer`, stopped at the end of the block."""
    server = DripServer(*script).start()
    try:
        yield server
    finally:
        server.stop()
