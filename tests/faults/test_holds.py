"""What the fault-injection run found already holding (issue 10), kept holding.

HTTP faults and malformed bodies are typed `LMError`s; hostile model output is a typed
`OutputError` and `parse_outputs` never raises; leaving a stream early closes its connection;
cancelled calls leave no task or connection behind; the retry bound is exact.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply


class Decide(ts.Signature):
    """Decide."""

    task: str = ts.InputField()
    action: str = ts.OutputField()
    confidence: float = ts.OutputField()


def failure(reply: Reply, **settings: object) -> tuple[BaseException, int]:
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        try:
            with ts.context(lm=lm, **settings), pytest.raises(Exception) as caught:  # type: ignore[arg-type]
                ts.Predict(Decide)(task="t")
        finally:
            lm.close()
        return caught.value, len(server.requests)


def error_reply(status: int) -> Reply:
    return Reply.json({"error": {"message": f"fault {status}", "type": "fault"}}, status=status)


HTTP_FAULTS = {
    **{
        str(status): error_reply(status)
        for status in (400, 401, 403, 404, 409, 422, 429, 500, 502, 503)
    },
    "dropped connection": Reply(status=0),
    "200 not JSON": Reply.raw("<html>502 Bad Gateway</html>", content_type="text/html"),
    "200 truncated JSON": Reply.raw(
        '{"choices": [{"message": {"content": "x"', content_type="application/json"
    ),
    "200 JSON array": Reply.json([1, 2, 3]),
    "200 no choices": Reply.json({"choices": []}),
    "200 choice without message": Reply.json({"choices": [{"index": 0}]}),
    "500 with HTML": Reply.raw("<html>oops</html>", status=500, content_type="text/html"),
}


@pytest.mark.parametrize("reply", HTTP_FAULTS.values(), ids=HTTP_FAULTS.keys())
def test_http_faults_are_typed_lm_errors(reply: Reply) -> None:
    error, requests = failure(reply)
    assert isinstance(error, ts.LMError), repr(error)
    assert requests == 1


def test_200_concurrent_faulted_calls_each_end_in_their_own_typed_error() -> None:
    """Every fault at once: 200 calls on one LM, each answered by one of the faults above."""
    faults = list(HTTP_FAULTS.values())
    replies = [faults[i % len(faults)] for i in range(200)]

    async def main(server: FaultServer) -> list[BaseException | ts.Prediction[Decide]]:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        predict = ts.Predict(Decide, lm=lm)
        try:
            calls = [predict.acall(task=f"t{i}") for i in range(200)]
            return await asyncio.gather(*calls, return_exceptions=True)
        finally:
            await lm.aclose()

    with FaultServer(*replies, max_requests=400) as server:
        results = asyncio.run(main(server))
        assert len(server.requests) == 200  # one request each: no fault was retried
    assert all(isinstance(result, ts.LMError) for result in results), {
        type(result).__name__ for result in results
    }


HOSTILE_OUTPUTS = {
    "empty": "",
    "prose": "I cannot decide that.",
    "truncated": '{"action": "ship", "confid',
    "wrong types": '{"action": ["x"], "confidence": "high"}',
    "NaN": '{"action": "ship", "confidence": NaN}',
    "deep": '{"action": "ship", "confidence": 1, "x": ' + "[" * 3_000 + "]" * 3_000 + "}",
    "huge number": '{"action": "ship", "confidence": ' + "9" * 5_000 + "}",
    "control chars": '{"action": "\x00\x01\x1b[2J", "confidence": "\ud800"}',
    "many keys": "{" + ",".join(f'"k{i}": {i}' for i in range(20_000)) + "}",
    "whitespace": " " * 200_000,
    "nested strings": '"' + '\\"' * 10_000 + '"',
}


@pytest.mark.parametrize("output", HOSTILE_OUTPUTS.values(), ids=HOSTILE_OUTPUTS.keys())
def test_hostile_model_output_is_a_typed_output_error(output: str) -> None:
    result = ts.parse.parse_outputs(Decide, output)  # never raises, whatever the text
    assert not result.ok and result.errors
    error, requests = failure(Reply.completion(output), max_retries=1)
    assert isinstance(error, ts.OutputError), repr(error)
    assert requests == 2  # the retry bound is exact


def test_leaving_a_stream_early_closes_its_connection() -> None:
    delta = {"choices": [{"index": 0, "delta": {"content": '{"action": "'}}]}
    more = {"choices": [{"index": 0, "delta": {"content": "x"}}]}

    def endless() -> list[bytes]:
        import json

        return [f"data: {json.dumps(delta)}\n\n".encode()] + [
            f"data: {json.dumps(more)}\n\n".encode()
        ] * 100_000

    reply = Reply(200, {"content-type": "text/event-stream"}, endless, drip=0.001)
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with ts.context(lm=lm):
            for _ in ts.Predict(Decide).stream(task="t"):
                break  # leave at the first event
        assert server.connection_closed.wait(5)  # the server saw the client go
        lm.close()


def test_cancelled_calls_leave_no_task_or_connection() -> None:
    body = {"choices": [{"index": 0, "delta": {"content": "x"}}]}
    reply = Reply.sse([body] * 10_000, done=False)
    reply = Reply(200, reply.headers, reply.pieces, drip=0.01)

    async def main(server: FaultServer) -> set[asyncio.Task[object]]:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        predict = ts.Predict(Decide, lm=lm)
        started = asyncio.Event()

        async def consume() -> None:
            async for _ in predict.astream(task="t"):
                started.set()

        tasks = [asyncio.create_task(consume()) for _ in range(20)]
        await asyncio.wait_for(started.wait(), 10)
        while len(server.requests) < 20:  # every call has sent its request
            await asyncio.sleep(0.01)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await lm.aclose()
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[return-value]

    with FaultServer(reply) as server:
        left = asyncio.run(main(server))
        assert left == set()
        assert server.models_requests == 1  # 20 first calls asked which server it is once
        for _ in range(500):  # every connection ends on the server's side (bounded wait)
            if server.closed_connections >= 21:
                break
            server.connection_closed.wait(0.01)
            server.connection_closed.clear()
        assert server.closed_connections == 21


def test_no_typedspy_generator_is_left_to_the_loops_finalizer() -> None:
    """Every layer of typedspy closes what it reads: leaving a stream early (after 1, 3 or 10
    events) or cancelling it leaves none of typedspy's own async generators to the event loop's
    garbage-collection hook (which closes each in a stray task, whenever the collector runs)."""
    body = {"choices": [{"index": 0, "delta": {"content": "x"}}]}
    reply = Reply.sse([body] * 2_000, done=False)
    reply = Reply(200, reply.headers, reply.pieces, drip=0.001)
    src = str(Path(ts.__file__).parent)
    abandoned: list[str] = []

    async def main(server: FaultServer) -> None:
        finalize = asyncio.get_running_loop()._asyncgen_finalizer_hook  # type: ignore[attr-defined]

        def record(agen: AsyncGenerator[object, None]) -> None:
            if agen.ag_code.co_filename.startswith(src):
                abandoned.append(agen.ag_code.co_qualname)
            finalize(agen)

        sys.set_asyncgen_hooks(finalizer=record)  # restored when asyncio.run's loop stops
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        predict = ts.Predict(Decide, lm=lm)
        for leave_after in (1, 3, 10):
            async with ts.streaming.closing(predict.astream(task="t")) as events:
                seen = 0
                async for _ in events:
                    seen += 1
                    if seen == leave_after:
                        break
        started = asyncio.Event()

        async def consume() -> None:
            async for _ in predict.astream(task="t"):
                started.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(started.wait(), 10)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await lm.aclose()

    with FaultServer(reply) as server:
        asyncio.run(main(server))
    gc.collect()
    assert abandoned == []
