"""The share of calls that return a valid typed value on a real model, per engine and mode.

Not a test. Starts each real engine with SmolLM2-135M-Instruct that ``bash
tests/conformance/real_engine.sh`` builds (`llama-server` and llama-cpp-python's server; or
``TYPEDSPY_LLAMA_SERVER`` / ``TYPEDSPY_LCP_PYTHON`` / ``TYPEDSPY_LLAMA_MODEL``), one at a
time, and runs a union-output signature in every mode through the engine's profile, printing
typed/total, first-try share, the slowest call and the most completion tokens one attempt used.
An engine that is not there is reported as skipped.
Run: ``python benchmarks/real_engine_validity.py [calls per mode, default 20] [engine ...]``
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))

from llama import ENGINES, PROFILES, Engine, missing_reason, serve
from tasks import TEXTS, Extract

import typedspy as ts
from typedspy.profiles import Mode

MODES: tuple[Mode, ...] = ("json_schema", "json_object", "prompt", "tools")
TIMEOUT = 300  # seconds: no request waits longer (512 tokens on a loaded 2-core machine)


def run_mode(lm: ts.LM, mode: Mode, calls: int) -> str:
    predict = ts.Predict(Extract, lm=lm, mode=mode)
    typed = first_try = most_tokens = timeouts = 0
    slowest = 0.0
    for i in range(calls):
        started = time.perf_counter()
        try:
            result = predict.try_call(text=TEXTS[i % len(TEXTS)])
        except ts.errors.LMTimeoutError:  # a request past TIMEOUT: a failed call, bounded
            timeouts += 1
            slowest = max(slowest, time.perf_counter() - started)
            continue
        except ts.TypedspyError as exc:  # an endpoint that refuses the mode outright
            return f"{mode:12} refused: {type(exc).__name__}: {str(exc)[:200]}"
        slowest = max(slowest, time.perf_counter() - started)
        attempts = result.attempts
        most_tokens = max([most_tokens, *(a.usage.completion_tokens for a in attempts)])
        if isinstance(result, ts.Prediction):
            typed += 1
            first_try += len(attempts) == 1
    return (
        f"{mode:12} typed {typed}/{calls} ({typed / calls:.0%}), first try {first_try}/{calls},"
        f" slowest {slowest:.1f} s, most completion tokens in one attempt {most_tokens}"
        + (f", {timeouts} timed out after {TIMEOUT} s" if timeouts else "")
    )


def run_engine(engine: Engine, calls: int) -> None:
    reason = missing_reason(engine)
    if reason is not None:
        print(f"{engine}: skipped: {reason}")
        return
    with serve(engine) as url:
        profile = PROFILES[engine]
        lm = ts.LM("smollm2", base_url=url, api_key="none", profile=profile, timeout=TIMEOUT)
        print(f"{engine} + SmolLM2-135M-Instruct Q4_1, profile {lm.profile.name!r}")
        for mode in MODES:
            print(run_mode(lm, mode, calls), flush=True)
        lm.close()


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    if unknown := set(sys.argv[2:]) - set(ENGINES):
        raise SystemExit(f"unknown engine(s) {sorted(unknown)}: use {', '.join(ENGINES)}")
    for engine in ENGINES:
        if engine in sys.argv[2:] or len(sys.argv) < 3:
            run_engine(engine, calls)


if __name__ == "__main__":
    main()
