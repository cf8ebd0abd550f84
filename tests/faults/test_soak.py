"""A soak: 3,000 calls on one LM, a third of them faulted, leave nothing behind (issue 10).

The fault-injection run that filed issue 10 found the core holding over a 3,000-call soak; this
keeps it holding: every call ends in a `Prediction` or a typed `LMError`, one request each, and
afterwards no task is left on the loop and no file descriptor stays open.
"""

from __future__ import annotations

import asyncio
import os

import typedspy as ts
from faults.server import FaultServer, Reply

CALLS = 3_000


class Decide(ts.Signature):
    """Decide."""

    task: str = ts.InputField()
    action: str = ts.OutputField()


FAULTS = [
    Reply.json({"error": {"message": "overloaded", "type": "fault"}}, status=503),
    Reply(status=0),  # the connection dropped without an answer
    Reply.raw("<html>502 Bad Gateway</html>", content_type="text/html"),
]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_3000_calls_a_third_faulted_end_typed_and_leave_nothing_open() -> None:
    good = Reply.completion('{"action": "ship"}')
    replies = [FAULTS[i // 3 % len(FAULTS)] if i % 3 == 2 else good for i in range(CALLS)]

    async def main(server: FaultServer) -> tuple[list[object], set[asyncio.Task[object]]]:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        predict = ts.Predict(Decide, lm=lm)
        try:
            results = await predict.abatch(
                [{"task": f"t{i}"} for i in range(CALLS)], concurrency=32
            )
        finally:
            await lm.aclose()
        return list(results), asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[return-value]

    before = open_fds()
    with FaultServer(*replies, max_requests=CALLS) as server:
        results, left = asyncio.run(main(server))
        assert len(server.requests) == CALLS  # one request a call: no fault was retried
    assert left == set()
    predictions = [r for r in results if isinstance(r, ts.Prediction)]
    errors = [r for r in results if not isinstance(r, ts.Prediction)]
    assert len(predictions) == CALLS - CALLS // 3
    assert all(p.action == "ship" for p in predictions)
    assert all(isinstance(e, ts.LMError) for e in errors), {type(e).__name__ for e in errors}
    assert open_fds() <= before  # every connection closed, the server's and the client's
