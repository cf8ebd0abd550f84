"""Sync Predict against the raw sync SDK with the client on one core (not a test).

Containers often get one core. A sync call runs on its own thread's event loop and sends its
request with the SDK's blocking client (ADR-049; before it, on a background loop's thread, each
call two thread switches on one core). This benchmark pins this process (the client) to one
core with ``os.sched_setaffinity`` and the stand-in server to another, so the server stands for
a remote endpoint (a real one does not share the client's core) and only the client's own work
counts.

Both sides send the very same request body (built by typedspy's adapter) to the stand-in:

* sync: ``openai.OpenAI(...).chat.completions.create(**body)`` plus ``json.loads`` of the reply,
  against ``predict(text=...)``;
* async (the control): ``await AsyncOpenAI(...).chat.completions.create(**body)`` plus
  ``json.loads``, against ``await predict.acall(text=...)``;
* sync under a deadline: the raw sync call again, against ``predict(text=...)`` inside
  ``ts.context(deadline=60)``, which sends with the async client on the thread's loop (a timer
  keeps the deadline, ADR-064).

The two sides alternate call by call, so drift on a shared machine hits both alike. Prints the
median wall time per call (robust to the odd call delayed by other processes) and the client
process's CPU time per call (every thread of the client included), each as a ratio. On a
loaded machine the wall times mostly measure how long each wake-up waits for the core; the CPU
times are the steadier measure of the client's own work.
Run: ``python benchmarks/sync_one_core.py [calls per side]``
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI, OpenAI

sys.path.insert(0, str(Path(__file__).resolve().parent))

from predict_overhead import TEXT, Triage

import typedspy as ts
from typedspy.adapter import build_request

CALLS = 1000


def cores() -> tuple[int, int]:
    """(the client's core, the server's core): two distinct cores where there are two."""
    usable = sorted(os.sched_getaffinity(0))
    return usable[0], usable[-1]


@contextmanager
def pinned_standin(core: int) -> Iterator[str]:
    """The stand-in in its own process, pinned to ``core``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "typedspy.testing.standin", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.sched_setaffinity(0, {core}),
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().rsplit(" ", 1)[-1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def request_body() -> dict[str, Any]:
    """The body Predict sends for the reference task (built by the same adapter)."""
    sent = build_request(Triage, {"text": TEXT}, mode="json_schema")
    return {
        "model": "standin-1",
        "messages": list(sent.messages),
        "response_format": dict(sent.response_format or {}),
    }


class Timings:
    """Per-call wall and CPU times of two sides measured alternately, call by call."""

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {"raw": [], "ours": []}
        self.cpu: dict[str, float] = {"raw": 0.0, "ours": 0.0}

    def add(self, side: str, wall: float, cpu: float) -> None:
        self.wall[side].append(wall)
        self.cpu[side] += cpu

    def report(self, name: str) -> None:
        raw, ours = self.wall["raw"], self.wall["ours"]
        median_raw, median_ours = statistics.median(raw), statistics.median(ours)
        print(
            f"{name}: median per call raw SDK {median_raw * 1e3:.3f} ms, "
            f"Predict {median_ours * 1e3:.3f} ms, ratio {median_ours / median_raw:.3f}x; "
            f"client CPU per call raw {self.cpu['raw'] / len(raw) * 1e3:.3f} ms, "
            f"Predict {self.cpu['ours'] / len(ours) * 1e3:.3f} ms, "
            f"ratio {self.cpu['ours'] / self.cpu['raw']:.3f}x"
        )


def alternate(raw: Callable[[], object], ours: Callable[[], object], n: int) -> Timings:
    timings = Timings()
    for i in range(n):
        for side, fn in (("raw", raw), ("ours", ours)) if i % 2 else (("ours", ours), ("raw", raw)):
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            timings.add(side, time.perf_counter() - wall, time.process_time() - cpu)
    return timings


async def aalternate(raw: Callable[[], Any], ours: Callable[[], Any], n: int) -> Timings:
    timings = Timings()
    for i in range(n):
        for side, fn in (("raw", raw), ("ours", ours)) if i % 2 else (("ours", ours), ("raw", raw)):
            wall, cpu = time.perf_counter(), time.process_time()
            await fn()
            timings.add(side, time.perf_counter() - wall, time.process_time() - cpu)
    return timings


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else CALLS
    client_core, server_core = cores()
    with pinned_standin(server_core) as base_url:
        os.sched_setaffinity(0, {client_core})  # this process and every thread it starts
        body = request_body()
        lm = ts.LM("standin-1", base_url=base_url, api_key="offline")
        predict = ts.Predict(Triage, lm=lm)
        sync_client = OpenAI(base_url=base_url, api_key="offline")
        async_client = AsyncOpenAI(base_url=base_url, api_key="offline")

        def raw_sync() -> object:
            completion = sync_client.chat.completions.create(**body)
            return json.loads(completion.choices[0].message.content or "{}")

        def ours_sync() -> object:
            return predict(text=TEXT)

        def ours_sync_deadline() -> object:
            with ts.context(deadline=60):
                return predict(text=TEXT)

        async def raw_async() -> object:
            completion = await async_client.chat.completions.create(**body)
            return json.loads(completion.choices[0].message.content or "{}")

        def ours_async() -> Any:
            return predict.acall(text=TEXT)

        loop = asyncio.new_event_loop()
        alternate(raw_sync, ours_sync, 20)  # warm-up: connections, caches, the loop thread
        loop.run_until_complete(aalternate(raw_async, ours_async, 20))
        sync = alternate(raw_sync, ours_sync, calls)
        alternate(raw_sync, ours_sync_deadline, 20)
        bounded = alternate(raw_sync, ours_sync_deadline, calls)
        asynchronous = loop.run_until_complete(aalternate(raw_async, ours_async, calls))
        loop.run_until_complete(lm.aclose())
        loop.run_until_complete(async_client.close())
        loop.close()
        sync_client.close()
        lm.close()
    where = "alone" if client_core != server_core else "shared with the server"
    print(
        f"client pinned to core {client_core} ({where}), stand-in on core {server_core}; "
        f"{calls} calls a side, alternating; load {os.getloadavg()[0]:.2f}"
    )
    sync.report("sync  (OpenAI vs predict(...))      ")
    asynchronous.report("async (AsyncOpenAI vs predict.acall)")
    bounded.report("sync, deadline=60 (OpenAI vs predict)")
    print("target: sync <= 1.10x")


if __name__ == "__main__":
    main()
