"""The sync bridge: one persistent background loop, context propagation, errors, streaming."""

from __future__ import annotations

import _thread
import asyncio
import contextvars
import inspect
import json
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar, cast

import pytest

from typedspy._runtime import iterate_sync, run_sync
from typedspy.errors import ConfigurationError
from typedspy.lm import LM
from typedspy.settings import context, get_settings
from typedspy.testing._fake_lm import FakeLM

T = TypeVar("T")

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


async def running_loop() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


# --- results and errors --------------------------------------------------------------------------


def test_returns_the_result_of_a_coroutine_or_a_factory() -> None:
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    assert run_sync(add(2, 3), async_name="Calc.aadd") == 5
    assert run_sync(lambda: add(4, 5), async_name="Calc.aadd") == 9


def test_every_call_of_a_thread_runs_on_that_threads_own_loop_on_that_thread() -> None:
    loops = {run_sync(running_loop, async_name="X.acall") for _ in range(3)}

    assert len(loops) == 1
    assert run_sync(_current_thread, async_name="X.acall") is threading.main_thread()

    def other() -> None:
        seen.append(run_sync(running_loop, async_name="X.acall"))
        seen.append(run_sync(running_loop, async_name="X.acall"))

    seen: list[asyncio.AbstractEventLoop] = []
    worker = threading.Thread(target=other)
    worker.start()
    worker.join()
    assert seen[0] is seen[1]
    assert seen[0] not in loops
    assert seen[0].is_closed()  # finished and closed when its thread ended


def test_a_sync_call_inside_a_running_loop_runs_on_the_background_loop_thread() -> None:
    async def cell() -> threading.Thread:
        return run_sync(_current_thread, async_name="X.acall")

    loop_thread = asyncio.run(cell())
    assert loop_thread is not threading.main_thread()
    assert loop_thread.daemon


async def _current_thread() -> threading.Thread:
    return threading.current_thread()


def test_exceptions_keep_their_type_identity_and_traceback() -> None:
    class Boom(Exception):
        pass

    raised = Boom("inside the coroutine")

    async def fail_deep_inside() -> None:
        await asyncio.sleep(0)
        raise raised

    with pytest.raises(Boom) as info:
        run_sync(fail_deep_inside, async_name="X.acall")

    assert info.value is raised
    frames = [frame.name for frame in traceback.extract_tb(info.value.__traceback__)]
    assert "fail_deep_inside" in frames


def called_from(where: str, call: Callable[[], T]) -> T:
    """``call()`` from a thread with no running loop, or inside one (as in a notebook cell)."""
    if where == "no loop":
        return call()

    async def cell() -> T:
        return call()  # blocks this loop: typedspy runs the coroutine on its background loop

    return asyncio.run(cell())


WHERE = pytest.mark.parametrize("where", ["no loop", "inside a running loop"])


@WHERE
def test_a_failing_factory_raises_in_the_caller(where: str) -> None:
    def factory() -> Any:
        raise LookupError("no coroutine for you")

    with pytest.raises(LookupError, match="no coroutine"):
        called_from(where, lambda: run_sync(factory, async_name="X.acall"))


@WHERE
def test_a_factory_may_return_any_awaitable(where: str) -> None:
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    class Sum:
        """An awaitable that is not a coroutine (a user's ``ascore`` may return one)."""

        def __await__(self) -> Generator[Any, None, int]:
            return add(3, 4).__await__()

    assert called_from(where, lambda: run_sync(Sum, async_name="X.acall")) == 7


@WHERE
def test_system_exit_in_the_coroutine_reaches_the_caller_and_the_loop_goes_on(where: str) -> None:
    async def leave() -> None:
        await asyncio.sleep(0)
        sys.exit(3)  # a tool calling sys.exit, say

    with pytest.raises(SystemExit) as caught:
        called_from(where, lambda: run_sync(leave, async_name="X.acall"))
    assert caught.value.code == 3
    still = called_from(
        where, lambda: run_sync(lambda: asyncio.sleep(0, "on"), async_name="X.acall")
    )
    assert still == "on"


def test_a_sync_call_inside_a_running_loop_works_as_in_a_notebook_cell() -> None:
    async def work() -> int:
        await asyncio.sleep(0)
        return 1

    async def cell() -> tuple[int, str, asyncio.AbstractEventLoop]:
        # A Jupyter cell runs in a running loop: the sync call blocks it and runs on ours.
        return (
            run_sync(work, async_name="Predict.acall"),
            FakeLM(["42"])("hi"),
            (asyncio.get_running_loop()),
        )

    value, text, users_loop = asyncio.run(cell())

    assert (value, text) == (1, "42")
    assert run_sync(running_loop, async_name="X.acall") is not users_loop


def test_a_sync_call_from_typedspys_own_loop_is_refused_and_names_the_async_method() -> None:
    async def work() -> int:
        return 1

    async def on_our_loop() -> tuple[str, str, str]:
        coro = work()
        with pytest.raises(ConfigurationError) as info:
            run_sync(coro, async_name="Predict.acall")
        assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED  # no "never awaited"
        with pytest.raises(ConfigurationError) as from_lm:
            FakeLM(["unused"])("hi")
        with pytest.raises(ConfigurationError) as streaming:
            iterate_sync(numbers, async_name="Predict.astream")
        return str(info.value), str(from_lm.value), str(streaming.value)

    async def numbers() -> AsyncIterator[int]:
        yield 1

    predict_message, lm_message, stream_message = run_sync(on_our_loop, async_name="X.acall")

    assert predict_message.startswith("Predict.__call__ cannot run on typedspy's own event loop")
    assert "use `await predict.acall(...)`" in predict_message
    assert "FakeLM.__call__" in lm_message
    assert "`await fake_lm.acall(...)`" in lm_message
    assert stream_message.startswith("Predict.stream cannot run on typedspy's own event loop")
    assert "use `async for ... in predict.astream(...)`" in stream_message


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt here, as in a terminal.

    A shell starts background jobs (`pytest ... &`) with SIGINT ignored; Python then keeps it
    ignored and `_thread.interrupt_main()` does nothing, so the test below would wait forever.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("ctrl_c_raises")
def test_keyboard_interrupt_cancels_the_running_coroutine() -> None:
    started, cancelled = threading.Event(), threading.Event()

    async def wait_forever() -> None:
        started.set()  # set on the loop after run_sync handed it over: the caller is waiting
        try:
            await asyncio.Event().wait()  # never set: only cancellation ends it
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def interrupt_when_started() -> None:
        started.wait()  # no time limit: a loaded machine only makes this later
        _thread.interrupt_main()

    interrupter = threading.Thread(target=interrupt_when_started)
    interrupter.start()
    with pytest.raises(KeyboardInterrupt):
        run_sync(wait_forever, async_name="X.acall")
    interrupter.join()

    assert cancelled.wait(120)  # a bound against hanging forever, not a timing assertion
    assert run_sync(lambda: asyncio.sleep(0, "still works"), async_name="X.acall") == "still works"


@pytest.mark.parametrize("iterated", [False, True], ids=["run_sync", "iterate_sync"])
def test_ctrl_c_under_asyncio_run_cancels_a_sync_call_running_on_the_background_loop(
    iterated: bool,
) -> None:
    # asyncio.run answers Ctrl-C by cancelling its main task; a sync call blocking that task's
    # loop sees the cancellation in its wait and cancels its coroutine on the background loop.
    started, cancelled = threading.Event(), threading.Event()

    async def wait_forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def items() -> AsyncIterator[int]:
        yield 1
        await wait_forever()
        yield 2

    async def cell() -> None:
        if iterated:
            list(iterate_sync(items, async_name="X.astream"))
        else:
            run_sync(wait_forever, async_name="X.acall")

    interrupter = threading.Thread(target=lambda: (started.wait(), _thread.interrupt_main()))
    interrupter.start()
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(cell())
    interrupter.join()
    assert cancelled.wait(120)  # a bound against hanging forever, not a timing assertion
    assert (
        called_from(
            "inside a running loop",
            lambda: run_sync(lambda: asyncio.sleep(0, 1), async_name="X.acall"),
        )
        == 1
    )


# --- contextvars ---------------------------------------------------------------------------------


def test_the_coroutine_sees_a_copy_of_the_callers_context() -> None:
    async def read_then_write() -> str:
        seen = request_id.get()
        request_id.set("changed inside")
        return seen

    token = request_id.set("from the caller")
    try:
        assert run_sync(read_then_write, async_name="X.acall") == "from the caller"
        assert request_id.get() == "from the caller"  # a copy: the change stayed inside
    finally:
        request_id.reset(token)


def test_settings_context_applies_on_the_loop_thread() -> None:
    async def effective_max_retries() -> int:
        return get_settings().max_retries

    with context(max_retries=7):
        assert run_sync(effective_max_retries, async_name="X.acall") == 7
    assert run_sync(effective_max_retries, async_name="X.acall") == get_settings().max_retries


def test_the_loop_starts_once_when_many_threads_race_to_use_it() -> None:
    script = (
        "import asyncio, threading\n"
        "from typedspy._runtime import run_sync\n"
        "barrier = threading.Barrier(16)\n"
        "loops = []\n"
        "async def loop(): return id(asyncio.get_running_loop())\n"
        "async def cell(): return run_sync(loop, async_name='X.acall')\n"
        "def worker():\n"
        "    barrier.wait()\n"
        "    loops.append(asyncio.run(cell()))\n"
        "threads = [threading.Thread(target=worker) for _ in range(16)]\n"
        "[t.start() for t in threads]\n"
        "[t.join() for t in threads]\n"
        "names = [t.name for t in threading.enumerate() if t.name == 'typedspy-loop']\n"
        "print(len(loops), len(set(loops)), len(names))\n"
    )
    done = subprocess.run(
        # The timeout only bounds a hang: a loaded machine may take long to import.
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )

    assert done.stdout.split() == ["16", "1", "1"]


# --- P2: one client reused across sync calls, over a real keep-alive socket ---------------------


class _CountingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ChatCompletionHandler)
        self.lock = threading.Lock()
        self.connections = 0
        self.closed = 0
        self.changed = threading.Condition(self.lock)
        self.requests: list[dict[str, Any]] = []

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client's reset is no news
            super().handle_error(request, client_address)

    def wait_closed(self, count: int) -> bool:
        """Wait until ``count`` connections were closed by the client (bounded against hangs)."""
        with self.changed:
            return self.changed.wait_for(lambda: self.closed >= count, timeout=120)


class _ChatCompletionHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client reuses one pooled connection
    server: _CountingServer

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.connections += 1

    def finish(self) -> None:
        super().finish()
        with self.server.changed:
            self.server.closed += 1
            self.server.changed.notify_all()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with self.server.lock:
            self.server.requests.append(body)
            number = len(self.server.requests)
        reply = json.dumps(
            {
                "id": f"chatcmpl-{number}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": f"reply {number}"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def chat_server() -> Iterator[_CountingServer]:
    server = _CountingServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_three_sync_calls_reuse_one_client_and_connection(chat_server: _CountingServer) -> None:
    host, port = chat_server.server_address[:2]
    lm = LM("stand-in", base_url=f"http://{host!s}:{port}/v1", api_key="sk-local", max_retries=0)

    try:
        replies = [lm(f"question {n}") for n in (1, 2, 3)]
    finally:
        lm.close()

    assert replies == ["reply 1", "reply 2", "reply 3"]
    assert [r["messages"][0]["content"] for r in chat_server.requests] == [
        "question 1",
        "question 2",
        "question 3",
    ]
    assert chat_server.connections == 1  # the pooled keep-alive connection survived every call
    assert lm.calls == 3


def test_one_lm_serves_sync_calls_every_asyncio_run_own_loops_and_threads(
    chat_server: _CountingServer,
) -> None:
    host, port = chat_server.server_address[:2]
    lm = LM("stand-in", base_url=f"http://{host!s}:{port}/v1", api_key="sk-local", max_retries=0)
    replies: list[str] = []

    replies.append(lm("sync"))  # typedspy's background loop
    replies.append(asyncio.run(lm.acall("first asyncio.run")))
    replies.append(asyncio.run(lm.acall("second asyncio.run")))  # used to fail: loop closed
    assert chat_server.wait_closed(2)  # each asyncio.run closed the client it used

    own = asyncio.new_event_loop()
    try:
        replies.append(own.run_until_complete(lm.acall("own loop")))
        own.run_until_complete(own.shutdown_asyncgens())
    finally:
        own.close()

    async def notebook_cell() -> str:
        return lm("sync inside a running loop")

    replies.append(asyncio.run(notebook_cell()))

    def worker(n: int) -> None:
        texts = [asyncio.run(lm.acall(f"thread {n}")), lm(f"thread {n} sync")]
        with replies_lock:
            replies.extend(texts)

    replies_lock = threading.Lock()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    replies.append(lm("sync again"))
    lm.close()

    assert len(replies) == 12
    assert sorted(int(r.split()[1]) for r in replies) == list(range(1, 13))
    sent = [r["messages"][0]["content"] for r in chat_server.requests]
    assert sent[:5] == [
        "sync",
        "first asyncio.run",
        "second asyncio.run",
        "own loop",
        "sync inside a running loop",
    ]
    assert sent[-1] == "sync again"
    assert lm.calls == 12
    assert chat_server.wait_closed(chat_server.connections)  # every client was closed


@pytest.mark.parametrize(
    "raised",
    [
        "<asyncio.locks.Event object at 0x1 [unset]> is bound to a different event loop",
        "Event loop is closed",
    ],
)
def test_an_injected_client_used_from_a_second_loop_gives_a_typed_error_saying_what_to_do(
    raised: str,
) -> None:
    # What the SDK raises when a pooled connection of another loop is reused. Whether a real
    # pool reuses one (and fails) depends on its state and timing, so the error is raised at the
    # transport here: the test pins typedspy's translation, not httpcore's pool.
    import httpx
    import openai
    import respx

    with respx.mock(base_url="http://lm.test/v1") as router:
        router.post("/chat/completions").mock(side_effect=RuntimeError(raised))
        client = openai.AsyncOpenAI(
            base_url="http://lm.test/v1",
            api_key="sk-1",
            max_retries=0,
            http_client=cast(Any, httpx.AsyncClient()),  # respx patches httpx, not httpx2
        )
        lm = LM("stand-in", client=client)
        with pytest.raises(ConfigurationError, match=r"was given client=.*base_url=/api_key="):
            asyncio.run(lm.acall("from another loop"))
    run_sync(client.close, async_name="X.aclose")


# --- iterate_sync --------------------------------------------------------------------------------


def test_iterate_sync_yields_every_item_in_the_callers_context() -> None:
    async def numbers() -> AsyncIterator[str]:
        for n in range(3):
            await asyncio.sleep(0)
            yield f"{request_id.get()}-{n}"

    token = request_id.set("ctx")
    try:
        assert list(iterate_sync(numbers, async_name="Predict.astream")) == [
            "ctx-0",
            "ctx-1",
            "ctx-2",
        ]
    finally:
        request_id.reset(token)


def test_breaking_out_early_closes_the_async_generator() -> None:
    produced: list[int] = []
    closed = threading.Event()

    async def endless() -> AsyncIterator[int]:
        try:
            n = 0
            while True:
                produced.append(n)
                yield n
                n += 1
        finally:
            closed.set()

    items = iterate_sync(endless, async_name="Predict.astream")
    for item in items:
        if item == 2:
            break
    assert not closed.is_set()

    items.close()  # what garbage collection does for a dropped iterator

    assert closed.is_set()  # close() waits for aclose() to finish
    assert produced == [0, 1, 2]


def test_a_dropped_iterator_closes_the_async_generator() -> None:
    closed = threading.Event()

    async def endless() -> AsyncIterator[int]:
        try:
            while True:
                yield 1
        finally:
            closed.set()

    items = iterate_sync(endless, async_name="Predict.astream")
    assert next(items) == 1
    del items

    assert closed.wait(5)


@pytest.mark.parametrize("error", [ValueError, RuntimeError])  # RuntimeError: not a refusal
@WHERE
def test_iterate_sync_raises_the_generators_exception(error: type[Exception], where: str) -> None:
    async def fails_after_one() -> AsyncIterator[int]:
        yield 1
        raise error("stream broke")

    def drive() -> None:
        items = iterate_sync(fails_after_one, async_name="Predict.astream")
        assert next(items) == 1
        with pytest.raises(error, match="stream broke"):
            next(items)
        assert list(items) == []

    called_from(where, drive)


def test_a_thread_loop_finished_inside_another_running_loop_closes_without_a_warning() -> None:
    # A dead thread's loop can be dropped by the garbage collector while the collecting thread
    # runs a loop of its own (a test's asyncio.run): it cannot be run there, and its finishing
    # coroutine must not be left unawaited (a flake of tests/faults/test_proxies.py).
    import gc

    from typedspy._runtime_local import _Loop

    dropped = _Loop()

    async def inside() -> None:
        dropped.finish()

    asyncio.run(inside())
    gc.collect()
    assert dropped.loop.is_closed()
