"""Rate limits and budgets at the HTTP boundary: 429s, rate-limit headers, `ts.limits.Budget`."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
import respx

import typedspy as ts
from typedspy.limits import parse_reset
from typedspy.testing import chat_completion, error_body, sse_body
from typedspy.testing._payloads import completion_chunks
from wire import BASE_URL, make_lm


class Double(ts.Signature):
    """Double the number."""

    number: int = ts.InputField()
    doubled: int = ts.OutputField()


class AnswerQuestion(ts.Signature):
    """Answer the question, using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@ts.tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


def ok(doubled: Any = 2, *, headers: dict[str, str] | None = None) -> httpx.Response:
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
    body = chat_completion(json.dumps({"doubled": doubled}), usage=usage)
    return httpx.Response(200, json=body, headers=headers)


def limited(headers: dict[str, str]) -> httpx.Response:
    body = error_body(
        "Rate limit reached for requests", type="requests", code="rate_limit_exceeded"
    )
    return httpx.Response(429, json=body, headers=headers)


def calls_reply(call_id: str, name: str, arguments: dict[str, Any]) -> httpx.Response:
    spec = [{"id": call_id, "name": name, "arguments": json.dumps(arguments)}]
    return httpx.Response(
        200, json=chat_completion(None, tool_calls=spec, finish_reason="tool_calls")
    )


def inputs(n: int) -> list[dict[str, Any]]:
    return [{"number": i} for i in range(n)]


# -- 429 and rate-limit headers ---------------------------------------------------------------


def test_a_429_with_retry_after_is_retried_once_by_the_sdk_and_never_again_by_typedspy(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[limited({"retry-after-ms": "1"}), ok(), ok()]
    )
    limit = ts.limits.RateLimit(requests_per_minute=60_000)
    predict = ts.Predict(Double, lm=make_lm(max_retries=1), max_retries=3)

    results = predict.batch(inputs(2), concurrency=1, rate_limit=limit)

    assert route.call_count == 3  # one 429, then one success per item: no second retry loop
    assert [len(r.attempts) for r in results] == [1, 1]  # type: ignore[union-attr]


def test_a_final_429_is_the_items_result_and_its_retry_after_pauses_the_others(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[limited({"Retry-After": "0.05"}), ok(), ok()]
    )
    limit = ts.limits.RateLimit(requests_per_minute=60_000)
    predict = ts.Predict(Double, lm=make_lm(max_retries=0), max_retries=3)

    results = predict.batch(inputs(3), concurrency=1, rate_limit=limit)

    assert isinstance(results[0], ts.errors.LMRateLimitError)
    assert results[0].retry_after == 0.05
    assert limit.pauses == 1
    assert route.call_count == 3
    assert [type(r).__name__ for r in results[1:]] == ["Prediction", "Prediction"]


def test_remaining_zero_headers_pause_every_sender_until_the_reset(
    llm: respx.MockRouter,
) -> None:
    exhausted = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms"}
    llm.post("/chat/completions").mock(side_effect=[ok(headers=exhausted), ok(), ok()])
    limit = ts.limits.RateLimit(tokens_per_minute=1_000_000)

    results = ts.Predict(Double, lm=make_lm()).batch(inputs(3), concurrency=1, rate_limit=limit)

    assert len(results.successes) == 3
    assert limit.pauses == 1


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1s", 1.0), ("6m0s", 360.0), ("20ms", 0.02), ("1h2m3s", 3723.0), ("0.5", 0.5)],
)
def test_reset_durations_are_read_as_openai_writes_them(value: str, seconds: float) -> None:
    assert parse_reset(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "soon", "5x", "1s garbage"])
def test_unreadable_reset_durations_are_ignored(value: str) -> None:
    assert parse_reset(value) is None


def test_rate_limit_needs_a_positive_limit() -> None:
    with pytest.raises(ts.ConfigurationError, match="needs requests_per_minute"):
        ts.limits.RateLimit()
    with pytest.raises(ts.ConfigurationError, match="expected a finite number > 0"):
        ts.limits.RateLimit(requests_per_minute=0)


def test_the_requests_bucket_admits_its_burst_then_waits(llm: respx.MockRouter) -> None:
    # 6 rpm: a bucket of one request, refilled every 10 s: one passes at once, the next waits.
    limit = ts.limits.RateLimit(requests_per_minute=6)

    async def main() -> tuple[int, bool]:
        charged = await limit.acquire(10)
        second = asyncio.ensure_future(limit.acquire(10))
        await asyncio.sleep(0)
        waiting = not second.done()
        second.cancel()
        return charged, waiting

    assert asyncio.run(main()) == (0, True)


def test_tokens_are_charged_from_the_estimate_and_reconciled_with_usage() -> None:
    limit = ts.limits.RateLimit(tokens_per_minute=600_000)
    usage = ts.prediction.Usage(prompt_tokens=30, completion_tokens=20, total_tokens=50)

    async def main() -> list[int]:
        first = await limit.acquire(40)  # no completion seen yet: the prompt estimate only
        await limit.settle(first, usage)  # reported 50: 10 more charged
        second = await limit.acquire(40)  # 40 + the 20-token average completion
        await limit.settle(second, ts.prediction.Usage(total_tokens=20))  # 40 too many: credited
        third = await limit.acquire(40)
        return [first, second, third]

    assert asyncio.run(main()) == [40, 60, 50]


# -- budgets ----------------------------------------------------------------------------------


def test_a_budget_counts_retries_and_refuses_the_request_past_it(llm: respx.MockRouter) -> None:
    # A different bad reply each time: the same one again would end the call (repeated_reply).
    route = llm.post("/chat/completions").mock(side_effect=[ok(f"bad {n}") for n in range(6)])
    budget = ts.limits.Budget(requests=2)

    with ts.context(budget=budget), pytest.raises(ts.BudgetExceededError) as caught:
        ts.Predict(Double, lm=make_lm(), max_retries=5)(number=1)

    assert route.call_count == 2
    assert (caught.value.limit, caught.value.allowed, caught.value.requests) == ("requests", 2, 2)
    assert budget.usage.total_tokens == 24


def test_a_budget_spans_react_steps(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[
            calls_reply("c1", "lookup", {"query": "a"}),
            calls_reply("c2", "lookup", {"query": "b"}),
            calls_reply("c3", "finish", {"answer": "done"}),
        ]
    )
    agent = ts.ReAct(AnswerQuestion, tools=[lookup], lm=make_lm())

    with ts.context(budget=ts.limits.Budget(requests=2)), pytest.raises(ts.BudgetExceededError):
        agent(question="q")

    assert route.call_count == 2


def test_a_batch_budget_turns_each_refusal_into_that_items_result(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(side_effect=lambda r: ok(4))
    budget = ts.limits.Budget(output_tokens=5)

    results = ts.Predict(Double, lm=make_lm()).batch(inputs(5), concurrency=1, budget=budget)

    assert [type(r).__name__ for r in results] == ["Prediction"] * 3 + ["BudgetExceededError"] * 2
    assert route.call_count == 3
    assert results.usage == budget.usage == ts.prediction.Usage(30, 6, 36)
    refusal = results[4]
    assert isinstance(refusal, ts.BudgetExceededError)
    assert refusal.limit == "output_tokens"
    assert [item.requests for item in results.items] == [1, 1, 1, 0, 0]


def test_an_input_token_budget_refuses_a_prompt_that_would_not_fit(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok())

    with (
        ts.context(budget=ts.limits.Budget(input_tokens=5)),
        pytest.raises(ts.BudgetExceededError) as e,
    ):
        ts.Predict(Double, lm=make_lm())(number=1)

    assert route.call_count == 0
    assert e.value.limit == "input_tokens"


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({}, "at least one limit"),
        ({"requests": -1}, "expected an int >= 0"),
        ({"requests": 1.5}, "int"),
    ],
)
def test_invalid_budgets_are_configuration_errors(limits: dict[str, Any], message: str) -> None:
    with pytest.raises(ts.ConfigurationError, match=message):
        ts.limits.Budget(**limits)


def test_budget_reports_what_is_left() -> None:
    budget = ts.limits.Budget(requests=3, total_tokens=100)

    async def main() -> list[dict[str, Any]]:
        hold = await budget.reserve(10)
        in_flight = budget.remaining()  # the request's estimate is held while it runs
        hold.settle(ts.prediction.Usage(10, 5, 15))
        return [in_flight, budget.remaining()]

    assert asyncio.run(main()) == [
        {"requests": 2, "total_tokens": 90},
        {"requests": 2, "total_tokens": 85},
    ]


def test_a_reservation_cancelled_while_it_waits_takes_nothing() -> None:
    budget = ts.limits.Budget(input_tokens=15)

    async def main() -> dict[str, Any]:
        first = await budget.reserve(10)
        waiting = asyncio.ensure_future(budget.reserve(10))  # fits if the first uses less
        await asyncio.sleep(0)
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        first.release(sent=False)  # never sent: its tokens are free again
        again = await budget.reserve(10)
        again.settle(ts.prediction.Usage(10, 1, 11))
        return budget.remaining()

    assert asyncio.run(main()) == {"input_tokens": 5}
    assert repr(budget) == (
        "Budget(input_tokens=15; spent requests=1, usage=Usage(prompt_tokens=10, "
        "completion_tokens=1, total_tokens=11))"
    )


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), -1.0, 0.0])
def test_a_pause_that_is_not_a_finite_positive_duration_is_ignored_and_logged(
    seconds: float, caplog: pytest.LogCaptureFixture
) -> None:
    limit = ts.limits.RateLimit(requests_per_minute=60)
    limit.pause(seconds)
    assert limit.pauses == 0
    assert f"ignored a pause of {seconds!r} s" in caplog.text
    assert repr(limit) == "RateLimit(requests_per_minute=60, tokens_per_minute=None)"


def test_streamed_calls_are_budgeted_and_limited_too() -> None:
    from typedspy.testing import StandIn

    budget = ts.limits.Budget(requests=1)
    limit = ts.limits.RateLimit(requests_per_minute=60_000, tokens_per_minute=1_000_000)

    async def main(base_url: str) -> tuple[Any, BaseException | None]:
        lm = ts.LM("standin-1", base_url=base_url, api_key="sk-test", max_retries=0)
        predict = ts.Predict(Double, lm=lm)
        try:
            with ts.context(budget=budget, rate_limit=limit):
                events = [e async for e in predict.astream(number=1)]
                try:
                    [e async for e in predict.astream(number=2)]
                except ts.BudgetExceededError as exc:
                    return events[-1], exc
                return events[-1], None
        finally:
            await lm.aclose()

    with StandIn() as server:
        final, refused = asyncio.run(main(server.base_url))
        assert len(server.requests) == 1
        assert server.requests[0]["stream"] is True
    assert isinstance(final, ts.Prediction)
    assert isinstance(refused, ts.BudgetExceededError)
    assert budget.requests == 1
    assert budget.usage.total_tokens > 0


def unreported(doubled: Any = 2, *, stream: bool = False) -> httpx.Response:
    """A reply with no usage at all: llama-cpp-python's streams, servers that leave it out."""
    body = chat_completion(json.dumps({"doubled": doubled}))
    del body["usage"]
    if not stream:
        return httpx.Response(200, json=body)
    content = sse_body(completion_chunks(body, include_usage=False))
    return httpx.Response(200, content=content, headers={"content-type": "text/event-stream"})


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_reply_that_reports_no_usage_counts_its_estimate_in_a_token_budget(
    llm: respx.MockRouter, stream: bool
) -> None:
    route = llm.post("/chat/completions").mock(side_effect=lambda r: unreported(stream=stream))
    predict = ts.Predict(Double, lm=make_lm())

    def call(number: int) -> ts.Prediction[Any]:
        if stream:
            return [e for e in predict.stream(number=number) if isinstance(e, ts.Prediction)][-1]
        return predict(number=number)

    first = ts.limits.Budget(total_tokens=100_000)
    with ts.context(budget=first):
        pred = call(1)
    spent = first.usage
    # The prompt at its estimate, the reply's 14 characters at 4 a token, rounded up.
    assert spent.completion_tokens == 4
    assert spent.prompt_tokens > 4
    assert spent.total_tokens == spent.prompt_tokens + 4
    assert pred.usage == ts.prediction.Usage()  # the prediction keeps what the endpoint said

    tight = ts.limits.Budget(total_tokens=spent.total_tokens + 1)
    with ts.context(budget=tight), pytest.raises(ts.BudgetExceededError) as refused:
        call(1)
        call(2)  # the same prompt again does not fit in what is left
    assert refused.value.limit == "total_tokens"
    assert route.call_count == 2


def test_an_estimated_usage_leaves_the_prompt_calibration_as_reported_replies_set_it() -> None:
    budget = ts.limits.Budget(input_tokens=10_000)

    async def main() -> int:
        hold = await budget.reserve(100)
        hold.settle(ts.prediction.Usage(50, 5, 55))  # reported: prompts run at half the estimate
        hold = await budget.reserve(100)
        hold.settle(ts.prediction.Usage(100, 5, 105), calibrates=False)  # estimated
        await budget.reserve(100)
        return 10_000 - 150 - budget.remaining()["input_tokens"]  # what the third one holds

    assert asyncio.run(main()) == 50


def test_a_reply_that_reports_no_usage_teaches_the_rate_limit_its_completion(
    llm: respx.MockRouter,
) -> None:
    llm.post("/chat/completions").mock(return_value=unreported())
    limit = ts.limits.RateLimit(tokens_per_minute=600_000)

    with ts.context(rate_limit=limit):
        ts.Predict(Double, lm=make_lm())(number=1)

    # A later charge adds the average completion seen: the estimated 4 tokens (0 unseen).
    assert asyncio.run(limit.acquire(40)) == 44


def test_a_cost_budget_prices_replies_with_genai_prices(llm: respx.MockRouter) -> None:
    pytest.importorskip("genai_prices", reason="the prices extra (genai-prices) is not installed")
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    reply = httpx.Response(200, json=chat_completion('{"doubled": 2}', usage=usage))
    route = llm.post("/chat/completions").mock(return_value=reply)
    budget = ts.limits.Budget(cost=0.0005)  # gpt-4o-mini: $0.00021 per reply above

    results = ts.Predict(Double, lm=make_lm()).batch(inputs(5), concurrency=1, budget=budget)

    # After two replies $0.00008 is left: the third prompt, its estimate scaled to the 1,000
    # tokens the replies reported, would cost $0.00015 (unscaled, about a tenth of that).
    assert route.call_count == 2
    assert [type(r).__name__ for r in results] == ["Prediction"] * 2 + ["BudgetExceededError"] * 3
    assert results[4].limit == "cost"  # type: ignore[union-attr]
    assert budget.cost == Decimal("0.00042")


def test_a_cost_budget_refuses_a_model_without_a_known_price(llm: respx.MockRouter) -> None:
    pytest.importorskip("genai_prices", reason="the prices extra (genai-prices) is not installed")
    route = llm.post("/chat/completions").mock(return_value=ok())
    with (
        ts.context(budget=ts.limits.Budget(cost=1)),
        pytest.raises(ts.ConfigurationError, match="price"),
    ):
        ts.Predict(Double, lm=make_lm(model="standin-1"))(number=1)
    assert route.call_count == 0


def test_a_cost_budget_without_genai_prices_names_the_extra_to_install(
    llm: respx.MockRouter, monkeypatch: pytest.MonkeyPatch
) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok())
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # an install without the extra
    with (
        ts.context(budget=ts.limits.Budget(cost=1)),
        pytest.raises(ts.ConfigurationError, match=re.escape('pip install "typedspy[prices]"')),
    ):
        ts.Predict(Double, lm=make_lm())(number=1)
    assert route.call_count == 0


def test_a_fresh_limit_sends_no_burst_ahead_of_its_rate(llm: respx.MockRouter) -> None:
    # 1,200 rpm is 20 requests a second; the bucket starts one request short of full, so 11
    # requests need 10 gaps of 50 ms after the first: the last cannot leave before 0.5 s. (A
    # burst spending the bucket's slack at the start would send all 11 within about 0.3 s.)
    sent: list[float] = []

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(time.monotonic())
        return ok(2)

    llm.post("/chat/completions").mock(side_effect=reply)
    limit = ts.limits.RateLimit(requests_per_minute=1_200)
    started = time.monotonic()  # measured from here, load can only make the span longer
    results = ts.Predict(Double, lm=make_lm()).batch(
        [{"number": 1}] * 11, concurrency=11, rate_limit=limit
    )
    assert not results.errors
    assert len(sent) == 11
    assert sent[-1] - started >= 0.45  # 50 ms less, for the clock's granularity


def test_a_fresh_request_limit_admits_the_first_request_at_once_but_no_more() -> None:
    limit = ts.limits.RateLimit(requests_per_minute=1_200)  # 20 a second; a 5-request bucket

    async def main() -> bool:
        await limit.acquire(10)  # at once, though the bucket starts primed
        second = asyncio.ensure_future(limit.acquire(10))
        await asyncio.sleep(0)
        waiting = not second.done()  # unprimed, 4 more would pass at once
        second.cancel()
        return waiting

    assert asyncio.run(main()) is True


def test_a_fresh_token_limit_admits_the_first_request_at_once_but_no_more(
    llm: respx.MockRouter,
) -> None:
    limit = ts.limits.RateLimit(tokens_per_minute=60_000)  # 1,000 a second; a 250-token bucket

    async def main() -> tuple[int, bool]:
        charged = await limit.acquire(100)  # at once, though the bucket starts primed
        second = asyncio.ensure_future(limit.acquire(100))
        await asyncio.sleep(0)
        waiting = not second.done()  # the primed bucket has no room for a second at once
        second.cancel()
        return charged, waiting

    assert asyncio.run(main()) == (100, True)


class RecordingLimit(ts.limits.RateLimit):
    """A token limit that records each charge (a user subclass)."""

    def __init__(self) -> None:
        super().__init__(tokens_per_minute=6_000_000)
        self.charges: list[tuple[int, int]] = []

    async def acquire(self, estimated_input_tokens: int) -> int:
        charge = await super().acquire(estimated_input_tokens)
        self.charges.append((estimated_input_tokens, charge))
        return charge


def test_later_token_charges_learn_the_reported_prompt_size(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(return_value=ok(2))  # reports 10 prompt + 2 completion
    limit = RecordingLimit()
    results = ts.Predict(Double, lm=make_lm()).batch(
        [{"number": 1}] * 3, concurrency=1, rate_limit=limit
    )
    assert not results.errors
    (estimate, first), *later = limit.charges
    assert estimate > 12 and first == estimate  # nothing seen yet: the size estimate
    assert later == [(estimate, 12), (estimate, 12)]  # 10 reported prompt + 2 completion


def test_token_charges_are_served_first_come_first_served() -> None:
    # A leaky bucket that wakes the smallest waiting amount first (aiolimiter's, before
    # ADR-056) lets a later, smaller charge overtake a bigger one waiting already.
    limit = ts.limits.RateLimit(tokens_per_minute=60_000)  # 1,000 a second; a 250-token bucket
    served: list[str] = []

    async def take(name: str, tokens: int) -> None:
        await limit.acquire(tokens)
        served.append(name)

    async def main() -> None:
        await take("first", 240)  # at once: fills the primed bucket
        big = asyncio.ensure_future(take("big", 100))
        await asyncio.sleep(0)  # "big" is waiting now
        small = asyncio.ensure_future(take("small", 20))
        await asyncio.gather(big, small)

    asyncio.run(main())
    assert served == ["first", "big", "small"]
