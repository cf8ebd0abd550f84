"""How many typedspy modules one ReAct tool step runs code in, and which (not a test).

A ReAct run makes one tool call (an async tool, so no worker thread) and then calls
``finish``: two requests over respx to a fake endpoint. The run is done once to warm caches,
then again under ``sys.setprofile``, which records the module (``__name__`` of the frame's
globals) of every Python function called. The count is the distinct ``typedspy.*`` modules
seen during ``await agent.acall(...)``; package ``__init__`` modules count when a function of
theirs runs. Also printed: the modules ReAct is defined in (``typedspy.react``, or where its
pieces lived before it).
Run: ``python benchmarks/react_step_modules.py``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, cast

import httpx
import openai
import respx

import typedspy as ts
from typedspy.testing import chat_completion

BASE_URL = "https://llm.test/v1"
# Where ReAct's pieces lived before typedspy.react (ADR-042), so the script compares both.
_OLD_HOMES = (
    "typedspy.modules._trajectory",
    "typedspy.modules._resume_store",
    "typedspy.modules._callbacks",
)


class Lookup(ts.Signature):
    """Answer with the tool's help."""

    city: str = ts.InputField()
    answer: str = ts.OutputField()


async def population(city: str) -> int:
    """The population of a city."""
    return len(city) * 1000


def _replies() -> list[httpx.Response]:
    call = [{"id": "c1", "name": "population", "arguments": {"city": "Paris"}}]
    done = [{"id": "c2", "name": "finish", "arguments": {"answer": "5000"}}]
    return [
        httpx.Response(200, json=chat_completion(None, tool_calls=spec, finish_reason="tool_calls"))
        for spec in (call, done)
    ]


async def _run(agent: ts.ReAct[Lookup]) -> set[str]:
    seen: set[str] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        del arg
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if isinstance(name, str) and name.startswith("typedspy"):
                seen.add(name)

    with respx.mock(base_url=BASE_URL) as mock:
        mock.post("/chat/completions").mock(side_effect=_replies())
        sys.setprofile(cast("Callable[..., Any]", profile))
        try:
            pred = await agent.acall(city="Paris")
        finally:
            sys.setprofile(None)
    assert pred.answer == "5000" and pred.trajectory.calls[0].observation == "5000"
    return seen


async def main() -> None:
    client = openai.AsyncOpenAI(
        base_url=BASE_URL,
        api_key="sk-test",
        max_retries=0,
        http_client=cast(Any, httpx.AsyncClient()),
    )
    agent = ts.ReAct(Lookup, tools=[population], lm=ts.LM("gpt-test", client=client))
    await _run(agent)  # warm: schema caches, lazy imports
    seen = await _run(agent)
    defined = sorted(
        name
        for name in sys.modules
        if name.startswith(("typedspy.modules._react", "typedspy.react.")) or name in _OLD_HOMES
    )
    print(f"typedspy modules run by one tool step and finish: {len(seen)}")
    for name in sorted(seen):
        print(f"  {name}")
    print(f"ReAct's own modules: {len(defined)}")
    for name in defined:
        print(f"  {name}")


if __name__ == "__main__":
    asyncio.run(main())
