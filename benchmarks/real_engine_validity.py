"""The share of calls that return a valid typed value on a real model, per mode (not a test).

Starts the real `llama-server` with SmolLM2-135M-Instruct that ``bash
tests/conformance/real_engine.sh`` builds (or ``TYPEDSPY_LLAMA_SERVER`` / ``TYPEDSPY_LLAMA_MODEL``)
and runs a union-output signature in every mode, printing typed/total, first-try share, the
slowest call and the most completion tokens one attempt used.
Run: ``python benchmarks/real_engine_validity.py [calls per mode, default 20]``
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))

from llama import llama_server, missing_reason
from tasks import TEXTS, Extract

import typedspy as ts

MODES = ("json_schema", "json_object", "prompt", "tools")


def run_mode(lm: ts.LM, mode: str, calls: int) -> str:
    predict = ts.Predict(Extract, lm=lm, mode=mode)  # type: ignore[arg-type]
    typed = first_try = most_tokens = 0
    slowest = 0.0
    for i in range(calls):
        started = time.perf_counter()
        try:
            result = predict.try_call(text=TEXTS[i % len(TEXTS)])
        except ts.TypedspyError as exc:  # an endpoint that refuses the mode outright
            return f"{mode:12} refused: {type(exc).__name__}: {exc}"
        slowest = max(slowest, time.perf_counter() - started)
        attempts = result.attempts
        most_tokens = max([most_tokens, *(a.usage.completion_tokens for a in attempts)])
        if isinstance(result, ts.Prediction):
            typed += 1
            first_try += len(attempts) == 1
    return (
        f"{mode:12} typed {typed}/{calls} ({typed / calls:.0%}), first try {first_try}/{calls},"
        f" slowest {slowest:.1f} s, most completion tokens in one attempt {most_tokens}"
    )


def main() -> None:
    reason = missing_reason()
    if reason is not None:
        print(f"skipped: {reason}")
        return
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    with llama_server() as url:
        lm = ts.LM("smollm2", base_url=url, api_key="none", profile="llama.cpp")
        print(f"llama-server + SmolLM2-135M-Instruct Q4_1, profile {lm.profile.name!r}")
        for mode in MODES:
            print(run_mode(lm, mode, calls))


if __name__ == "__main__":
    main()
