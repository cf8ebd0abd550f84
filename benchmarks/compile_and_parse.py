"""Schema compile and parse costs (not a test).

Prints: cold compile of the DSPy.rb agent signature, cached compile, and parse+validate of a
~2 KB completion as a ratio to ``pydantic.TypeAdapter.validate_json`` on the same JSON.
Run: ``python benchmarks/compile_and_parse.py``
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from pydantic import BaseModel, TypeAdapter

sys.path.insert(0, str(Path(__file__).parent))

from _agent import CompleteTask, Continue, Decide, PlainPlan, Plan, SpawnTask

import typedspy as ts
from typedspy.signature import build_signature


def _fresh_signatures(n: int) -> list[type[ts.Signature]]:
    return [
        build_signature(
            "Decide",
            {n: (f.annotation, f) for n, f in Decide.input_fields.items()},
            {n: (f.annotation, f) for n, f in Decide.output_fields.items()},
            Decide.instructions,
        )
        for _ in range(n)
    ]


def _per_call(fn: object, n: int) -> float:
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()  # type: ignore[operator]
        runs.append((time.perf_counter() - start) / n)
    return min(runs)


def completion_2kb() -> str:
    steps: list[BaseModel] = []
    i = 0
    while len(json.dumps([s.model_dump() for s in steps])) < 1900:
        steps.append(
            [
                SpawnTask(description=f"Write the release notes for module {i}", priority="high"),
                CompleteTask(task_id=f"T-{i}", result="merged and deployed to staging"),
                Continue(reason=f"waiting for review number {i} to finish"),
            ][i % 3]
        )
        i += 1
    data = {"steps": [ts.signature.to_jsonable(s) for s in steps], "confidence": 0.82}
    return json.dumps(data)


def main() -> None:
    fresh = _fresh_signatures(30)
    cold = []
    for sig in fresh:
        start = time.perf_counter()
        ts.schema.compile_schema(sig)
        cold.append(time.perf_counter() - start)
    ts.schema.compile_schema(Decide)
    cached = _per_call(lambda: ts.schema.compile_schema(Decide), 100_000)
    text = completion_2kb()
    plain = TypeAdapter(PlainPlan)
    baseline = _per_call(lambda: plain.validate_json(text), 5_000)
    ours = _per_call(lambda: ts.parse.parse_outputs(Plan, text), 5_000)
    assert ts.parse.parse_outputs(Plan, text).ok
    print(f"cold compile (DSPy.rb agent signature): {statistics.median(cold) * 1e3:.2f} ms")
    print(f"cached compile: {cached * 1e6:.2f} us (target < 10 us)")
    print(f"completion size: {len(text)} bytes")
    print(f"TypeAdapter.validate_json: {baseline * 1e6:.1f} us")
    print(f"ts.parse.parse_outputs:          {ours * 1e6:.1f} us")
    print(f"parse ratio: {ours / baseline:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
