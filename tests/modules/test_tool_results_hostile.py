"""A tool result JSON cannot write is the tool's `ToolError`, and to an agent an observation.

A tool that returned a value containing itself raised a bare `RecursionError` when its result
was rendered for the model (out of `Tool.dump_outputs` and out of a ReAct run); an ``object()``,
an async generator or bytes that are not UTF-8 a bare Pydantic serialisation or
``UnicodeDecodeError``. The result is now checked with the outputs: `ts.errors.ToolError`
naming the tool and the output, which ReAct reports to the model like any failing tool. A
generator or other iterator was read into a list by the check, and the model was sent ``[]``:
it is refused the same way (make it a list), nested ones too.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import respx
from react_wire import BASE_URL, calls_reply, finish_reply, make_lm

import typedspy as ts
from typedspy.errors import ToolError
from typedspy.react import ReAct


def cyclic() -> object:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


async def agen() -> Any:
    yield 1


def gen() -> Iterator[int]:
    yield 1


RESULTS: dict[str, tuple[Callable[[], object], str]] = {
    "a dict that contains itself": (cyclic, "contains itself"),
    "an object()": (object, "Unable to serialize unknown type"),
    "an async generator": (agen, "Unable to serialize unknown type"),
    "bytes that are not UTF-8": (lambda: b"\xff\xfe", "not UTF-8"),
    # Read into a list to be checked, then an empty list was sent: the values silently gone.
    "a generator": (gen, "a generator is an iterator, which reading uses up"),
    "an iterator in a dict": (lambda: {"a": iter([1])}, "list_iterator is an iterator"),
}


def returning(make: Callable[[], object]) -> ts.Tool:
    def lookup(key: str) -> Any:
        """Look a key up."""
        return make()

    return ts.tool(lookup)


@pytest.mark.parametrize("case", list(RESULTS))
def test_a_result_json_cannot_write_is_the_tool_error_naming_the_output(case: str) -> None:
    make, cause = RESULTS[case]
    lookup = returning(make)
    with pytest.raises(ToolError, match=rf"lookup: output 'result' cannot be sent .*{cause}"):
        lookup(key="k")
    with pytest.raises(ToolError) as caught:
        asyncio.run(lookup.acall({"key": "k"}))
    assert [e.path for e in caught.value.errors] == [("result",)]


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


@pytest.mark.parametrize("case", list(RESULTS))
def test_an_agent_reads_the_unwritable_result_as_a_failed_call_and_goes_on(
    router: respx.MockRouter, case: str
) -> None:
    make, _ = RESULTS[case]
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("c1", "lookup", {"key": "k"})),
            finish_reply(answer="without it"),
        ]
    )
    pred = ReAct(Answer, tools=[returning(make)], lm=make_lm())(question="q")

    assert pred.answer == "without it"
    told = json.loads(route.calls[1].request.content)["messages"][-1]
    assert told["role"] == "tool"
    assert told["content"].startswith("Error: lookup failed: ToolError: lookup: output 'result'")


def test_an_agent_reads_a_function_that_is_no_module_callback_as_a_failed_call(
    router: respx.MockRouter,
) -> None:
    # Callables pass the tool's own check (a module callback is one); an unmarked one cannot
    # be shown to the model, and the run went down with a bare serialisation error.
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("c1", "lookup", {"key": "k"})),
            finish_reply(answer="without it"),
        ]
    )
    pred = ReAct(Answer, tools=[returning(lambda: len)], lm=make_lm())(question="q")

    assert pred.answer == "without it"
    told = json.loads(route.calls[1].request.content)["messages"][-1]
    assert told["content"].startswith("Error: lookup failed: PydanticSerializationError")
