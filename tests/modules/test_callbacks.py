"""Callbacks: module and LM start/end events, in order, paired by call id; never breaking a call."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

import pytest

import typedspy as ts
from typedspy.errors import LMRateLimitError, OutputValidationError
from typedspy.lm import BaseLM, LMRequest, LMResponse
from typedspy.testing import FakeLM


class Grade(ts.Signature):
    """Grade the answer."""

    answer: str = ts.InputField()
    score: int = ts.OutputField(ge=0, le=10)


class Recorder(ts.BaseCallback):
    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    def on_module_start(self, call_id: str, instance: Any, inputs: Mapping[str, Any]) -> None:
        self.events.append(("module_start", call_id, (type(instance).__name__, dict(inputs))))

    def on_module_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        self.events.append(("module_end", call_id, outputs if exception is None else exception))

    def on_lm_start(self, call_id: str, instance: BaseLM, request: LMRequest) -> None:
        self.events.append(("lm_start", call_id, (instance.model, request.messages[-1])))

    def on_lm_end(
        self, call_id: str, response: LMResponse | None, exception: BaseException | None
    ) -> None:
        self.events.append(("lm_end", call_id, response.text if response else exception))

    def kinds(self) -> list[str]:
        return [kind for kind, _, _ in self.events]

    def ids(self) -> list[str]:
        return [call_id for _, call_id, _ in self.events]


class Raiser(ts.BaseCallback):
    def on_module_start(self, call_id: str, instance: Any, inputs: Mapping[str, Any]) -> None:
        raise RuntimeError("broken module_start")

    def on_module_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        raise RuntimeError("broken module_end")

    def on_lm_start(self, call_id: str, instance: BaseLM, request: LMRequest) -> None:
        raise ValueError("broken lm_start")

    def on_lm_end(
        self, call_id: str, response: LMResponse | None, exception: BaseException | None
    ) -> None:
        raise KeyError("broken lm_end")


def make_module(kind: str, replies: list[Any]) -> ts.Predict[Any]:
    lm = FakeLM(replies)
    if kind == "cot":
        return ts.ChainOfThought(Grade, lm=lm, mode="json_schema")
    return ts.Predict(Grade, lm=lm, mode="json_schema")


def reply(kind: str, score: int) -> str:
    data: dict[str, Any] = {"score": score}
    if kind == "cot":
        data = {"reasoning": "It is mostly right.", **data}
    return json.dumps(data)


def call(module: ts.Predict[Any], sync: bool, **inputs: Any) -> Any:
    if sync:
        return module(**inputs)
    return asyncio.run(module.acall(**inputs))


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize("kind", ["predict", "cot"])
def test_module_and_lm_events_in_order_with_matching_call_ids(kind: str, sync: bool) -> None:
    recorder = Recorder()
    module = make_module(kind, [reply(kind, 7)])

    with ts.context(callbacks=[recorder]):
        pred = call(module, sync, answer="Paris")

    assert recorder.kinds() == ["module_start", "lm_start", "lm_end", "module_end"]
    module_id, lm_id, lm_end_id, module_end_id = recorder.ids()
    assert module_id == module_end_id
    assert lm_id == lm_end_id
    assert module_id != lm_id
    name = "ChainOfThought" if kind == "cot" else "Predict"
    assert recorder.events[0][2] == (name, {"answer": "Paris"})
    assert recorder.events[1][2] == (
        "fake",
        {"role": "user", "content": "<answer>\nParis\n</answer>"},
    )
    assert recorder.events[2][2] == reply(kind, 7)
    assert recorder.events[3][2] is pred
    assert pred.score == 7
    if kind == "cot":
        assert pred.reasoning == "It is mostly right."


@pytest.mark.parametrize("kind", ["predict", "cot"])
def test_every_attempt_is_an_lm_pair_inside_one_module_pair(kind: str) -> None:
    recorder = Recorder()
    module = make_module(kind, [reply(kind, 99), reply(kind, 99)])
    module.max_retries = 1

    with ts.context(callbacks=[recorder]), pytest.raises(OutputValidationError) as caught:
        module(answer="Paris")

    assert recorder.kinds() == [
        "module_start",
        "lm_start",
        "lm_end",
        "lm_start",
        "lm_end",
        "module_end",
    ]
    ids = recorder.ids()
    assert ids[0] == ids[5]
    assert ids[1] == ids[2] != ids[3] == ids[4]
    assert recorder.events[5][2] is caught.value


def test_an_lm_error_reaches_lm_end_and_module_end() -> None:
    recorder = Recorder()
    error = LMRateLimitError("slow down")
    module = make_module("predict", [error])

    with ts.context(callbacks=[recorder]), pytest.raises(LMRateLimitError):
        module(answer="Paris")

    assert recorder.kinds() == ["module_start", "lm_start", "lm_end", "module_end"]
    assert recorder.events[2][2] is error
    assert recorder.events[3][2] is error


def test_a_callback_with_only_some_hooks_gets_those_and_the_call_goes_on() -> None:
    class ModulesOnly:  # not a BaseCallback: only the hooks it defines are called
        def __init__(self) -> None:
            self.seen: list[str] = []

        def on_module_end(
            self, call_id: str, outputs: Any, exception: BaseException | None
        ) -> None:
            self.seen.append(f"module_end {outputs.score}")

    watcher = ModulesOnly()
    with ts.context(callbacks=[watcher]):
        assert make_module("predict", [reply("predict", 7)])(answer="Paris").score == 7
    assert watcher.seen == ["module_end 7"]


def test_a_raising_callback_does_not_break_the_call_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = Recorder()
    module = make_module("cot", [reply("cot", 4)])

    with (
        caplog.at_level(logging.WARNING, logger="typedspy"),
        ts.context(callbacks=[Raiser(), recorder]),
    ):
        pred = module(answer="Rome")

    assert pred.score == 4
    assert pred.reasoning == "It is mostly right."
    # The callback after the broken one still saw everything.
    assert recorder.kinds() == ["module_start", "lm_start", "lm_end", "module_end"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage().split(" raised in ")[1] for r in warnings] == [
        "on_module_start; ignored",
        "on_lm_start; ignored",
        "on_lm_end; ignored",
        "on_module_end; ignored",
    ]
    assert all("Raiser" in r.getMessage() for r in warnings)
    assert warnings[1].exc_info is not None
    assert isinstance(warnings[1].exc_info[1], ValueError)


def test_context_callbacks_apply_only_inside_the_block() -> None:
    recorder = Recorder()
    module = make_module("predict", [reply("predict", 1), reply("predict", 2), reply("predict", 3)])

    module(answer="before")
    with ts.context(callbacks=[recorder]):
        module(answer="inside")
    module(answer="after")

    assert recorder.kinds() == ["module_start", "lm_start", "lm_end", "module_end"]
    assert recorder.events[0][2] == ("Predict", {"answer": "inside"})


def test_context_callbacks_do_not_leak_into_other_tasks() -> None:
    recorder = Recorder()
    module = make_module("predict", [reply("predict", 1), reply("predict", 2)])

    async def main() -> None:
        async def outside() -> None:
            await module.acall(answer="other task")

        task = asyncio.create_task(outside())  # created before the block: its own context
        async with ts.context(callbacks=[recorder]):
            await module.acall(answer="in block")
        await task

    asyncio.run(main())

    starts = [e[2] for e in recorder.events if e[0] == "module_start"]
    assert starts == [("Predict", {"answer": "in block"})]


def test_configure_callbacks_apply_process_wide() -> None:
    recorder = Recorder()
    module = make_module("predict", [reply("predict", 5)])

    ts.configure(callbacks=[recorder])
    try:
        module(answer="Oslo")
    finally:
        ts.configure(callbacks=())

    assert recorder.kinds() == ["module_start", "lm_start", "lm_end", "module_end"]
    assert ts.settings.get_settings().callbacks == ()
