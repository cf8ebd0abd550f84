"""The extension contract (ADR-035): `aforward` is the method to override, on any module.

An override is honoured by every entry point (`__call__`, `forward`, `acall`, `astream`,
`abatch`), on plain modules and on `Predict`, `ChainOfThought` and `ReAct` subclasses alike;
`super().aforward(...)` runs the built-in behaviour. `aexecute` is overridden only to stream
events, and is then what `aforward` returns the last event of. Everything goes over HTTP to
the stand-in.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import Reply, StandIn


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


@pytest.fixture
def lm(server: StandIn) -> Iterator[ts.LM]:
    model = ts.LM("standin-1", base_url=server.base_url, api_key="unused")
    yield model
    model.close()


def edited(pred: ts.Prediction[Any], **changes: Any) -> ts.Prediction[Any]:
    """``pred`` with some outputs replaced."""
    values = {name: pred[name] for name in pred.signature.output_fields}
    return ts.Prediction(pred.signature, {**values, **changes}, attempts=pred.attempts)


class Shout(ts.Predict[Ask]):
    """Upper-cases the answer of the built-in call."""

    async def aforward(self, **inputs: Any) -> ts.Prediction[Ask]:
        pred = await super().aforward(**inputs)
        return edited(pred, answer=pred.answer.upper())


class ThinkAndShout(ts.ChainOfThought[Ask]):
    async def aforward(self, **inputs: Any) -> ts.Prediction[Ask]:
        pred = await super().aforward(**inputs)
        return edited(pred, answer=pred.answer.upper())


def test_an_aforward_override_on_predict_is_what_every_entry_point_runs(
    server: StandIn, lm: ts.LM
) -> None:
    server.enqueue('{"answer": "paris"}', '{"answer": "rome"}', '{"answer": "oslo"}')
    shout = Shout(Ask, lm=lm)

    called = shout(question="Capital of France?")
    forwarded = shout.forward(question="Capital of Italy?")
    awaited = asyncio.run(shout.acall(question="Capital of Norway?"))

    assert (called.answer, forwarded.answer, awaited.answer) == ("PARIS", "ROME", "OSLO")
    assert len(server.requests) == 3  # super().aforward ran the built-in call once each


def test_astream_and_abatch_run_the_aforward_override_too(server: StandIn, lm: ts.LM) -> None:
    server.enqueue('{"answer": "paris"}', '{"answer": "a"}', '{"answer": "b"}')
    shout = Shout(Ask, lm=lm)

    events = list(shout.stream(question="Capital of France?"))
    batch = shout.batch([{"question": "1?"}, {"question": "2?"}], concurrency=1)

    assert isinstance(events[-1], ts.Prediction)
    assert events[-1].answer == "PARIS"
    assert [r.answer if isinstance(r, ts.Prediction) else r for r in batch] == ["A", "B"]
    assert len(server.requests) == 3


def test_an_aforward_override_on_chain_of_thought_is_honoured(server: StandIn, lm: ts.LM) -> None:
    server.enqueue('{"reasoning": "It is Paris.", "answer": "paris"}')

    pred = ThinkAndShout(Ask, lm=lm)(question="Capital of France?")

    assert pred.answer == "PARIS"
    assert pred.reasoning == "It is Paris."


def test_an_aforward_override_on_react_runs_the_agent_through_super(
    server: StandIn, lm: ts.LM
) -> None:
    class ShoutingAgent(ts.ReAct[Ask]):
        async def aforward(self, **inputs: Any) -> ts.react.AgentPrediction[Ask]:
            pred = await super().aforward(**inputs)
            pred.extras["shouted"] = pred.answer.upper()
            return pred

    def look_up(term: str) -> str:
        """Look a term up."""
        return term

    finish = {"name": "finish", "arguments": '{"answer": "paris"}'}
    server.enqueue(Reply(tool_calls=[finish], finish_reason="tool_calls"))

    pred = ShoutingAgent(Ask, tools=[look_up], lm=lm)(question="Capital of France?")

    assert (pred.answer, pred.extras["shouted"]) == ("paris", "PARIS")
    assert len(server.requests) == 1


def test_an_override_that_does_not_call_super_sends_nothing(server: StandIn, lm: ts.LM) -> None:
    class Canned(ts.Predict[Ask]):
        async def aforward(self, **inputs: Any) -> dict[str, str]:
            return {"answer": f"canned: {inputs['question']}"}

    class CannedAgent(ts.ReAct[Ask]):
        async def aforward(self, **inputs: Any) -> dict[str, str]:
            return {"answer": "no tools needed"}

    def look_up(term: str) -> str:
        """Look a term up."""
        return term

    assert Canned(Ask, lm=lm)(question="Q") == {"answer": "canned: Q"}
    assert CannedAgent(Ask, tools=[look_up], lm=lm)(question="Q") == {"answer": "no tools needed"}
    assert server.requests == []


def test_an_aexecute_override_is_what_aforward_and_acall_return(server: StandIn, lm: ts.LM) -> None:
    class Tagged(ts.Predict[Ask]):
        async def aexecute(self, *, stream: bool = False, **inputs: Any) -> AsyncIterator[Any]:
            async for event in super().aexecute(stream=stream, **inputs):
                if isinstance(event, ts.Prediction):
                    event.extras["tagged"] = True
                yield event

    server.enqueue('{"answer": "paris"}', '{"answer": "rome"}')
    tagged = Tagged(Ask, lm=lm)

    direct = asyncio.run(tagged.aforward(question="Capital of France?"))
    called = tagged(question="Capital of Italy?")

    assert direct.extras["tagged"] is True
    assert called.extras["tagged"] is True
    assert len(server.requests) == 2


def test_overrides_stack_without_recursion(server: StandIn, lm: ts.LM) -> None:
    class Louder(Shout):
        async def aexecute(self, *, stream: bool = False, **inputs: Any) -> AsyncIterator[Any]:
            async for event in super().aexecute(stream=stream, **inputs):
                yield (
                    edited(event, answer=event.answer + "!")
                    if isinstance(event, ts.Prediction)
                    else event
                )

    class Loudest(Louder):
        async def aforward(self, **inputs: Any) -> ts.Prediction[Ask]:
            pred = await super().aforward(**inputs)
            return edited(pred, answer=pred.answer + "?")

    server.enqueue('{"answer": "paris"}', '{"answer": "rome"}')

    assert Louder(Ask, lm=lm)(question="France?").answer == "PARIS!"
    assert Loudest(Ask, lm=lm)(question="Italy?").answer == "ROME!?"
    assert len(server.requests) == 2


def test_a_plain_module_still_implements_aforward(server: StandIn, lm: ts.LM) -> None:
    class Twice(ts.Module):
        def __init__(self) -> None:
            self.ask = ts.Predict(Ask, lm=lm)

        async def aforward(self, *, question: str) -> list[str]:
            first = await self.ask.acall(question=question)
            second = await self.ask.acall(question=question + " Again.")
            return [first.answer, second.answer]

    server.enqueue(*(f'{{"answer": "{n}"}}' for n in ("one", "two", "three", "four")))

    assert Twice()(question="Count.") == ["one", "two"]
    assert list(Twice().stream(question="Count."))[-1] == ["three", "four"]
    assert len(server.requests) == 4


def test_a_module_without_aforward_says_what_to_override() -> None:
    class Empty(ts.Module):
        pass

    with pytest.raises(NotImplementedError, match=r"Empty does not implement aforward\(\)"):
        Empty()()


def test_a_sync_forward_on_predict_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(ts.ConfigurationError, match=r"Sync overrides forward\(\).*aforward"):

        class Sync(ts.Predict[Ask]):
            def forward(self, **inputs: Any) -> Any:
                return {"answer": "sync"}


def test_a_sync_forward_on_a_plain_module_stays_allowed() -> None:
    class Plain(ts.Module):
        def forward(self, **inputs: Any) -> Any:
            return inputs

    assert Plain()(x=1) == {"x": 1}
