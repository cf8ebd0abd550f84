"""`Module.abatch` / `batch` over the real openai client, HTTP answered by respx.

Concurrency, order and failures are observed at the HTTP boundary: the routes count what was
sent and hold requests open on events, never on sleeps.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
import respx

import typedspy as ts
from typedspy.testing import chat_completion
from wire import BASE_URL, make_lm


class Double(ts.Signature):
    """Double the number."""

    number: int = ts.InputField()
    doubled: int = ts.OutputField()


class Pipeline(ts.Module):
    """A user module calling a Predict twice."""

    def __init__(self, lm: ts.LM) -> None:
        self.step = ts.Predict(Double, lm=lm, max_retries=0)

    async def aforward(self, number: int) -> int:
        once = await self.step.acall(number=number)
        twice = await self.step.acall(number=once.doubled)
        return int(twice.doubled)


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


def answer(doubled: Any, *, tokens: int = 10) -> httpx.Response:
    usage = {"prompt_tokens": tokens, "completion_tokens": 2, "total_tokens": tokens + 2}
    return httpx.Response(200, json=chat_completion(json.dumps({"doubled": doubled}), usage=usage))


def inputs(n: int) -> list[dict[str, Any]]:
    return [{"number": i} for i in range(n)]


def test_results_come_in_input_order_with_the_typed_error_of_each_failed_item(
    llm: respx.MockRouter,
) -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        n = _number(request)
        return answer("not a number" if n % 3 == 0 else n * 2, tokens=n + 1)

    route = llm.post("/chat/completions").mock(side_effect=reply)
    predict = ts.Predict(Double, lm=make_lm(), max_retries=0)

    results = predict.batch(inputs(9), concurrency=3)

    assert route.call_count == 9
    assert len(results) == 9
    for i, result in enumerate(results):
        if i % 3 == 0:
            assert isinstance(result, ts.errors.OutputValidationError)
            assert [str(e.path) for e in result.errors] == ["('doubled',)"]
        else:
            assert isinstance(result, ts.Prediction)
            assert result.doubled == i * 2
    assert [item.usage.prompt_tokens for item in results.items] == [i + 1 for i in range(9)]
    assert [item.requests for item in results.items] == [1] * 9
    assert results.failures == {"OutputValidationError": 3}
    assert results.usage.total_tokens == sum(i + 3 for i in range(9))
    assert results.stopped is False


def test_no_more_items_run_at_once_than_the_concurrency_limit(llm: respx.MockRouter) -> None:
    in_flight = 0
    peak = 0
    full = asyncio.Event()

    async def reply(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight == 4:
            full.set()
        await full.wait()  # the first wave waits until four are in flight together
        in_flight -= 1
        return answer(_number(request) * 2)

    llm.post("/chat/completions").mock(side_effect=reply)
    predict = ts.Predict(Double, lm=make_lm(), max_retries=0)

    results = asyncio.run(predict.abatch(inputs(20), concurrency=4))

    assert peak == 4
    assert [r.doubled for r in results] == [i * 2 for i in range(20)]  # type: ignore[union-attr]


def test_user_modules_batch_and_count_every_request_of_an_item(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(side_effect=lambda r: answer(_number(r) * 2))

    results = Pipeline(make_lm()).batch(inputs(5), concurrency=2)

    assert list(results) == [i * 4 for i in range(5)]
    assert [item.requests for item in results.items] == [2] * 5
    assert results.requests == 10


def test_a_hanging_item_times_out_alone_and_its_request_is_cancelled(
    llm: respx.MockRouter,
) -> None:
    cancelled = asyncio.Event()

    async def reply(request: httpx.Request) -> httpx.Response:
        if _number(request) == 0:
            try:
                await asyncio.Event().wait()  # never answers
            except asyncio.CancelledError:
                cancelled.set()
                raise
        return answer(_number(request) * 2)

    llm.post("/chat/completions").mock(side_effect=reply)
    predict = ts.Predict(Double, lm=make_lm(), max_retries=0)

    async def main() -> ts.batch.BatchResult[Any]:
        results = await predict.abatch(inputs(3), concurrency=3, timeout=3.0)
        assert cancelled.is_set()
        return results

    results = asyncio.run(main())

    assert isinstance(results[0], ts.errors.ItemTimeoutError)
    assert isinstance(results[0], TimeoutError)
    assert results[0].timeout == 3.0
    assert results.items[0].seconds >= 3.0 > results.items[1].seconds
    assert [r.doubled for r in results[1:]] == [2, 4]  # type: ignore[union-attr]


def test_an_item_counts_the_requests_it_sent_that_got_no_reply(llm: respx.MockRouter) -> None:
    # A request cut by the item's timeout, or answered with an error, still went to the
    # endpoint (a real engine generated for it): the item and the totals count it.
    async def reply(request: httpx.Request) -> httpx.Response:
        number = _number(request)
        if number == 0:
            await asyncio.Event().wait()  # never answers
        if number == 1:
            return httpx.Response(500, json={"error": {"message": "engine failed"}})
        return answer(number * 2)

    llm.post("/chat/completions").mock(side_effect=reply)
    predict = ts.Predict(Double, lm=make_lm(max_retries=0), max_retries=0)

    results = predict.batch(inputs(3), concurrency=3, timeout=1.0)

    assert isinstance(results[0], ts.errors.ItemTimeoutError)
    assert isinstance(results[1], ts.errors.LMStatusError)
    assert [item.requests for item in results.items] == [1, 1, 1]
    assert results.requests == 3
    assert [item.usage.total_tokens for item in results.items] == [0, 0, 12]


def test_max_errors_stops_starting_items_and_marks_the_rest(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=answer("bad"))
    predict = ts.Predict(Double, lm=make_lm(), max_retries=0)
    seen: list[ts.batch.BatchProgress] = []

    results = predict.batch(inputs(10), concurrency=1, max_errors=3, on_progress=seen.append)

    assert route.call_count == 3
    assert results.stopped is True
    assert [type(r).__name__ for r in results] == ["OutputValidationError"] * 3 + [
        "BatchStoppedError"
    ] * 7
    assert results[5].max_errors == 3  # type: ignore[union-attr]
    assert [p.done for p in seen] == [1, 2, 3]
    assert seen[-1].failures == {"OutputValidationError": 3}
    assert seen[-1].succeeded == 0


def test_progress_reports_done_failures_by_kind_and_tokens(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(
        side_effect=lambda r: answer("x" if _number(r) == 1 else 0, tokens=8)
    )
    seen: list[ts.batch.BatchProgress] = []

    ts.Predict(Double, lm=make_lm(), max_retries=0).batch(
        inputs(3), concurrency=1, on_progress=seen.append
    )

    assert [(p.done, p.succeeded, p.failed) for p in seen] == [(1, 1, 0), (2, 1, 1), (3, 2, 1)]
    assert seen[-1].usage.total_tokens == 30
    assert seen[-1].requests == 3
    assert seen[-1].summary() == "ok=2 OutputValidationError=1 tokens=30"


def test_progress_counts_items_answered_from_the_cache(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(side_effect=lambda r: answer(_number(r) * 2, tokens=8))
    seen: list[ts.batch.BatchProgress] = []

    with ts.context(cache=ts.cache.MemoryCache()):
        results = ts.Predict(Double, lm=make_lm()).batch(
            [{"number": 1}] * 3, concurrency=1, on_progress=seen.append
        )

    assert [item.ok for item in results.items] == [True] * 3
    assert seen[-1].summary() == "ok=3 tokens=10 cached=2"


def test_a_timeout_error_the_module_raises_itself_is_its_own_not_the_items(
    llm: respx.MockRouter,
) -> None:
    class Raises(ts.Module):
        async def aforward(self, number: int) -> int:
            if number:
                raise TimeoutError(f"the module's own, for {number}")
            return number

    results = Raises().batch(inputs(2), timeout=60)

    assert results[0] == 0 and results.items[0].ok
    error = results[1]
    assert type(error) is TimeoutError and str(error) == "the module's own, for 1"
    assert not results.items[1].ok


def test_the_progress_bar_shows_failures_and_tokens(
    llm: respx.MockRouter, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("tqdm", reason="the progress extra (tqdm) is not installed")
    llm.post("/chat/completions").mock(side_effect=lambda r: answer("x" if _number(r) else 0))

    ts.Predict(Double, lm=make_lm(), max_retries=0).batch(inputs(2), progress=True)

    err = capsys.readouterr().err
    assert "2/2" in err
    assert "ok=1 OutputValidationError=1 tokens=24" in err


def test_a_progress_bar_without_tqdm_names_the_extra_to_install(
    llm: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    route = llm.post("/chat/completions").mock(side_effect=lambda r: answer(0))
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # an install without the extra
    with pytest.raises(ts.ConfigurationError, match=re.escape('pip install "typedspy[progress]"')):
        ts.Predict(Double, lm=make_lm()).batch(inputs(2), progress=True)
    assert route.call_count == 0


def test_a_progress_callback_that_raises_is_logged_and_the_batch_goes_on(
    llm: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    llm.post("/chat/completions").mock(side_effect=lambda r: answer(_number(r) * 2))

    def broken(progress: ts.batch.BatchProgress) -> None:
        raise RuntimeError("display gone")

    with caplog.at_level(logging.WARNING, logger="typedspy"):
        results = ts.Predict(Double, lm=make_lm()).batch(inputs(2), on_progress=broken)

    assert len(results.successes) == 2
    assert "progress callback" in caplog.text


def test_cancelling_a_batch_cancels_every_request_and_leaves_no_task(
    llm: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    started = 0
    all_started = asyncio.Event()
    cancelled = 0

    async def reply(request: httpx.Request) -> httpx.Response:
        nonlocal started, cancelled
        started += 1
        if started == 3:
            all_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled += 1
            raise
        raise AssertionError("unreachable")

    llm.post("/chat/completions").mock(side_effect=reply)
    predict = ts.Predict(Double, lm=make_lm(), max_retries=0)

    async def main() -> set[asyncio.Task[Any]]:
        batch = asyncio.ensure_future(predict.abatch(inputs(6), concurrency=3))
        await all_started.wait()
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    with caplog.at_level(logging.DEBUG, logger="asyncio"):
        leftover = asyncio.run(main())

    assert leftover == set()
    assert (started, cancelled) == (3, 3)
    assert "destroyed" not in caplog.text


# Seen at openai 1.40 and 2.30 (httpx 0.27) after the file's earlier tests: the three
# connections stayed open past 30 s after the cancel, until garbage collection (ADR-044).
SDK_ON_HTTPX = any(
    c.__name__ == "AsyncClient" and c.__module__.split(".")[0] == "httpx"
    for c in openai.DefaultAsyncHttpxClient.__mro__
)


@pytest.mark.xfail(
    SDK_ON_HTTPX, reason="openai < 3 over httpx may keep cancelled connections", strict=False
)
def test_cancelling_closes_the_open_connections_to_a_real_server() -> None:
    async def main() -> tuple[int, int]:
        opened = 0
        closed = 0
        all_open = asyncio.Event()
        all_closed = asyncio.Event()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal opened, closed
            opened += 1
            if opened == 3:
                all_open.set()
            while await reader.read(65536):  # never answers; returns b"" once the client hangs up
                pass
            closed += 1
            if closed == 3:
                all_closed.set()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        # 120 s, not the SDK's 5 s connect timeout: under CPU load this loop may see a finished
        # connect late, and an item that gives up before connecting leaves fewer than 3 open.
        lm = ts.LM(  # profile named: no GET /models to a server that never answers (ADR-084)
            "m",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key="k",
            max_retries=0,
            timeout=120,
            profile="openai",
        )
        batch = asyncio.ensure_future(ts.Predict(Double, lm=lm).abatch(inputs(5), concurrency=3))
        await asyncio.wait_for(all_open.wait(), 120)  # a bound, not a timing assertion
        batch.cancel()
        with pytest.raises(asyncio.CancelledError):
            await batch
        try:
            await asyncio.wait_for(all_closed.wait(), 30)  # a bound, not a timing assertion
        finally:  # closed even when it fails: a leaked socket's warning fails a later test
            await lm.aclose()
            server.close()
            await server.wait_closed()
        return opened, closed

    assert asyncio.run(main()) == (3, 3)


def test_an_input_that_is_not_a_mapping_is_refused_before_anything_is_sent(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(return_value=answer(2))
    with pytest.raises(ts.InputError, match="batch input 1 is a int"):
        ts.Predict(Double, lm=make_lm()).batch([{"number": 1}, 5])  # type: ignore[list-item]
    assert route.call_count == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "concurrency=0"),
        ({"timeout": 0}, "timeout=0"),
        ({"max_errors": 0}, "max_errors=0"),
        ({"threads": 4}, "unknown batch option"),
    ],
)
def test_invalid_options_are_configuration_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ts.ConfigurationError, match=message):
        ts.Predict(Double, lm=make_lm()).batch(inputs(1), **options)


def test_an_input_error_is_the_items_result_not_the_batchs(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(side_effect=lambda r: answer(_number(r) * 2))

    results = ts.Predict(Double, lm=make_lm()).batch([{"number": 1}, {"numbr": 2}])

    assert results[0].doubled == 2  # type: ignore[union-attr]
    assert isinstance(results[1], ts.InputError)
    assert results[1].missing == ("number",)


def _number(request: httpx.Request) -> int:
    """The ``number`` input of a Double request, read from the user turn that was sent."""
    content = json.loads(request.content)["messages"][-1]["content"]
    found = re.search(r"<number>\s*(\d+)", content)
    assert found is not None, content
    return int(found.group(1))


class AnswerQuestion(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def test_chain_of_thought_and_react_batch_too(llm: respx.MockRouter) -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        question = body["messages"][-1]["content"].split("\n")[1]
        if body.get("tools"):  # ReAct: finish at once
            call = {"name": "finish", "arguments": json.dumps({"answer": question.upper()})}
            return httpx.Response(
                200,
                json=chat_completion(None, tool_calls=[call], finish_reason="tool_calls"),
            )
        outputs = {"reasoning": "think", "answer": question.upper()}
        return httpx.Response(200, json=chat_completion(json.dumps(outputs)))

    llm.post("/chat/completions").mock(side_effect=reply)
    questions = [{"question": q} for q in ("a", "b", "c")]

    thought = ts.ChainOfThought(AnswerQuestion, lm=make_lm()).batch(questions, concurrency=2)
    acted = ts.ReAct(AnswerQuestion, tools=[], lm=make_lm()).batch(questions, concurrency=2)

    assert [(p.reasoning, p.answer) for p in thought] == [("think", q) for q in "ABC"]  # type: ignore[union-attr]
    assert [p.answer for p in acted] == ["A", "B", "C"]  # type: ignore[union-attr]


class Cancelling(ts.Module):
    """An item whose own code meets a cancelled future (the batch itself is not cancelled)."""

    async def aforward(self, number: int) -> int:
        if number == 1:
            future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
            future.cancel()
            return await future
        return number * 2


def test_an_item_that_raises_cancelled_error_by_itself_fails_alone() -> None:
    # It ended the whole batch: the runner let every BaseException through, and a
    # CancelledError the item's own code met read as the batch's cancellation.
    result = Cancelling().batch([{"number": n} for n in range(3)])
    assert [item.result for item in result.items if item.error is None] == [0, 4]
    error = result.items[1].error
    assert isinstance(error, RuntimeError) and "item 1 raised CancelledError" in str(error)
    assert isinstance(error.__cause__, asyncio.CancelledError)
