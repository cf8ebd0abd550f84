"""Calls interrupted at the boundary: Ctrl-C, and `SystemExit`/`KeyboardInterrupt` raised by code.

A sync call made inside a running loop (a notebook cell, ``asyncio.run`` calling sync code) runs
on typedspy's background loop while the caller's loop is blocked. A tool or module that calls
``sys.exit`` (an argparse or click command wrapped as a tool) raises `SystemExit` there, which
asyncio lets out of the loop: it must reach the caller, and the loop must go on serving later
calls. Ctrl-C under ``asyncio.run`` cancels the blocked task rather than raising, and must stop
the call. On a thread's own loop, the other tasks of a call that ended in `SystemExit` are
cancelled before it is raised, as on Ctrl-C, not left to run during later calls.

Every case that could hang runs in a child process bounded by a timeout.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply
from typedspy.testing import StandIn

BOUND = 120  # seconds: only bounds a hang (a loaded machine is slow to import)


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def child_command(script: str, *args: str) -> list[str]:
    return [sys.executable, "-W", "error", "-c", textwrap.dedent(script), *args]


def run_child(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        child_command(script, *args),
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=False,
    )


EXITING_CODE = """
    import asyncio, sys
    import typedspy as ts
    from typedspy.testing import StandIn

    class Ask(ts.Signature):
        '''Answer the question.'''
        question: str = ts.InputField()
        answer: str = ts.OutputField()

    raised = {"KeyboardInterrupt": KeyboardInterrupt, "SystemExit": SystemExit}[sys.argv[1]]

    def run_cli(command: str) -> str:
        '''Run a command line tool.'''
        raise raised()

    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
        inner = ts.Predict(Ask, lm=lm)

        class Exits(ts.Module):
            def __init__(self) -> None:
                super().__init__()
                self.inner = inner

            async def aforward(self, question: str) -> ts.Prediction:
                if question == "exit":
                    run_cli(question)
                return await self.inner.acall(question=question)

        def call(how: str) -> None:
            if how == "batch":
                Exits().batch([{"question": q} for q in ("a", "exit", "b")])
            elif how == "stream":
                list(Exits().stream(question="exit"))
            else:
                Exits()(question="exit")

        async def cell(how: str) -> None:  # sync calls from code a running loop runs
            try:
                call(how)
            except raised:
                print("raised", how, flush=True)
            print("then", inner(question="again").answer != "", flush=True)

        for how in ("call", "batch", "stream"):
            asyncio.run(cell(how))
        lm.close()
"""


@pytest.mark.parametrize("raised", ["SystemExit", "KeyboardInterrupt"])
def test_code_raising_systemexit_in_a_sync_call_inside_a_running_loop_reaches_the_caller(
    raised: str,
) -> None:
    """On main the background loop's thread died of it and the call waited for ever."""
    done = run_child(EXITING_CODE, raised)

    assert done.stdout.split("\n")[:-1] == [
        "raised call",
        "then True",
        "raised batch",
        "then True",
        "raised stream",
        "then True",
    ], done.stderr[-2000:]
    assert "Exception in thread" not in done.stderr


def test_a_systemexit_in_a_batch_item_cancels_the_other_items_before_it_is_raised() -> None:
    """On main the other items were left pending on the thread's loop, to go on in later calls."""
    cancelled: list[str] = []

    class Exits(ts.Module):
        async def aforward(self, question: str) -> None:
            if question == "exit":
                await asyncio.sleep(0)  # the other items have started
                raise SystemExit(2)
            try:
                await asyncio.Event().wait()  # never set: only cancellation ends it
            except asyncio.CancelledError:
                cancelled.append(question)
                raise

    with pytest.raises(SystemExit):
        Exits().batch([{"question": q} for q in ("a", "exit", "b")], concurrency=3)

    assert sorted(cancelled) == ["a", "b"]
    with StandIn() as server:  # and the thread's next call is its own
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
        try:
            assert ts.Predict(Ask, lm=lm)(question="again").answer
        finally:
            lm.close()
    assert sorted(cancelled) == ["a", "b"]


INTERRUPTED_CODE = """
    import asyncio, signal, sys
    import typedspy as ts

    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal

    class Ask(ts.Signature):
        '''Answer the question.'''
        question: str = ts.InputField()
        answer: str = ts.OutputField()

    lm = ts.LM("m", base_url=sys.argv[2], api_key="sk-test", max_retries=0)
    predict = ts.Predict(Ask, lm=lm)

    async def main() -> None:  # sync code called from async code: the loop is blocked
        print("calling", flush=True)
        if sys.argv[1] == "stream":
            for _ in predict.stream(question="q"):
                pass
        else:
            predict(question="q")
        print("call ended", flush=True)

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        print("interrupted", flush=True)
"""


def stalled_reply(stream: bool) -> Reply:
    """A reply whose first piece comes at once and the rest only after the test is over."""
    if stream:
        first = b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
        first += b'"choices":[{"index":0,"delta":{"content":"{\\"answer\\": \\""}}]}\n\n'
        pieces = [first, b"data: [DONE]\n\n"]
        return Reply(200, {"content-type": "text/event-stream"}, lambda: pieces, drip=600)
    body = json.dumps({"id": "x", "object": "chat.completion", "choices": []}).encode()
    return Reply(200, {"content-type": "application/json"}, lambda: [body[:9], body[9:]], drip=600)


@pytest.mark.parametrize("how", ["call", "stream"])
def test_ctrl_c_under_asyncio_run_stops_a_sync_call_made_there(how: str) -> None:
    """On main asyncio.run's Ctrl-C only cancelled the blocked task: the call went on to its end."""
    with FaultServer(stalled_reply(how == "stream"), lifetime=600) as server:
        child = subprocess.Popen(
            child_command(INTERRUPTED_CODE, how, server.url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            out, err = _interrupt_once_asked(child, server)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()

    assert out.split("\n")[:-1] == ["calling", "interrupted"], err[-2000:]


def _interrupt_once_asked(child: subprocess.Popen[str], server: FaultServer) -> tuple[str, str]:
    ends = time.monotonic() + BOUND
    while not server.requests and time.monotonic() < ends and child.poll() is None:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    return child.communicate(timeout=BOUND)


TOOL_INTERRUPTED_CODE = """
    import asyncio, signal, sys, threading
    import typedspy as ts
    from typedspy.testing import Reply, StandIn

    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal

    class Ask(ts.Signature):
        '''Answer the question.'''
        question: str = ts.InputField()
        answer: str = ts.OutputField()

    @ts.tool
    def wait_for_ever(what: str) -> str:
        '''Wait for something that never comes.'''
        print("in tool", flush=True)
        threading.Event().wait()  # only the end of the process ends it
        return what

    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
        agent = ts.ReAct(Ask, tools=[wait_for_ever], lm=lm)
        call = {"name": "wait_for_ever", "arguments": {"what": "x"}}
        server.enqueue(Reply(tool_calls=[call], finish_reason="tool_calls"))
        try:
            if sys.argv[1] == "sync":
                agent(question="q")
            else:
                asyncio.run(agent.acall(question="q"))
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        print("then", ts.Predict(Ask, lm=lm)(question="again").answer != "", flush=True)
        lm.close()
"""


@pytest.mark.parametrize("how", ["sync", "asyncio.run"])
def test_ctrl_c_while_a_sync_tool_runs_interrupts_the_agent_and_lets_the_process_exit(
    how: str,
) -> None:
    """On main the tool's thread was the loop's default executor's: ``asyncio.run`` waited for
    it before raising the `KeyboardInterrupt`, and interpreter exit joined it (for ever here)."""
    child = subprocess.Popen(
        child_command(TOOL_INTERRUPTED_CODE, how),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "in tool\n"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=BOUND)  # on main: never, the tool never returns
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()

    assert out.split("\n")[:-1] == ["interrupted", "then True"], err[-2000:]
    assert err == ""
    assert child.returncode == 0
