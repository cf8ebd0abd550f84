"""A sync stream consumed on another thread than the one that started it (issue 11).

A web server's thread pool does this: a sync endpoint returns ``predict.stream(...)`` and the
server calls ``next()`` on it from whichever worker is free, while the thread that started it
serves other requests with sync calls of its own. The stream's task lives on its first
thread's own loop (ADR-049); whichever thread waits runs that loop, one thread at a time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, cast

import pytest

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


# --- read where a loop runs (ADR-097) --------------------------------------------------------


def test_a_stream_started_without_a_loop_read_inside_asyncio_run_names_what_to_do() -> None:
    # Its items come from this thread's own loop, which asyncio cannot run inside another.
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.url + "/v1", api_key="k", max_retries=0)
        predict = ts.Predict(Ask, lm=lm)
        events = predict.stream(q="streamed")

        async def handler() -> object:
            return next(events)

        with pytest.raises(ts.ConfigurationError) as refused:
            asyncio.run(handler())
        assert str(refused.value).startswith(
            "Predict.stream cannot be read in a thread running an event loop"
        )
        assert "start it where it is read, or use `async for ... in predict.astream(" in (
            str(refused.value)
        )
        assert list(events) == []  # the stream was closed
        assert isinstance(predict(q="after"), ts.Prediction)  # the thread's loop still serves
        lm.close()


def test_a_stream_read_in_code_typedspy_runs_is_refused_as_a_sync_call_there() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.url + "/v1", api_key="k", max_retries=0)
        predict = ts.Predict(Ask, lm=lm)
        events = predict.stream(q="streamed")  # on this thread's own loop

        class Reader(ts.Module):
            async def aforward(self, q: str) -> str:  # runs on this thread's own loop
                next(events)
                return q

        with pytest.raises(ts.ConfigurationError) as refused:
            Reader()(q="read")
        assert str(refused.value).startswith(
            "Predict.stream cannot run on typedspy's own event loop"
        )
        assert "use `async for ... in predict.astream(...)`" in str(refused.value)
        lm.close()


def test_a_stream_read_on_the_background_loop_is_refused_instead_of_waiting_for_ever() -> None:
    # Started inside a running loop, its task runs on typedspy's background loop; reading it
    # from an async module that loop runs blocked the loop its items come from.
    outcome: list[BaseException | object] = []
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.url + "/v1", api_key="k", max_retries=0)
        predict = ts.Predict(Ask, lm=lm)

        class Reader(ts.Module):
            def __init__(self, events: Iterator[object]) -> None:
                super().__init__()
                self.events = events

            async def aforward(self, q: str) -> str:  # runs on the background loop
                next(self.events)
                return q

        async def cell() -> object:
            return Reader(predict.stream(q="streamed"))(q="read")

        def notebook() -> None:
            try:
                outcome.append(asyncio.run(cell()))
            except BaseException as exc:  # reported below
                outcome.append(exc)

        reader = threading.Thread(target=notebook, daemon=True)  # on main it never ends
        reader.start()
        reader.join(30)
        assert not reader.is_alive()
        assert isinstance(outcome[0], ts.ConfigurationError)
        assert "Predict.stream cannot run on typedspy's own event loop" in str(outcome[0])
        lm.close()
