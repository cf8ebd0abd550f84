"""Fallback chains over two stand-in servers: each trigger, streaming, and no nested retries.

Request counts are read server-side (``StandIn.requests``), so a test fails if any layer
sends a request twice.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

import typedspy as ts
from typedspy.streaming import PartialPrediction
from typedspy.testing import Reply, StandIn

FAST = {"retry-after-ms": "1"}  # the SDK's transport retry waits 1 ms
GOOD = json.dumps({"answer": 4})
BAD = json.dumps({"answer": "four"})


class Add(ts.Signature):
    """Add the numbers."""

    question: str = ts.InputField()
    answer: int = ts.OutputField()


_OPEN: list[ts.LM] = []


@pytest.fixture
def servers() -> Iterator[tuple[StandIn, StandIn]]:
    with StandIn() as primary, StandIn() as secondary:
        yield primary, secondary
        while _OPEN:
            _OPEN.pop().close()


def chain(
    servers: tuple[StandIn, StandIn], *, on: set[str], retries: int = 1, profile: str = "openai"
) -> ts.lm.FallbackLM:
    primary, secondary = servers
    lms = [
        ts.LM("primary", base_url=s.base_url, api_key="k", max_retries=retries, profile=profile)
        for s in (primary, secondary)
    ]
    lms[1].model = "secondary"
    _OPEN.extend(lms)
    return ts.LM.fallback(*lms, on=on)  # type: ignore[arg-type]


def counts(servers: tuple[StandIn, StandIn]) -> tuple[int, int]:
    return len(servers[0].requests), len(servers[1].requests)


def test_transport_failure_after_the_sdk_retries_moves_on(
    servers: tuple[StandIn, StandIn],
) -> None:
    servers[0].enqueue(Reply(status=503, headers=FAST), Reply(status=503, headers=FAST))
    servers[1].enqueue(GOOD)
    pred = ts.Predict(Add, lm=chain(servers, on={"transport"}, retries=1))(question="2+2")
    assert pred.answer == 4
    assert counts(servers) == (2, 1)  # one SDK retry on the primary, nothing else
    trace = pred.extras["fallback"]
    assert (trace.index, trace.model) == (1, "secondary")
    assert trace.endpoint == servers[1].base_url
    assert [(s.model, s.trigger) for s in trace.skipped] == [("primary", "transport")]
    assert isinstance(trace.skipped[0].error, ts.errors.LMStatusError)


def test_rate_limit_moves_on_only_when_chosen(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(Reply(status=429, headers=FAST))
    servers[1].enqueue(GOOD)
    pred = ts.Predict(Add, lm=chain(servers, on={"rate_limit"}, retries=0))(question="q")
    assert (pred.answer, pred.extras["fallback"].skipped[0].trigger) == (4, "rate_limit")

    servers[0].enqueue(Reply(status=429, headers=FAST))
    with pytest.raises(ts.errors.LMRateLimitError):
        ts.Predict(Add, lm=chain(servers, on={"transport"}, retries=0))(question="q")
    assert counts(servers) == (2, 1)  # the secondary was not asked the second time


def test_refusal(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(Reply(refusal="I can't help with that."))
    servers[1].enqueue(GOOD)
    pred = ts.Predict(Add, lm=chain(servers, on={"refusal"}))(question="q")
    assert pred.answer == 4
    assert pred.extras["fallback"].skipped[0].trigger == "refusal"
    assert counts(servers) == (1, 1)  # a refusal is never retried on the same endpoint


def test_final_validation_failure_after_feedback_retries(
    servers: tuple[StandIn, StandIn],
) -> None:
    servers[0].enqueue(BAD, BAD)
    servers[1].enqueue(GOOD)
    predict = ts.Predict(Add, lm=chain(servers, on={"validation"}), mode="prompt", max_retries=1)
    pred = predict(question="q")
    assert pred.answer == 4
    assert counts(servers) == (2, 1)  # one feedback retry on the primary, then the secondary
    assert pred.extras["fallback"].skipped[0].trigger == "validation"
    assert len(pred.attempts) == 1  # the answering endpoint's own attempts


def test_not_enforced_needs_the_schema_on_the_wire(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(BAD)
    servers[1].enqueue(GOOD)
    lm = chain(servers, on={"not_enforced"})
    pred = ts.Predict(Add, lm=lm, mode="json_schema", max_retries=0)(question="q")
    assert pred.extras["fallback"].skipped[0].trigger == "not_enforced"

    servers[0].enqueue(BAD)  # in prompt mode no schema was sent: not the server's fault
    with pytest.raises(ts.errors.OutputValidationError):
        ts.Predict(Add, lm=lm, mode="prompt", max_retries=0)(question="q")
    assert counts(servers) == (2, 1)


def test_a_per_call_token_budget(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(BAD)
    servers[1].enqueue(GOOD)
    predict = ts.Predict(Add, lm=chain(servers, on={"budget"}), token_budget=1)
    pred = predict(question="q")
    assert pred.answer == 4
    assert pred.extras["fallback"].skipped[0].trigger == "budget"
    assert isinstance(pred.extras["fallback"].skipped[0].error, ts.errors.TokenBudgetExceededError)


OVERFLOW = Reply(  # llama-server's body for a prompt past its -c (tests/conformance)
    status=400,
    error={
        "code": 400,
        "message": "request (27032 tokens) exceeds the available context size (4096 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
    },
)


def test_a_request_past_the_context_window_moves_to_the_next_model_when_chosen(
    servers: tuple[StandIn, StandIn],
) -> None:
    servers[0].enqueue(OVERFLOW)
    servers[1].enqueue(GOOD)
    pred = ts.Predict(Add, lm=chain(servers, on={"context_length"}))(question="q")
    assert pred.answer == 4
    skipped = pred.extras["fallback"].skipped
    assert [(s.model, s.trigger) for s in skipped] == [("primary", "context_length")]
    assert isinstance(skipped[0].error, ts.errors.LMContextLengthError)
    assert skipped[0].error.context_window == 4096
    assert counts(servers) == (1, 1)  # a 400 is resent by no layer

    servers[0].enqueue(OVERFLOW, "too long")  # direct requests switch on it as well
    servers[1].enqueue("from the longer window")
    assert chain(servers, on={"context_length"})("hi") == "from the longer window"
    assert counts(servers) == (2, 2)


def test_the_context_length_trigger_is_off_by_default(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(OVERFLOW, OVERFLOW)
    default = ts.LM.fallback(*chain(servers, on={"refusal"}).lms)
    assert default.on == {"transport", "rate_limit"}  # which are not it either
    with pytest.raises(ts.errors.LMContextLengthError):
        ts.Predict(Add, lm=default)(question="q")
    with pytest.raises(ts.errors.LMContextLengthError):
        default("hi")
    assert counts(servers) == (2, 0)


def test_the_primary_answering_is_recorded_too(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(GOOD)
    pred = ts.Predict(Add, lm=chain(servers, on={"transport"}))(question="q")
    assert (pred.extras["fallback"].index, pred.extras["fallback"].skipped) == (0, ())
    assert counts(servers) == (1, 0)


def test_transport_and_feedback_retries_never_nest(servers: tuple[StandIn, StandIn]) -> None:
    # SDK max_retries=2 and Predict max_retries=2: each layer handles its own failure once.
    servers[0].enqueue(Reply(status=500, headers=FAST), BAD, Reply(status=500, headers=FAST), GOOD)
    pred = ts.Predict(Add, lm=chain(servers, on={"transport", "validation"}, retries=2))(
        question="q"
    )
    assert pred.answer == 4
    assert counts(servers) == (4, 0)
    assert [a.kind for a in pred.attempts] == ["not_enforced", None]


def test_the_last_endpoints_error_is_raised(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(Reply(status=503, headers=FAST))
    servers[1].enqueue(Reply(status=503, headers=FAST))
    with pytest.raises(ts.errors.LMStatusError) as info:
        ts.Predict(Add, lm=chain(servers, on={"transport"}, retries=0))(question="q")
    assert info.value.status_code == 503
    assert counts(servers) == (1, 1)


def test_streaming_falls_back_before_the_first_event(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(Reply(status=503, headers=FAST))
    servers[1].enqueue(GOOD)
    predict = ts.Predict(Add, lm=chain(servers, on={"transport"}, retries=0))
    events = list(predict.stream(question="q"))
    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert (final.answer, final.extras["fallback"].index) == (4, 1)
    assert servers[1].requests[0]["stream"] is True


def test_streaming_never_falls_back_after_an_event(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(BAD)
    servers[1].enqueue(GOOD)
    predict = ts.Predict(Add, lm=chain(servers, on={"validation"}), max_retries=0)
    seen: list[Any] = []
    with pytest.raises(ts.errors.OutputValidationError):
        for event in predict.stream(question="q"):
            seen.append(event)
    assert any(isinstance(e, PartialPrediction) for e in seen)
    assert counts(servers) == (1, 0)


def test_direct_requests_switch_per_request(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(Reply(status=503, headers=FAST), Reply(refusal="no"))
    servers[1].enqueue("from the secondary", "again the secondary")
    lm = chain(servers, on={"transport", "refusal"}, retries=0)
    assert lm("hi") == "from the secondary"
    assert lm("hi") == "again the secondary"
    assert counts(servers) == (2, 2)


def test_a_cached_direct_request_is_keyed_on_the_whole_chain(
    servers: tuple[StandIn, StandIn],
) -> None:
    servers[0].enqueue("from the primary")
    lm = chain(servers, on={"transport"})
    with ts.context(cache=ts.cache.MemoryCache()):
        assert lm("hi") == lm("hi") == "from the primary"  # the second from the cache
        reordered = ts.LM.fallback(*reversed(lm.lms))
        assert reordered("hi") != "from the primary"  # another chain: another key
    assert counts(servers) == (1, 1)
    assert lm.endpoint == f"{servers[0].base_url} | {servers[1].base_url}"


def test_a_chain_redacts_every_endpoints_credentials() -> None:
    lms = [ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key=k) for k in ("ke-one", "ke-two")]
    lm = ts.LM.fallback(*lms, on={"refusal"})
    assert lm.redact("ke-one and ke-two") == "[redacted] and [redacted]"
    assert repr(lm) == f"LM.fallback({lms[0]!r}, {lms[1]!r}, on=['refusal'])"


def test_bad_chains_are_configuration_errors() -> None:
    one = ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(ts.ConfigurationError, match="two or more"):
        ts.LM.fallback(one)
    with pytest.raises(ts.ConfigurationError, match="unknown trigger"):
        ts.LM.fallback(one, one, on={"timeout"})  # type: ignore[arg-type]
    with pytest.raises(ts.ConfigurationError, match="plain LMs"):
        ts.LM.fallback(ts.LM.fallback(one, one), one)


def test_direct_streams_switch_before_the_first_chunk(servers: tuple[StandIn, StandIn]) -> None:
    servers[0].enqueue(Reply(status=503, headers=FAST))
    servers[1].enqueue("streamed from the secondary")
    lm = chain(servers, on={"transport"}, retries=0)

    async def streamed() -> str:
        request = ts.lm.LMRequest(messages=({"role": "user", "content": "hi"},))
        return "".join([chunk.text async for chunk in lm.astream(request) if chunk.text])

    assert asyncio.run(streamed()) == "streamed from the secondary"
    assert counts(servers) == (1, 1)
    servers[0].enqueue(Reply(status=400))  # not a chosen trigger: raised, never moved on
    with pytest.raises(ts.errors.LMStatusError, match="400"):
        asyncio.run(streamed())
    assert counts(servers) == (2, 1)
    servers[0].enqueue("streamed from the primary")
    assert asyncio.run(streamed()) == "streamed from the primary"
    assert counts(servers) == (3, 1)


def test_react_steps_switch_per_request(servers: tuple[StandIn, StandIn]) -> None:
    def search(query: str) -> str:
        """Search."""
        return f"{query} is 4"

    def call(name: str, **arguments: Any) -> Reply:
        spec = [{"name": name, "arguments": json.dumps(arguments)}]
        return Reply(tool_calls=spec, finish_reason="tool_calls")

    servers[0].enqueue(Reply(status=503, headers=FAST), Reply(status=503, headers=FAST))
    servers[1].enqueue(call("search", query="2+2"), call("finish", answer=4))
    lm = chain(servers, on={"transport"}, retries=0)
    lm.profile = "openai"  # the primary's: the chain's requests are built for it
    lm.defaults = {"temperature": 0.5}
    agent = ts.react.ReAct(Add, tools=[search], lm=lm)
    assert agent(question="2+2?").answer == 4
    assert counts(servers) == (2, 2)  # each step: the primary, then the secondary
    # the chain's defaults are the primary's; each endpoint sends its own
    assert [r.get("temperature") for s in servers for r in s.requests] == [0.5, 0.5, None, None]
    assert lm.lms[0].defaults == {"temperature": 0.5} and lm.profile is lm.lms[0].profile
    assert (lm.max_json_depth, lm.max_response_bytes) == (256, 64 * 1024 * 1024)
