"""A sync stream consumed on another thread than the one that started it (issue 11).

A web server's thread pool does this: a sync endpoint returns ``predict.stream(...)`` and the
server calls ``next()`` on it from whichever worker is free, while the thread that started it
serves other requests with sync calls of its own. The stream's task lives on its first
thread's own loop (ADR-049); whichever thread waits runs that loop, one thread at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, cast

import typedspy as ts
from typedspy.testing import StandIn


class Ask(ts.Signature):
    """Answer."""

    q: str = ts.InputField()
    a: str = ts.OutputField()


def _blocking(gate: threading.Event, seen: threading.Event, word: str) -> Any:
    def answer(request: dict[str, Any]) -> None:
        if word in str(request["messages"]):
            seen.set()
            assert gate.wait(30)
        return None  # generated data

    return answer


def test_a_stream_is_consumed_on_another_thread_while_its_thread_makes_a_call() -> None:
    gate, seen = threading.Event(), threading.Event()
    with StandIn(answer=_blocking(gate, seen, "held")) as server:
        lm = ts.LM("standin-1", base_url=server.url + "/v1", api_key="k", max_retries=0)
        predict = ts.Predict(Ask, lm=lm)
        with ThreadPoolExecutor(1) as first, ThreadPoolExecutor(1) as second:
            events = first.submit(lambda: predict.stream(q="streamed")).result()
            call = first.submit(lambda: predict(q="held"))  # its loop runs until the gate opens
            assert seen.wait(30)
            consumed = second.submit(lambda: list(events))
            wait([consumed], timeout=0.5)  # lets a consumer that does not wait fail first
            gate.set()
            assert isinstance(call.result(timeout=30), ts.Prediction)
            assert isinstance(consumed.result(timeout=30)[-1], ts.Prediction)
        lm.close()


def test_a_thread_calls_while_another_thread_consumes_its_stream() -> None:
    gate, seen = threading.Event(), threading.Event()
    with StandIn(answer=_blocking(gate, seen, "streamed")) as server:
        lm = ts.LM("standin-1", base_url=server.url + "/v1", api_key="k", max_retries=0)
        predict = ts.Predict(Ask, lm=lm)
        with ThreadPoolExecutor(1) as first, ThreadPoolExecutor(1) as second:
            events = first.submit(lambda: predict.stream(q="streamed")).result()
            consumed = second.submit(lambda: list(events))  # runs the first thread's loop
            assert seen.wait(30)
            call = first.submit(lambda: predict(q="other"))
            wait([call], timeout=0.5)  # lets a call that does not wait fail first
            gate.set()
            assert isinstance(consumed.result(timeout=30)[-1], ts.Prediction)
            assert isinstance(call.result(timeout=30), ts.Prediction)
        lm.close()


def test_closing_a_stream_on_another_thread_closes_its_connection() -> None:
    with StandIn(chunk_delay=0.01) as server:
        server.enqueue('{"a": "' + "x" * 5_000 + '"}')
        lm = ts.LM("standin-1", base_url=server.url + "/v1", api_key="k", max_retries=0)
        predict = ts.Predict(Ask, lm=lm)
        with ThreadPoolExecutor(1) as first, ThreadPoolExecutor(1) as second:
            started = first.submit(lambda: predict.stream(q="streamed")).result()
            events = cast("Generator[object, None, None]", started)
            assert second.submit(lambda: next(events)).result(timeout=30) is not None
            second.submit(events.close).result(timeout=30)  # the first thread stays idle
            for _ in range(3000):  # bounded: the server sees the client go
                if server.disconnects:
                    break
                threading.Event().wait(0.01)
            assert server.disconnects == 1
        lm.close()
