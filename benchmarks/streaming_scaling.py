"""Streaming cost as the output grows: per-chunk work must not grow with the text so far.

The stand-in server runs in its own process (real socket, SSE, 8 characters per delta) and
answers with an output of the asked length: one long string field (the worst case: a single
open value that keeps growing) or a long list of short strings. For each length it prints

* typedspy's own work per chunk, without I/O: ``Predict.astream`` over the captured chunks
  replayed, minus iterating them bare (partial parsing, events, the final validation);
* the whole stream over the socket: iterating the raw ``openai`` SDK stream
  (``create(..., stream=True)``, content joined) against ``Predict.astream`` to its final
  `Prediction`, and their ratio.

Run: ``python benchmarks/streaming_scaling.py`` (about two minutes; ``--sizes 10000,50000``
for fewer). Figures depend on the machine and its load; the shape is the point: the per-chunk
column stays flat from 10k to 2M characters.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from openai import AsyncOpenAI

import typedspy as ts
from typedspy.adapter import build_request
from typedspy.lm import BaseLM, LMRequest, LMResponse
from typedspy.lm._stream import LMChunk, StreamAccumulator
from typedspy.testing import StandIn

SIZES = (10_000, 50_000, 200_000, 1_000_000, 2_000_000)


class Essay(ts.Signature):
    """Write at length."""

    topic: str = ts.InputField()
    text: str = ts.OutputField()
    words: int = ts.OutputField()


class Listing(ts.Signature):
    """List many things."""

    topic: str = ts.InputField()
    items: list[str] = ts.OutputField()
    count: int = ts.OutputField()


def reply(body: dict[str, Any]) -> str:
    """The output the request asks for: its user turn says the shape and the length."""
    asked = json.loads(str(body["messages"][-1]["content"]).split("<topic>")[1].split("<")[0])
    size = int(asked["size"])
    if asked["shape"] == "text":
        return json.dumps({"text": ("lorem ipsum " * (size // 12 + 1))[:size], "words": 1})
    items = [f"item {i:07d}" for i in range(size // 16)]  # 16 characters a member, "," and ' '
    return json.dumps({"items": items, "count": len(items)})


def serve() -> None:
    """The child process: a stand-in that answers with `reply`, until killed."""
    with StandIn(answer=reply) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()  # until the parent closes our stdin


@contextmanager
def standin_process() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


class Replay(BaseLM):
    """Streams captured chunks again, with no I/O at all."""

    def __init__(self, chunks: list[LMChunk]) -> None:
        super().__init__("replay")
        self.chunks = chunks

    async def acomplete(self, request: LMRequest) -> LMResponse:
        accumulator = StreamAccumulator(self.model)
        for chunk in self.chunks:
            accumulator.add(chunk)
        return accumulator.response()

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        for chunk in self.chunks:
            yield chunk


async def timed(fn: Any) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def one_size(base_url: str, sig: type[ts.Signature], shape: str, size: int) -> None:
    topic = json.dumps({"shape": shape, "size": size})
    request = build_request(sig, {"topic": topic}, mode="prompt")
    body = {"model": "standin-1", "messages": list(request.messages), "stream": True}
    body["stream_options"] = {"include_usage": True}
    client = AsyncOpenAI(base_url=base_url, api_key="offline", timeout=600)
    lm = ts.LM("standin-1", base_url=base_url, api_key="offline", timeout=600)
    predict = ts.Predict(sig, lm=lm, mode="prompt")

    async def raw() -> None:
        parts: list[str] = []
        async for chunk in await client.chat.completions.create(**body):
            if chunk.choices and chunk.choices[0].delta.content:
                parts.append(chunk.choices[0].delta.content)
        assert len("".join(parts)) >= size

    async def ours() -> None:
        final: Any = None
        async for event in predict.astream(topic=topic):
            final = event
        assert isinstance(final, ts.Prediction)

    captured = [chunk async for chunk in lm.astream(request)]
    replay = ts.Predict(sig, lm=Replay(captured), mode="prompt")

    async def bare() -> None:
        async for _ in Replay(captured).astream(request):
            pass

    async def replayed() -> None:
        async for _ in replay.astream(topic=topic):
            pass

    rounds = 3 if size <= 200_000 else 1
    own = min([await timed(replayed) - await timed(bare) for _ in range(rounds)])
    raw_s = min([await timed(raw) for _ in range(rounds)])
    ours_s = min([await timed(ours) for _ in range(rounds)])
    chunks = len(captured)
    print(
        f"{shape:>5} {size:>9,} chars {chunks:>7,} chunks | own work {own / chunks * 1e6:6.1f} "
        f"us/chunk | raw SDK {raw_s:7.2f} s, Predict.astream {ours_s:7.2f} s: "
        f"ratio {ours_s / raw_s:.2f}x",
        flush=True,
    )
    await client.close()
    await lm.aclose()


async def main(sizes: list[int], shapes: list[str]) -> None:
    with standin_process() as base_url:
        for shape in shapes:
            sig = Essay if shape == "text" else Listing
            for size in sizes:
                await one_size(base_url, sig, shape, size)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--shapes", default="text,list")
    args = parser.parse_args()
    if args.serve:
        serve()
    else:
        asyncio.run(main([int(s) for s in args.sizes.split(",")], args.shapes.split(",")))
