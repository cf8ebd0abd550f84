"""Response caches: keys, modes, TTL and size, replayed retry chains, a batch killed half-way."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import typedspy as ts
from typedspy.cache import cache_key, embedding_key, key_material
from typedspy.lm import LMRequest, LMResponse
from typedspy.testing import StandIn


class Double(ts.Signature):
    """Double the number."""

    number: int = ts.InputField()
    doubled: int = ts.OutputField()


REQUEST = LMRequest(messages=({"role": "user", "content": "hi"},), params={"temperature": 0})
TOOL = {"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


_OPEN: list[ts.LM] = []


def lm_for(server: StandIn) -> ts.LM:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
    _OPEN.append(lm)
    return lm


@pytest.fixture(autouse=True)
def close_lms() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


# -- keys -------------------------------------------------------------------------------------


def test_keys_differ_by_base_url_but_not_by_api_key() -> None:
    a = ts.LM("m", base_url="http://127.0.0.1:8001/v1", api_key="sk-one")
    b = ts.LM("m", base_url="http://127.0.0.1:8002/v1", api_key="sk-one")
    a2 = ts.LM("m", base_url="http://127.0.0.1:8001/v1", api_key="sk-two")

    assert cache_key(a, REQUEST) != cache_key(b, REQUEST)
    assert cache_key(a, REQUEST) == cache_key(a2, REQUEST)
    assert "sk-one" not in json.dumps(key_material(a, REQUEST))


def test_keys_differ_by_tools_sampling_parameters_model_and_salt() -> None:
    lm = ts.LM("m", base_url="http://127.0.0.1:8001/v1", api_key="k")
    keys = {
        cache_key(lm, REQUEST),
        cache_key(lm, LMRequest(messages=REQUEST.messages, tools=(TOOL,), params=REQUEST.params)),
        cache_key(lm, LMRequest(messages=REQUEST.messages, params={"temperature": 1})),
        cache_key(ts.LM("m2", base_url="http://127.0.0.1:8001/v1", api_key="k"), REQUEST),
        cache_key(lm, REQUEST, salt="sample-2"),
    }
    assert len(keys) == 5
    assert cache_key(lm, REQUEST) == cache_key(lm, REQUEST)


def test_the_key_hashes_the_body_as_sent_with_extra_body_merged() -> None:
    lm = ts.LM("m", base_url="http://127.0.0.1:8001/v1", api_key="k", extra_body={"top_k": 5})
    material = key_material(lm, REQUEST)
    assert material["body"] == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "temperature": 0,
        "top_k": 5,
    }
    assert material["endpoint"] == "http://127.0.0.1:8001/v1"
    assert material["compiler"] == ts.schema.SCHEMA_COMPILER_VERSION  # type: ignore[attr-defined]


def test_two_servers_serving_the_same_model_do_not_share_entries() -> None:
    cache = ts.cache.MemoryCache()
    with StandIn() as one, StandIn() as two, ts.context(cache=cache):
        ts.Predict(Double, lm=lm_for(one))(number=1)
        ts.Predict(Double, lm=lm_for(two))(number=1)
        ts.Predict(Double, lm=lm_for(one))(number=1)
        assert (len(one.requests), len(two.requests)) == (1, 1)
    assert (cache.hits, len(cache)) == (1, 2)


# -- replay -----------------------------------------------------------------------------------


def test_a_cached_retry_chain_replays_to_an_equal_prediction_with_the_same_attempts(
    server: StandIn, tmp_path: Path
) -> None:
    server.enqueue('{"doubled": "four"}', '{"doubled": 4}')
    cache = ts.cache.SQLiteCache(tmp_path / "cache.sqlite3")
    predict = ts.Predict(Double, lm=lm_for(server), max_retries=2)
    with ts.context(cache=cache):
        first = predict(number=2)
    with ts.context(cache=ts.cache.SQLiteCache(tmp_path / "cache.sqlite3"), cache_mode="replay"):
        again = predict(number=2)

    assert len(server.requests) == 2
    assert len(first.attempts) == 2
    assert first.attempts[0].kind == "not_enforced"  # "four" is outside the sent schema
    assert again == first
    assert again.attempts == first.attempts
    assert again.usage == first.usage


def test_replay_mode_never_sends_a_request_it_has_not_recorded(server: StandIn) -> None:
    with ts.context(cache=ts.cache.MemoryCache(), cache_mode="replay"):
        with pytest.raises(ts.errors.CacheMissError, match="record it first") as caught:
            ts.Predict(Double, lm=lm_for(server))(number=3)
    assert server.requests == []
    assert len(caught.value.key) == 64


def test_read_mode_stores_nothing_and_refresh_mode_overwrites(server: StandIn) -> None:
    cache = ts.cache.MemoryCache()
    predict = ts.Predict(Double, lm=lm_for(server))
    with ts.context(cache=cache, cache_mode="read"):
        predict(number=1)
    assert len(cache) == 0
    server.enqueue('{"doubled": 2}', '{"doubled": 20}')
    with ts.context(cache=cache):
        assert predict(number=1).doubled == 2
    with ts.context(cache=cache, cache_mode="refresh"):
        assert predict(number=1).doubled == 20
    with ts.context(cache=cache):
        assert predict(number=1).doubled == 20
    with ts.context(cache=cache, cache_mode="off"):
        predict(number=1)
    assert len(server.requests) == 4


def test_a_streamed_reply_is_cached_and_replayed(server: StandIn) -> None:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
    predict = ts.Predict(Double, lm=lm)

    async def run() -> Any:
        result: Any = None
        async for event in predict.astream(number=5):
            result = event
        return result

    async def twice() -> tuple[Any, Any]:
        try:
            return await run(), await run()
        finally:
            await lm.aclose()

    with ts.context(cache=ts.cache.MemoryCache()):
        first, second = asyncio.run(twice())
    assert len(server.requests) == 1
    assert server.requests[0]["stream"] is True
    assert isinstance(first, ts.Prediction)
    assert second == first


# -- TTL and size -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize(("ttl", "sent", "hits"), [(3600.0, 1, 1), (1e-9, 2, 0)])
def test_entries_hit_within_their_ttl_and_miss_after_it(
    kind: str, ttl: float, sent: int, hits: int, server: StandIn, tmp_path: Path
) -> None:
    cache: ts.cache.Cache = (
        ts.cache.MemoryCache(ttl=ttl)
        if kind == "memory"
        else ts.cache.SQLiteCache(tmp_path / "c", ttl=ttl)
    )
    predict = ts.Predict(Double, lm=lm_for(server))
    with ts.context(cache=cache):
        predict(number=1)
        predict(number=1)
    assert len(server.requests) == sent
    assert cache.hits == hits


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_the_least_recently_used_entry_goes_first(
    kind: str, server: StandIn, tmp_path: Path
) -> None:
    cache: ts.cache.Cache = (
        ts.cache.MemoryCache(max_entries=2)
        if kind == "memory"
        else ts.cache.SQLiteCache(tmp_path / "c", max_entries=2)
    )
    predict = ts.Predict(Double, lm=lm_for(server))
    with ts.context(cache=cache):
        for number in (1, 2, 1, 3):  # 1 is used again, so 2 is the one evicted by 3
            predict(number=number)
        assert len(server.requests) == 3
        predict(number=1)
        assert len(server.requests) == 3
        predict(number=2)
        assert len(server.requests) == 4
    assert len(cache) == 2


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_clear_removes_every_entry_and_the_repr_names_the_bounds(
    kind: str, server: StandIn, tmp_path: Path
) -> None:
    cache: ts.cache.Cache = (
        ts.cache.MemoryCache(max_entries=5)
        if kind == "memory"
        else ts.cache.SQLiteCache(tmp_path / "c", max_entries=5)
    )
    predict = ts.Predict(Double, lm=lm_for(server))
    with ts.context(cache=cache):
        predict(number=1)
        predict(number=2)
        assert len(cache) == 2
        cache.clear()
        assert len(cache) == 0
        predict(number=1)  # sent again: the entry is gone
    assert len(server.requests) == 3 and len(cache) == 1
    assert "max_entries=5" in repr(cache) and "ttl=None" in repr(cache)


def test_purge_expired_deletes_only_entries_past_the_ttl(tmp_path: Path) -> None:
    reply = LMResponse.build(text="x", model="m", usage=ts.prediction.Usage(1, 1, 2))
    with ts.cache.SQLiteCache(tmp_path / "c") as forever:
        forever.put("a", reply)
        assert forever.purge_expired() == 0 and len(forever) == 1  # no ttl: nothing expires
    with ts.cache.SQLiteCache(tmp_path / "c", ttl=3600) as hourly:
        hourly.put("b", reply)
        assert hourly.purge_expired() == 0 and len(hourly) == 2
    with ts.cache.SQLiteCache(tmp_path / "c", ttl=1e-9) as instant:
        assert instant.purge_expired() == 2 and len(instant) == 0


def test_a_claim_makes_an_identical_claim_wait_for_the_stored_reply() -> None:
    cache = ts.cache.MemoryCache()
    reply = LMResponse.build(text="once", model="m", usage=ts.prediction.Usage(1, 1, 2))
    sent: list[str] = []

    async def fetch(name: str) -> str | None:
        async with cache.claim("k"):
            found = await cache.aget("k")
            if found is None:
                sent.append(name)
                await asyncio.sleep(0)  # the other claim runs meanwhile, and waits
                await cache.aput("k", reply)
                return reply.text
            return found.text

    async def both() -> list[str | None]:
        return list(await asyncio.gather(fetch("first"), fetch("second")))

    assert asyncio.run(both()) == ["once", "once"]
    assert sent == ["first"] and cache.hits == 1


def test_an_embeddings_key_holds_an_injected_clients_default_query() -> None:
    import httpx
    import openai

    async def key(version: str) -> str:
        async with openai.AsyncOpenAI(
            base_url="http://127.0.0.1:8001/v1",
            api_key="sk-test",
            default_query={"api-version": version},
            http_client=httpx.AsyncClient(),
        ) as client:
            return embedding_key(ts.LM("m", client=client), ["hi"], "embed-1")

    keys = [asyncio.run(key(version)) for version in ("2024-01-01", "2025-06-01", "2025-06-01")]
    assert keys[0] != keys[1] == keys[2]


def test_sqlite_entries_are_plain_json(server: StandIn, tmp_path: Path) -> None:
    import sqlite3

    with ts.context(cache=ts.cache.SQLiteCache(tmp_path / "c.sqlite3")):
        ts.Predict(Double, lm=lm_for(server))(number=1)
    rows = sqlite3.connect(tmp_path / "c.sqlite3").execute("SELECT entry FROM responses").fetchall()
    entry = json.loads(rows[0][0])
    assert entry["model"] == "standin-1"
    assert entry["completion"]["object"] == "chat.completion"
    assert json.loads(entry["completion"]["choices"][0]["message"]["content"]).keys() == {"doubled"}


def test_a_file_that_is_not_a_database_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "not.sqlite3"
    path.write_text("hello, this is not sqlite" * 100)
    with pytest.raises(ts.ConfigurationError, match="SQLiteCache"):
        ts.cache.SQLiteCache(path)


# -- several processes ------------------------------------------------------------------------

WRITER = """
import sys
from typedspy.cache import SQLiteCache
from typedspy.lm import LMResponse
from typedspy._types import Usage

cache = SQLiteCache(sys.argv[1])
for i in range(int(sys.argv[3])):
    response = LMResponse.build(text=f"{sys.argv[2]}-{i}", model="m", usage=Usage(1, 1, 2))
    cache.put(f"{sys.argv[2]}-{i}", response)
print("done", flush=True)
"""


def test_two_processes_write_one_cache_file(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    ts.cache.SQLiteCache(path).close()  # created (and switched to WAL) before the writers start
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, path, name, "300"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    outputs = [w.communicate(timeout=120) for w in writers]

    assert [w.returncode for w in writers] == [0, 0], outputs
    cache = ts.cache.SQLiteCache(path)
    assert len(cache) == 600
    hit = cache.get("b-299")
    assert hit is not None and hit.text == "b-299"


CHILD = """
import sys
import typedspy as ts

class Double(ts.Signature):
    \"\"\"Double the number.\"\"\"

    number: int = ts.InputField()
    doubled: int = ts.OutputField()

lm = ts.LM("standin-1", base_url=sys.argv[1], api_key="sk-test", max_retries=0)
ts.configure(cache=ts.cache.SQLiteCache(sys.argv[2]))
ts.Predict(Double, lm=lm).batch(
    [{"number": i} for i in range(40)],
    concurrency=2,
    on_progress=lambda p: print(p.done, flush=True),
)
"""


def test_a_batch_killed_half_way_resends_nothing_it_had_finished(
    server: StandIn, tmp_path: Path
) -> None:
    path = str(tmp_path / "cache.sqlite3")
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(CHILD), server.base_url, path],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    for line in child.stdout:
        if int(line) >= 10:
            break
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    finished = len(ts.cache.SQLiteCache(path))
    assert 10 <= finished < 40

    with ts.context(cache=ts.cache.SQLiteCache(path)):
        results = ts.Predict(Double, lm=lm_for(server)).batch(
            [{"number": i} for i in range(40)], concurrency=2
        )

    assert len(results.successes) == 40
    assert results.cached == finished
    assert results.requests == 40 - finished
    sent_numbers = [
        int(re.findall(r"<number>\s*(\d+)", body["messages"][-1]["content"])[0])
        for body in server.requests
    ]
    replayed = [item.index for item in results.items if item.cached]
    assert len(replayed) == finished
    assert [sent_numbers.count(i) for i in replayed] == [1] * finished  # sent once, ever


def test_cache_settings_are_checked() -> None:
    with pytest.raises(ts.ConfigurationError, match="cache_mode"):
        ts.context(cache_mode="sometimes")
    with pytest.raises(ts.ConfigurationError, match=r"expected a typedspy\.cache\.MemoryCache"):
        ts.context(cache={})
    with pytest.raises(ts.ConfigurationError, match="max_entries"):
        ts.cache.MemoryCache(max_entries=0)
