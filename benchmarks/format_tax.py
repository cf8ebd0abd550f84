"""The format tax: what each way of asking for a typed answer costs a small model (not a test).

Asks SmolLM2-135M-Instruct the labelled word problems of ``benchmarks/data/format_tax.jsonl``
(one whole-number answer each) in every way typedspy gets a typed answer: strict
``json_schema``, ``json_object``, ``prompt`` mode, ``ChainOfThought`` (reasoning inside the
schema) and ``think_then_format``; and prints, per engine and way, the accuracy against the
labels, the share of calls that gave a typed value, and requests, tokens and wall time per item.
The ``free answer`` row scores think_then_format's first request (the last whole number in the
draft): the model's accuracy with no format asked. Every call is bounded: ``max_tokens``, the
LM's ``timeout`` and the module's retry bound.

Engines are the opt-in real-engine suite's (tests/conformance/llama.py): ``llama-server``
(``TYPEDSPY_LLAMA_SERVER``, ``TYPEDSPY_LLAMA_MODEL``; run with one thread, ``-t 1``: its
default threads crawl on a loaded 2-core machine) and llama-cpp-python's server
(``TYPEDSPY_LCP_PYTHON``); an engine that is not there is skipped with its reason.
``--standin`` runs the same logic offline on the stand-in (answers from the labels, one wrong).
The table and what it showed: docs/profiles.md ("What auto picks, and the format tax").

Run: ``python benchmarks/format_tax.py [--engine llama-server|llama-cpp-python|all]
[--items N] [--ways W ...] [--concurrency C] [--data FILE] [--standin]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))

from llama import llama_cpp_python_server, llama_server, missing_reason

import typedspy as ts
from typedspy.prediction import Prediction
from typedspy.settings import ModeSetting
from typedspy.testing import StandIn

DATA = Path(__file__).resolve().parent / "data" / "format_tax.jsonl"
MAX_TOKENS = 192  # per request; a 135M model's free answers here average about 40 tokens
TIMEOUT = 120.0  # seconds per request
_NUMBER = re.compile(r"-?\d+")
Serve = Callable[[], AbstractContextManager[str]]  # starts an engine, yields its base URL


class Solve(ts.Signature):
    """Read the short story and answer its question with one whole number."""

    story: str = ts.InputField()
    answer: int = ts.OutputField(description="the whole number that answers the question")


@dataclass(frozen=True)
class Item:
    """One labelled problem."""

    story: str
    answer: int


@dataclass(frozen=True)
class Way:
    """One way to ask for the typed answer: its row name, mode, and whether it reasons first."""

    name: str
    mode: ModeSetting
    reasoning: bool = False

    def module(self, lm: ts.LM) -> ts.Predict[Any, Any]:
        """The module that asks this way."""
        if self.reasoning:
            return ts.ChainOfThought(Solve, lm=lm, mode=self.mode)
        return ts.Predict(Solve, lm=lm, mode=self.mode)


WAYS: tuple[Way, ...] = (
    Way("json_schema", "json_schema"),
    Way("json_object", "json_object"),
    Way("prompt", "prompt"),
    Way("cot in schema", "auto", reasoning=True),
    Way("think_then_format", "think_then_format"),
)


@dataclass
class Row:
    """The figures of one way on one engine."""

    way: str
    mode: str = ""
    items: int = 0
    correct: int = 0
    typed: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    slowest: float = 0.0
    errors: list[str] = field(default_factory=list)
    refused: str | None = None

    def cells(self) -> list[str]:
        """The table cells: way, mode, accuracy, typed, requests, tokens and seconds per item."""
        if self.refused is not None:
            return [self.way, self.mode, f"refused ({self.refused})", "", "", "", "", "", ""]
        n = max(self.items, 1)
        return [
            self.way,
            self.mode,
            f"{self.correct}/{self.items} ({self.correct / n:.0%})",
            f"{self.typed}/{self.items}" if self.mode != "none" else "-",
            f"{self.requests / n:.2f}",
            f"{self.prompt_tokens / n:.0f}",
            f"{self.completion_tokens / n:.0f}",
            f"{self.seconds / n:.2f}" if self.seconds else "-",
            f"{self.slowest:.1f}" if self.slowest else "-",
        ]


HEADER = ["way", "mode sent", "accuracy", "typed", "requests", "in tok", "out tok", "s", "max s"]


def load_items(path: Path = DATA) -> list[Item]:
    """The labelled problems of ``path`` (JSON lines: ``story``, ``answer``)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [Item(**json.loads(line)) for line in lines if line.strip()]


def last_number(text: str) -> int | None:
    """The last whole number written in ``text``, or ``None``."""
    found = _NUMBER.findall(text)
    return int(found[-1]) if found else None


async def run_way(lm: ts.LM, way: Way, items: Sequence[Item], concurrency: int) -> list[Row]:
    """Ask every item in ``way``; the free-answer row as well for think_then_format."""
    module, mode = way.module(lm), way.mode
    sent = lm.profile.auto_mode() if mode in ("auto", "think_then_format") else mode
    row = Row(way.name, mode=sent if mode != "think_then_format" else f"free, then {sent}")
    free = Row("free answer", mode="none")

    slots = asyncio.Semaphore(concurrency)

    async def ask(item: Item) -> tuple[Prediction[Any] | ts.OutputError | ts.errors.LMError, float]:
        async with slots:
            started = time.perf_counter()
            try:
                result = await module.atry_call(story=item.story)
            except ts.errors.LMError as exc:  # refused, timed out, dropped: this item fails
                return exc, time.perf_counter() - started
            return result, time.perf_counter() - started

    outcomes = await asyncio.gather(*(ask(item) for item in items))
    for item, (result, elapsed) in zip(items, outcomes, strict=True):
        row.items += 1
        if isinstance(result, ts.errors.LMStatusError):  # the endpoint refuses this way
            row.refused = f"{type(result).__name__} {result.status_code}"
            continue
        if isinstance(result, ts.errors.LMError):
            row.errors.append(f"{type(result).__name__}: {result}")
            continue
        row.seconds += elapsed
        row.slowest = max(row.slowest, elapsed)
        row.requests += len(result.attempts)
        row.prompt_tokens += result.usage.prompt_tokens
        row.completion_tokens += result.usage.completion_tokens
        if isinstance(result, ts.Prediction):
            row.typed += 1
            row.correct += result.answer == item.answer
        if mode == "think_then_format" and result.attempts:
            draft = result.attempts[0]
            free.items += 1
            free.requests += 1
            free.prompt_tokens += draft.usage.prompt_tokens
            free.completion_tokens += draft.usage.completion_tokens
            free.correct += last_number(draft.raw) == item.answer
    return [free, row] if mode == "think_then_format" and row.refused is None else [row]


async def run_engine(
    name: str,
    url: str,
    profile: str,
    items: Sequence[Item],
    ways: Sequence[Way],
    concurrency: int = 2,
) -> list[Row]:
    """Every way on one engine, printed as each finishes; the rows."""
    lm = ts.LM(
        "smollm2",
        base_url=url,
        api_key="none",
        profile=profile,
        timeout=TIMEOUT,
        max_tokens=MAX_TOKENS,
    )
    rows: list[Row] = []
    print(f"\n{name}: profile {lm.profile.name!r}, {len(items)} items, {concurrency} at a time")
    try:
        for way in ways:
            for row in await run_way(lm, way, items, concurrency):
                rows.append(row)
                print("  " + " | ".join(row.cells()), flush=True)
                if row.errors:
                    print(f"    {len(row.errors)} endpoint error(s), the first: {row.errors[0]}")
    finally:
        await lm.aclose()
    return rows


def table(results: dict[str, list[Row]]) -> str:
    """A Markdown table of every engine's rows."""
    lines = ["| engine | " + " | ".join(HEADER) + " |", "|" + "---|" * (len(HEADER) + 1)]
    for engine, rows in results.items():
        lines += [f"| {engine} | " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


@contextmanager
def _standin(items: Sequence[Item]) -> Iterator[str]:
    """A stand-in that answers every item right from its label but the first (off by one)."""
    labels = {item.story: item.answer + (i == 0) for i, item in enumerate(items)}

    def answer(request: dict[str, Any]) -> str | None:
        system, *turns = [str(m.get("content", "")) for m in request["messages"]]
        label = next((n for story, n in labels.items() if story in turns[0]), None)
        if label is None:
            return None
        if "in your own words" in system:
            return f"There are {label - 1} and one more: {label} in all."  # a free answer
        reasoned = {"reasoning": "Counted."} if '"reasoning"' in system else {}
        return json.dumps({**reasoned, "answer": label})

    with StandIn(answer=answer) as server:
        yield server.base_url


def main(argv: Sequence[str] | None = None) -> dict[str, list[Row]]:
    """Parse the arguments, run the engines, print the table; the rows per engine."""
    parser = argparse.ArgumentParser(description="The format tax on real engines.")
    parser.add_argument("--engine", choices=["llama-server", "llama-cpp-python", "all"])
    parser.add_argument("--items", type=int, default=0, help="the first N items (0: all)")
    parser.add_argument("--data", type=Path, default=DATA, help="JSON lines: story, answer")
    parser.add_argument("--ways", nargs="+", choices=[way.name for way in WAYS])
    parser.add_argument("--standin", action="store_true", help="offline, on the stand-in")
    parser.add_argument("--concurrency", type=int, default=2, help="calls at a time")
    args = parser.parse_args(argv)
    if args.items < 0 or args.concurrency < 1:
        parser.error("--items must be 0 or more and --concurrency 1 or more")
    items = load_items(args.data)
    ways = [way for way in WAYS if args.ways is None or way.name in args.ways]
    items = items[: args.items] if args.items else items
    engines: dict[str, tuple[Serve, str, str | None]] = {
        "llama-server": (partial(llama_server, threads=1), "llama.cpp", missing_reason()),
        "llama-cpp-python": (
            llama_cpp_python_server,
            "llama-cpp-python",
            missing_reason("llama-cpp-python"),
        ),
    }
    if args.standin:
        engines = {"stand-in": (lambda: _standin(items), "llama.cpp", None)}
    elif args.engine in engines:
        engines = {args.engine: engines[args.engine]}
    results: dict[str, list[Row]] = {}
    for name, (serve, profile, reason) in engines.items():
        if reason is not None:
            print(f"{name}: skipped: {reason}")
            continue
        with serve() as url:
            run = run_engine(name, url, profile, items, ways, args.concurrency)
            results[name] = asyncio.run(run)
    print("\n" + table(results))
    return results


if __name__ == "__main__":
    main()
