"""A sync call sends from its own thread, on that thread's loop (ADR-049), at the HTTP boundary."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import multiprocessing as mp
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import openai
import pytest

import typedspy as ts
from faults.server import FaultServer, Reply
from typedspy.testing import StandIn, chat_completion

SAFETY = 60.0  # seconds: bounds a hang, never a timing assertion


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


class Sends:
    """Which thread wrote to which client socket of the stand-in (a probe on the socket)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.lock = threading.Lock()
        self.writes: list[tuple[int, int]] = []  # (thread ident, socket id)
        self.together: threading.Barrier | None = None  # set: no reply before all arrived

    def answer(self, request: dict[str, Any]) -> None:
        """The stand-in's hook: with `together` set, hold each request until the others came."""
        del request
        if self.together is not None:
            with contextlib.suppress(threading.BrokenBarrierError):  # then they came one by one
                self.together.wait()

    def record(self, sock: socket.socket) -> None:
        try:
            peer = sock.getpeername()
        except OSError:
            return
        if isinstance(peer, tuple) and peer[1] == self.port:
            with self.lock:
                self.writes.append((threading.get_ident(), id(sock)))

    def threads(self) -> list[int]:
        return list(dict.fromkeys(thread for thread, _ in self.writes))

    def sockets(self) -> int:
        return len({sock for _, sock in self.writes})


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ts.LM, Sends, StandIn]]:
    with StandIn(answer=lambda request: sends.answer(request)) as server:
        sends = Sends(server.port)
        for name in ("send", "sendall"):
            original = getattr(socket.socket, name)

            def probe(sock: socket.socket, *args: Any, _original: Any = original) -> Any:
                sends.record(sock)
                return _original(sock, *args)

            monkeypatch.setattr(socket.socket, name, probe)
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline", max_retries=0)
        try:
            yield lm, sends, server
        finally:
            lm.close()


def test_a_sync_calls_request_goes_out_on_the_calling_thread(
    served: tuple[ts.LM, Sends, StandIn],
) -> None:
    lm, sends, _ = served
    predict = ts.Predict(Answer, lm=lm)
    callers = [threading.get_ident()]
    predict(question="one")

    def in_a_worker() -> None:
        callers.append(threading.get_ident())
        predict(question="two")
        for _ in predict.stream(question="three"):
            pass

    worker = threading.Thread(target=in_a_worker)
    worker.start()
    worker.join()

    assert sends.threads() == callers  # no hand-off to a loop thread: each caller sent its own


def test_a_sync_batch_still_sends_its_items_concurrently(
    served: tuple[ts.LM, Sends, StandIn],
) -> None:
    lm, sends, _ = served
    sends.together = threading.Barrier(2, timeout=SAFETY)  # a loaded machine cannot serialise them
    results = ts.Predict(Answer, lm=lm).batch([{"question": "a"}, {"question": "b"}])

    assert all(not isinstance(r, BaseException) for r in results)
    assert sends.sockets() == 2  # both in flight at once: a connection each, not one in turn


def raw_user_agents() -> tuple[str, str]:
    """The User-Agent the raw sync SDK sends, and the raw async SDK's."""
    with FaultServer(Reply.completion("hi")) as server:
        messages: Any = [{"role": "user", "content": "q"}]
        with openai.OpenAI(base_url=server.url, api_key="sk-test") as client:
            client.chat.completions.create(model="m", messages=messages)

        async def send() -> None:
            async with openai.AsyncOpenAI(base_url=server.url, api_key="sk-test") as client:
                await client.chat.completions.create(model="m", messages=messages)

        asyncio.run(send())
    sync, asynchronous = (seen.headers["user-agent"] for seen in server.requests)
    return sync, asynchronous


@pytest.mark.parametrize("deadline", [None, 30.0], ids=["no_deadline", "deadline"])
def test_a_sync_call_sends_as_the_raw_sdk_client_it_uses(deadline: float | None) -> None:
    # ADR-064: a sync call's own request goes out with the SDK's plain blocking client (no
    # subclass of ours), as the raw sync SDK's; under a deadline with the async client, whose
    # waits (a read, the sleep before a retry) the deadline's timer can cut.
    raw_sync, raw_async = raw_user_agents()
    with FaultServer(Reply.completion('{"answer": "hi"}')) as server:
        lm = ts.LM("m", base_url=server.url, api_key="sk-test", max_retries=0, profile="openai")
        try:
            with ts.context(lm=lm, deadline=deadline):
                ts.Predict(Answer)(question="q")
        finally:
            lm.close()
    (seen,) = server.requests
    assert raw_sync.startswith("OpenAI/") and raw_async.startswith("AsyncOpenAI/")
    assert seen.headers["user-agent"] == (raw_sync if deadline is None else raw_async)


class _KeepAlive(http.server.BaseHTTPRequestHandler):
    """Answers every chat completion on a kept-alive connection, noting the client's port."""

    protocol_version = "HTTP/1.1"
    ports: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        self.ports.append(self.client_address[1])
        body = json.dumps(chat_completion('{"answer": "hi"}')).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_sends_on_connections_of_its_own() -> None:
    # The parent's blocking client pools a kept-alive connection; a child forked after it (a
    # fork pool) reused that socket, and children writing to one connection crossed their
    # requests and replies.
    _KeepAlive.ports = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeepAlive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    lm = ts.LM("m", base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="k")
    try:
        predict = ts.Predict(Answer, lm=lm, mode="json_schema")
        predict(question="parent")
        child = mp.get_context("fork").Process(target=predict, kwargs={"question": "child"})
        child.start()
        child.join(SAFETY)
        assert child.exitcode == 0
        predict(question="parent again")
    finally:
        lm.close()
        server.shutdown()
        server.server_close()
    parent, forked, again = _KeepAlive.ports
    assert forked != parent  # a connection of the child's own
    assert again == parent  # the parent's pool is untouched
