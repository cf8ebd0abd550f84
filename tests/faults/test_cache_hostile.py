"""The response cache under hostile conditions (issue 21: D1, D2, D3, D16; issue 22, 23).

A corrupt file, another process holding the write lock, two writer processes, entries nested
past the decoder's limit or not entries at all, requests that differ only in their query
string or headers, identical requests at once. Every call ends in its reply or a typed error
within seconds; a reply that was paid for is always returned; nothing blocks the event loop;
no thread or file descriptor is left behind (checked around every test).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

import typedspy as ts
from typedspy.cache import key_material
from typedspy.errors import CacheError
from typedspy.limits import UsageMeter, metering
from typedspy.lm import LMRequest, LMResponse
from typedspy.pipeline import HISTORY, last_exchanges
from typedspy.testing import Reply, StandIn


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(scope="module")
def warm() -> None:
    """This thread's own loop (ADR-049) and its executor exist before threads are counted."""
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
        ts.Predict(Ask, lm=lm).batch([{"question": "warm"}, {"question": "up"}])
        lm.close()


@pytest.fixture(autouse=True)
def nothing_left(warm: None) -> Iterator[None]:
    """No thread and no file descriptor outlives a test (a cache's thread included)."""
    gc.collect()
    threads, fds = set(threading.enumerate()), open_fds()
    yield
    gc.collect()
    ends = time.monotonic() + 10
    # Threads the test started; an earlier test's thread that ends meanwhile is not one of them.
    while (left := set(threading.enumerate()) - threads) and time.monotonic() < ends:
        time.sleep(0.05)
    assert not left, left
    assert open_fds() <= fds


@contextmanager
def endpoint() -> Iterator[tuple[StandIn, ts.LM]]:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
        try:
            yield server, lm
        finally:
            lm.close()


@contextmanager
def opened(path: Path, *, busy_timeout: float = 30.0) -> Iterator[ts.cache.SQLiteCache]:
    cache = ts.cache.SQLiteCache(path, busy_timeout=busy_timeout)
    try:
        yield cache
    finally:
        cache.close()


def filled_cache(path: Path, entries: int = 200) -> None:
    """A real cache file holding ``entries`` entries of about 600 bytes, closed."""
    with opened(path) as cache:
        for i in range(entries):
            reply = LMResponse.build(
                text=f"{i} " + "x" * 600, model="m", usage=ts.prediction.Usage(1, 1, 2)
            )
            cache.put(f"key-{i}", reply)


def corrupt(path: Path) -> None:
    """Overwrite pages 3 to 6 (the key index among them): the file opens, queries fail."""
    data = bytearray(path.read_bytes())
    data[8192:24576] = b"\xa5" * 16384
    path.write_bytes(bytes(data))


HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()  # held until the test closes our stdin
"""


@contextmanager
def write_lock(path: Path) -> Iterator[None]:
    """Another process holds the file's write lock (``BEGIN EXCLUSIVE``) for the block."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "locked\n"
        yield
    finally:
        holder.stdin.close()
        holder.wait(30)
        holder.stdout.close()


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


# -- D1: a corrupt file, a locked file ----------------------------------------------------------


def test_a_corrupt_file_is_a_miss_and_each_call_gets_its_reply(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite3"
    filled_cache(path)
    corrupt(path)
    with endpoint() as (server, lm), opened(path) as cache, ts.context(cache=cache):
        answers = [ts.Predict(Ask, lm=lm)(question=f"q{i}").answer for i in range(3)]

    assert len(answers) == 3 and len(server.requests) == 3  # one request each
    assert cache.misses == 3 and cache.errors >= 3
    said = warnings_of(caplog)
    assert sum("reading an entry failed (database disk image is malformed)" in m for m in said) == 1
    assert "treated as a miss" in said[0]


def test_in_replay_mode_a_corrupt_file_is_a_cache_error_and_nothing_is_sent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite3"
    filled_cache(path)
    corrupt(path)
    with endpoint() as (server, lm), opened(path) as cache:
        with ts.context(cache=cache, cache_mode="replay"), pytest.raises(CacheError) as caught:
            ts.Predict(Ask, lm=lm)(question="q")
        assert not isinstance(caught.value, ts.errors.CacheMissError)
        assert "malformed" in str(caught.value) and caught.value.key is not None
        with pytest.raises(CacheError, match="len: database disk image is malformed"):
            len(cache)
    assert server.requests == []


def test_a_write_lock_held_past_the_busy_timeout_skips_the_write_not_the_reply(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite3"
    ts.cache.SQLiteCache(path).close()
    with endpoint() as (server, lm), opened(path, busy_timeout=0.2) as cache:
        with write_lock(path), ts.context(cache=cache):
            answers = [ts.Predict(Ask, lm=lm)(question=f"q{i}").answer for i in range(3)]
        assert len(answers) == 3 and len(server.requests) == 3
        assert len(cache) == 0  # nothing could be stored while the lock was held
        with ts.context(cache=cache):  # the lock is gone: stored again
            ts.Predict(Ask, lm=lm)(question="q0")
            ts.Predict(Ask, lm=lm)(question="q0")
        assert len(server.requests) == 4 and len(cache) == 1

    said = warnings_of(caplog)
    assert sum("writing an entry failed (database is locked)" in m for m in said) == 1
    assert "the replies were returned, not stored" in said[0]


def test_a_file_locked_when_opened_is_a_configuration_error_past_the_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite3"
    sqlite3.connect(path).close()  # a rollback-journal file: its lock keeps readers out too
    with write_lock(path), pytest.raises(ts.ConfigurationError) as caught:
        ts.cache.SQLiteCache(path, busy_timeout=0.1)
    assert str(caught.value) == f"SQLiteCache({str(path)!r}): database is locked"
    with opened(path) as cache:  # the lock is gone: it opens
        assert len(cache) == 0


@pytest.mark.parametrize("maintain", ["clear", "purge_expired"])
def test_maintenance_on_a_locked_file_is_a_cache_error_naming_the_call(
    maintain: str, tmp_path: Path
) -> None:
    path = tmp_path / "c.sqlite3"
    filled_cache(path, entries=2)
    with ts.cache.SQLiteCache(path, busy_timeout=0.1, ttl=1e-9) as cache, write_lock(path):
        with pytest.raises(CacheError, match=rf"\.{maintain}: database is locked"):
            getattr(cache, maintain)()
    with opened(path) as cache:
        assert len(cache) == 2  # nothing was half done


def test_a_lookup_cancelled_behind_a_locked_write_ends_at_once(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    reply = LMResponse.build(text="x", model="m", usage=ts.prediction.Usage(1, 1, 2))

    async def run(cache: ts.cache.SQLiteCache, lock: ExitStack) -> None:
        storing = asyncio.ensure_future(cache.aput("a", reply))  # waits for the lock
        await asyncio.sleep(0)
        lookup = asyncio.ensure_future(cache.aget("b"))  # queued behind the write
        await asyncio.sleep(0)
        lookup.cancel()
        with pytest.raises(asyncio.CancelledError):
            await lookup
        assert not storing.done()  # the write still waits: the lookup did not wait for it
        lock.close()
        await storing

    with opened(path, busy_timeout=60) as cache:
        with ExitStack() as lock:
            lock.enter_context(write_lock(path))
            asyncio.run(run(cache, lock))
        assert cache.get("a") is not None and cache.get("b") is None


def test_a_call_cancelled_while_its_reply_is_stored_ends_cancelled_and_the_reply_is_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite3"
    ts.cache.SQLiteCache(path).close()
    meter = UsageMeter()

    async def run(lm: ts.LM, cache: ts.cache.SQLiteCache, lock: ExitStack) -> None:
        with ts.context(cache=cache), metering(meter):
            call = asyncio.ensure_future(ts.Predict(Ask, lm=lm).acall(question="q"))
            while not meter.usage.total_tokens:  # the reply is in, its write waits for the lock
                await asyncio.sleep(0.01)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        lock.close()
        await lm.aclose()

    HISTORY.clear()
    with endpoint() as (server, lm), opened(path, busy_timeout=60) as cache:
        with ExitStack() as lock:
            lock.enter_context(write_lock(path))
            asyncio.run(asyncio.wait_for(run(lm, cache, lock), 30))
        assert len(server.requests) == 1 and len(cache) == 1  # the paid reply was stored
    (entry,) = last_exchanges(1)
    assert entry.response is not None and (entry.error or "").startswith("CancelledError")


# -- D2: cache I/O off the event loop ---------------------------------------------------------


def test_a_locked_file_does_not_stall_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ts.cache.SQLiteCache(path).close()

    async def run(lm: ts.LM, cache: ts.cache.SQLiteCache) -> tuple[float, int]:
        gaps: list[float] = []

        async def tick() -> None:
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.01)
                gaps.append(time.monotonic() - last)
                last = time.monotonic()

        ticker = asyncio.ensure_future(tick())
        try:
            with ts.context(cache=cache):
                results = await ts.Predict(Ask, lm=lm).abatch(
                    [{"question": f"q{i}"} for i in range(4)]
                )
        finally:
            ticker.cancel()
            await asyncio.gather(ticker, return_exceptions=True)
            await lm.aclose()
        return max(gaps), len(results.successes)

    with endpoint() as (server, lm), opened(path, busy_timeout=2.5) as cache:
        ts.Predict(Ask, lm=lm)(question="warm")  # the client and its imports, before timing
        with write_lock(path):
            started = time.monotonic()
            longest, answered = asyncio.run(run(lm, cache))
            elapsed = time.monotonic() - started

    assert answered == 4 and len(server.requests) == 5
    assert longest < 1.5  # the old code stalled the loop for the whole busy timeout (2.5 s)
    assert elapsed < 20


def test_a_sync_call_and_a_thread_share_one_cache(tmp_path: Path) -> None:
    """Each thread's sync call runs on its own loop (ADR-049); the cache serves them all."""
    with endpoint() as (server, lm), opened(tmp_path / "c.sqlite3") as cache:
        predict = ts.Predict(Ask, lm=lm)

        def call() -> None:
            with ts.context(cache=cache):
                predict(question="same")

        workers = [threading.Thread(target=call) for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(30)
        call()
        assert 1 <= len(server.requests) <= 4  # each thread's loop has its own flights
        assert cache.hits >= 1 and len(cache) == 1


# -- D3 and issue 22: entries are validated models, decoded within the depth limit ---------


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("[" * 5000 + "]" * 5000, "nested deeper than 256 levels"),
        ("{" + '"a":{' * 300 + "}" * 301, "nested deeper than 256 levels"),
        ("not json", "not JSON"),
        ('{"model": 5, "completion": {}}', "not a CompletionEntry"),
        ('{"version": 2, "model": "m", "completion": {}}', "not a CompletionEntry"),
        ('{"model": "m", "completion": {"choices": []}}', "no choices"),
        ('{"model": "m", "completion": {"choices": [1]}, "extra": 1}', "not a CompletionEntry"),
        ('{"model": "m", "completion": {"n": ' + "9" * 5000 + "}}", "digits"),
    ],
    ids=[
        "deep array",
        "deep object",
        "not JSON",
        "wrong type",
        "future version",
        "no choices",
        "unknown field",
        "huge number",
    ],
)
def test_a_bad_entry_is_a_miss_and_in_replay_a_cache_error(
    entry: str, reason: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "c.sqlite3"
    with endpoint() as (server, lm), opened(path) as cache:
        with ts.context(cache=cache):
            ts.Predict(Ask, lm=lm)(question="q")
        with sqlite3.connect(path) as db:
            db.execute("UPDATE responses SET entry = ?", (entry,))
        db.close()
        with ts.context(cache=cache, cache_mode="replay"), pytest.raises(CacheError) as caught:
            ts.Predict(Ask, lm=lm)(question="q")
        assert reason in str(caught.value)
        with ts.context(cache=cache):
            pred = ts.Predict(Ask, lm=lm)(question="q")  # a miss: sent again, and stored
            again = ts.Predict(Ask, lm=lm)(question="q")
    assert len(server.requests) == 2 and again == pred
    assert any(reason in m and "treated as a miss" in m for m in warnings_of(caplog))


def test_an_entry_written_before_entries_had_a_version_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    with endpoint() as (server, lm), opened(path) as cache:
        with ts.context(cache=cache):
            first = ts.Predict(Ask, lm=lm)(question="q")
        with sqlite3.connect(path) as db:
            (text,) = db.execute("SELECT entry FROM responses").fetchone()
            stored = json.loads(text)
            assert stored["version"] == 1 and stored["created"] > 0
            old = {"model": stored["model"], "completion": stored["completion"]}
            db.execute("UPDATE responses SET entry = ?", (json.dumps(old),))
        db.close()
        with ts.context(cache=cache, cache_mode="replay"):
            assert ts.Predict(Ask, lm=lm)(question="q") == first
    assert len(server.requests) == 1


# -- D16: the key covers the query string and the headers, never credentials ----------------


def test_extra_query_and_extra_headers_are_in_the_key() -> None:
    options = [
        {"extra_query": {"api-version": "2024-01-01"}},
        {"extra_query": {"api-version": "2025-06-01"}},
        {"extra_headers": {"X-Model-Version": "2"}},
        {"extra_headers": {"x-model-version": "3"}},
    ]
    with endpoint() as (server, lm), ts.context(cache=ts.cache.MemoryCache()):
        for _ in range(2):  # the second round is answered from the cache
            for extra in options:
                ts.Predict(Ask, lm=lm, **extra)(question="q")  # type: ignore[arg-type]
        assert len(server.requests) == 4


def test_credential_headers_stay_out_of_the_key() -> None:
    with endpoint() as (server, lm), ts.context(cache=ts.cache.MemoryCache()):
        for secret in ("Bearer sk-one-123456", "Bearer sk-two-654321"):
            extra = {"Authorization": secret, "api-key": secret, "x-route": "eu"}
            ts.Predict(Ask, lm=lm, extra_headers=extra)(question="q")
        assert len(server.requests) == 1
        request = LMRequest(
            messages=({"role": "user", "content": "q"},), params={"extra_headers": extra}
        )
        material = json.dumps(key_material(lm, request))
    assert "sk-two" not in material and "x-route" in material


def test_an_injected_clients_default_query_is_in_the_key() -> None:
    import httpx
    import openai

    async def ask(url: str, version: str) -> None:
        async with openai.AsyncOpenAI(
            base_url=url,
            api_key="sk-test",
            default_query={"api-version": version},
            http_client=httpx.AsyncClient(),
        ) as client:
            await ts.Predict(Ask, lm=ts.LM("standin-1", client=client)).acall(question="q")

    with StandIn() as server, ts.context(cache=ts.cache.MemoryCache()):
        for version in ("2024-01-01", "2025-06-01", "2025-06-01"):
            asyncio.run(ask(server.base_url, version))
        assert len(server.requests) == 2


# -- identical requests at once: one request -------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_identical_misses_at_once_send_one_request(kind: str, tmp_path: Path) -> None:
    cache: ts.cache.Cache = (
        ts.cache.MemoryCache() if kind == "memory" else ts.cache.SQLiteCache(tmp_path / "c.sqlite3")
    )
    with endpoint() as (server, lm), ts.context(cache=cache):
        results = ts.Predict(Ask, lm=lm).batch([{"question": "same"}] * 32, concurrency=32)
    if isinstance(cache, ts.cache.SQLiteCache):
        cache.close()
    assert len(results.successes) == 32 and len({r.answer for r in results.successes}) == 1
    assert len(server.requests) == 1
    assert (results.requests, results.cached) == (1, 31)


def test_when_the_first_of_identical_requests_fails_the_others_send_their_own() -> None:
    with endpoint() as (server, lm), ts.context(cache=ts.cache.MemoryCache()):
        server.enqueue(Reply(status=500))
        results = ts.Predict(Ask, lm=lm).batch([{"question": "same"}] * 8, concurrency=8)
    assert len(results.errors) == 1 and len(results.successes) == 7
    assert len(server.requests) == 8  # after the failure, no one waited for anyone


# -- MemoryCache: bounded in bytes --------------------------------------------------------------


def test_a_memory_cache_is_bounded_in_bytes() -> None:
    cache = ts.cache.MemoryCache(max_bytes=4000)
    reply = LMResponse.build(text="x" * 1000, model="m", usage=ts.prediction.Usage(1, 1, 2))
    for i in range(10):
        cache.put(f"k{i}", reply)
    assert cache.bytes <= 4000 and 1 <= len(cache) < 10
    assert cache.get("k9") is not None and cache.get("k0") is None  # the oldest went first
    big = LMResponse.build(text="x" * 5000, model="m", usage=ts.prediction.Usage(1, 1, 2))
    cache.put("big", big)  # larger than the bound: not stored, counted
    assert cache.get("big") is None and cache.errors == 1


# -- closing: the connection, the thread, the WAL -------------------------------------------


def test_closing_ends_the_thread_and_removes_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    before = threading.active_count()
    with endpoint() as (_server, lm), ts.cache.SQLiteCache(path) as cache, ts.context(cache=cache):
        ts.Predict(Ask, lm=lm)(question="q")
        assert Path(f"{path}-wal").exists()
    assert cache.closed and threading.active_count() == before
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()
    cache.close()  # again: nothing
    assert cache.get("anything") is None  # a closed cache is a miss, never an error


WRITER = """
import sys
import typedspy as ts
from typedspy.testing import StandIn

class Ask(ts.Signature):
    \"\"\"Answer the question.\"\"\"

    question: str = ts.InputField()
    answer: str = ts.OutputField()

server = StandIn()
server.start()
ts.configure(cache=ts.cache.SQLiteCache(sys.argv[1]))
lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
predict = ts.Predict(Ask, lm=lm)
answers = [predict(question=f"{sys.argv[2]}-{i}").answer for i in range(int(sys.argv[3]))]
print(len(answers), len(server.requests), flush=True)
server.stop()
"""


def test_two_writer_processes_share_a_file_and_a_configured_cache_is_closed_at_exit(
    tmp_path: Path,
) -> None:
    """Issue 23: a cache given to `configure` was never closed; its WAL stayed after exit."""
    path = tmp_path / "shared.sqlite3"
    writers = [
        subprocess.Popen(
            [sys.executable, "-W", "error", "-c", textwrap.dedent(WRITER), str(path), name, "20"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [writer.communicate(timeout=120) for writer in writers]
    assert [o for o, _ in outputs] == ["20 20\n", "20 20\n"], outputs
    assert [e for _, e in outputs] == ["", ""]  # no warning, no ResourceWarning
    # SQLite removes the WAL when the last connection closes; two processes closing at the same
    # moment may each see the other still open, so the check is on a process that exits alone.
    alone = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(WRITER), str(path), "c", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (alone.stdout, alone.stderr) == ("20 20\n", "")
    assert not Path(f"{path}-wal").exists() and not Path(f"{path}-shm").exists()
    with opened(path) as cache:
        assert len(cache) == 60


FORKED = """
import multiprocessing, sys
from typedspy.cache import SQLiteCache
from typedspy.lm import LMResponse
import typedspy as ts

def child(cache):
    reply = LMResponse.build(text="from the child", model="m", usage=ts.prediction.Usage(1, 1, 2))
    cache.put("child", reply)
    assert cache.get("parent").text == "from the parent"
    cache.close()

cache = SQLiteCache(sys.argv[1])
usage = ts.prediction.Usage(1, 1, 2)
cache.put("parent", LMResponse.build(text="from the parent", model="m", usage=usage))
process = multiprocessing.get_context("fork").Process(target=child, args=(cache,))
process.start()
process.join(60)
print(process.exitcode, cache.get("child").text, flush=True)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() only")
def test_a_forked_child_uses_its_own_connection(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FORKED), str(tmp_path / "c.sqlite3")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout == "0 from the child\n", done.stderr


# -- options a SQLite cache cannot take ---------------------------------------------------------


@pytest.mark.parametrize("busy_timeout", [1e12, 1e306, 2_147_484])
def test_a_busy_timeout_past_sqlites_is_refused_when_built(
    busy_timeout: float, tmp_path: Path
) -> None:
    # The old cache took 1e306 to an OverflowError, 1e12 to one at close().
    with pytest.raises(ts.ConfigurationError, match=r"busy_timeout=.*from 0 to 2147483"):
        ts.cache.SQLiteCache(tmp_path / "c.sqlite3", busy_timeout=busy_timeout)
    with opened(tmp_path / "d.sqlite3", busy_timeout=2_147_483):
        pass


def test_a_path_with_a_nul_is_a_configuration_error_naming_it() -> None:
    # The old cache raised sqlite3's bare ValueError.
    with pytest.raises(ts.ConfigurationError, match=r"SQLiteCache\('a\\x00b'\): embedded null"):
        ts.cache.SQLiteCache("a\x00b")
