"""What observes a call never changes it, never loses its events silently, never leaks a secret.

Callbacks, `ts.inspect_history` and the probe's log, under hostile or mistaken input: hooks that
cannot run (async, generators, not methods), a hook that edits the request it was handed, a
history asked for ``n="2"``, a base URL's password in the identification log, a timeout no
socket takes. Requests go to the stand-in or the fault server over a real socket.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply
from typedspy.errors import ConfigurationError
from typedspy.lm import BaseLM, LMRequest, LMResponse
from typedspy.pipeline import last_exchanges
from typedspy.probe import main as probe_main
from typedspy.testing import StandIn

PASSWORD = "pw-hunter2-observe"


class Ask(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture
def standin() -> Iterator[StandIn]:
    with StandIn() as server:
        yield server


def lm_for(server: StandIn) -> ts.LM:
    return ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", max_retries=0)


class AsyncHook(ts.BaseCallback):
    async def on_lm_start(self, call_id: str, instance: BaseLM, request: LMRequest) -> None:
        raise AssertionError("never run")


class GeneratorHook(ts.BaseCallback):
    def on_lm_end(  # type: ignore[override]  # the mistake under test
        self, call_id: str, response: LMResponse | None, exception: BaseException | None
    ) -> Iterator[None]:
        yield None


class NotAMethod:
    on_module_start = "log it"


@pytest.mark.parametrize(
    ("callback", "named"),
    [
        (AsyncHook(), "callbacks[0].on_lm_start is async"),
        (GeneratorHook(), "callbacks[0].on_lm_end is a generator"),
        (NotAMethod(), "callbacks[0].on_module_start is str, not a method"),
    ],
    ids=["async", "generator", "not-callable"],
)
def test_a_hook_that_would_never_run_is_refused_naming_it(callback: object, named: str) -> None:
    with pytest.raises(ConfigurationError, match=named.replace("[", r"\[").replace("]", r"\]")):
        ts.configure(callbacks=[callback])
    with pytest.raises(ConfigurationError, match="define it with a plain def"):
        with ts.context(callbacks=[callback]):
            pass


def test_a_hook_switched_off_with_none_is_skipped_and_the_others_still_run(
    standin: StandIn,
) -> None:
    seen: list[str] = []

    class Quiet(ts.BaseCallback):
        on_lm_start = None  # type: ignore[assignment]  # switched off

        def on_module_end(self, call_id: str, outputs: Any, exception: Any) -> None:
            seen.append("module_end")

    class QuietButAsync(Quiet):
        async def on_lm_end(self, *args: Any) -> None:  # type: ignore[override]
            raise AssertionError("never run")

    with pytest.raises(ConfigurationError, match=r"callbacks\[0\]\.on_lm_end is async"):
        ts.configure(callbacks=[QuietButAsync()])  # checked past the hook that is off
    standin.enqueue(json.dumps({"answer": "4"}))
    lm = lm_for(standin)
    with ts.context(callbacks=[Quiet()]):
        assert ts.Predict(Ask, lm=lm)(question="2+2?").answer == "4"
    lm.close()
    assert seen == ["module_end"]


def test_a_hook_made_async_after_configure_is_closed_unrun_and_logged(
    standin: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    class Late(ts.BaseCallback):
        def on_module_start(self, call_id: str, instance: Any, inputs: Any) -> None:
            seen.append("module_start")

    late = Late()
    standin.enqueue(json.dumps({"answer": "4"}))
    with ts.context(callbacks=[late]), caplog.at_level(logging.WARNING, "typedspy"):

        async def on_lm_start(call_id: str, instance: BaseLM, request: LMRequest) -> None:
            seen.append("never")

        late.on_lm_start = on_lm_start  # type: ignore[method-assign]  # past the check
        lm = lm_for(standin)
        try:
            assert ts.Predict(Ask, lm=lm)(question="2+2?").answer == "4"
        finally:
            lm.close()

    assert seen == ["module_start"]
    (line,) = [r.getMessage() for r in caplog.records if "returned a coroutine" in r.getMessage()]
    assert "on_lm_start" in line and "never awaited" in line


@pytest.mark.parametrize("n", [-1, 1.5, "2", None, True, float("nan")])
def test_the_history_asked_for_no_whole_number_says_so(n: object) -> None:
    with pytest.raises(ConfigurationError, match=r"inspect_history\(n="):
        ts.inspect_history(n)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"last_exchanges\(n="):
        last_exchanges(n)  # type: ignore[arg-type]


def test_the_identification_log_names_the_base_url_without_its_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with FaultServer(Reply.completion('{"answer": "4"}')) as server:
        url = server.url.replace("http://", f"http://user:{PASSWORD}@")
        lm = ts.LM("m", base_url=url, api_key="sk-x", max_retries=0)
        try:
            with caplog.at_level(logging.INFO, "typedspy"):
                lm.identify()
        finally:
            lm.close()

    (line,) = [r.getMessage() for r in caplog.records if "gets profile" in r.getMessage()]
    assert PASSWORD not in line
    assert "[redacted]@127.0.0.1" in line


@pytest.mark.parametrize("timeout", [1e10, 1e308])
def test_a_timeout_no_socket_takes_is_refused_naming_it(
    timeout: float, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigurationError, match=r"LM\(timeout=.*at most \d+ seconds"):
        ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=timeout)
    with FaultServer(Reply.completion('{"answer": "4"}')) as server:
        status = probe_main([server.url, "--timeout", str(timeout)])
    assert status == 2
    assert "LM.aprobe(timeout=" in capsys.readouterr().err
