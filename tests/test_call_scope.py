"""One call scope (ADR-063): one ContextVar, and each concern's changes undone on their own.

With one variable, a ``Token.reset`` would put back every field as it was at that ``set``, and
undo what other code changed meanwhile. These cases change two concerns out of order and check
that each keeps its own value, as when each concern had a variable of its own.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

import typedspy as ts
from typedspy.limits import UsageMeter, metering
from typedspy.settings import get_settings
from typedspy.testing import FakeLM
from typedspy.tools import (
    ConfirmationRequired,
    ResumeState,
    Tool,
    confirm_first,
    confirmation_id,
    tool,
)

SRC = Path(__file__).parents[1] / "src" / "typedspy"


class QA(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def ask(lm: FakeLM) -> None:
    ts.Predict(QA, lm=lm)(question="2 + 2?")


def make_delete(runs: list[str]) -> Tool:
    @confirm_first
    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        runs.append(path)
        return f"deleted {path}"

    return delete_file


def test_one_context_variable_carries_the_call_scope() -> None:
    made = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name.rsplit(".", 1)[-1] == "ContextVar":
                    made.append(path.relative_to(SRC).as_posix())
    assert made == ["_scope.py"]


def test_blocks_closed_out_of_order_each_restore_only_their_own() -> None:
    lm = FakeLM(['{"answer": "4"}'] * 3)
    default = get_settings().max_retries
    meter = UsageMeter()
    settings = ts.context(max_retries=default + 1)
    counting = metering(meter)

    settings.__enter__()
    counting.__enter__()
    settings.__exit__(None, None, None)  # closed first, though opened first
    assert get_settings().max_retries == default
    ask(lm)  # the metering block is still open: counted
    assert meter.requests == 1

    counting.__exit__(None, None, None)
    assert get_settings().max_retries == default  # not the settings block's value again
    ask(lm)  # outside the metering block: not counted
    assert meter.requests == 1
    assert repr(meter).startswith("UsageMeter(requests=1, cached=0, usage=Usage(")


def approve_delete() -> None:
    # A person's yes to deleting a.txt, recorded in the current context (no `resume` block).
    cid = confirmation_id("delete_file", {"path": "a.txt"})
    ResumeState(question="Delete a.txt?", confirmation_id=cid, response="yes").apply()


def test_an_approval_made_inside_a_settings_block_outlives_it() -> None:
    runs: list[str] = []
    delete = make_delete(runs)

    async def scenario() -> None:
        with ts.context(max_retries=0):
            approve_delete()
        assert await delete.acall({"path": "a.txt"}) == {"result": "deleted a.txt"}

    asyncio.run(asyncio.wait_for(scenario(), 10))
    assert runs == ["a.txt"]


def test_an_approval_consumed_under_a_deadline_stays_consumed() -> None:
    runs: list[str] = []
    delete = make_delete(runs)

    class Cleanup(ts.Module):
        async def aforward(self, **inputs: Any) -> Any:
            return await delete.acall({"path": "a.txt"})

    async def scenario() -> None:
        approve_delete()
        with ts.context(deadline=30):  # each step of the call sets the deadline, then restores it
            await Cleanup().acall()
        with pytest.raises(ConfirmationRequired):  # the one approval was used up
            await delete.acall({"path": "a.txt"})

    asyncio.run(asyncio.wait_for(scenario(), 10))
    assert runs == ["a.txt"]


def test_a_stream_consumer_s_settings_block_spans_steps_under_a_deadline() -> None:
    lm = FakeLM(['{"answer": "4"}'])
    default = get_settings().max_retries

    async def scenario() -> list[int]:
        seen = []
        with ts.context(deadline=30, stream_deadline=30):
            stream = ts.Predict(QA, lm=lm).astream(question="2 + 2?")
            block = ts.context(max_retries=default + 1)
            async for _ in stream:
                seen.append(get_settings().max_retries)
                if len(seen) == 1:
                    block.__enter__()  # opened between two steps of the stream
            block.__exit__(None, None, None)
        return [*seen, get_settings().max_retries]

    seen = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert seen[0] == seen[-1] == default
    assert seen[1:-1] and set(seen[1:-1]) == {default + 1}
