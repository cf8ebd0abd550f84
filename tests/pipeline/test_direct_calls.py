"""A direct ``lm("...")`` takes the road a module's requests take (ADR-092).

Counted at the stand-in: a cache hit sends nothing, a budget refuses before sending, the history
and callbacks see the exchange, for a plain `LM` and a fallback chain alike.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import typedspy as ts
from typedspy.pipeline import last_exchanges
from typedspy.testing import Reply, StandIn


class Seen(ts.callbacks.BaseCallback):
    def __init__(self) -> None:
        self.events: list[str] = []

    def on_lm_start(self, call_id: str, lm: Any, inputs: dict[str, Any]) -> None:
        self.events.append("start")

    def on_lm_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        self.events.append("end")


def test_a_repeated_direct_call_is_answered_by_the_cache() -> None:
    with StandIn() as server:
        server.enqueue("first")
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="k")
        try:
            with ts.context(cache=ts.cache.MemoryCache()):
                assert lm("hi", temperature=0) == "first"
                assert asyncio.run(lm.acall("hi", temperature=0)) == "first"
        finally:
            lm.close()
        assert len(server.requests) == 1


def test_a_budget_refuses_a_direct_call_before_it_is_sent() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="k")
        budget = ts.limits.Budget(requests=1)
        try:
            with ts.context(budget=budget):
                lm("one")
                with pytest.raises(ts.BudgetExceededError):
                    lm("two")
        finally:
            lm.close()
        assert len(server.requests) == 1


def test_history_and_callbacks_see_a_direct_call_of_a_chain() -> None:
    seen = Seen()
    with StandIn() as down, StandIn() as up:
        down.enqueue(Reply(status=503, headers={"retry-after-ms": "1"}))
        up.enqueue("from the second")
        lms = [
            ts.LM("standin-1", base_url=s.base_url, api_key="k", max_retries=0) for s in (down, up)
        ]
        chain = ts.LM.fallback(*lms)
        try:
            with ts.context(callbacks=[seen]):
                assert chain("hi") == "from the second"
        finally:
            for lm in lms:
                lm.close()
    assert seen.events == ["start", "end"]
    (entry,) = last_exchanges(1)
    assert entry.response is not None and entry.response.text == "from the second"
    assert entry.body["messages"] == [{"role": "user", "content": "hi"}]
