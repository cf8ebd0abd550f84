"""Interpreter exit after sync calls: every loop's clients are closed, nothing leaks."""

from __future__ import annotations

import subprocess
import sys

PREAMBLE = """
import threading
import typedspy as ts
from typedspy.testing import StandIn

class Answer(ts.Signature):
    '''Answer.'''
    question: str = ts.InputField()
    answer: str = ts.OutputField()

with StandIn() as server:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
    predict = ts.Predict(Answer, lm=lm)
"""

SCRIPT = (
    PREAMBLE
    + """\
    print(predict(question="one").answer != "", predict(question="two").answer != "")
    for event in predict.stream(question="three"):
        pass
    print(server.disconnects, len(server.requests))
"""
)


def run_script(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a fresh interpreter where a ResourceWarning is an error."""
    return subprocess.run(
        # The timeout only bounds a hang: a loaded machine may take long to import.
        [sys.executable, "-W", "error::ResourceWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def test_sync_calls_leave_no_unclosed_socket_at_interpreter_exit() -> None:
    done = run_script(SCRIPT)

    assert done.stderr == ""
    assert done.stdout.split() == ["True", "True", "0", "3"]
    assert done.returncode == 0


def test_a_sync_call_made_by_an_exit_handler_still_runs_and_closes_its_client() -> None:
    script = SCRIPT.replace("with StandIn() as server:", "server = StandIn().start()\nif True:")
    script += (
        "\nimport atexit\n"
        "def last_call():\n"
        "    print(predict(question='at exit').answer != '')\n"
        "    server.stop()\n"
        "atexit.register(last_call)\n"
    )
    done = run_script(script)

    assert done.stderr == ""
    assert done.stdout.split() == ["True", "True", "0", "3", "True"]


THREADS_SCRIPT = (
    PREAMBLE
    + """
    def work():
        predict(question="blocking client")
        predict.batch([{"question": "a"}, {"question": "b"}])  # the thread loop's async client
        for _ in predict.stream(question="streamed"):
            pass

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    work()  # the main thread's loop, finished at interpreter exit
    print(len(server.requests))
"""
)


def test_thread_loops_and_their_clients_end_with_their_thread_and_at_exit() -> None:
    done = run_script(THREADS_SCRIPT)

    assert done.stderr == ""
    assert done.stdout.split() == ["8"]
    assert done.returncode == 0
