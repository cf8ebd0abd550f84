"""Budgets and rate limits under concurrency, threads and hostile headers (issue 21: D4-D6).

Over a real socket (`FaultServer`). Every case ends in a value or a typed error: async cases
under an outer ``asyncio.wait_for`` of `SAFETY` seconds and leaving no task, threads joined
within it and leaving no thread. Replies that must overlap are held back a fraction of a second
by the server.
"""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply, Seen, completion_body
from typedspy.limits import estimate_tokens
from typedspy.lm import BaseLM, LMRequest

SAFETY = 10.0  # seconds: a case that hangs fails here instead
HELD = 0.3  # seconds a reply is held back (twice: before its body and after it)
EXHAUSTED = "x-ratelimit-remaining-requests"


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def reply(
    prompt: int = 1,
    completion: int = 1,
    *,
    held: float = 0.0,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    """A chat completion reporting ``prompt`` and ``completion`` tokens."""
    body = completion_body('{"answer": "ok"}')
    body["usage"] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    data = json.dumps(body).encode()
    head = {"content-type": "application/json", **(headers or {})}
    return Reply(200, head, (lambda: [b"", data]) if held else (lambda: [data]), drip=held)


def too_many(retry_after: str) -> Reply:
    error = {"error": {"message": "Rate limit reached", "type": "requests"}}
    return Reply(
        429,
        {"content-type": "application/json", "retry-after": retry_after},
        lambda: [json.dumps(error).encode()],
    )


def items(n: int) -> list[dict[str, Any]]:
    return [{"question": f"ITEM-{i:02d}"} for i in range(n)]  # all the same size


class Estimates(ts.BaseCallback):
    """Records the prompt estimate of every request (what a budget reserves)."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    def on_lm_start(self, call_id: str, instance: BaseLM, request: LMRequest) -> None:
        self.seen.append(estimate_tokens(request))


@contextmanager
def serving(answer: Callable[[Seen], Reply]) -> Iterator[tuple[FaultServer, ts.LM]]:
    with FaultServer(Reply(echo=answer)) as server:
        lm = ts.LM(
            "gpt-4o-mini", base_url=server.url, api_key="sk-test", max_retries=0, max_tokens=1000
        )
        try:
            yield server, lm
        finally:
            lm.close()


def prompt_estimate(lm: ts.LM) -> int:
    """The estimate of one item's prompt, from one request sent with no budget."""
    estimates = Estimates()
    with ts.context(callbacks=[estimates]):
        ts.Predict(Ask, lm=lm)(**items(1)[0])
    return estimates.seen[0]


def run(coroutine: Any) -> Any:
    """Run ``coroutine`` within `SAFETY` seconds; it must leave no task behind."""

    async def bounded() -> Any:
        result = await asyncio.wait_for(coroutine, SAFETY)
        assert asyncio.all_tasks() == {asyncio.current_task()}
        return result

    return asyncio.run(bounded())


# -- D4: a budget holds what requests in flight may spend ----------------------------------------


def test_concurrent_requests_cannot_all_fit_in_one_input_token_remainder() -> None:
    # 32 items at once under a budget that fits 3.5 prompts: 3 are sent; the others wait for
    # them, then find half a prompt left and are refused (the old budget let all 32 through).
    state = {"prompt": 1}
    with serving(lambda seen: reply(state["prompt"], 5, held=HELD)) as (server, lm):
        estimate = state["prompt"] = prompt_estimate(lm)
        budget = ts.limits.Budget(input_tokens=3 * estimate + estimate // 2)
        results = run(ts.Predict(Ask, lm=lm).abatch(items(32), concurrency=32, budget=budget))
        sent = len(server.requests) - 1
    assert sent == 3
    assert len(results.successes) == 3
    assert results.failures == {"BudgetExceededError": 29}
    assert {e.limit for _, e in results.errors} == {"input_tokens"}
    assert budget.usage.prompt_tokens == 3 * estimate
    assert budget.remaining() == {"input_tokens": estimate // 2}  # nothing is held any more


def test_concurrent_requests_hold_their_worst_case_price_under_a_cost_limit() -> None:
    genai_prices = pytest.importorskip("genai_prices", reason="the prices extra is not installed")
    # gpt-4o-mini with max_tokens=1000 (docs/scale.md prices it with genai-prices): each request
    # holds its prompt plus 1,000 completion tokens while in flight; every reply costs that.
    state = {"prompt": 1}
    with serving(lambda seen: reply(state["prompt"], 1000, held=HELD)) as (server, lm):
        estimate = state["prompt"] = prompt_estimate(lm)
        worst = price(genai_prices, estimate, 1000)
        budget = ts.limits.Budget(cost=worst * Decimal("3.5"))
        results = run(ts.Predict(Ask, lm=lm).abatch(items(32), concurrency=32, budget=budget))
        sent = len(server.requests) - 1
    # Three fit whole; a fourth fits its prompt in the half left (as one request alone would).
    assert sent == 4
    assert results.failures == {"BudgetExceededError": 28}
    assert {e.limit for _, e in results.errors} == {"cost"}
    assert budget.cost == 4 * worst  # the old budget let all 32 through: 9x the limit
    assert budget.cost <= budget.limits["cost"] + price(genai_prices, 0, 1000)


def price(genai_prices: Any, prompt: int, completion: int) -> Decimal:
    usage = genai_prices.Usage(input_tokens=prompt, output_tokens=completion)
    total: Decimal = genai_prices.calc_price(usage, model_ref="gpt-4o-mini").total_price
    return total


def test_a_budget_shared_by_sync_calls_in_threads_holds_too() -> None:
    state = {"prompt": 1}
    with serving(lambda seen: reply(state["prompt"], 5, held=HELD)) as (server, lm):
        estimate = state["prompt"] = prompt_estimate(lm)
        budget = ts.limits.Budget(input_tokens=3 * estimate + estimate // 2)
        outcomes = in_threads(8, lambda i: ts.Predict(Ask, lm=lm)(**items(8)[i]), budget=budget)
        sent = len(server.requests) - 1
    assert sent == 3
    names = sorted(type(o).__name__ for o in outcomes)
    assert names == ["BudgetExceededError"] * 5 + ["Prediction"] * 3


def test_a_request_that_fails_without_a_reply_gives_its_hold_back() -> None:
    # Guards the release: a leaked hold would make every later request wait or be refused.
    replies = iter([Reply(status=0), reply(1, 1)])  # a dropped connection, then an answer
    with serving(lambda seen: next(replies)) as (server, lm):
        budget = ts.limits.Budget(input_tokens=10_000, requests=5)
        predict = ts.Predict(Ask, lm=lm)

        async def main() -> tuple[BaseException | None, Any]:
            with ts.context(budget=budget):
                try:
                    await predict.acall(question="ITEM-00")
                except ts.errors.LMConnectionError as exc:
                    return exc, await predict.acall(question="ITEM-01")
                return None, None

        dropped, answered = run(main())
        assert len(server.requests) == 2
    assert isinstance(dropped, ts.errors.LMConnectionError)
    assert isinstance(answered, ts.Prediction)
    assert budget.remaining() == {"input_tokens": 10_000 - 1, "requests": 3}


# -- D5: a pause asked for by the endpoint is capped, and never outlives a deadline ---------------

HOSTILE: dict[str, tuple[Mapping[str, str] | str, int]] = {
    # name: (first reply, pauses it should cause)
    "reset inf": ({EXHAUSTED: "0", "x-ratelimit-reset-requests": "inf"}, 0),
    "reset nan": ({EXHAUSTED: "0", "x-ratelimit-reset-requests": "nan"}, 0),
    "reset -5": ({EXHAUSTED: "0", "x-ratelimit-reset-requests": "-5"}, 0),
    "reset soon": ({EXHAUSTED: "0", "x-ratelimit-reset-requests": "soon"}, 0),
    "reset 1e308": ({EXHAUSTED: "0", "x-ratelimit-reset-requests": "1e308"}, 1),
    "reset 99999h": ({EXHAUSTED: "0", "x-ratelimit-reset-requests": "99999h"}, 1),
    "429 Retry-After 3600": ("3600", 1),
    "429 Retry-After inf": ("inf", 0),
}


def hostile(first: Mapping[str, str] | str) -> Callable[[Seen], Reply]:
    replies = iter([too_many(first) if isinstance(first, str) else reply(headers=first)])
    return lambda seen: next(replies, reply())


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_pause_is_capped_or_ignored_and_the_next_call_goes(case: str) -> None:
    first, pauses = HOSTILE[case]
    limit = ts.limits.RateLimit(requests_per_minute=60_000, max_pause=0.5)
    with serving(hostile(first)) as (server, lm):
        predict = ts.Predict(Ask, lm=lm)

        async def main() -> tuple[Any, float]:
            with ts.context(rate_limit=limit):
                try:
                    await predict.acall(question="ITEM-00")
                except ts.errors.LMRateLimitError:
                    pass
                start = time.monotonic()
                return await predict.acall(question="ITEM-01"), time.monotonic() - start

        answered, took = run(main())
        assert len(server.requests) == 2
    assert isinstance(answered, ts.Prediction)
    assert limit.pauses == pauses
    if pauses:
        assert took >= 0.3  # it did pause, for about max_pause, not for what was asked


@pytest.mark.parametrize("case", ["reset 99999h", "429 Retry-After 3600"])
def test_a_pause_past_the_deadline_fails_at_once_with_the_deadline_error(case: str) -> None:
    limit = ts.limits.RateLimit(requests_per_minute=60_000)  # the default cap: 120 s
    budget = ts.limits.Budget(requests=10)
    with serving(hostile(HOSTILE[case][0])) as (server, lm):
        predict = ts.Predict(Ask, lm=lm)

        async def main() -> BaseException | None:
            with ts.context(rate_limit=limit, budget=budget):
                try:
                    await predict.acall(question="ITEM-00")
                except ts.errors.LMRateLimitError:
                    pass
                with ts.context(deadline=5):
                    try:
                        await predict.acall(question="ITEM-01")
                    except ts.DeadlineExceededError as exc:
                        return exc
            return None

        error = run(main())
        assert len(server.requests) == 1  # the second request was never sent
    assert isinstance(error, ts.DeadlineExceededError)
    assert "rate limit" in error.stage and "pause the endpoint asked for" in error.stage
    assert error.elapsed < error.seconds  # refused at once, not slept on until the deadline
    assert "would run out first" in str(error)
    assert budget.requests == 1  # the refused request gave its budget hold back, uncounted


def test_an_items_timeout_cuts_a_pause() -> None:
    # Guards the other bound a pause meets: the batch's per-item timeout cancels the wait.
    limit = ts.limits.RateLimit(requests_per_minute=60_000)
    with serving(hostile(HOSTILE["reset 99999h"][0])) as (server, lm):
        predict = ts.Predict(Ask, lm=lm)
        first = run(predict.abatch(items(1), rate_limit=limit))
        start = time.monotonic()
        later = run(predict.abatch(items(3), rate_limit=limit, timeout=0.5))
        took = time.monotonic() - start
        assert len(server.requests) == 1
    assert isinstance(first[0], ts.Prediction)
    assert later.failures == {"ItemTimeoutError": 3}
    assert took < SAFETY


@pytest.mark.parametrize("value", [0, -1, float("inf"), float("nan"), "5", True])
def test_max_pause_must_be_a_finite_number_of_seconds(value: Any) -> None:
    with pytest.raises(ts.ConfigurationError, match="max_pause"):
        ts.limits.RateLimit(requests_per_minute=60, max_pause=value)


# -- D6: one RateLimit shared by sync batches in threads (each thread runs its own loop) --------


def test_a_rate_limit_shared_by_sync_batches_in_two_threads_holds_its_rate() -> None:
    # 600 rpm is one request per 100 ms: 20 requests from two threads cannot all have left
    # before 1.9 s, however the threads interleave (a limit per thread would let them go in
    # 0.9 s, plus the threads' start-up, which the call before the threads keeps short).
    arrivals: list[float] = []

    def answer(seen: Seen) -> Reply:
        arrivals.append(time.monotonic())
        return reply()

    limit = ts.limits.RateLimit(requests_per_minute=600)
    with serving(answer) as (server, lm):
        predict = ts.Predict(Ask, lm=lm)
        predict(question="warm-up")  # loads the SDK, before the clock starts
        start = time.monotonic()
        outcomes = in_threads(
            2, lambda i: predict.batch(items(10), concurrency=4, rate_limit=limit)
        )
        assert len(server.requests) == 21
    assert [r.failures for r in outcomes] == [{}, {}]
    assert [len(r.successes) for r in outcomes] == [10, 10]
    assert max(arrivals) - start >= 1.8  # 100 ms less, for the clock's granularity


def in_threads(n: int, call: Callable[[int], Any], **settings: Any) -> list[Any]:
    """``call(i)`` in ``n`` threads started together; each one's result or exception."""
    before = set(threading.enumerate())
    outcomes: list[Any] = [None] * n
    start = threading.Barrier(n)

    def work(i: int) -> None:
        start.wait()
        try:
            with ts.context(**settings):
                outcomes[i] = call(i)
        except Exception as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SAFETY)
    assert not any(thread.is_alive() for thread in threads)
    # Each thread's loop is finished as its thread ends, or (kept by a refused call's
    # traceback) when collected, here; its default executor's worker (DNS lookups) ends once
    # the closed loop is gone.
    gc.collect()
    # No thread of the call's is left (one that was there before may have ended meanwhile, as
    # an idle AnyIO worker thread of the HTTP stack does under httpx 0.27).
    deadline = time.monotonic() + SAFETY
    while not set(threading.enumerate()) <= before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(threading.enumerate()) <= before, threading.enumerate()
    return outcomes
